// X_ops.py: frozen dataclasses for records, `str` enums, and one typed
// function per op that flattens its records in slot order and calls
// torch.ops.<namespace>.<op> through structop_runtime.Op. The op comes from
// the compiled extension (its C++ registration: kernels, meta, autograd) or
// is implemented in Python: each function has register_kernel /
// register_fake / register_autograd (structop_runtime.Op.function).
//
// Only what the IDL declares is generated: the support code every module
// shares (the checks that explain a failed call, pytree registration, the op
// object, Python kernels' autograd) is structop's Python runtime
// (runtime/python/structop_runtime/), which the module imports as `_rt` and
// asks for the runtime version it was made for.
//
// This file: the module around the parts (python_emitter.h), and the Python
// spellings they share.
#include "emit/python_emitter.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "base/quote.h"
#include "check/describe.h"
#include "check/names.h"
#include "emit/naming.h"
#include "version.h"

namespace structop {
namespace python {

using model::Builtin;

std::string quoted(std::string_view value) {
  const std::string literal = python_string_literal(value);  // "...", `"` as `\"`
  if (std::count(value.begin(), value.end(), '"') <= std::count(value.begin(), value.end(), '\''))
    return literal;
  std::string out = "'";
  for (size_t i = 1; i + 1 < literal.size(); ++i) {
    if (literal[i] == '\\' && literal[i + 1] == '"') {
      out += '"';
      ++i;
    } else if (literal[i] == '\\') {
      out += literal.substr(i++, 2);  // an escape: the backslash and what follows
    } else {
      out += literal[i] == '\'' ? std::string("\\'") : std::string(1, literal[i]);
    }
  }
  return out + "'";
}

Code call(const std::string& callee, std::vector<Code> args) {
  return callee + "(" + Code::list(std::move(args)) + ")";
}

Code tuple(std::vector<Code> items) {
  return "(" + Code::list(std::move(items), ListKind::Tuple) + ")";
}

Code list(std::vector<Code> items) {
  return "[" + Code::list(std::move(items), ListKind::Display) + "]";
}

Code dict(std::vector<Code> items) {
  return "{" + Code::list(std::move(items), ListKind::Display) + "}";
}

Code conditional(const Code& a, const Code& condition, const Code& b) {
  return "(" + Code::list({a, "if " + condition, "else " + b}, ListKind::Clauses) + ")";
}

Code conditional(const Code& a, const std::vector<Code>& any_of, const Code& b) {
  std::vector<Code> conditions;
  for (const Code& c : any_of) conditions.push_back(conditions.empty() ? c : "or " + c);
  return conditional(a, Code::list(std::move(conditions), ListKind::Clauses), b);
}

bool keeps_docstring(const std::string& text) {
  return python_keeps_docstring(text);
}

Code docstring(const std::string& text) {
  return keeps_docstring(text) ? Code(python_docstring(text, true)) : doc_assignment("", text);
}

Code doc_assignment(const std::string& owner, const std::string& text) {
  return (owner.empty() ? "" : owner + ".") +
         "__doc__ = " + Code::list({quoted(text)}, ListKind::Parenthesized);
}

std::string doc_text(std::string_view doc) {
  while (!doc.empty() && doc.back() == '\n') doc.remove_suffix(1);
  return std::string(doc);
}

Code enum_str(const std::string& value) {
  return call("getattr", {value, "\"_value_\"", value});
}

Code splat_flat(const std::string& value, bool optional, size_t leaves) {
  const Code flat = value + "." + kFlatAttr;
  if (!optional) return "*" + flat;
  return "*" + conditional(flat, value + " is not None", tuple(std::vector<Code>(leaves, "None")));
}

Code dynamic_flat(const model::Type& leaf, const Code& value) {
  const model::Type t = leaf.is_optional() ? leaf.inner() : leaf;
  return call(t.is_builtin(Builtin::Int) ? "_rt.dynamic_int" : "_rt.dynamic_float", {value});
}

bool passes_enum_str(const model::Type& leaf) {
  return leaf.is_enum() &&
         (leaf.suffixes.empty() || (leaf.suffixes.size() == 1 && leaf.is_optional()));
}

// ---- types, checks, values --------------------------------------------------

namespace {

std::string builtin_hint(Builtin b) {
  switch (b) {
    case Builtin::Tensor:
      return "torch.Tensor";
    case Builtin::Int:
    case Builtin::DeviceIndex:
    case Builtin::SymInt:
      return "int";
    case Builtin::Float:
      return "float";
    case Builtin::Bool:
    case Builtin::SymBool:
      return "bool";
    case Builtin::Str:
      return "str";
    case Builtin::Scalar:
      return "typing.Union[int, float, bool]";
    case Builtin::ScalarType:
      return "torch.dtype";
    case Builtin::Device:
      return "typing.Union[torch.device, str]";
    case Builtin::Layout:
      return "torch.layout";
    case Builtin::MemoryFormat:
      return "torch.memory_format";
    case Builtin::Generator:
      return "torch.Generator";
    default:
      return "typing.Any";
  }
}

std::string builtin_check(Builtin b) {
  switch (b) {
    case Builtin::Tensor:
      return "_rt.TENSOR";
    case Builtin::Int:
    case Builtin::DeviceIndex:
    case Builtin::SymInt:
      return "_rt.INT";
    case Builtin::Float:
      return "_rt.FLOAT";
    case Builtin::Bool:
    case Builtin::SymBool:
      return "_rt.BOOL";
    case Builtin::Str:
      return "_rt.STR";
    case Builtin::Scalar:
      return "_rt.SCALAR";
    case Builtin::ScalarType:
      return "_rt.DTYPE";
    case Builtin::Device:
      return "_rt.DEVICE";
    case Builtin::Layout:
      return "_rt.LAYOUT";
    case Builtin::MemoryFormat:
      return "_rt.MEMORY_FORMAT";
    default:
      return "_rt.ANY";
  }
}

}  // namespace

std::string Module::qualified(const lower::LoweredOp& lo) const {
  return quoted(m.namespace_ + "::" + lo.qualified_name);
}

std::string Module::hint(const model::Type& t, bool param) const {
  if (!t.suffixes.empty()) {
    model::Type inner = t.inner();
    if (t.is_optional()) return fmt::format("typing.Optional[{}]", hint(inner, param));
    return fmt::format(param ? "typing.Sequence[{}]" : "typing.List[{}]", hint(inner, param));
  }
  switch (t.kind) {
    case model::Type::Kind::Record:
      return api_name(record(t).name);
    case model::Type::Kind::Enum: {
      std::string name = api_name(enum_of(t).name);
      return param ? fmt::format("typing.Union[{}, str]", name) : name;
    }
    case model::Type::Kind::Builtin:
      // A dynamic number may also come as its 0-dim tensor (torch.export).
      return t.dynamic ? fmt::format("typing.Union[{}, torch.Tensor]", builtin_hint(t.builtin))
                       : builtin_hint(t.builtin);
  }
  return "typing.Any";
}

std::string Module::return_hint(const lower::LoweredOp& lo) const {
  if (lo.api_returns.empty()) return "None";
  if (lo.api_returns.size() == 1) return hint(lo.api_returns[0].type, false);
  std::vector<std::string> parts;
  for (const auto& r : lo.api_returns) parts.push_back(hint(r.type, false));
  return fmt::format("typing.Tuple[{}]", fmt::join(parts, ", "));
}

bool Module::uses_typing() const {
  auto typed = [](const std::string& h) { return h.find("typing.") != std::string::npos; };
  for (const auto& r : m.records) {
    if (r.from_include) continue;   // hinted in its own module
    if (r.takes_grad) return true;  // its <Record>Grad: typing.Optional fields
    for (const auto& f : r.fields) {
      if (typed(hint(f.type, false))) return true;
    }
  }
  for (const auto& lo : in.lowered.ops) {
    if (typed(return_hint(lo))) return true;
    for (const auto& p : m.ops[lo.op].params) {
      if (typed(hint(p.type, true))) return true;
    }
  }
  return false;
}

Code Module::check_spec(const model::Type& t) const {
  if (!t.suffixes.empty())
    return call(t.is_optional() ? "_rt.optional" : "_rt.list_of", {check_spec(t.inner())});
  switch (t.kind) {
    case model::Type::Kind::Record:
      return call("_rt.record", {api_name(record(t).name)});
    case model::Type::Kind::Enum:
      return call("_rt.enum_of", {api_name(enum_of(t).name)});
    case model::Type::Kind::Builtin:
      return t.dynamic ? call("_rt.dynamic", {builtin_check(t.builtin)}) : builtin_check(t.builtin);
  }
  return "_rt.ANY";
}

Code Module::literal(const lower::Value& v, bool as_list) const {
  using V = lower::Value::Kind;
  switch (v.kind) {
    case V::None:
      return "None";
    case V::Bool:
      return v.bool_value ? "True" : "False";
    case V::Int:
      return std::to_string(v.int_value);
    case V::Float:
      return v.text;
    case V::Str:
      return quoted(v.text);
    case V::Enum:
      return api_name(m.enums[static_cast<size_t>(v.decl)].name) + "." + api_name(v.text);
    case V::Constant:
      return model::find_constant(v.constant_type, v.text)->python;
    case V::Device:
      return call("torch.device", {quoted(v.text)});
    case V::List: {
      std::vector<Code> items;
      for (const auto& item : v.items) items.push_back(literal(item, false));
      return as_list ? list(std::move(items)) : tuple(std::move(items));
    }
    case V::Record: {
      // The fields the default sets, by keyword; lists as lists (what the
      // dataclass holds).
      const lower::RecordLayout& lay = layout(v.decl);
      std::vector<Code> args;
      for (size_t i = 0; i < v.given.size(); ++i) {
        if (v.given[i]) args.push_back(lay.fields[i].api_name + "=" + literal(v.items[i], true));
      }
      return call(api_name(m.records[static_cast<size_t>(v.decl)].name), std::move(args));
    }
  }
  return "None";
}

// ---- the module ---------------------------------------------------------------

namespace {

class ModuleEmitter {
 public:
  explicit ModuleEmitter(const EmitInput& in)
      : mod_(in), m_(in.module), p_(4, true, CodePrinter::Language::Python) {}

  std::string run() {
    prologue();
    included_imports();
    for (const auto& e : m_.enums) {
      if (!e.from_include) enum_class(p_, mod_, e);
    }
    for (const auto& r : m_.records) {
      if (!r.from_include) record_class(p_, mod_, r);
    }
    for (const auto& lo : mod_.in.lowered.ops) op_function(p_, mod_, lo);
    epilogue();
    return p_.str();
  }

 private:
  /// The standard library only as far as this IDL needs it (an unused
  /// import is a lint error).
  std::string imports() const {
    std::string out;
    auto declared_here = [](const auto& decl) { return !decl.from_include; };
    if (std::any_of(m_.records.begin(), m_.records.end(), declared_here))
      out += "import dataclasses\n";
    if (std::any_of(m_.enums.begin(), m_.enums.end(), declared_here)) out += "import enum\n";
    if (mod_.uses_typing()) out += "import typing\n";
    return out + (out.empty() ? "import torch" : "\nimport torch");
  }

  void prologue() {
    std::vector<Code> all = {"\"NAMESPACE\"", "\"STRUCTOPC_VERSION\"", "\"load_library\""};
    auto add = [&](const std::string& name) { all.push_back(quoted(name)); };
    for (const auto& e : m_.enums) add(api_name(e.name));
    for (const auto& r : m_.records) {
      add(api_name(r.name));
      if (r.takes_grad) add(api_name(lang::grad_record_name(r)));
    }
    for (const auto& lo : mod_.in.lowered.ops) add(api_name(lo.cpp_name));

    std::string doc =
        fmt::format("Python API for the `{}` ops (torch.ops.{}.*).", m_.namespace_, m_.namespace_);
    if (std::string user = doc_text(m_.doc); !user.empty()) doc += "\n\n" + user;
    doc += fmt::format(
        "\n\nLoad the compiled extension with load_library(path) first, or implement the\n"
        "ops in Python (op.register_kernel, register_fake, register_autograd). The\n"
        "functions here take records; torch.ops.{}.* takes the same ops flat.\n",
        m_.namespace_);
    p_.emit(
        {{"notice", generated_notice(mod_.in.version, mod_.in.source_name)},
         {"doc", docstring(doc)},
         {"imports", imports()},
         {"runtime", std::to_string(STRUCTOP_RUNTIME_VERSION_EXPECTED)},
         {"version", quoted(mod_.in.version)},
         {"ns_literal", quoted(m_.namespace_)},
         {"stem_literal", quoted(m_.stem)},
         {"all", "__all__ = " + list(all)}},
        R"py(
      # $notice$
      $doc$

      $imports$

      import structop_runtime as _rt

      # Raises ImportError if structop_runtime is not the version this file was generated for.
      _rt.require_version($runtime$, __name__)

      $all$

      NAMESPACE = $ns_literal$
      STRUCTOPC_VERSION = $version$
      _IDL_STEM = $stem_literal$


      def load_library(path: str) -> None:
          """Loads the compiled extension that registers these ops (no search: give its path);
          refused once ops of this namespace are implemented in Python."""
          _rt.load_library(path, NAMESPACE)
    )py");
  }

  // The records and enums of included IDL files are imported from the modules
  // generated from them (`<stem>_ops`, a sibling module in a package, else
  // top level on sys.path), so that every module of a project shares one
  // class per record.
  void included_imports() {
    std::map<int, std::vector<Code>> names;  // include index -> names
    for (const auto& e : m_.enums) {
      if (e.from_include) names[e.include].push_back(api_name(e.name));
    }
    for (const auto& r : m_.records) {
      if (!r.from_include) continue;
      names[r.include].push_back(api_name(r.name));
      if (r.takes_grad) names[r.include].push_back(api_name(lang::grad_record_name(r)));
    }
    if (names.empty()) return;
    Code relative, absolute;
    for (const auto& [include, imported] : names) {
      const std::string module = m_.includes[static_cast<size_t>(include)].stem + "_ops";
      const Code what = Code::list(imported, ListKind::Parenthesized);
      relative += (relative.empty() ? "" : "\n") + ("from ." + module + " import " + what);
      absolute += (absolute.empty() ? "" : "\n") + ("from " + module + " import " + what);
    }
    p_.line();
    p_.line();
    p_.emit(
        {{"relative", relative}, {"absolute", absolute}},
        R"py(
      # Records and enums of the included IDL files, from their own generated modules.
      if __package__:
          $relative$
      else:
          $absolute$
    )py");
  }

  void epilogue() {
    // torch.export.load (weights_only unpickling) accepts only allowed classes
    // (the modules of included IDL files allow theirs).
    std::vector<Code> classes;
    for (const auto& e : m_.enums) {
      if (!e.from_include) classes.push_back(api_name(e.name));
    }
    for (const auto& r : m_.records) {
      if (!r.from_include) classes.push_back(api_name(r.name));
    }
    if (classes.empty()) return;
    p_.line();
    p_.line();
    p_.line(call("torch.serialization.add_safe_globals", {list(classes)}));
  }

  Module mod_;
  const model::Module& m_;
  CodePrinter p_;
};

}  // namespace
}  // namespace python

std::string emit_python(const EmitInput& in) {
  return python::ModuleEmitter(in).run();
}

}  // namespace structop
