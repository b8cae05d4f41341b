// Walks one mapping of an IDL file (load/idl_reader.cpp): rejects non-scalar
// and duplicate keys and keys not allowed there.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "base/diagnostics.h"
#include "base/duplicates.h"
#include "base/quote.h"
#include "load/yaml_tree.h"
#include "syntax/ast.h"

namespace structop::load {

using syntax::Name;

/// Walks one mapping: rejects non-scalar and duplicate keys, and keys not in
/// `allowed` (with a "did you mean").
class MappingWalker {
 public:
  MappingWalker(const YamlDocument& doc, Diagnostics& diags) : doc_(doc), diags_(diags) {}

  /// Calls `visit(key_name, value_node)` for each valid entry, in order.
  /// Returns false if an entry was skipped (unknown key, YAML alias), so the
  /// caller does not also report the key it expected as missing.
  template <class Visit>
  bool walk(
      const YamlNode& map,
      const std::vector<std::string>& allowed,
      const char* where,
      Visit&& visit) {
    const auto dups = find_duplicates(
        map.entry_count(),
        [&](size_t i) -> std::optional<std::string_view> {
          const YamlNode& key = doc_.key(map, i);
          if (!key.is_scalar()) return std::nullopt;
          return key.value;
        });
    auto dup = dups.begin();  // repeats come in entry order
    bool clean = true;
    for (size_t i = 0; i < map.entry_count(); ++i) {
      const YamlNode& key = doc_.key(map, i);
      const YamlNode& value = doc_.value(map, i);
      const bool repeat = dup != dups.end() && dup->second == i;
      const size_t first = repeat ? (dup++)->first : 0;
      if (key.alias || value.alias) {  // already reported
        clean = false;
        continue;
      }
      if (!key.is_scalar()) {
        diags_.error(
            key.span,
            fmt::format("{} keys must be plain names, found {}", where, describe(key)));
        clean = false;
        continue;
      }
      if (repeat) {
        diags_.error(
            key.span,
            fmt::format("duplicate key `{}` in {}", key.value, where),
            "remove or rename one of them; YAML keys must be unique");
        diags_.note(doc_.key(map, first).span, fmt::format("`{}` first appears here", key.value));
        continue;
      }
      if (!allowed.empty() &&
          std::find(allowed.begin(), allowed.end(), key.value) == allowed.end()) {
        std::string guess = closest_match(key.value, allowed);
        diags_.error(
            key.span,
            fmt::format("unknown key `{}` in {}", key.value, where),
            guess.empty() ? fmt::format("valid keys are {}", quoted_list(allowed))
                          : fmt::format("did you mean `{}`?", guess));
        clean = false;
        continue;
      }
      visit(Name{key.value, key.span}, value);
    }
    return clean;
  }

 private:
  const YamlDocument& doc_;
  Diagnostics& diags_;
};

}  // namespace structop::load
