// The stem of an IDL file name (`demo` for `demo.ops.yaml`) names what is
// generated from the file: demo.ops.h, the Python module `demo_ops`, the C++
// macro STRUCTOP_FINGERPRINT_demo. It must be an identifier.
#pragma once

#include <string>

#include "base/diagnostics.h"

namespace structop {

/// The file name of `path` without `.ops.yaml` (or `.ops.yml`, `.yaml`, `.yml`).
std::string idl_stem(const std::string& path);

/// Reports (at line 1, column 1 of the file) a stem that is not an ASCII
/// identifier, `[A-Za-z_][A-Za-z0-9_]*`; returns whether it is one.
/// `included`: the file is included by another (its name is in `include:`).
bool check_idl_stem(const std::string& path, int file_id, bool included, Diagnostics& diags);

}  // namespace structop
