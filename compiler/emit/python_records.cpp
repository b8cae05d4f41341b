// X_ops.py's enums (`str` enums) and records (frozen dataclasses, pytree
// nodes, with `<Record>Grad` for records that take gradients).
#include <fmt/format.h>

#include "check/names.h"
#include "emit/naming.h"
#include "emit/python_emitter.h"

namespace structop {
namespace python {
namespace {

/// doc_text(doc), or `fallback` if that is empty.
std::string or_default(std::string_view doc, std::string fallback) {
  std::string text = doc_text(doc);
  return text.empty() ? fallback : text;
}

/// A field's default: ` = value`, or a factory for a list or a record, which
/// is built afresh for each instance (a lambda, not the class itself:
/// torch.compile (2.13) cannot trace a dataclass default_factory that is a
/// class); empty without a default.
Code field_default(const Module& mod, const model::Field& f, const lower::RecordField& lf) {
  const std::optional<lower::Value>& value = lf.default_value;
  if (value) {
    if ((f.type.is_list() && value->kind == lower::Value::Kind::List) || f.type.is_plain_record()) {
      return " = " +
             call("dataclasses.field", {"default_factory=lambda: " + mod.literal(*value, true)});
    }
    return " = " + mod.literal(*value, false);
  }
  if (f.type.is_plain_record() && mod.record(f.type).all_defaulted) {
    return " = " + call(
                       "dataclasses.field",
                       {"default_factory=lambda: " + api_name(mod.record(f.type).name) + "()"});
  }
  return "";
}

/// `<Record>Grad`: what a Python backward may return for a record (its
/// fields that take a gradient, all None by default), like the C++ grad
/// record; `<Record>._structop_grad` names it for structop_runtime.
void grad_class(CodePrinter& p, const Module& mod, const model::Record& r) {
  const lower::RecordLayout& layout =
      mod.in.lowered.records[static_cast<size_t>(&r - mod.m.records.data())];
  Code fields;
  for (size_t fi = 0; fi < r.fields.size(); ++fi) {
    const model::Field& f = r.fields[fi];
    if (!mod.m.takes_grad(f.type)) continue;
    const std::string hint = f.type.is_record_list()
                                 ? fmt::format(
                                       "typing.List[typing.Optional[{}]]",
                                       api_name(lang::grad_record_name(mod.record(f.type))))
                             : f.type.is_record()
                                 ? api_name(lang::grad_record_name(mod.record(f.type)))
                             : f.type.takes_grad_list()
                                 ? "typing.List[typing.Optional[torch.Tensor]]"
                                 : "torch.Tensor";
    fields += (fields.empty() ? "" : "\n") +
              fmt::format("{}: typing.Optional[{}] = None", layout.fields[fi].api_name, hint);
  }
  p.line();
  p.line();
  p.emit(
      {{"name", api_name(lang::grad_record_name(r))},
       {"record", api_name(r.name)},
       {"doc",
        docstring(fmt::format(
            "Gradients for the tensor fields of `{}` (None: no gradient), as a Python\n"
            "backward returns them.",
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

/// `def __post_init__(self)`, which sets the record's flat values
/// (kFlatAttr) from its fields, a nested record's from its own tuple; empty
/// for a record without them (has_flat_tuple).
Code flat_tuple_init(const model::Record& r, const lower::RecordLayout& layout) {
  if (!has_flat_tuple(layout)) return {};
  std::vector<Code> values;
  bool nested = false;
  for (size_t fi = 0; fi < r.fields.size(); ++fi) {
    const model::Type& type = r.fields[fi].type;
    const lower::RecordField& field = layout.fields[fi];
    const std::string value = "self." + field.api_name;
    if (type.is_record()) {
      if (!field.leaf_count) continue;
      nested = true;
      values.push_back(splat_flat(value, type.is_optional_record(), field.leaf_count));
    } else {
      values.push_back(passes_enum_str(type) ? enum_str(value) : Code(value));
    }
  }
  const Code set = call("object.__setattr__", {"self", quoted(kFlatAttr), tuple(values)});
  // A record field holding something else than its record has no tuple:
  // then neither has this record, and a call with it explains the field.
  return "def __post_init__(self) -> None:\n" +
         (nested ? "    try:\n        " + set + "\n    except AttributeError:\n        pass"
                 : "    " + set);
}

}  // namespace

void enum_class(CodePrinter& p, const Module& mod, const model::Enum& e) {
  (void)mod;
  Code values;
  for (const auto& v : e.values) {
    values += (values.empty() ? "" : "\n") + api_name(v) + " = " + quoted(v);
  }
  p.line();
  p.line();
  p.emit(
      {{"name", api_name(e.name)},
       {"doc", docstring(or_default(e.doc, "Enum `" + e.name + "` (lowered to str)."))},
       {"values", values}},
      R"py(
    class $name$(str, enum.Enum):
        $doc$

        $values$

        def __str__(self) -> str:
            return self.value
  )py");
}

void record_class(CodePrinter& p, const Module& mod, const model::Record& r) {
  // A field without default after one with a default needs keyword-only
  // construction (Python 3.10+); otherwise records keep positional order.
  bool seen_default = false, kw_only = false;
  std::vector<Code> specs, children, statics;
  std::string doc = or_default(r.doc, "Record `" + r.name + "`.");
  std::string attrs;
  Code fields;
  const lower::RecordLayout& layout =
      mod.in.lowered.records[static_cast<size_t>(&r - mod.m.records.data())];
  for (size_t fi = 0; fi < r.fields.size(); ++fi) {
    const model::Field& f = r.fields[fi];
    const std::string& name = layout.fields[fi].api_name;
    const Code value = field_default(mod, f, layout.fields[fi]);
    if (!value.empty())
      seen_default = true;
    else if (seen_default)
      kw_only = true;
    fields += (fields.empty() ? "" : "\n") + (name + ": " + mod.hint(f.type, false) + value);
    specs.push_back(tuple({quoted(name), mod.check_spec(f.type)}));
    (f.type.is_record() || f.type.holds_tensor() ? children : statics).push_back(quoted(name));
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
  p.line();
  p.line();
  p.emit(
      {{"name", api_name(r.name)},
       {"frozen", kw_only ? "frozen=True, kw_only=True" : "frozen=True"},
       {"doc", docstring(doc)},
       {"fields", fields},
       {"post_init", flat_tuple_init(r, layout)},
       {"specs", api_name(r.name) + "._structop_fields = " + tuple(specs)},
       {"register",
        call(
            "_rt.register_pytree",
            {api_name(r.name), tuple(children), tuple(statics), "NAMESPACE", "_IDL_STEM"})}},
      R"py(
    @dataclasses.dataclass($frozen$)
    class $name$:
        $doc$

        $fields$

        $post_init$


    $specs$
    $register$
  )py");
  if (r.takes_grad) grad_class(p, mod, r);
}

}  // namespace python
}  // namespace structop
