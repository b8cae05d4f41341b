// Phase 1c: YAML tree -> syntax::IdlFile. Knows the IDL's keys and their
// shapes (short and long forms), reports unknown / duplicate / mistyped keys,
// and runs the schema parser on `func:` lines and field types.
#pragma once

#include "base/diagnostics.h"
#include "load/yaml_tree.h"
#include "syntax/ast.h"

namespace structop {

/// Reads one parsed YAML document into `out`. Every problem goes to `diags`;
/// the parts that could be read are kept so later phases can report more.
void read_idl(const YamlDocument& doc, int file_id, Diagnostics& diags, syntax::IdlFile* out);

/// True if `s` is an identifier: `[A-Za-z_][A-Za-z0-9_]*`.
bool is_identifier(std::string_view s);

}  // namespace structop
