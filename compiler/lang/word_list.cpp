#include "lang/word_list.h"

#include <algorithm>

namespace structop::lang {

namespace {

bool is_separator(char c) {
  return c == ' ' || c == '\n';
}

/// Calls `f` with each word of `words` (a byte loop: find_first_of calls
/// memchr once per character, half of a structopc run's start-up).
template <typename F>
void for_each_word(std::string_view words, F&& f) {
  const char* p = words.data();
  const char* const end = p + words.size();
  while (p != end) {
    while (p != end && is_separator(*p)) ++p;
    const char* start = p;
    while (p != end && !is_separator(*p)) ++p;
    if (p != start) f(std::string_view(start, static_cast<size_t>(p - start)));
  }
}

size_t count_words(std::initializer_list<std::string_view> word_strings) {
  size_t n = 0;
  for (std::string_view words : word_strings) for_each_word(words, [&](std::string_view) { ++n; });
  return n;
}

}  // namespace

WordList::WordList(std::initializer_list<std::string_view> word_strings)
    : words_(count_words(word_strings)) {  // (sized once: no rehash while filling)
  for (std::string_view words : word_strings) {
    for_each_word(words, [&](std::string_view w) {
      words_.insert(w, 0);
      const auto first = static_cast<unsigned char>(w.front());
      if (first < 128) lengths_[first] |= uint64_t{1} << std::min<size_t>(w.size(), 63);
    });
  }
}

bool WordList::contains(std::string_view word) const {
  if (word.empty()) return false;
  const auto first = static_cast<unsigned char>(word.front());
  if (first < 128 && !(lengths_[first] >> std::min<size_t>(word.size(), 63) & 1)) return false;
  return words_.contains(word);
}

}  // namespace structop::lang
