// Phase 4: one emitter per output file. Each takes the checked model and the
// lowered model and returns the file's full text; the driver decides whether
// and where to write it.
#pragma once

#include <string>

#include "check/model.h"
#include "lower/lowered.h"

namespace structop {

/// What every emitter reads.
struct EmitInput {
  const model::Module& module;
  const lower::LoweredModule& lowered;
  std::string source_name;  // file name of the main IDL, e.g. `demo.ops.yaml`
  std::string version;      // structopc version
};

/// `X.ops.json`: the resolved and lowered model with slot maps.
std::string emit_json(const EmitInput& in);

/// `X.ops.h`: records, enums, grad records, kernel declarations, the C++ call API.
std::string emit_header(const EmitInput& in);
/// `X.ops.cpp`: schema registration, adapters, Autograd and Meta kernels.
std::string emit_source(const EmitInput& in);
/// `X.ops.stubs.cpp`: every function the user writes, with bodies to fill in.
std::string emit_stubs(const EmitInput& in);
/// `X_ops.py`: dataclasses, enums and typed wrappers over torch.ops.
std::string emit_python(const EmitInput& in);

/// The --explain table of one op.
std::string explain_op(const EmitInput& in, const lower::LoweredOp& op);

}  // namespace structop
