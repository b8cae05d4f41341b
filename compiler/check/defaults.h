// Default values: does a schema literal fit a type? Shared by record fields
// and op parameters.
#pragma once

#include <optional>
#include <string>

#include "base/diagnostics.h"
#include "check/describe.h"
#include "check/model.h"
#include "check/subject.h"

namespace structop {

/// Checks `lit` against `type` (enums are looked up in `module`). Returns the
/// checked default, or nullopt after reporting why it does not fit. `what`
/// names the field or parameter for messages.
std::optional<model::Default> check_default(
    const model::Type& type,
    const syntax::Literal& lit,
    const Subject& what,
    bool from_yaml_string,
    const model::Module& module,
    Diagnostics& diags);

}  // namespace structop
