// Writing outputs: only files whose content changed are rewritten (so build
// systems see unchanged timestamps), each write is atomic (temp file +
// rename), a run updates all of its changed outputs or none, and files the
// user owns (stubs) are never overwritten.
#pragma once

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

/// Writes `files` into `out_dir` (created if missing): every changed file, or,
/// when any of them cannot be written, none (those report NotWritten).
std::vector<WriteReport> write_outputs(
    const std::vector<OutputFile>& files,
    const std::string& out_dir);

/// A Make-style depfile: `target...: input...`, spaces escaped.
std::string make_depfile(
    const std::vector<std::string>& targets,
    const std::vector<std::string>& inputs);

/// Writes `content` to `path` unless it already holds exactly that.
WriteReport write_if_changed(const std::string& path, const std::string& content);

}  // namespace structop
