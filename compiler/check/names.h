// Names: which IDL names the generated code can use (docs/idl.md, "Names"). The
// checker reports the names that cannot work; lowering and the emitters
// spell the rest with the functions of lang/ (the target languages' names),
// so that they all agree.
//  1. A word torch's schema parser reserves (`class`, `in`, `None`...) cannot
//     name an op, overload, parameter, return or record field (fields become
//     schema parameters when flattened): an error (check/name_rules.h).
//  2. A C++ or Python keyword, or a predefined C/C++ macro (`from`, `errno`,
//     `NULL`, `linux`), stays as it is in the schema and gets a trailing `_`
//     in the generated C++ and Python (lang::api_spelling).
//  3. A record, enum or op cannot take a name that the generated code gives
//     to something else (`<Record>Grad`, `<op>_grads`, `op_<op>`, `_<op>_op`,
//     ...) or uses itself (`torch`, `kernels`, `load_library`, ...): an error
//     (lang/generated_names.h has the names, this file the check).
//  4. The generated functions' own locals (`ks`, `ctx`, `error`...) give way
//     to the names of parameters and fields: lowering numbers them (`ctx2`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"
#include "check/model.h"
#include "lang/generated_names.h"
#include "lang/python_names.h"

namespace structop {

/// Reports records, enums, ops, parameters and fields whose names the
/// generated code cannot use (rules 3 and parts of 1): names taken by
/// generated code, and parameters or fields named like a type. Run by the
/// resolver on the module it built.
void check_generated_name_clashes(const model::Module& m, Diagnostics& diags);

}  // namespace structop
