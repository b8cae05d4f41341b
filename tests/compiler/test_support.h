// Helpers shared by the compiler's unit tests: an in-memory FileReader, runners
// for each phase on strings, and a minimal JSON reader for `--emit json`.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"
#include "base/source.h"
#include "check/limits.h"
#include "check/model.h"
#include "check/resolver.h"
#include "driver/compile.h"
#include "load/idl_loader.h"
#include "load/yaml_tree.h"
#include "lower/lowered.h"
#include "lower/lowering.h"

namespace structop::testing {

/// A FileReader over a map of path -> text. Paths are compared after
/// lexical normalization (`a/./b.ops.yaml` == `a/b.ops.yaml`); every read is
/// counted so tests can check that a file is read once.
class MemoryReader : public FileReader {
 public:
  MemoryReader() = default;
  MemoryReader(std::initializer_list<std::pair<const std::string, std::string>> files);

  void add(const std::string& path, std::string text);
  std::optional<std::string> read(const std::string& path, std::string* error) override;
  std::string identity(const std::string& path) override;
  bool exists(const std::string& path) override;

  /// How often `path` was read.
  int reads(const std::string& path) const;

 private:
  std::map<std::string, std::string> files_;
  std::map<std::string, int> reads_;
};

/// Everything one front-end run produced, kept alive together (diagnostics
/// refer to the sources, the module to nothing else).
struct FrontEnd {
  std::unique_ptr<SourceManager> sources = std::make_unique<SourceManager>();
  std::unique_ptr<Diagnostics> diags = std::make_unique<Diagnostics>(*sources);
  LoadedIdl idl;
  model::Module module;
  lower::LoweredModule lowered;
  /// Rendered diagnostics ("" when there were none).
  std::string errors;

  bool ok() const { return errors.empty(); }
  /// The lowered op named `name` (qualified); throws if there is none.
  const lower::LoweredOp& op(const std::string& name) const;
  /// The slot `lowered_name` of op `op_name`; throws if there is none.
  const lower::Slot& slot(const std::string& op_name, const std::string& lowered_name) const;
};

/// Loads, resolves and (if that succeeded) lowers `main.ops.yaml` from `reader`.
FrontEnd run_front_end(
    MemoryReader& reader,
    const std::string& main = "main.ops.yaml",
    const std::vector<std::string>& include_dirs = {});
/// The same for one file given as text.
FrontEnd run_front_end(const std::string& text);

/// Parses `text` as YAML only.
struct YamlRun {
  std::unique_ptr<SourceManager> sources = std::make_unique<SourceManager>();
  std::unique_ptr<Diagnostics> diags = std::make_unique<Diagnostics>(*sources);
  YamlDocument doc;
  bool ok = false;
  std::string errors;
};
YamlRun run_yaml(const std::string& text, const YamlLimits& limits = {});

/// A fresh folder under the system temp dir, removed at scope exit.
struct TempDir {
  std::filesystem::path path;
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
};

/// A YAML file written as a raw string literal laid out as the file is:
///
///     auto fe = run_front_end(yaml(R"(
///         namespace: d
///         ops:
///           - func: op(Tensor x) -> Tensor
///     )"));
///
/// is "namespace: d\nops:\n  - func: op(Tensor x) -> Tensor\n". The line
/// break after `R"(` is dropped, then the indentation (spaces) common to the
/// lines that are not blank; blank lines stay empty lines, and the last line
/// is dropped when it holds only the spaces before `)"` (written as
/// `last line)"`, the text ends without a line break). Line 1 is the first
/// line after `R"(`, so diagnostics keep the lines and columns of the file.
/// Throws std::invalid_argument if `text` does not begin with a line break or
/// a line is indented with a tab.
std::string yaml(std::string_view text);

/// True if `haystack` contains `needle` (for CHECK messages that show both).
inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

/// A parsed JSON value: just enough to read `--emit json` back in tests.
struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object } kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> items;                            // Array
  std::vector<std::pair<std::string, JsonValue>> members;  // Object, in order

  /// Member `key` of an object; throws if missing.
  const JsonValue& operator[](const std::string& key) const;
  /// Item `i` of an array; throws if out of range.
  const JsonValue& operator[](size_t i) const;
  bool has(const std::string& key) const;
  std::vector<std::string> keys() const;
};

/// Parses strict JSON; throws std::runtime_error (with the offset) on bad input.
JsonValue parse_json(const std::string& text);

}  // namespace structop::testing
