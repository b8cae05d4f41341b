// Phase 2: check and resolve. Turns the syntax trees of a main file and its
// includes into a model::Module: names resolved, types checked against where
// they are used, defaults checked against their types, records ordered and
// free of cycles, op signatures checked. Every problem goes to Diagnostics.
#pragma once

#include "base/diagnostics.h"
#include "check/model.h"
#include "load/idl_loader.h"

namespace structop {

/// Resolves `idl` (main file last). The result is meaningful only if no
/// error was reported.
model::Module resolve(const LoadedIdl& idl, const SourceManager& sources, Diagnostics& diags);

}  // namespace structop
