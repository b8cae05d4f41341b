// Phase 3: lowering. Flattens record parameters into leaves (depth first,
// named `param__field`), resolves `mutates:` and `meta:` names against them,
// decides which defaults the schema can carry (a positional parameter keeps
// its schema default only when every later positional one has one too),
// prints and self-checks each schema, and decides every fact the emitters
// print: C++ names, kernels, grad slots, typed defaults, record layouts.
#pragma once

#include "base/diagnostics.h"
#include "check/model.h"
#include "lower/lowered.h"

namespace structop {

/// Lowers every op of `module`. Problems (unknown `mutates:` names, lowered
/// name collisions...) go to `diags`. The record layouts are only computed
/// with `record_layouts` (the C++ and Python emitters need them; `--check`
/// and JSON do not, and for records nested a thousand levels deep their
/// leaf paths are cubic in the depth).
lower::LoweredModule lower_module(
    const model::Module& module,
    Diagnostics& diags,
    bool record_layouts = true);

/// The schema spelling of a default for a parameter of `type`, or nullopt
/// when torch's schema cannot express it (the APIs still apply it).
std::optional<std::string> schema_default(const model::Type& type, const model::Default& value);

/// The schema spelling of a (lowered) type: enums become `str`.
std::string schema_type(const model::Type& type);

}  // namespace structop
