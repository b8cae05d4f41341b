// X_ops.py: frozen dataclasses for records, `str` enums, and one typed
// function per op that flattens its records in slot order and calls
// torch.ops.<namespace>.<op>. The op comes from the compiled extension (its
// C++ registration: kernels, meta, autograd) or is implemented in Python:
// each function has register_kernel / register_fake / register_autograd
// (structop_runtime.python_kernels), for which the module generates, per
// op, `_<op>_records` (straight-line code that turns the flat arguments
// torch passes to a Python kernel back into records) and, per record with
// gradients, a `<Record>Grad` dataclass for Python backwards.
//
// Calls take a fast path (flatten and call); only when that fails does the
// module walk the arguments to explain which parameter or field path has the
// wrong type (a TypeError naming op, parameter and field).
//
// Only what the IDL declares is generated: the support code every module
// shares (the checks that explain a failed call, pytree registration) is
// structop's Python runtime, runtime/python/structop_runtime.py.in, which the
// module imports as `_rt` and asks for the runtime version it was made for.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "check/describe.h"
#include "check/names.h"
#include "emit/code_printer.h"
#include "emit/emitters.h"
#include "emit/naming.h"
#include "version.h"

namespace structop {
namespace {

using model::Builtin;

/// A Python tuple display: `()`, `(a,)`, `(a, b)`.
std::string py_tuple(const std::vector<std::string>& items) {
  if (items.size() == 1) return "(" + items[0] + ",)";
  return fmt::format("({})", fmt::join(items, ", "));
}

class PythonEmitter {
 public:
  explicit PythonEmitter(const EmitInput& in) : in_(in), m_(in.module), p_(4) {}

  std::string run() {
    prologue();
    included_imports();
    for (const auto& e : m_.enums) {
      if (!e.from_include) enum_class(e);
    }
    for (const auto& r : m_.records) {
      if (!r.from_include) record_class(r);
    }
    for (const auto& lo : in_.lowered.ops) op_function(lo);
    epilogue();
    return p_.str();
  }

 private:
  // ---- names and types -----------------------------------------------------

  const model::Record& record(const model::Type& t) const {
    return m_.records[static_cast<size_t>(t.decl)];
  }
  const model::Enum& enum_of(const model::Type& t) const {
    return m_.enums[static_cast<size_t>(t.decl)];
  }

  std::string builtin_hint(Builtin b) const {
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

  /// Type hint; `param` widens enums to accept their strings, and lists to
  /// any sequence (tuples too); returned lists are lists.
  std::string hint(const model::Type& t, bool param) const {
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
        return builtin_hint(t.builtin);
    }
    return "typing.Any";
  }

  /// The check (structop_runtime) that explains a failed call.
  std::string check_spec(const model::Type& t) const {
    if (!t.suffixes.empty()) {
      return fmt::format(
          t.is_optional() ? "_rt.optional({})" : "_rt.list_of({})",
          check_spec(t.inner()));
    }
    switch (t.kind) {
      case model::Type::Kind::Record:
        return fmt::format("_rt.record({})", api_name(record(t).name));
      case model::Type::Kind::Enum:
        return fmt::format("_rt.enum_of({})", api_name(enum_of(t).name));
      case model::Type::Kind::Builtin:
        switch (t.builtin) {
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
    return "_rt.ANY";
  }

  /// Whether any type hint names `typing` (else the module does not import it).
  bool uses_typing() const {
    auto typed = [](const std::string& h) { return h.find("typing.") != std::string::npos; };
    for (const auto& r : m_.records) {
      if (r.from_include) continue;   // hinted in its own module
      if (r.takes_grad) return true;  // its <Record>Grad: typing.Optional fields
      for (const auto& f : r.fields) {
        if (typed(hint(f.type, false))) return true;
      }
    }
    for (const auto& lo : in_.lowered.ops) {
      if (typed(return_hint(lo))) return true;
      for (const auto& p : m_.ops[lo.op].params) {
        if (typed(hint(p.type, true))) return true;
      }
    }
    return false;
  }

  // ---- literals ------------------------------------------------------------

  /// A value (lowering decided what it means) as a Python expression. Lists
  /// become tuples in signatures (immutable) and lists in dataclass factories.
  std::string literal(const lower::Value& v, bool as_list) const {
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
        return python_string_literal(v.text);
      case V::Enum:
        return fmt::format(
            "{}.{}",
            api_name(m_.enums[static_cast<size_t>(v.decl)].name),
            api_name(v.text));
      case V::Constant:
        return model::find_constant(v.constant_type, v.text)->python;
      case V::Device:
        return fmt::format("torch.device({})", python_string_literal(v.text));
      case V::List: {
        std::vector<std::string> items;
        for (const auto& item : v.items) items.push_back(literal(item, false));
        std::string joined = fmt::format("{}", fmt::join(items, ", "));
        if (as_list) return "[" + joined + "]";
        return items.size() == 1 ? "(" + joined + ",)" : "(" + joined + ")";
      }
      case V::Record: {
        // The fields the default sets, by keyword; lists as lists (what the
        // dataclass holds).
        const lower::RecordLayout& layout = in_.lowered.records[static_cast<size_t>(v.decl)];
        std::vector<std::string> args;
        for (size_t i = 0; i < v.given.size(); ++i) {
          if (v.given[i])
            args.push_back(layout.fields[i].api_name + "=" + literal(v.items[i], true));
        }
        return fmt::format(
            "{}({})",
            api_name(m_.records[static_cast<size_t>(v.decl)].name),
            fmt::join(args, ", "));
      }
    }
    return "None";
  }

  // ---- sections ------------------------------------------------------------

  void prologue() {
    std::vector<std::string> all = {"NAMESPACE", "STRUCTOPC_VERSION", "load_library"};
    for (const auto& e : m_.enums) all.push_back(api_name(e.name));
    for (const auto& r : m_.records) {
      all.push_back(api_name(r.name));
      if (r.takes_grad) all.push_back(api_name(model::grad_record_name(r)));
    }
    for (const auto& lo : in_.lowered.ops) all.push_back(api_name(lo.cpp_name));
    std::string all_list;
    for (const auto& n : all) all_list += fmt::format("    {},\n", python_string_literal(n));
    if (!all_list.empty()) all_list.pop_back();

    // The standard library only as far as this IDL needs it (an unused import
    // is a lint error).
    std::string imports;
    auto declared_here = [](const auto& decl) { return !decl.from_include; };
    if (std::any_of(m_.records.begin(), m_.records.end(), declared_here))
      imports += "import dataclasses\n";
    if (std::any_of(m_.enums.begin(), m_.enums.end(), declared_here)) imports += "import enum\n";
    if (uses_typing()) imports += "import typing\n";
    imports += imports.empty() ? "import torch" : "\nimport torch";

    std::string doc =
        fmt::format("Python API for the `{}` ops (torch.ops.{}.*).", m_.namespace_, m_.namespace_);
    if (std::string user = doc_text(m_.doc); !user.empty()) doc += "\n\n" + user;
    doc += fmt::format(
        "\n\nLoad the compiled extension with load_library(path) first, or implement the\n"
        "ops in Python (op.register_kernel, register_fake, register_autograd). The\n"
        "functions here take records; torch.ops.{}.* takes the same ops flat.\n",
        m_.namespace_);
    p_.emit(
        {{"notice", generated_notice(in_.version, in_.source_name)},
         {"doc",
          python_keeps_docstring(doc) ? python_docstring(doc, true)
                                      : "__doc__ = " + python_string_literal(doc)},
         {"imports", imports},
         {"runtime", std::to_string(STRUCTOP_RUNTIME_VERSION_EXPECTED)},
         {"version", python_string_literal(in_.version)},
         {"ns_literal", python_string_literal(m_.namespace_)},
         {"stem_literal", python_string_literal(m_.stem)},
         {"all", all_list}},
        R"py(
      # $notice$
      $doc$
      $imports$

      import structop_runtime as _rt

      # Raises ImportError if structop_runtime is not the version this file was generated for.
      _rt.require_version($runtime$, __name__)

      __all__ = [
      $all$
      ]

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
    std::map<int, std::vector<std::string>> names;  // include index -> names
    for (const auto& e : m_.enums) {
      if (e.from_include) names[e.include].push_back(api_name(e.name));
    }
    for (const auto& r : m_.records) {
      if (!r.from_include) continue;
      names[r.include].push_back(api_name(r.name));
      if (r.takes_grad) names[r.include].push_back(api_name(model::grad_record_name(r)));
    }
    if (names.empty()) return;
    std::string relative, absolute;
    for (const auto& [include, list] : names) {
      std::string module = m_.includes[static_cast<size_t>(include)].stem + "_ops";
      std::string imported = fmt::format("{}", fmt::join(list, ", "));
      relative += fmt::format("from .{} import {}\n", module, imported);
      absolute += fmt::format("from {} import {}\n", module, imported);
    }
    relative.pop_back();
    absolute.pop_back();
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
    std::vector<std::string> classes;
    for (const auto& e : m_.enums) {
      if (!e.from_include) classes.push_back(api_name(e.name));
    }
    for (const auto& r : m_.records) {
      if (!r.from_include) classes.push_back(api_name(r.name));
    }
    if (!classes.empty()) {
      p_.line();
      p_.line();
      p_.line(fmt::format("torch.serialization.add_safe_globals([{}])", fmt::join(classes, ", ")));
    }
  }

  void enum_class(const model::Enum& e) {
    std::string values;
    for (const auto& v : e.values)
      values += fmt::format("{} = {}\n", api_name(v), python_string_literal(v));
    values.pop_back();
    p_.line();
    p_.line();
    p_.emit(
        {{"name", api_name(e.name)},
         {"doc", class_doc(or_default(e.doc, "Enum `" + e.name + "` (lowered to str)."))},
         {"values", values}},
        R"py(
      class $name$(str, enum.Enum):
          $doc$

          $values$

          def __str__(self) -> str:
              return self.value
    )py");
  }

  /// A doc as the generated `__doc__`s hold it: without trailing line breaks.
  static std::string doc_text(std::string_view doc) {
    while (!doc.empty() && doc.back() == '\n') doc.remove_suffix(1);
    return std::string(doc);
  }

  /// doc_text(doc), or `fallback` if that is empty.
  static std::string or_default(std::string_view doc, std::string fallback) {
    std::string text = doc_text(doc);
    return text.empty() ? fallback : text;
  }

  /// The first statement of a class body: its docstring, or, where Python
  /// would clean the docstring's text (python_keeps_docstring), an
  /// assignment to `__doc__`, so that `__doc__` is the text on every Python.
  static std::string class_doc(const std::string& text) {
    return python_keeps_docstring(text) ? python_docstring(text)
                                        : "__doc__ = " + python_string_literal(text);
  }

  void record_class(const model::Record& r) {
    // A field without default after one with a default needs keyword-only
    // construction (Python 3.10+); otherwise records keep positional order.
    bool seen_default = false, kw_only = false;
    std::vector<std::string> specs, children, statics;
    std::string fields, doc = or_default(r.doc, "Record `" + r.name + "`.");
    std::string attrs;
    const lower::RecordLayout& layout =
        in_.lowered.records[static_cast<size_t>(&r - m_.records.data())];
    for (size_t fi = 0; fi < r.fields.size(); ++fi) {
      const model::Field& f = r.fields[fi];
      const std::optional<lower::Value>& default_value = layout.fields[fi].default_value;
      std::string name = layout.fields[fi].api_name;
      std::string value;
      if (default_value) {
        // A list or a record is built afresh for each instance (a lambda, not
        // the class itself: torch.compile (2.13) cannot trace a dataclass
        // default_factory that is a class).
        value = (f.type.is_list() && default_value->kind == lower::Value::Kind::List) ||
                        f.type.is_plain_record()
                    ? fmt::format(
                          " = dataclasses.field(default_factory=lambda: {})",
                          literal(*default_value, true))
                    : " = " + literal(*default_value, false);
      } else if (f.type.is_plain_record() && record(f.type).all_defaulted) {
        value = fmt::format(
            " = dataclasses.field(default_factory=lambda: {}())",
            api_name(record(f.type).name));
      }
      if (!value.empty())
        seen_default = true;
      else if (seen_default)
        kw_only = true;
      fields += fmt::format("{}: {}{}\n", name, hint(f.type, false), value);
      specs.push_back(fmt::format("({}, {})", python_string_literal(name), check_spec(f.type)));
      (f.type.is_record() || f.type.holds_tensor() ? children : statics)
          .push_back(python_string_literal(name));
      if (std::string text = doc_text(f.doc); !text.empty()) {
        // Continuation lines indented under the field's name.
        for (size_t at = 0; (at = text.find('\n', at)) != std::string::npos; at += 9)
          text.insert(at + 1, 8, ' ');
        attrs += fmt::format("    {}: {}\n", name, text);
      }
    }
    if (!attrs.empty()) {
      attrs.pop_back();
      doc += "\n\nAttributes:\n" + attrs;
    }
    if (!fields.empty()) fields.pop_back();
    p_.line();
    p_.line();
    p_.emit(
        {{"name", api_name(r.name)},
         {"frozen", kw_only ? "frozen=True, kw_only=True" : "frozen=True"},
         {"doc", class_doc(doc)},
         {"fields", fields},
         {"specs", py_tuple(specs)},
         {"children", py_tuple(children)},
         {"statics", py_tuple(statics)}},
        R"py(
      @dataclasses.dataclass($frozen$)
      class $name$:
          $doc$

          $fields$


      $name$._structop_fields = $specs$
      _rt.register_pytree($name$, $children$, $statics$, NAMESPACE, _IDL_STEM)
    )py");
    if (r.takes_grad) grad_class(r);
  }

  /// `<Record>Grad`: what a Python backward may return for a record (its
  /// fields that take a gradient, all None by default), like the C++ grad
  /// record; `<Record>._structop_grad` names it for structop_runtime.
  void grad_class(const model::Record& r) {
    const lower::RecordLayout& layout =
        in_.lowered.records[static_cast<size_t>(&r - m_.records.data())];
    std::string fields;
    for (size_t fi = 0; fi < r.fields.size(); ++fi) {
      const model::Field& f = r.fields[fi];
      if (!m_.takes_grad(f.type)) continue;
      std::string hint = f.type.is_record_list()
                             ? fmt::format(
                                   "typing.List[typing.Optional[{}]]",
                                   api_name(model::grad_record_name(record(f.type))))
                         : f.type.is_record() ? api_name(model::grad_record_name(record(f.type)))
                         : f.type.takes_grad_list() ? "typing.List[typing.Optional[torch.Tensor]]"
                                                    : "torch.Tensor";
      fields += fmt::format("{}: typing.Optional[{}] = None\n", layout.fields[fi].api_name, hint);
    }
    fields.pop_back();
    p_.line();
    p_.line();
    p_.emit(
        {{"name", api_name(model::grad_record_name(r))},
         {"record", api_name(r.name)},
         {"doc",
          class_doc(fmt::format(
              "Gradients for the tensor fields of `{}` (None: no gradient), as a Python backward "
              "returns them.",
              r.name))},
         {"fields", fields}},
        R"py(
      @dataclasses.dataclass(frozen=True)
      class $name$:
          $doc$

          $fields$


      $record$._structop_grad = $name$
    )py");
  }

  std::string return_hint(const lower::LoweredOp& lo) const {
    if (lo.api_returns.empty()) return "None";
    if (lo.api_returns.size() == 1) return hint(lo.api_returns[0].type, false);
    std::vector<std::string> parts;
    for (const auto& r : lo.api_returns) parts.push_back(hint(r.type, false));
    return fmt::format("typing.Tuple[{}]", fmt::join(parts, ", "));
  }

  /// `Stats(mean=flat[1], var=flat[2])`: the returned record `type` from the
  /// flat outputs `*next` on (`flat` itself when the op has one output);
  /// with `grad_toggle`, `(StatsGrad if grad else Stats)(...)`.
  std::string record_result(
      const lower::LoweredOp& lo,
      const model::Type& type,
      size_t* next,
      bool grad_toggle) const {
    const model::Record& r = record(type);
    const lower::RecordLayout& layout = in_.lowered.records[static_cast<size_t>(type.decl)];
    std::vector<std::string> fields;
    for (size_t fi = 0; fi < r.fields.size(); ++fi) {
      const model::Field& f = r.fields[fi];
      std::string value = f.type.is_record() ? record_result(lo, f.type, next, grad_toggle)
                                             : flat_output(lo, (*next)++);
      fields.push_back(fmt::format("{}={}", layout.fields[fi].api_name, value));
    }
    std::string cls = api_name(r.name);
    if (grad_toggle)
      cls = fmt::format("({} if _grad else {})", api_name(model::grad_record_name(r)), cls);
    return fmt::format("{}({})", cls, fmt::join(fields, ", "));
  }

  /// Flat output `k` in `_<op>_results`: `_flat[k]`, or `_flat` itself
  /// when the op has one output (torch then returns it bare).
  static std::string flat_output(const lower::LoweredOp& lo, size_t k) {
    return lo.outputs.size() == 1 ? std::string("_flat") : fmt::format("_flat[{}]", k);
  }

  /// With records among the returns: `_<op>_results`, the flat outputs in
  /// record form, and `_<op>_outputs`, a Python kernel's result as the flat
  /// outputs.
  void record_results(const lower::LoweredOp& lo) {
    const model::Op& op = m_.ops[lo.op];
    const std::string name = api_name(lo.cpp_name);
    std::vector<std::string> results, checks, outputs;
    for (size_t i = 0; i < lo.api_returns.size(); ++i) {
      const lower::ApiReturn& r = lo.api_returns[i];
      size_t next = r.first_output;
      results.push_back(
          r.type.is_record() ? record_result(lo, r.type, &next, op.backward)
                             : flat_output(lo, r.first_output));
      checks.push_back(py_tuple(
          {python_string_literal(r.name),
           r.type.is_record() ? api_name(record(r.type).name) : "None"}));
    }
    for (const auto& o : lo.outputs) {
      outputs.push_back(fmt::format("_r[{}]{}", o.ret, o.member_path));
    }
    p_.line();
    p_.line();
    p_.emit(
        {{"name", name},
         {"grad", op.backward ? ", _grad=False" : ""},
         {"results_doc",
          python_docstring(fmt::format(
              "{}'s flat outputs in record form{}.",
              m_.namespace_ + "::" + lo.qualified_name,
              op.backward ? "; with _grad, its output gradients, records as their grad records"
                          : ""))},
         {"results", fmt::format("{}", fmt::join(results, ", "))},
         {"outputs_doc",
          python_docstring("A Python kernel's result (record form) as torch's flat outputs.")},
         {"qualified", python_string_literal(m_.namespace_ + "::" + lo.qualified_name)},
         {"checks", py_tuple(checks)},
         {"outputs", fmt::format("{}", fmt::join(outputs, ", "))}},
        R"py(
      def _$name$_results(_flat$grad$):
          $results_doc$
          return $results$


      def _$name$_outputs(_result):
          $outputs_doc$
          _r = _rt.returned($qualified$, _result, $checks$)
          return $outputs$
    )py");
    p_.line();
    p_.line();
  }

  void op_function(const lower::LoweredOp& lo) {
    const model::Op& op = m_.ops[lo.op];
    std::string name = api_name(lo.cpp_name);

    // def op(x: torch.Tensor, cfg: WeightCfg, *, k: int = 1) -> torch.Tensor
    std::string params;
    std::vector<std::string> checks, positional, keyword;
    bool star = false;
    for (const auto& p : op.params) {
      if (!params.empty()) params += ", ";
      if (p.kwarg_only && !star) {
        params += "*, ";
        star = true;
      }
      const lower::ApiParam& api = lo.api_params[static_cast<size_t>(&p - op.params.data())];
      params += fmt::format("{}: {}", api.name, hint(p.type, true));
      if (api.default_value) params += " = " + literal(*api.default_value, false);
      checks.push_back(fmt::format("({}, {})", python_string_literal(p.name), check_spec(p.type)));
      // How Op.failed calls the function again: as it was called.
      if (p.kwarg_only) {
        keyword.push_back(fmt::format("{}: {}", python_string_literal(api.name), api.name));
      } else {
        positional.push_back(api.name);
      }
    }

    // The flat call: one argument per slot, keyword-only slots by name (one
    // named like a Python keyword, `from`, through `**{"from": from_}`).
    std::string args, slot_map, keyword_named;
    for (const auto& s : lo.slots) {
      const bool as_str = enum_value_leaf(s);
      const std::string access = s.list_depth             ? list_leaf(s, as_str)
                                 : !s.optional_at.empty() ? optional_leaf(s, as_str)
                                 : as_str                 ? enum_str(s.api_path)
                                                          : s.api_path;
      if (s.kwarg_only && model::is_python_keyword(s.name)) {
        keyword_named += fmt::format(
            "{}{}: {}",
            keyword_named.empty() ? "" : ", ",
            python_string_literal(s.name),
            access);
      } else {
        if (!args.empty()) args += ", ";
        args += s.kwarg_only ? fmt::format("{}={}", s.name, access) : access;
      }
      slot_map += fmt::format(
          "    {}: {},\n",
          python_string_literal(s.path),
          python_string_literal(s.name));
    }
    if (!keyword_named.empty())
      args += fmt::format("{}**{{{}}}", args.empty() ? "" : ", ", keyword_named);
    std::string overload = op.overload.empty() ? "default" : op.overload;
    std::string doc = doc_text(op.doc);
    if (!doc.empty()) doc += "\n\n";
    doc += fmt::format(
        "Calls torch.ops.{}.{} (lowered schema: {}).",
        m_.namespace_,
        lo.qualified_name,
        lo.schema);

    p_.line();
    p_.line();
    p_.emit(
        {{"name", name},
         {"params", params},
         {"ret", return_hint(lo)},
         // Where Python would clean a docstring's text (python_keeps_docstring),
         // `__doc__` is assigned after the definition.
         {"doc", python_keeps_docstring(doc) ? python_docstring(doc) : ""},
         {"doc_assignment",
          python_keeps_docstring(doc)
              ? ""
              : fmt::format("{}.__doc__ = {}", name, python_string_literal(doc))},
         // torch.compile and torch.export trace the OpOverload; an eager call
         // skips OpOverload.__call__'s frame (structop_runtime.Op).
         {"call",
          fmt::format(
              lo.has_record_return ? "_{0}_results({1}({2}))" : "{1}({2})",
              name,
              fmt::format(
                  "(_{0}_op.overload if _rt.is_dynamo_compiling() else _{0}_op.eager)",
                  name),
              args)},
         {"error", lo.locals.error},
         {"qualified", python_string_literal(m_.namespace_ + "::" + lo.qualified_name)},
         {"op_name", python_string_literal(op.name)},
         {"overload", python_string_literal(overload)},
         {"checks", py_tuple(checks)},
         {"args", py_tuple(positional)},
         {"kwargs", "{" + fmt::format("{}", fmt::join(keyword, ", ")) + "}"},
         {"slot_map", slot_map},
         {"schema", python_string_literal(m_.namespace_ + "::" + lo.schema)}},
        R"py(
      _$name$_op = _rt.Op($qualified$, $op_name$, $overload$, $checks$)


      def $name$($params$) -> $ret$:
          $doc$
          try:
              return $call$
          except (AttributeError, TypeError, RuntimeError) as $error$:
              return _$name$_op.failed($error$, $name$, $args$, $kwargs$)


      $name$.slot_map = {
      $slot_map$}
      $name$.schema = $schema$
      $doc_assignment$
    )py");
    python_kernels(lo);
  }

  /// A flat argument's parameter name in `_<op>_records`: the schema's name
  /// (torch passes keyword-only arguments by it), or with a trailing `_` for
  /// a Python keyword (structop_runtime renames such keyword arguments).
  static std::string flat_name(const lower::Slot& s) {
    return model::is_python_keyword(s.name) ? s.name + "_" : s.name;
  }

  /// The value of one leaf in record form: enums converted from their string.
  std::string leaf_value(const lower::LoweredOp& lo, const lower::Slot& s) const {
    if (!s.type.is_enum()) return flat_name(s);
    std::string convert = fmt::format(
        "_rt.enum_{}({}, {}, {}, {})",
        s.type.is_list_or_optional_list() ? "values" : "value",
        api_name(enum_of(s.type).name),
        flat_name(s),
        python_string_literal(m_.namespace_ + "::" + lo.qualified_name),
        python_string_literal(s.path));
    if (!s.type.is_optional()) return convert;
    return fmt::format("(None if {} is None else {})", flat_name(s), convert);
  }

  /// Whether the flat call passes slot `s` as an enum value's string
  /// (enum_str): a leaf of enum type, optional or in a list of records, whose
  /// value is one enum member or str. (Enum lists pass their members.)
  static bool enum_value_leaf(const lower::Slot& s) {
    const model::Type& leaf = s.list_depth ? s.declared_type : s.type;
    return leaf.is_enum() &&
           (leaf.suffixes.empty() || (leaf.suffixes.size() == 1 && leaf.is_optional()));
  }

  /// `getattr(cfg.mode, "_value_", cfg.mode)`: an enum member's value, a
  /// plain str, which torch parses faster than the member (a str subclass);
  /// a str or None stays as it is.
  static std::string enum_str(const std::string& value) {
    return fmt::format("getattr({0}, \"_value_\", {0})", value);
  }

  /// `(None if cfg is None or cfg.inner is None else cfg.inner.w)`: a leaf
  /// below optional records (Slot::optional_at), None when one is absent.
  static std::string optional_leaf(const lower::Slot& s, bool as_str) {
    const std::vector<std::string> parts = model::split_path(s.api_path);
    std::vector<std::string> absent;
    for (size_t k : s.optional_at) {
      absent.push_back(fmt::format(
          "{} is None",
          fmt::join(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(k + 1), ".")));
    }
    return fmt::format(
        "(None if {} else {})",
        fmt::join(absent, " or "),
        as_str ? enum_str(s.api_path) : s.api_path);
  }

  /// `[r.w for r in cfg.layers]`: a leaf of a list of records across the
  /// list (Slot::list_depth), its api_path split where the list ends.
  static std::string list_leaf(const lower::Slot& s, bool as_str) {
    const std::vector<std::string> parts = model::split_path(s.api_path);
    const auto end = parts.begin() + static_cast<std::ptrdiff_t>(1 + *s.list_depth);
    const std::string item = fmt::format("r.{}", fmt::join(end, parts.end(), "."));
    return fmt::format(
        "[{} for r in {}]",
        as_str ? enum_str(item) : item,
        fmt::join(parts.begin(), end, "."));
  }

  /// A list of records built from its leaves' lists, the slots from `*next`
  /// on: `[Layer(w=l0, scale=l1) for l0, l1 in _rt.zip_leaves(op, path,
  /// (("w", layers__w), ("scale", layers__scale)))]` (zip_leaves checks that
  /// the lists have one length, and names them if not).
  std::string record_list_value(
      const lower::LoweredOp& lo,
      const model::Type& type,
      const std::string& path,
      size_t* next) const {
    const size_t first = *next;
    size_t item_next = 0;
    std::vector<std::string> names, leaves;
    const std::string item = item_value(lo, type, first, &item_next);
    for (size_t k = 0; k < item_next; ++k) {
      const lower::Slot& s = lo.slots[first + k];
      names.push_back(fmt::format("l{}", k));
      leaves.push_back(
          py_tuple({python_string_literal(s.path.substr(path.size() + 1)), flat_name(s)}));
    }
    *next = first + item_next;
    return fmt::format(
        "[{} for {} in _rt.zip_leaves({}, {}, {})]",
        item,
        names.size() == 1 ? names[0] + "," : fmt::format("{}", fmt::join(names, ", ")),
        python_string_literal(m_.namespace_ + "::" + lo.qualified_name),
        python_string_literal(path),
        py_tuple(leaves));
  }

  /// The original path of the list of records that slot `s` is a leaf of
  /// (`cfg.layers` for `cfg.layers.w`).
  static std::string list_path(const lower::Slot& s) {
    const std::vector<std::string> parts = model::split_path(s.path);
    return fmt::format(
        "{}",
        fmt::join(
            parts.begin(),
            parts.begin() + static_cast<std::ptrdiff_t>(1 + *s.list_depth),
            "."));
  }

  /// One item of a list of records from the loop variables `l<k>` (k from
  /// `*next` on; slot `first + k` is leaf k's list).
  std::string item_value(
      const lower::LoweredOp& lo,
      const model::Type& type,
      size_t first,
      size_t* next) const {
    const model::Record& r = record(type);
    const lower::RecordLayout& layout = in_.lowered.records[static_cast<size_t>(type.decl)];
    std::vector<std::string> fields;
    for (size_t fi = 0; fi < r.fields.size(); ++fi) {
      const model::Field& f = r.fields[fi];
      std::string value;
      if (f.type.is_record()) {
        value = item_value(lo, f.type, first, next);
      } else {
        const lower::Slot& s = lo.slots[first + *next];
        value = fmt::format("l{}", (*next)++);
        if (f.type.is_enum()) {
          value = fmt::format(
              "_rt.enum_value({}, {}, {}, {})",
              api_name(enum_of(f.type).name),
              value,
              python_string_literal(m_.namespace_ + "::" + lo.qualified_name),
              python_string_literal(s.path));
        }
      }
      fields.push_back(fmt::format("{}={}", layout.fields[fi].api_name, value));
    }
    return fmt::format("{}({})", api_name(r.name), fmt::join(fields, ", "));
  }

  /// A record built from its leaves, the slots from `*next` on (depth
  /// first); `path` is its original path (`cfg`, `cfg.inner`). An optional
  /// record (`R?`) is None when its leaves say so (_rt.absent checks that
  /// they agree, as the C++ runtime's structop::check_optional_record).
  std::string record_value(
      const lower::LoweredOp& lo,
      const model::Type& type,
      const std::string& path,
      size_t* next) const {
    const model::Record& r = record(type);
    const lower::RecordLayout& layout = in_.lowered.records[static_cast<size_t>(type.decl)];
    const size_t first = *next;
    std::vector<std::string> fields;
    for (size_t fi = 0; fi < r.fields.size(); ++fi) {
      const model::Field& f = r.fields[fi];
      const std::string field_path = path + "." + r.fields[fi].name;
      std::string value = f.type.is_record_list()
                              ? record_list_value(lo, f.type, list_path(lo.slots[*next]), next)
                          : f.type.is_record() ? record_value(lo, f.type, field_path, next)
                                               : leaf_value(lo, lo.slots[(*next)++]);
      fields.push_back(fmt::format("{}={}", layout.fields[fi].api_name, value));
    }
    std::string value = fmt::format("{}({})", api_name(r.name), fmt::join(fields, ", "));
    if (!type.is_optional_record()) return value;
    std::vector<std::string> leaves, required;
    for (size_t k = 0; k < layout.leaves.size(); ++k) {
      leaves.push_back(
          py_tuple({python_string_literal(layout.leaves[k].path), flat_name(lo.slots[first + k])}));
    }
    for (size_t k : layout.required_leaves) required.push_back(std::to_string(k));
    return fmt::format(
        "(None if _rt.absent({}, {}, {}, {}) else {})",
        python_string_literal(m_.namespace_ + "::" + lo.qualified_name),
        python_string_literal(path),
        py_tuple(leaves),
        py_tuple(required),
        value);
  }

  /// For Python kernels: `<op>.annotations`, `_<op>_records` (the flat
  /// arguments as torch passes them to a kernel, trailing defaults left out,
  /// back in record form: straight-line code, no reflection per call) and
  /// the registration methods (structop_runtime.python_kernels).
  void python_kernels(const lower::LoweredOp& lo) {
    const model::Op& op = m_.ops[lo.op];
    const std::string name = api_name(lo.cpp_name);
    std::string qualified = m_.namespace_ + "::" + lo.qualified_name;

    std::vector<std::string> annotations;
    for (const auto& a : op.annotations) annotations.push_back(python_string_literal(a));

    if (lo.has_record_return) record_results(lo);

    // def _op_records(x, cfg__w, cfg__scale=1.0, *, k=2):
    std::string flat;
    bool star = false;
    for (const auto& s : lo.slots) {
      if (!flat.empty()) flat += ", ";
      if (s.kwarg_only && !star) {
        flat += "*, ";
        star = true;
      }
      flat += flat_name(s);
      if (s.schema_default && s.value) {
        flat += "=" + (s.value->kind == lower::Value::Kind::Enum
                           ? python_string_literal(s.value->text)
                           : literal(*s.value, false));
      }
    }
    // return (x, Cfg(w=cfg__w, scale=cfg__scale)), {"k": k}
    std::vector<std::string> args, kwargs;
    size_t next = 0;
    for (size_t pi = 0; pi < op.params.size(); ++pi) {
      const model::Param& p = op.params[pi];
      std::string value = p.type.is_record_list() ? record_list_value(lo, p.type, p.name, &next)
                          : p.type.is_record()    ? record_value(lo, p.type, p.name, &next)
                                                  : leaf_value(lo, lo.slots[next++]);
      if (p.kwarg_only) {
        kwargs.push_back(
            fmt::format("{}: {}", python_string_literal(lo.api_params[pi].name), value));
      } else {
        args.push_back(value);
      }
    }

    // What structop_runtime needs to know of the op beyond its schema.
    std::vector<std::string> params, options;
    for (size_t pi = 0; pi < op.params.size(); ++pi) {
      const model::Param& p = op.params[pi];
      params.push_back(py_tuple(
          {python_string_literal(lo.api_params[pi].name),
           p.type.is_record_list() ? fmt::format("_rt.ListOf({})", api_name(record(p.type).name))
           : p.type.is_record()    ? api_name(record(p.type).name)
                                   : "None"}));
    }
    options.push_back("params=" + py_tuple(params));
    if (op.backward) {
      std::vector<std::string> grads;
      for (size_t si : lo.grad_slots) {
        grads.push_back(py_tuple(
            {python_string_literal(lo.slots[si].api_path),
             python_string_literal(lo.slots[si].name)}));
      }
      options.push_back("grads=" + py_tuple(grads));
    }
    if (op.meta != model::MetaKind::Custom) {
      std::vector<std::string> sources;
      for (size_t si : lo.meta_sources) sources.push_back(python_string_literal(lo.slots[si].name));
      options.push_back("meta=" + py_tuple(sources));
    }
    if (op.backward) options.push_back("backward=True");
    if (lo.has_record_return)
      options.push_back(fmt::format("results=(_{}_outputs, _{}_results)", name, name));
    if (!op.tags.empty()) {
      std::vector<std::string> tags;
      for (const auto& t : op.tags) tags.push_back(python_string_literal(t));
      options.push_back("tags=" + py_tuple(tags));
    }
    std::string option_lines;
    for (const auto& o : options) option_lines += "    " + o + ",\n";
    option_lines.pop_back();

    p_.emit(
        {{"name", name},
         {"annotations", py_tuple(annotations)},
         {"flat", flat},
         {"doc",
          python_docstring(fmt::format(
              "{}'s flat arguments, as torch passes them to a Python kernel, in record form: "
              "(args, kwargs).",
              qualified))},
         {"args", py_tuple(args)},
         {"kwargs", fmt::format("{{{}}}", fmt::join(kwargs, ", "))},
         {"options", option_lines}},
        R"py(
      $name$.annotations = $annotations$


      def _$name$_records($flat$):
          $doc$
          return $args$, $kwargs$


      _rt.python_kernels(
          $name$,
          _$name$_records,
          _IDL_STEM,
      $options$
      )
    )py");
  }

  const EmitInput& in_;
  const model::Module& m_;
  CodePrinter p_;
};

}  // namespace

std::string emit_python(const EmitInput& in) {
  return PythonEmitter(in).run();
}

}  // namespace structop
