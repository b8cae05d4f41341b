// libFuzzer target: the whole compiler front end and every emitter, in memory.
//
// One fuzz input is a small file system. The text up to the first line
// `#@file NAME` is `main.ops.yaml`; each such line starts one more file named
// NAME (relative, e.g. `common.ops.yaml` or `inc/shared.ops.yaml`) that an
// `include:` may name. The search folder `inc` is passed as `-I`. Nothing
// reads the disk: an include of a name that is not in the input is "not found".
//
// Besides crashes, sanitizer reports and leaks, the target aborts when a
// compile breaks the driver's contract: an error with no diagnostic, outputs
// after an error, an output missing on success, or diagnostics that do not
// start with a `file:line:col:` position (or `file:`, about a whole file).
//
// Build: meson setup build-fuzz -Dfuzz=enabled (with CXX=clang++); run:
// see tests/fuzz/run_fuzz.py and docs/development.md ("Fuzzing").
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "driver/compile.h"
#include "load/idl_loader.h"

namespace {

constexpr std::string_view kMain = "main.ops.yaml";
constexpr std::string_view kFileMarker = "#@file ";

std::string normal(const std::string& path) {
  return std::filesystem::path(path).lexically_normal().string();
}

class FuzzReader : public structop::FileReader {
 public:
  explicit FuzzReader(std::string_view data) {
    // Split at lines that start with the marker.
    std::string name(kMain);
    size_t begin = 0;
    size_t pos = 0;
    while (pos <= data.size()) {
      size_t line_end = data.find('\n', pos);
      if (line_end == std::string_view::npos) line_end = data.size();
      std::string_view line = data.substr(pos, line_end - pos);
      if (line.substr(0, kFileMarker.size()) == kFileMarker) {
        add(name, data.substr(begin, pos - begin));
        name = std::string(line.substr(kFileMarker.size()));
        // No ':' in names: diagnostics are `FILE:LINE:COL:`, checked below.
        for (char& ch : name) ch = ch == ':' ? '_' : ch;
        begin = line_end + 1 > data.size() ? data.size() : line_end + 1;
      }
      pos = line_end + 1;
    }
    add(name, data.substr(begin));
  }

  std::optional<std::string> read(const std::string& path, std::string* error) override {
    auto it = files_.find(normal(path));
    if (it == files_.end()) {
      *error = "No such file or directory";
      return std::nullopt;
    }
    return it->second;
  }
  std::string identity(const std::string& path) override { return normal(path); }
  bool exists(const std::string& path) override { return files_.count(normal(path)) > 0; }

 private:
  void add(const std::string& name, std::string_view text) {
    files_.emplace(normal(name), std::string(text));  // the first file of a name wins
  }

  std::map<std::string, std::string> files_;
};

[[noreturn]] void contract_broken(const char* what, const structop::CompileResult& r) {
  std::fprintf(stderr, "fuzz_compile: %s\n--- diagnostics ---\n%s\n", what, r.diagnostics.c_str());
  std::abort();
}

// A diagnostic header line: `FILE:LINE:COL: SEVERITY: ...`, or `FILE:
// SEVERITY: ...` for what is about the whole file (it is empty).
bool positioned_header(std::string_view line) {
  for (std::string_view severity : {": error: ", ": warning: ", ": note: "}) {
    size_t at = line.find(severity);
    if (at == std::string_view::npos) continue;
    std::string_view head = line.substr(0, at);  // FILE:LINE:COL
    if (!head.empty() && head.find(':') == std::string_view::npos) return true;
    size_t c = head.rfind(':');
    if (c == std::string_view::npos || c + 1 == head.size() || c == 0) return false;
    size_t l = head.rfind(':', c - 1);
    if (l == std::string_view::npos || l + 1 == c || l == 0) return false;
    for (size_t i = l + 1; i < head.size(); ++i) {
      if (i != c && (head[i] < '0' || head[i] > '9')) return false;
    }
    return true;
  }
  return false;
}

// The diagnostics start with a positioned header. (Only the first line is
// checked: a message quotes user text, which may hold line breaks and
// anything that looks like a header.)
bool positioned(const std::string& diagnostics) {
  if (diagnostics.empty()) return true;
  std::string_view first(diagnostics);
  first = first.substr(0, first.find('\n'));
  return first.substr(0, 11) == "structopc: " || positioned_header(first);
}

structop::CompileResult run(FuzzReader& reader, std::optional<std::string> explain) {
  structop::CompileOptions options;
  options.input = std::string(kMain);
  options.include_dirs = {"inc"};
  options.emit = {
      structop::OutputKind::Header,
      structop::OutputKind::Source,
      structop::OutputKind::Stubs,
      structop::OutputKind::Python,
      structop::OutputKind::Json};
  options.explain_op = std::move(explain);
  structop::CompileResult r = structop::compile(options, reader);
  if (r.ok) {
    if (r.outputs.size() != options.emit.size()) contract_broken("success without every output", r);
    for (const auto& out : r.outputs) {
      if (out.content.empty()) contract_broken("success with an empty output", r);
    }
  } else {
    if (!r.outputs.empty()) contract_broken("outputs despite errors", r);
    if (r.diagnostics.find("error") == std::string::npos)
      contract_broken("failure without an error diagnostic", r);
  }
  if (!positioned(r.diagnostics)) contract_broken("a diagnostic without file:line:col", r);
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzReader reader(std::string_view(reinterpret_cast<const char*>(data), size));
  // First with an --explain name that no op has; on success the result lists
  // the ops, and the first of them is explained in a second run.
  structop::CompileResult r = run(reader, std::string("~"));
  if (!r.ok) return 0;
  if (!r.unknown_explain_op) contract_broken("--explain of an unknown op not reported", r);
  const std::string& names = *r.unknown_explain_op;
  size_t open = names.find('`');
  if (open == std::string::npos) return 0;  // the file declares no ops
  size_t close = names.find('`', open + 1);
  if (close == std::string::npos) return 0;
  structop::CompileResult again = run(reader, names.substr(open + 1, close - open - 1));
  if (!again.ok || again.explanation.empty())
    contract_broken("--explain of a listed op failed", again);
  return 0;
}
