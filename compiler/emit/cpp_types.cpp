#include "emit/cpp_types.h"

#include <fmt/format.h>

#include "emit/code_printer.h"
#include "emit/naming.h"
#include "lang/generated_names.h"

namespace structop {
namespace {

using model::Builtin;

bool is(const model::Type& t, Builtin b) {
  return t.is_builtin(b);
}

/// The number a dynamic `int` or `float` holds in C++ (structop::Dynamic<T>).
const char* dynamic_number(const model::Type& t) {
  return is(t, Builtin::Int) ? "int64_t" : "double";
}

}  // namespace

std::string CppTypes::qualify(const std::string& ns, const std::string& name) const {
  return ns == m_.cpp_namespace && !fully_qualified_ ? name : "::" + ns + "::" + name;
}

std::string CppTypes::record_name(int decl) const {
  const model::Record& r = m_.records[static_cast<size_t>(decl)];
  return qualify(r.cpp_namespace, api_name(r.name));
}

std::string CppTypes::enum_name(int decl) const {
  const model::Enum& e = m_.enums[static_cast<size_t>(decl)];
  return qualify(e.cpp_namespace, api_name(e.name));
}

std::string CppTypes::grad_record_name(int decl) const {
  const model::Record& r = m_.records[static_cast<size_t>(decl)];
  return qualify(r.cpp_namespace, lang::grad_record_name(r));
}

std::string CppTypes::grad_type(const model::Type& t) const {
  if (t.is_record_list()) return fmt::format("std::vector<{}>", grad_record_name(t.decl));
  if (t.is_record()) return grad_record_name(t.decl);
  return t.takes_grad_list() ? "std::vector<structop::Grad>" : "structop::Grad";
}

std::string CppTypes::value_type(const model::Type& t) const {
  if (!t.suffixes.empty()) {
    std::string inner = value_type(t.inner());
    return t.is_optional() ? fmt::format("c10::optional<{}>", inner)
                           : fmt::format("std::vector<{}>", inner);
  }
  switch (t.kind) {
    case model::Type::Kind::Record:
      return record_name(t.decl);
    case model::Type::Kind::Enum:
      return enum_name(t.decl);
    case model::Type::Kind::Builtin:
      break;
  }
  if (t.dynamic) return fmt::format("structop::Dynamic<{}>", dynamic_number(t));
  switch (t.builtin) {
    case Builtin::Tensor:
      return "at::Tensor";
    case Builtin::Int:
      return "int64_t";
    case Builtin::SymInt:
      return "c10::SymInt";
    case Builtin::Float:
      return "double";
    case Builtin::Bool:
      return "bool";
    case Builtin::Str:
      return "std::string";
    case Builtin::Scalar:
      return "at::Scalar";
    case Builtin::ScalarType:
      return "at::ScalarType";
    case Builtin::Device:
      return "at::Device";
    case Builtin::Layout:
      return "at::Layout";
    case Builtin::MemoryFormat:
      return "at::MemoryFormat";
    case Builtin::Generator:
      return "at::Generator";
    case Builtin::Dimname:
      return "at::Dimname";
    case Builtin::Stream:
      return "c10::Stream";
    case Builtin::Storage:
      return "at::Storage";
    case Builtin::QScheme:
      return "at::QScheme";
    case Builtin::DeviceIndex:
      return "c10::DeviceIndex";
    case Builtin::SymBool:
      return "c10::SymBool";
  }
  return "void";
}

namespace {

/// An enum type as the schema carries it: `str` with the same suffixes.
model::Type as_str(model::Type t) {
  t.kind = model::Type::Kind::Builtin;
  t.builtin = Builtin::Str;
  t.decl = -1;
  return t;
}

/// `E[]` or `E[]?` (the resolver allows no other list of an enum).
bool is_enum_list(const model::Type& t) {
  return t.is_enum() && t.is_list_or_optional_list();
}

}  // namespace

CppTypes::FlatSpelling CppTypes::flat_spelling(const model::Type& t) const {
  if (t.is_enum()) return flat_spelling(as_str(t));
  if (t.dynamic)  // a 0-dim CPU tensor (the resolver allows `int`, `float`, optional below a record)
    return {t.is_optional() ? "c10::optional<at::Tensor>" : "at::Tensor", true};
  // Lists and optionals first: the dispatcher's spellings differ per element.
  if (t.is_list()) {
    model::Type e = t.inner();
    if (is(e, Builtin::Tensor)) {
      if (e.is_optional()) return {"c10::List<c10::optional<at::Tensor>>", true};
      return "at::TensorList";
    }
    if (!e.suffixes.empty()) return {fmt::format("c10::List<{}>", value_type(e)), true};
    switch (e.builtin) {
      case Builtin::Int:
        return "at::IntArrayRef";
      case Builtin::SymInt:
        return "c10::SymIntArrayRef";
      case Builtin::Float:
        return "at::ArrayRef<double>";
      case Builtin::Bool:
        return {"c10::List<bool>", true};
      case Builtin::Str:
        return {"std::vector<std::string>", true};
      case Builtin::Scalar:
        return "at::ArrayRef<at::Scalar>";
      case Builtin::Dimname:
        return "at::DimnameList";
      default:
        return {fmt::format("c10::List<{}>", value_type(e)), true};
    }
  }
  if (t.is_optional()) {
    model::Type e = t.inner();
    if (e.is_list()) {
      model::Type item = e.inner();
      if (is(item, Builtin::Int) && item.suffixes.empty()) return "at::OptionalIntArrayRef";
      if (is(item, Builtin::SymInt) && item.suffixes.empty())
        return "c10::OptionalArrayRef<c10::SymInt>";
      if (is(item, Builtin::Float) && item.suffixes.empty())
        return "c10::optional<at::ArrayRef<double>>";
      return {fmt::format("c10::optional<c10::List<{}>>", value_type(item)), true};
    }
    if (is(e, Builtin::Str)) return "c10::optional<c10::string_view>";
    if (is(e, Builtin::SymInt)) return "c10::optional<c10::SymInt>";
    std::string inner = value_type(e);
    bool by_ref = is(e, Builtin::Tensor) || is(e, Builtin::Scalar) || is(e, Builtin::Generator);
    return {fmt::format("c10::optional<{}>", inner), by_ref};
  }
  switch (t.builtin) {
    case Builtin::Tensor:
      return {"at::Tensor", true};
    case Builtin::SymInt:
      return "c10::SymInt";
    case Builtin::Str:
      return "c10::string_view";
    case Builtin::Scalar:
      return {"at::Scalar", true};
    case Builtin::Generator:
      return {"at::Generator", true};
    case Builtin::Storage:
      return {"at::Storage", true};
    default:
      return value_type(t);
  }
}

std::string CppTypes::flat_type(const model::Type& t) const {
  FlatSpelling f = flat_spelling(t);
  return f.by_const_ref ? "const " + f.type + "&" : std::move(f.type);
}

std::string CppTypes::param_type(const model::Type& t) const {
  if (t.is_record()) return "const " + value_type(t) + "&";
  if (t.dynamic) return value_type(t);  // structop::Dynamic<T>, by value
  // An enum is `E`, `E?`, `E[]` or `E[]?` (the resolver rejects other suffixes).
  if (is_enum_list(t)) return fmt::format("const {}&", value_type(t));
  if (t.is_enum())
    return t.is_optional() ? fmt::format("c10::optional<{}>", enum_name(t.decl))
                           : enum_name(t.decl);
  return flat_type(t);
}

std::string CppTypes::output_type(const model::Type& t) const {
  if (t.is_list() && is(t.inner(), Builtin::Tensor)) return "std::vector<at::Tensor>";
  if (t.is_list()) return fmt::format("std::vector<{}>", value_type(t.inner()));
  return value_type(t);
}

std::string CppTypes::return_type(const std::vector<model::Type>& outputs) const {
  if (outputs.empty()) return "void";
  if (outputs.size() == 1) return output_type(outputs[0]);
  std::string parts;
  for (const auto& o : outputs) parts += (parts.empty() ? "" : ", ") + output_type(o);
  return "std::tuple<" + parts + ">";
}

Code CppTypes::flat_to_value(const model::Type& t, const Code& expr, const std::string& path)
    const {
  if (t.is_enum()) {
    return fmt::format(
               "structop::parse_{}enum{}<{}>(",
               t.is_optional() ? "optional_" : "",
               is_enum_list(t) ? "_list" : "",
               enum_name(t.decl)) +
           Code::list({expr, path}) + ")";
  }
  if (t.dynamic)  // the number, or the tensor while torch traces (structop/runtime.h)
    return fmt::format("structop::to_dynamic<{}>(", dynamic_number(t)) + Code::list({expr, path}) +
           ")";
  if (same_as_flat(t)) return expr;
  // Spelled by the runtime (structop/convert.h): to_value<T>(flat).
  return fmt::format("structop::to_value<{}>(", value_type(t)) + Code::list({expr}) + ")";
}

std::string CppTypes::stack_arg(const model::Type& t, const std::string& ivalue) const {
  return fmt::format("structop::arg<{}>({})", flat_type(t), ivalue);
}

std::string CppTypes::stack_leaf(const model::Type& t, const std::string& ivalue) const {
  return fmt::format("structop::arg<{}>({})", flat_spelling(t).type, ivalue);
}

Code CppTypes::leaf_list(
    const model::Type& leaf,
    const std::string& ivalue,
    const std::string& path) const {
  const bool stack_list = leaf.is_builtin(Builtin::Tensor) ||
                          (leaf.suffixes.empty() &&
                           (leaf.is_builtin(Builtin::Float) || leaf.is_builtin(Builtin::Int) ||
                            leaf.is_builtin(Builtin::Bool)));
  if (stack_list) return fmt::format("structop::leaf_list<{}>({})", value_type(leaf), ivalue);
  model::Type list = leaf;
  list.suffixes.push_back({syntax::TypeSuffix::Kind::List, -1, nullptr});
  return flat_to_value(list, stack_arg(list, ivalue), path);
}

Code CppTypes::value_to_flat(const model::Type& t, const Code& expr) const {
  // The argument as a list, so that the printer breaks before it when the
  // call does not fit on one line.
  const Code arg = "(" + Code::list({expr}) + ")";
  if (t.is_enum())  // a single spelling as its IValue, made once (convert.h)
    return fmt::format(
               "structop::{}{}",
               t.is_optional() ? "optional_" : "",
               is_enum_list(t) ? "enum_name_list" : "enum_ivalue") +
           arg;
  if (same_as_flat(t)) return expr;
  return fmt::format("structop::to_flat<{}>", flat_type(t)) + arg;
}

bool CppTypes::same_as_flat(const model::Type& t) const {
  return flat_spelling(t).type == value_type(t);
}

Code CppTypes::value(const model::Type& t, const lower::Value& v) const {
  using V = lower::Value::Kind;
  switch (v.kind) {
    case V::None:
      return "c10::nullopt";
    case V::Bool:
      return v.bool_value ? "true" : "false";
    case V::Int:
      return v.int_value == INT64_MIN ? "INT64_MIN" : std::to_string(v.int_value);
    case V::Float:
      return v.text;  // `1.`, `.5` and `1e5` are valid C++ doubles
    case V::Str:
      // A literal ends at its first NUL for std::string and c10::string_view
      // alike; a std::string of the right length converts to either.
      if (v.text.find('\0') != std::string::npos)
        return fmt::format("std::string({}, {})", cpp_string_literal(v.text), v.text.size());
      return cpp_string_literal(v.text);
    case V::Enum:
      return fmt::format("{}::{}", enum_name(v.decl), api_name(v.text));
    case V::Constant:
      return model::find_constant(v.constant_type, v.text)->cpp;
    case V::Device:
      return fmt::format("at::Device({})", cpp_string_literal(v.text));
    case V::List: {
      model::Type element = (t.is_optional() ? t.inner() : t).inner();
      Code items;
      for (const auto& item : v.items) items += (items.empty() ? "" : ", ") + value(element, item);
      return "{" + items + "}";
    }
    case V::Record: {
      // Aggregate initialization, each value named in a comment, up to the
      // last field the default sets (the rest keep their member initializers).
      if (v.items.empty()) return "{}";
      const model::Record& r = m_.records[static_cast<size_t>(v.decl)];
      size_t count = v.given.size();
      while (count > 0 && !v.given[count - 1]) --count;
      std::vector<Code> items;
      for (size_t i = 0; i < count; ++i) {
        items.push_back(
            fmt::format("/*{}=*/", api_name(r.fields[i].name)) +
            value(r.fields[i].type, v.items[i]));
      }
      return record_name(v.decl) + "{" + Code::list(items) + "}";
    }
  }
  return "{}";
}

}  // namespace structop
