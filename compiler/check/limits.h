// Size limits that keep hostile input cheap: each is checked before the work
// it bounds (identifiers before resolving, flattened sizes before lowering),
// so a file over a limit is rejected in milliseconds with a diagnostic
// instead of taking minutes and gigabytes to generate gigabytes of code.
// Real IDL files are far below them: PyTorch's native_functions.yaml as one
// IDL file (2,633 ATen ops) has names of at most 57 bytes, lowers to 9,277
// parameters with names of at most 26 bytes (a flattened size of 0.2 MiB)
// and generates 16 MB of code. Record nesting depth and lowered parameter
// counts are limited where they are computed (check/resolver.cpp); the IDL
// file size and YAML nodes by load/yaml_tree.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/diagnostics.h"
#include "check/model.h"
#include "load/idl_loader.h"

namespace structop {

/// A name (namespace, record, field, enum, enum value, op, overload,
/// parameter, return, type, dispatch key, tag) has at most this many bytes.
constexpr size_t kMaxIdentifierLength = 256;

/// A lowered name (`cfg__inner__w`: a parameter and the fields down to a
/// leaf, joined with `__`), in an op or inside a record, has at most this
/// many bytes.
constexpr size_t kMaxLoweredNameLength = 1024;

/// What every leaf of every record and op parameter costs once flattened:
/// its lowered name plus this many bytes (the generated code spends a
/// multiple of it per leaf).
constexpr uint64_t kFlattenedBytesPerLeaf = 16;
/// The flattened size of all records and ops of a compilation together.
constexpr uint64_t kMaxFlattenedBytes = uint64_t{4} << 20;

/// All outputs of one run together (checked as they are generated, a last
/// line of defence: the largest IDL file, 4 MiB of one-line ops, makes about
/// 300 MB of code).
constexpr size_t kMaxOutputBytes = size_t{512} << 20;

/// Reports names longer than kMaxIdentifierLength (and `mutates:` / `meta:`
/// paths longer than kMaxLoweredNameLength) in every loaded file. Returns
/// false if it reported any: the caller then does not resolve the files
/// (suggesting names for a megabyte-long one would be the expensive part).
bool check_identifier_lengths(const LoadedIdl& idl, Diagnostics& diags);

/// Reports lowered names longer than kMaxLoweredNameLength (at the record
/// field or op parameter that makes them so) and a flattened size over
/// kMaxFlattenedBytes. For a module without errors, before lowering.
void check_flattened_size(const model::Module& module, Diagnostics& diags);

}  // namespace structop
