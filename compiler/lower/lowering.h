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

/// What lowering decides beyond what checking an IDL needs: facts only the
/// emitters print. `structopc --check` needs neither.
struct LowerOptions {
  /// The record layouts (the C++ and Python emitters; not JSON, and for
  /// records nested a thousand levels deep their leaf paths are cubic in the
  /// depth).
  bool record_layouts = true;
  /// Each op's API facts (LoweredOp::api_params, api_returns, kernels, grad
  /// slots, C++ names of record slots, locals): every emitter and --explain.
  bool api_facts = true;
  /// Keep every lowered op in LoweredModule::ops, with its schema text (the
  /// emitters and --explain read them). Without it each op is lowered for
  /// its diagnostics alone, in memory the next op reuses while it is in
  /// cache, its schema is checked but not printed, and `ops` stays empty.
  bool keep_ops = true;
};

/// Lowers every op of `module`. Problems (unknown `mutates:` names, lowered
/// name collisions...) go to `diags`; they do not depend on `options`.
lower::LoweredModule lower_module(
    const model::Module& module,
    Diagnostics& diags,
    const LowerOptions& options = {});

/// The schema spelling of a default for a parameter of `type`, or nullopt
/// when torch's schema cannot express it (the APIs still apply it).
std::optional<std::string> schema_default(const model::Type& type, const model::Default& value);

/// The schema spelling of a (lowered) type: enums become `str`.
std::string schema_type(const model::Type& type);

}  // namespace structop
