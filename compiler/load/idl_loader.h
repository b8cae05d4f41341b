// Phase 1 entry point: reads the main IDL file and, recursively, its
// `include:` files (relative to the including file, then the -I folders),
// producing one syntax tree per file. Include cycles are errors; a file
// included twice is read once.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/diagnostics.h"
#include "base/source.h"
#include "syntax/ast.h"

namespace structop {

/// Reads files. The default reads the disk; tests substitute an in-memory map.
struct FileReader {
  virtual ~FileReader() = default;
  /// The file's text, or nullopt with `*error` set (e.g. "No such file or directory").
  virtual std::optional<std::string> read(const std::string& path, std::string* error) = 0;
  /// A key that is equal for two paths naming the same file.
  virtual std::string identity(const std::string& path) = 0;
  virtual bool exists(const std::string& path) = 0;
  /// How diagnostics name the file at `path` (a git reader: `REV:path`).
  virtual std::string display_path(const std::string& path) { return path; }
};

/// The FileReader over the real file system.
FileReader& disk_reader();

/// The main file and everything it includes.
struct LoadedIdl {
  /// Syntax trees in dependency order: every file comes after the files it
  /// includes; the main file is last. Empty if the main file could not be read.
  std::vector<syntax::IdlFile> files;
  /// Per file (parallel to `files`): the indices into `files` of the files
  /// its `include:` names, in the order listed (a file listed twice once).
  std::vector<std::vector<size_t>> includes;
  /// Paths of every file read, main file first (for depfiles).
  std::vector<std::string> paths;
};

/// Loads `main_path` and its includes. Problems go to `diags`.
LoadedIdl load_idl(
    const std::string& main_path,
    const std::vector<std::string>& include_dirs,
    FileReader& reader,
    SourceManager& sources,
    Diagnostics& diags);

}  // namespace structop
