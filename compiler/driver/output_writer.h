// Writing outputs: only files whose content changed are rewritten (so build
// systems see unchanged timestamps); a run updates all of its changed outputs
// and its depfile, or none of them (each is staged in a fresh temporary file
// beside its target, then renamed into place); files the user owns (stubs)
// are never overwritten; no name in the output folder is followed as a
// symlink or opened unless structopc created it itself; no output replaces
// a file the run read or another output.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "driver/compile.h"

namespace structop {

/// What happened to one output file.
enum class WriteStatus {
  Written,
  Unchanged,
  KeptExisting,  // a never-overwrite file (stubs) that already exists
  Failed,
  NotWritten,  // changed, but left alone because another output failed
};

struct WriteReport {
  std::string path;
  WriteStatus status = WriteStatus::Failed;
  std::string error;  // when Failed
};

/// A depfile to write with the outputs: the outputs depend on `inputs`.
struct DepfileRequest {
  std::string path;
  std::vector<std::string> inputs;
};

/// Where the output `name` goes in `out_dir` ("" is the current folder).
std::string output_path(const std::string& out_dir, const std::string& name);

/// Writes `files` into `out_dir` (created if missing) and, if asked, the
/// depfile (its report comes last): every changed file, or, when any of them
/// cannot be written, none (those report NotWritten) and no temporary file
/// is left behind. An output (or the depfile) that names a file in `reads`
/// (the files the run read: the IDL and its includes), through symlinks,
/// `..` or a hard link (device and inode), or the name an output before it
/// replaces (its folder resolved), fails before anything is written, not
/// even the folder.
std::vector<WriteReport> write_outputs(
    const std::vector<OutputFile>& files,
    const std::string& out_dir,
    const std::optional<DepfileRequest>& depfile = std::nullopt,
    const std::vector<std::string>& reads = {});

/// A Make-style depfile: `target...: input...`, with spaces, `#` and `$`
/// escaped. Nullopt, with `*error` set, for a path that a depfile cannot
/// express (a newline or another control character, a trailing backslash).
std::optional<std::string> make_depfile(
    const std::vector<std::string>& targets,
    const std::vector<std::string>& inputs,
    std::string* error = nullptr);

/// Writes `content` to `path` unless it already holds exactly that.
WriteReport write_if_changed(const std::string& path, const std::string& content);

}  // namespace structop
