// The fingerprint of one IDL file's records and enums, which a generated
// header defines as a macro and the headers of the IDL files that include it
// check: two headers generated from different versions of a shared IDL file
// are then a compile error, not a silent mix of two layouts of one type.
#pragma once

#include <cstdint>
#include <string>

#include "check/model.h"

namespace structop {

/// A stable 64-bit hash (FNV-1a) of what generated code depends on in the
/// records and enums of one file: per enum its C++ namespace, name and
/// values; per record its C++ namespace, name and fields in order (name, type
/// with the C++ namespaces of record and enum types, default as written).
/// Docs do not count; neither does the order of the declarations. `include`
/// is an index into Module::includes, or -1 for the main file.
uint64_t idl_fingerprint(const model::Module& module, int include);

/// The macro a header generated from the IDL file with this stem defines to
/// its fingerprint: `STRUCTOP_FINGERPRINT_shared` (characters other than
/// letters, digits and `_` become `_`).
std::string fingerprint_macro(const std::string& stem);

}  // namespace structop
