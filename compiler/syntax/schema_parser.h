// Phase 1b: the schema grammar of PyTorch's native_functions.yaml, used for
// `func:` lines, record field types (`float = 1.0`) and default literals.
//
//   func    := NAME ('.' OVERLOAD)? '(' [param (',' param)*] ')' '->' returns
//   param   := '*' | type NAME ['=' literal]
//   type    := NAME ['(' alias ')'] ('?' | '[' [INT] ']' ['(' alias ')'])*
//   alias   := set ('|' set)* ['!'] ['->' set ('|' set)*]        set := NAME | '*'
//   returns := '(' ')' | '(' ret (',' ret)* ')' | ret            ret := type [NAME]
//   literal := None | True | False | NUMBER | STRING | NAME | '[' [literal (',' literal)*] ']'
//            | '{' [NAME ':' literal (',' NAME ':' literal)*] '}'     (a record default)
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/diagnostics.h"
#include "syntax/ast.h"

namespace structop::syntax {

/// Where a piece of text came from, so errors inside it get exact columns.
struct TextOrigin {
  Span span;              // the first character of the text
  bool verbatim = false;  // the text appears byte for byte at `span`

  /// The span of `length` bytes at `offset` into the text (the whole text's
  /// start if the text is not verbatim, e.g. a folded YAML scalar).
  Span at(size_t offset, size_t length) const {
    if (!verbatim) return span;
    return span.shifted(static_cast<int>(offset), static_cast<int>(length));
  }
};

/// Parses a whole `func:` line. Reports problems to `diags` (prefixed with
/// "op `NAME`: " once the name is read); nullopt on error.
std::optional<FuncSig> parse_func(
    std::string_view text,
    const TextOrigin& origin,
    Diagnostics& diags);

/// Parses `TYPE` or `TYPE = DEFAULT` (the short form of a record field).
/// `context` (e.g. "field `Cfg.x`") prefixes every message.
bool parse_field_spec(
    std::string_view text,
    const TextOrigin& origin,
    Diagnostics& diags,
    TypeExpr* type,
    std::optional<Literal>* default_value,
    std::string_view context = {});

/// Parses a lone default literal (the long form's `default:`).
std::optional<Literal> parse_literal(
    std::string_view text,
    const TextOrigin& origin,
    Diagnostics& diags,
    std::string_view context = {});

/// Schema spelling of a type: `Tensor(a!)[]?`.
std::string to_schema(const TypeExpr& type);
/// Appends the schema spelling of a type given by its parts (no temporaries:
/// the lowering prints every slot of every op with it).
void append_schema_type(
    std::string& out,
    std::string_view base,
    const AliasRef& alias,
    const Suffixes& suffixes);
/// Schema spelling of an alias annotation, without parentheses: `a! -> *`.
std::string to_schema(const AliasAnnotation& alias);

}  // namespace structop::syntax
