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

/// A field's default, as the dataclass declares it and as the generated
/// __init__ takes it.
struct FieldDefault {
  /// ` = value`, or a factory for a list or a record, which is built afresh
  /// for each instance (a lambda, not the class itself: torch.compile (2.13)
  /// cannot trace a dataclass default_factory that is a class); empty
  /// without a default.
  Code field;
  /// ` = value`, or ` = _rt.FACTORY` where the field has a factory.
  Code param;
  /// What the factory builds (`[1, 2]`, `Inner()`), or empty.
  Code factory;
};

FieldDefault field_default(const Module& mod, const model::Field& f, const lower::RecordField& lf) {
  FieldDefault out;
  const std::optional<lower::Value>& value = lf.default_value;
  if (value && !(f.type.is_list() && value->kind == lower::Value::Kind::List) &&
      !f.type.is_plain_record()) {
    out.field = out.param = " = " + mod.literal(*value, false);
    return out;
  }
  if (value) {
    out.factory = mod.literal(*value, true);
  } else if (f.type.is_plain_record() && mod.record(f.type).all_defaulted) {
    out.factory = api_name(mod.record(f.type).name) + "()";
  } else {
    return out;
  }
  out.field = " = " + call("dataclasses.field", {"default_factory=lambda: " + out.factory});
  out.param = " = _rt.FACTORY";
  return out;
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

/// A value leaf's kind for _rt.value_key: `f` float (an int will do), `i`
/// int, `b` bool, `s` str (an enum's value); upper case where it may be
/// None.
char value_kind(const model::Type& leaf) {
  const bool optional = leaf.is_optional();
  const model::Type t = optional ? leaf.inner() : leaf;
  char kind = t.is_builtin(model::Builtin::Float)  ? 'f'
              : t.is_builtin(model::Builtin::Int)  ? 'i'
              : t.is_builtin(model::Builtin::Bool) ? 'b'
                                                   : 's';
  return optional ? static_cast<char>(kind - 'a' + 'A') : kind;
}

/// The generated `__init__` of a record with flat values (has_flat_tuple),
/// in place of the dataclass's: it stores the fields, the flat values
/// (kFlatAttr) and the guard key (kKeyAttr, from the value leaves: their
/// indices and kinds for _rt.value_key) in one call to _rt.set_record (in
/// C: object's setattr per attribute, as the dataclass's __init__ does, but
/// without a Python call each), with no __post_init__ (a `Cfg8`: 1.18
/// against 1.55 us, key included):
///
///   def __init__(self, w: torch.Tensor, scale: float = 1.0, mode: Mode = Mode.a) -> None:
///       flat = (w, scale, getattr(mode, "_value_", mode))
///       if _rt.is_dynamo_compiling():
///           _rt.init_record(self, flat, w=w, scale=scale, mode=mode)
///           return
///       _rt.set_record(self, ("w", "scale", "mode"), (w, scale, mode), flat, (1, 2), "fs")
///
/// A field with a factory (a list, a record) takes _rt.FACTORY for its
/// default and builds it first. A nested record's flat values come from its
/// own tuple; where a field holds something else than its record, the
/// record gets its fields only (`flat = None`), and a call with it explains
/// the field. `self` and `flat` are the record's init names (lowering),
/// which no field hides. Empty for a record without flat values.
Code record_init(
    const Module& mod,
    const model::Record& r,
    const lower::RecordLayout& layout,
    bool kw_only) {
  if (!has_flat_tuple(layout)) return {};
  const lower::RecordLayout::InitNames& names = layout.init;
  std::vector<Code> params = {names.self}, fields, values;
  if (kw_only) params.push_back("*");
  Code body;
  const auto line = [&body](const Code& code) {
    body += (body.empty() ? "" : "\n") + ("    " + code);
  };
  bool nested = false;
  for (size_t fi = 0; fi < r.fields.size(); ++fi) {
    const model::Field& f = r.fields[fi];
    const lower::RecordField& field = layout.fields[fi];
    const std::string& name = field.api_name;
    const FieldDefault d = field_default(mod, f, field);
    params.push_back(name + ": " + mod.hint(f.type, false) + d.param);
    if (!d.factory.empty()) {
      line("if " + name + " is _rt.FACTORY:");
      line("    " + name + " = " + d.factory);
    }
    fields.push_back(name);
    if (f.type.is_record()) {
      if (!field.leaf_count) continue;
      nested = true;
      values.push_back(splat_flat(name, f.type.is_optional_record(), field.leaf_count));
    } else {
      values.push_back(passes_enum_str(f.type) ? enum_str(name) : Code(name));
    }
  }
  const Code flat = names.flat + " = " + tuple(values);
  if (nested) {
    line("try:");
    line("    " + flat);
    line("except AttributeError:  # a field that is not its record: a call explains it");
    line("    " + names.flat + " = None");
    line("if " + names.flat + " is None or _rt.is_dynamo_compiling():");
  } else {
    line(flat);
    line("if _rt.is_dynamo_compiling():");
  }
  std::vector<Code> init_args = {names.self, names.flat};
  for (const Code& name : fields) init_args.push_back(name + "=" + name);
  line("    " + call("_rt.init_record", init_args));
  line("    return");
  std::vector<Code> quoted_fields;
  for (const Code& name : fields) quoted_fields.push_back(quoted(name.flat()));
  std::vector<Code> set_args = {names.self, tuple(quoted_fields), tuple(fields), names.flat};
  if (!layout.value_leaves.empty()) {
    std::vector<Code> keyed;
    std::string kinds;
    for (size_t leaf : layout.value_leaves) {
      keyed.push_back(std::to_string(leaf));
      kinds += value_kind(layout.leaves[leaf].type);
    }
    set_args.push_back(tuple(keyed));
    set_args.push_back(quoted(kinds));
  }
  line(call("_rt.set_record", set_args));
  return "def __init__(" + Code::list(params, ListKind::Params) + ") -> None:\n" + body;
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
    const Code value = field_default(mod, f, layout.fields[fi]).field;
    if (!value.empty())
      seen_default = true;
    else if (seen_default)
      kw_only = true;
    fields += (fields.empty() ? "" : "\n") + (name + ": " + mod.hint(f.type, false) + value);
    specs.push_back(tuple({quoted(name), mod.check_spec(f.type)}));
    // A dynamic number is a child too: torch.export takes it as an input.
    (f.type.is_record() || f.type.holds_tensor() || f.type.dynamic ? children : statics)
        .push_back(quoted(name));
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
  Code init = record_init(mod, r, layout, kw_only);
  // init=False where the record has its own __init__ (dataclasses would
  // build one, a compile each, only to keep the class's).
  std::string options = kw_only ? "frozen=True, kw_only=True" : "frozen=True";
  if (!init.empty()) options += ", init=False";
  p.line();
  p.line();
  p.emit(
      {{"name", api_name(r.name)},
       {"frozen", options},
       {"doc", docstring(doc)},
       {"fields", fields},
       {"init", std::move(init)},
       {"specs",
        api_name(r.name) + "._structop_fields = " + tuple(specs) +
            // The class's default of the key: a record without its own
            // (pickled by a runtime before keys) passes its tuple when traced.
            (has_flat_tuple(layout) && !layout.value_leaves.empty()
                 ? "\n" + api_name(r.name) + "." + kKeyAttr + " = None"
                 : "")},
       {"register",
        call(
            "_rt.register_pytree",
            {api_name(r.name), tuple(children), tuple(statics), "NAMESPACE", "_IDL_STEM"})}},
      R"py(
    @dataclasses.dataclass($frozen$)
    class $name$:
        $doc$

        $fields$

        $init$


    $specs$
    $register$
  )py");
  if (r.takes_grad) grad_class(p, mod, r);
}

}  // namespace python
}  // namespace structop
