#include "check/file_stem.h"

#include <filesystem>

#include <fmt/format.h>

#include "base/quote.h"

namespace structop {
namespace {

bool is_identifier_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         (!first && c >= '0' && c <= '9');
}

}  // namespace

std::string idl_stem(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  for (std::string suffix : {".ops.yaml", ".ops.yml", ".yaml", ".yml"}) {
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return name.substr(0, name.size() - suffix.size());
    }
  }
  return name;
}

bool check_idl_stem(const std::string& path, int file_id, bool included, Diagnostics& diags) {
  const std::string stem = idl_stem(path);
  bool ok = !stem.empty();
  for (size_t i = 0; i < stem.size(); ++i) ok = ok && is_identifier_char(stem[i], i == 0);
  if (ok) return true;
  // The name may hold anything a file system allows: show it escaped.
  const std::string shown = comment_text(std::filesystem::path(path).filename().string());
  std::string suggestion;  // the name with `_` for every other character, if that works
  for (char c : stem) suggestion += is_identifier_char(c, false) ? c : '_';
  const bool suggest = !suggestion.empty() && is_identifier_char(suggestion[0], true);
  diags.error(
      Span{file_id, 1, 1, 1},
      fmt::format(
          "file name `{}`: `{}` is not an identifier but names the generated Python module "
          "`{}_ops` and C++ macro `STRUCTOP_FINGERPRINT_{}`",
          shown,
          comment_text(stem),
          comment_text(stem),
          comment_text(stem)),
      fmt::format(
          "rename the file{}: letters, digits and `_`, not starting with a digit{}",
          included ? " (and the `include:` entries that name it)" : "",
          suggest ? fmt::format(", e.g. `{}.ops.yaml`", suggestion) : ""));
  return false;
}

}  // namespace structop
