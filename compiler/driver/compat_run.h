// `structopc --compat OLD NEW`: checks and lowers both files (each with its
// includes) and reports what changed between them (compat/compat.h) as
// GCC-style diagnostics: `error` for a break, `warning` for a break that
// `--allow OP` accepts, `note` for a compatible change.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "load/idl_loader.h"

namespace structop {

struct CompatOptions {
  std::string old_input;
  std::string new_input;
  std::vector<std::string> include_dirs;
  /// Ops (`name.overload` or `name_overload`) whose breaking changes are accepted.
  std::vector<std::string> allow;
};

struct CompatResult {
  /// 0: nothing breaks (or every break is allowed); 1: something breaks, or
  /// a file has IDL errors (then `report` holds them and nothing else).
  int status = 0;
  /// The diagnostics and, when there are changes, a summary line.
  std::string report;
  /// An `--allow` name that is an op of neither file: a usage error.
  std::optional<std::string> usage_error;
};

CompatResult run_compat(
    const CompatOptions& options,
    FileReader& old_reader,
    FileReader& new_reader);

}  // namespace structop
