#include "check/describe.h"

#include "syntax/schema_parser.h"

namespace structop {

std::string describe_type(const model::Type& type, const model::Module& module) {
  syntax::TypeExpr t;
  switch (type.kind) {
    case model::Type::Kind::Builtin:
      t.base = model::schema_name(type.builtin);
      break;
    case model::Type::Kind::Enum:
      t.base = module.enums[static_cast<size_t>(type.decl)].name;
      break;
    case model::Type::Kind::Record:
      t.base = module.records[static_cast<size_t>(type.decl)].name;
      break;
  }
  t.alias = type.alias;
  t.suffixes = type.suffixes;
  return syntax::to_schema(t);
}

std::string describe_default(const model::Default& value) {
  return value.literal.text;
}

std::string original_signature(const model::Op& op, const model::Module& module) {
  std::string out = op.qualified_name() + "(";
  bool star = false;
  for (size_t i = 0; i < op.params.size(); ++i) {
    const model::Param& p = op.params[i];
    if (i) out += ", ";
    if (p.kwarg_only && !star) {
      out += "*, ";
      star = true;
    }
    out += describe_type(p.type, module) + " " + p.name;
    if (p.default_value) out += "=" + describe_default(*p.default_value);
  }
  out += ") -> ";
  std::string rets;
  bool named = false;
  for (const auto& r : op.returns) {
    if (!rets.empty()) rets += ", ";
    rets += describe_type(r.type, module);
    if (!r.name.empty()) {
      rets += " " + r.name;
      named = true;
    }
  }
  return out + (op.returns.size() == 1 && !named ? rets : "(" + rets + ")");
}

}  // namespace structop
