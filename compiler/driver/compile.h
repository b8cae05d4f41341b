// The compiler as a library: runs load -> check -> lower -> emit for one IDL
// file and returns every output in memory. Nothing touches the disk except
// reading inputs through the FileReader, so tests call this on strings.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "check/limits.h"
#include "check/model.h"
#include "load/idl_loader.h"
#include "lower/lowered.h"
#include "lower/lowering.h"

namespace structop {

/// The output kinds of `--emit`.
enum class OutputKind { Header, Source, Stubs, Python, Json };

struct CompileOptions {
  std::string input;
  std::vector<std::string> include_dirs;
  std::vector<OutputKind> emit = {OutputKind::Header, OutputKind::Source};
  std::optional<std::string> explain_op;  // print this op's slot map
  /// All outputs together may have at most this many bytes (check/limits.h).
  size_t max_output_bytes = kMaxOutputBytes;
};

/// One generated file.
struct OutputFile {
  OutputKind kind;
  std::string name;  // file name, e.g. `demo.ops.h`
  std::string content;
  bool never_overwrite = false;  // stubs: a file the user edits
};

struct CompileResult {
  bool ok = false;
  /// Rendered diagnostics (GCC style), empty if none.
  std::string diagnostics;
  /// The --explain table, if asked for and the op exists.
  std::string explanation;
  /// Set when --explain names no op: the valid names, for a usage error.
  std::optional<std::string> unknown_explain_op;
  std::vector<OutputFile> outputs;
  /// Every IDL file read, main file first.
  std::vector<std::string> inputs;
};

/// One IDL file checked and lowered (load -> check -> lower), for tools that
/// read the models instead of emitting code (`--compat`).
struct Analysis {
  model::Module module;
  lower::LoweredModule lowered;
  /// Every IDL file read, main file first.
  std::vector<std::string> inputs;
};

/// Runs load -> check -> lower on `input`, reading files through `reader`
/// into `sources`; problems go to `diags`, and the models are complete only
/// when it has no errors. `lowering`: what lowering decides beyond the checks
/// (see LowerOptions).
Analysis analyze(
    const std::string& input,
    const std::vector<std::string>& include_dirs,
    FileReader& reader,
    SourceManager& sources,
    Diagnostics& diags,
    const LowerOptions& lowering);

/// Compiles `options.input`. On any IDL error `ok` is false and `outputs` is empty.
CompileResult compile(const CompileOptions& options, FileReader& reader);

/// The file name of an output for the IDL stem `demo`: `demo.ops.h`, `demo_ops.py`...
std::string output_name(OutputKind kind, const std::string& stem);

/// Parses `h`, `cpp`, `stubs`, `py`, `json`.
std::optional<OutputKind> parse_output_kind(const std::string& name);

/// The structopc version (from the Meson project).
const char* structopc_version();

}  // namespace structop
