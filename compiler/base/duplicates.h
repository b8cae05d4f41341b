// Finding repeated names without a map per call: the checker asks this for
// every op's parameters and every op's slots, and almost never finds one.
#pragma once

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace structop {

/// For each key equal to an earlier one: (index of its first occurrence,
/// index of the repeat), repeats in increasing order. `key_of(i)` gives the
/// key of entry i, or nullopt for an entry that takes no part.
template <class KeyOf>
std::vector<std::pair<size_t, size_t>> find_duplicates(size_t n, KeyOf&& key_of) {
  std::vector<std::pair<size_t, size_t>> out;
  if (n <= 32) {  // small: compare with every earlier key, no allocation
    for (size_t i = 1; i < n; ++i) {
      const std::optional<std::string_view> key = key_of(i);
      if (!key) continue;
      for (size_t j = 0; j < i; ++j) {
        if (key_of(j) == key) {
          out.emplace_back(j, i);
          break;
        }
      }
    }
    return out;
  }
  std::vector<std::pair<std::string_view, size_t>> keys;  // stable-sorted by key
  keys.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (const std::optional<std::string_view> key = key_of(i)) keys.emplace_back(*key, i);
  }
  std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
    return a.first < b.first;
  });
  for (size_t i = 1, first = 0; i < keys.size(); ++i) {
    if (keys[i].first != keys[first].first) {
      first = i;
    } else {
      out.emplace_back(keys[first].second, keys[i].second);
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second < b.second;
  });
  return out;
}

inline std::vector<std::pair<size_t, size_t>> find_duplicates(
    const std::vector<std::string_view>& keys) {
  return find_duplicates(keys.size(), [&](size_t i) {
    return std::optional<std::string_view>(keys[i]);
  });
}

}  // namespace structop
