// Finding repeated names without a map per call: the checker asks this for
// every op's parameters and every op's slots, and almost never finds one.
#pragma once

#include <algorithm>
#include <numeric>
#include <string_view>
#include <utility>
#include <vector>

namespace structop {

/// For each key equal to an earlier one: (index of its first occurrence,
/// index of the repeat), repeats in increasing order.
inline std::vector<std::pair<size_t, size_t>> find_duplicates(const std::vector<std::string_view>& keys) {
  std::vector<std::pair<size_t, size_t>> out;
  const size_t n = keys.size();
  if (n <= 32) {  // small: compare with every earlier key
    for (size_t i = 1; i < n; ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (keys[j] == keys[i]) {
          out.emplace_back(j, i);
          break;
        }
      }
    }
    return out;
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  for (size_t i = 1; i < n; ++i) {
    size_t first = i - 1;
    while (first > 0 && keys[order[first - 1]] == keys[order[i]]) --first;
    if (keys[order[first]] == keys[order[i]]) out.emplace_back(order[first], order[i]);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return out;
}

}  // namespace structop
