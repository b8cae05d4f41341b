#include "lang/word_list.h"

#include <algorithm>

namespace structop::lang {

WordList::WordList(std::initializer_list<std::string_view> word_strings) {
  for (std::string_view words : word_strings) {
    size_t start = words.find_first_not_of(" \n");
    while (start != std::string_view::npos) {
      size_t end = words.find_first_of(" \n", start);
      sorted_.push_back(words.substr(start, end == std::string_view::npos ? end : end - start));
      start = words.find_first_not_of(" \n", end);
    }
  }
  std::sort(sorted_.begin(), sorted_.end());
  for (std::string_view w : sorted_) {
    const auto first = static_cast<unsigned char>(w.front());
    if (first < 128) lengths_[first] |= uint64_t{1} << std::min<size_t>(w.size(), 63);
  }
}

bool WordList::contains(std::string_view word) const {
  if (word.empty()) return false;
  const auto first = static_cast<unsigned char>(word.front());
  if (first < 128 && !(lengths_[first] >> std::min<size_t>(word.size(), 63) & 1)) return false;
  return std::binary_search(sorted_.begin(), sorted_.end(), word);
}

}  // namespace structop::lang
