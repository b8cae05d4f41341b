// A fixed set of words (keywords, macro and global names of the target
// languages) that the compiler looks names up in.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "base/name_index.h"

namespace structop::lang {

/// A fixed set of words, given as strings of words separated by spaces and
/// line breaks (the lists in lang/lists/*.inc, or a literal). The strings
/// must outlive the list. Every name the compiler emits is looked up in
/// these lists, most of them in none: `contains` rejects a word whose first
/// character and length no listed word has before it looks in a hash table
/// (one or two probes, where a binary search over a thousand macro names
/// compared some ten strings scattered through memory).
class WordList {
 public:
  explicit WordList(std::initializer_list<std::string_view> word_strings);

  /// Whether `word` is one of the words.
  bool contains(std::string_view word) const;

 private:
  NameIndex words_;
  /// Bit min(length, 63) of lengths_[c] is set when a word starts with c.
  uint64_t lengths_[128] = {};
};

}  // namespace structop::lang
