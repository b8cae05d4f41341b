#include "lang/word_list.h"

#include <algorithm>

namespace structop::lang {

WordList::WordList(std::initializer_list<std::string_view> word_strings) {
  for (std::string_view words : word_strings) {
    size_t start = words.find_first_not_of(" \n");
    while (start != std::string_view::npos) {
      size_t end = words.find_first_of(" \n", start);
      const std::string_view w = words.substr(
          start,
          end == std::string_view::npos ? end : end - start);
      words_.insert(w, 0);
      const auto first = static_cast<unsigned char>(w.front());
      if (first < 128) lengths_[first] |= uint64_t{1} << std::min<size_t>(w.size(), 63);
      start = words.find_first_not_of(" \n", end);
    }
  }
}

bool WordList::contains(std::string_view word) const {
  if (word.empty()) return false;
  const auto first = static_cast<unsigned char>(word.front());
  if (first < 128 && !(lengths_[first] >> std::min<size_t>(word.size(), 63) & 1)) return false;
  return words_.contains(word);
}

}  // namespace structop::lang
