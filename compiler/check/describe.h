// Spelling checked types and signatures the way the user wrote them (record
// and enum names kept), for messages, comments in generated code and --explain.
#pragma once

#include <string>

#include "check/model.h"

namespace structop {

/// `WeightCfg`, `MaskType?`, `Tensor(a!)`, `int[2]`.
std::string describe_type(const model::Type& type, const model::Module& module);

/// A default as the user wrote it: `1.0`, `causal`, `float32`, `"text"`.
std::string describe_default(const model::Default& value);

/// The op's signature in IDL form: `op(Tensor x, WeightCfg cfg) -> Tensor`.
std::string original_signature(const model::Op& op, const model::Module& module);

}  // namespace structop
