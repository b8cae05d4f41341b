// Names in torch's schema language (the text of a `func:` line and of the
// lowered schema).
#pragma once

#include <string_view>

namespace structop::lang {

/// A word torch's schema parser (the TorchScript lexer) reserves: `class`,
/// `in`, `if`, `None`, `True`... It cannot name anything in a schema.
bool is_schema_keyword(std::string_view name);

}  // namespace structop::lang
