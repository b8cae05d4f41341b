// Types and alias annotations as torch's schema spells them (syntax/schema_parser.h).
#include <string>

#include "syntax/schema_parser.h"

namespace structop::syntax {

std::string to_schema(const AliasAnnotation& alias) {
  std::string out;
  for (size_t i = 0; i < alias.before.size(); ++i) out += (i ? "|" : "") + alias.before[i];
  if (alias.is_write) out += '!';
  if (alias.has_arrow) {
    out += " -> ";
    for (size_t i = 0; i < alias.after.size(); ++i) out += (i ? "|" : "") + alias.after[i];
  }
  return out;
}

void append_schema_type(
    std::string& out,
    std::string_view base,
    const AliasRef& alias,
    const Suffixes& suffixes) {
  out += base;
  if (alias) out += '(' + to_schema(*alias) + ')';
  for (const auto& s : suffixes) {
    if (s.kind == TypeSuffix::Kind::Optional) {
      out += '?';
    } else {
      out += '[';
      if (s.size >= 0) out += std::to_string(s.size);
      out += ']';
      if (s.alias) out += '(' + to_schema(*s.alias) + ')';
    }
  }
}

std::string to_schema(const TypeExpr& type) {
  std::string out;
  append_schema_type(out, type.base, type.alias, type.suffixes);
  return out;
}

}  // namespace structop::syntax
