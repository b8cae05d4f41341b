#include "lower/lowering.h"

#include "lower/op_lowering.h"

namespace structop {

namespace lowering {

OpLowering::OpLowering(
    const model::Module& module,
    size_t op_index,
    Diagnostics& diags,
    lower::LoweredOp& out)
    : module_(module), op_(module.ops[op_index]), diags_(diags), out_(out) {
  out_.op = op_index;
}

void OpLowering::run(const LowerOptions& options) {
  if (options.keep_ops) {  // (an op lowered for its diagnostics alone needs no names)
    out_.qualified_name = op_.qualified_name();
    out_.cpp_name = op_.api_name;
  }
  const size_t errors_before = diags_.error_count();
  out_.slots.reserve(op_.params.size());
  for (size_t i = 0; i < op_.params.size(); ++i) flatten_param(i);
  check_collisions();
  check_pinned_keywords();
  // A collision already explains why the schema would be invalid.
  check_schema_ = diags_.error_count() == errors_before;
  // Names are only looked up for `mutates:` and listed `meta:`.
  if (!op_.mutates.empty() || op_.meta == model::MetaKind::Names) build_names();
  resolve_mutates();
  for (auto& s : out_.slots) s.written = s.mutated || (s.type.alias && s.type.alias->is_write);
  out_.writes_inputs = std::any_of(out_.slots.begin(), out_.slots.end(), [](const lower::Slot& s) {
    return s.written;
  });
  lower_returns();
  resolve_meta();
  apply_schema_defaults();
  // The text is for the ops kept (the emitters, --explain); --check needs
  // only the self-check.
  if (options.keep_ops) print_schema();
  if (check_schema_) self_check();
  if (options.api_facts) api_facts();
}

void OpLowering::flatten_param(size_t index) {
  const model::Param& p = op_.params[index];
  if (!p.type.is_record()) {
    lower::Slot& s = out_.slots.emplace_back();
    // A Python keyword gets its trailing `_` in the schema too: torch.fx
    // normalizes a custom op's arguments by name (inductor, opcheck's
    // schema check) and cannot bind `from` (it special-cases aten's own).
    s.python_keyword = lang::is_python_keyword(p.name);
    s.name = p.name;
    if (s.python_keyword) s.name += '_';
    s.path = p.name;
    s.param = index;
    s.type = p.type;
    s.default_value = p.default_value ? &*p.default_value : nullptr;
    s.kwarg_only = p.kwarg_only;
    complete_slot(s);  // (its C++ name and API path: api_facts)
    return;
  }
  std::vector<size_t> fields;
  cpp_parts_ = {p.name};
  if (p.type.is_record_list()) {
    // `Rec[] cfgs`: one list per leaf; the parameter's default (`[]`, the
    // only one a list of records takes) is every leaf's.
    list_depth_ = 0;
    list_default_ = p.default_value.get();
    flatten_record(index, p.type.decl, p.name, p.name, nullptr, &fields);
    list_depth_.reset();
    list_default_ = nullptr;
    return;
  }
  if (p.type.is_optional_record()) {
    // `R? cfg`: every leaf optional, all None when cfg is absent.
    optional_at_ = {0};
    optional_default_ = p.default_value.get();
    flatten_record(index, p.type.decl, p.name, p.name, nullptr, &fields);
    optional_at_.clear();
    optional_default_ = nullptr;
    return;
  }
  flatten_record(index, p.type.decl, p.name, p.name, p.default_value.get(), &fields);
}

void OpLowering::flatten_record(
    size_t param,
    int record,
    const std::string& name,
    const std::string& path,
    const model::Default* given,
    std::vector<size_t>* fields) {
  const model::Record& r = module_.records[static_cast<size_t>(record)];
  for (size_t i = 0; i < r.fields.size(); ++i) {
    const model::Field& f = r.fields[i];
    const model::Default* value = given ? given->record_value(i) : nullptr;
    if (!value && f.default_value) value = &*f.default_value;
    // Inside a list of records the fields' own defaults are the items'
    // (the APIs apply them); the lists default to the list's default.
    if (list_depth_) value = list_default_;
    fields->push_back(i);
    cpp_parts_.push_back(f.name);
    std::string leaf_name = name + "__" + f.name;
    std::string leaf_path = path + "." + f.name;
    if (f.type.is_record_list() && !list_depth_) {
      list_depth_ = fields->size();
      list_default_ = f.default_value ? &*f.default_value : nullptr;
      flatten_record(param, f.type.decl, leaf_name, leaf_path, nullptr, fields);
      list_depth_.reset();
      list_default_ = nullptr;
    } else if (f.type.is_optional_record()) {
      // Its default (`None`, the only one) or the enclosing optional's.
      const model::Default* outer_default = optional_default_;
      optional_at_.push_back(fields->size());
      optional_default_ = value ? value : optional_default_;
      flatten_record(param, f.type.decl, leaf_name, leaf_path, nullptr, fields);
      optional_at_.pop_back();
      optional_default_ = outer_default;
    } else if (f.type.is_record()) {
      flatten_record(param, f.type.decl, leaf_name, leaf_path, value, fields);
    } else {
      lower::Slot& s = out_.slots.emplace_back();
      s.name = f.schema_name ? f.schema_name->text : leaf_name;
      s.pinned = f.schema_name.has_value();
      s.path = leaf_path;
      s.param = param;
      s.fields = *fields;
      s.type = f.type;
      s.declared_type = f.type;
      if (list_depth_) {
        s.type.suffixes.push_back({syntax::TypeSuffix::Kind::List, -1, nullptr});
        s.list_depth = list_depth_;
      }
      s.default_value = value;
      if (!optional_at_.empty()) {
        // Under an optional record: None when it is absent, and its
        // default is the leaf's (the record's own field defaults are the
        // APIs' business).
        if (!s.type.is_optional())
          s.type.suffixes.push_back({syntax::TypeSuffix::Kind::Optional, -1, nullptr});
        s.optional_at = optional_at_;
        s.default_value = optional_default_;
      }
      s.kwarg_only = op_.params[param].kwarg_only;
      s.cpp_name = lang::api_spelling(lang::join_identifier(cpp_parts_));
      s.segments = cpp_parts_;
      for (const auto& part : cpp_parts_) {
        s.api_segments.push_back(lang::api_spelling(part));
        s.api_path += (s.api_path.empty() ? "" : ".") + s.api_segments.back();
      }
      complete_slot(s);
    }
    fields->pop_back();
    cpp_parts_.pop_back();
  }
}

void OpLowering::lower_returns() {
  out_.outputs.reserve(op_.returns.size());
  out_.api_returns.reserve(op_.returns.size());
  for (size_t i = 0; i < op_.returns.size(); ++i) {
    const model::Return& r = op_.returns[i];
    lower::ApiReturn& a = out_.api_returns.emplace_back();
    a.type = r.type;
    a.first_output = out_.outputs.size();
    if (r.type.is_plain_record()) {
      // Leaves are `<name>__<field>`, with the unnamed return's `output`
      // (a bare field name could be a word the schema parser reserves).
      out_.has_record_return = true;
      std::vector<size_t> fields;
      return_leaves(i, r.type.decl, return_name(i), "", fields);
    } else {
      // api_path is set below, once every return is named; schema_type
      // with the schema (print_schema).
      lower::Output& o = out_.outputs.emplace_back();
      o.name = r.name;
      o.type = r.type;
      o.ret = i;
    }
    a.output_count = out_.outputs.size() - a.first_output;
  }
  const auto output_name = [&](size_t i) {
    const std::string& name = out_.outputs[i].name;
    return name.empty() ? std::nullopt : std::optional<std::string_view>(name);
  };
  for (auto [first, later] : find_duplicates(out_.outputs.size(), output_name)) {
    (void)first;
    const lower::Output& o = out_.outputs[later];
    diags_.error(
        op_.returns[o.ret].span,
        fmt::format("op `{}`: two outputs are named `{}`", op_.qualified_name(), o.name),
        "a returned record's leaves are named `return__field`; rename the return or the field");
    check_schema_ = false;
  }
}

void OpLowering::return_leaves(
    size_t ret,
    int decl,
    const std::string& name,
    const std::string& member,
    std::vector<size_t>& fields) {
  const model::Record& rec = module_.records[static_cast<size_t>(decl)];
  for (size_t f = 0; f < rec.fields.size(); ++f) {
    const model::Field& field = rec.fields[f];
    const std::string leaf = name + "__" + field.name;
    const std::string access = member + "." + lang::api_spelling(field.name);
    fields.push_back(f);
    if (field.type.is_record()) {
      return_leaves(ret, field.type.decl, leaf, access, fields);
    } else {
      const bool pinned = field.schema_name.has_value();
      out_.outputs.push_back(
          {pinned ? field.schema_name->text : leaf,
           pinned,
           field.type,
           {},  // schema_type: print_schema
           ret,
           fields,
           {},
           access});
    }
    fields.pop_back();
  }
}

std::string OpLowering::return_name(size_t i) const {
  if (!op_.returns[i].name.empty()) return op_.returns[i].name;
  return op_.returns.size() == 1 ? "output" : fmt::format("output{}", i);
}

void OpLowering::complete_slot(lower::Slot& s) {
  s.takes_grad = s.type.takes_grad();
  s.grad_list = s.type.takes_grad_list();
  s.tensor_list = s.type.holds_tensor() && s.type.is_list_or_optional_list();
  if (s.default_value) s.value = lower::typed_default(module_, s.type, *s.default_value);
}

std::string OpLowering::valid_names_hint(const std::string& name, bool plain_only, bool guess_typo)
    const {
  std::vector<std::string> valid = valid_names(plain_only);
  if (valid.empty()) {
    return plain_only
               ? "this op has no plain `Tensor` input to copy metadata from; set `meta: custom`"
               : "this op has no tensor parameters";
  }
  std::string list = "valid names are " + quoted_list(valid);
  std::string guess = guess_typo ? closest_match(name, valid) : std::string();
  return guess.empty() ? list : fmt::format("did you mean `{}`? {}", guess, list);
}

}  // namespace lowering

namespace {
using lowering::OpLowering;
using lowering::schema_base;
using model::Builtin;

/// Whether `leaf` holds one value compared with `==`
/// (RecordLayout::value_leaves).
bool is_value_leaf(const lower::RecordLeaf& leaf) {
  if (leaf.list_depth || leaf.type.dynamic) return false;
  const model::Type& t = leaf.type.is_optional() ? leaf.type.inner() : leaf.type;
  if (!t.suffixes.empty()) return false;
  if (t.is_enum()) return true;
  return t.is_builtin(Builtin::Int) || t.is_builtin(Builtin::Float) ||
         t.is_builtin(Builtin::Bool) || t.is_builtin(Builtin::Str);
}

/// How each record flattens; records come in dependency order, so a nested
/// record's layout is complete when its container needs it.
std::vector<lower::RecordLayout> record_layouts(const model::Module& module) {
  std::vector<lower::RecordLayout> out(module.records.size());
  std::vector<std::string> types;  // what flatten_<R>'s parameters must not hide
  for (const auto& r : module.records) types.push_back(lang::api_spelling(r.name));
  for (const auto& e : module.enums) types.push_back(lang::api_spelling(e.name));
  const lower::RecordLayout::FlattenNames flatten{
      lang::first_free("stack", types),
      lang::first_free("value", types)};
  for (size_t r = 0; r < module.records.size(); ++r) {
    const model::Record& record = module.records[r];
    lower::RecordLayout& layout = out[r];
    layout.takes_grad = record.takes_grad;
    for (size_t i = 0; i < record.fields.size(); ++i) {
      const model::Field& f = record.fields[i];
      lower::RecordField field;
      field.api_name = lang::api_spelling(f.name);
      if (f.default_value)
        field.default_value = lower::typed_default(module, f.type, *f.default_value);
      field.first_leaf = layout.leaves.size();
      if (f.type.is_record()) {
        const lower::RecordLayout& inner = out[static_cast<size_t>(f.type.decl)];
        for (const auto& leaf : inner.leaves) {
          lower::RecordLeaf l = leaf;
          l.fields.insert(l.fields.begin(), i);
          l.path = f.name + "." + leaf.path;
          l.segments.insert(l.segments.begin(), f.name);
          if (!leaf.pinned) l.name = f.name + "__" + leaf.name;
          if (l.list_depth) {
            ++*l.list_depth;
          } else if (f.type.is_record_list()) {  // one list per leaf
            l.list_depth = 1;
            l.type.suffixes.push_back({syntax::TypeSuffix::Kind::List, -1, nullptr});
          }
          if (f.type.is_optional_record() && !l.type.is_optional())
            l.type.suffixes.push_back({syntax::TypeSuffix::Kind::Optional, -1, nullptr});
          layout.leaves.push_back(std::move(l));
        }
        if (f.type.is_plain_record()) {
          for (size_t leaf : inner.required_leaves)
            layout.required_leaves.push_back(field.first_leaf + leaf);
        }
        layout.has_record_list |= f.type.is_record_list() || inner.has_record_list;
        layout.has_optional_record |= f.type.is_optional_record() || inner.has_optional_record;
        layout.has_enum_leaf |= inner.has_enum_leaf;
        layout.has_dynamic_leaf |= inner.has_dynamic_leaf;
      } else {
        if (!f.type.is_optional()) layout.required_leaves.push_back(layout.leaves.size());
        layout.leaves.push_back(
            {{i},
             f.name,
             f.schema_name ? f.schema_name->text : f.name,
             f.schema_name.has_value(),
             std::nullopt,
             f.type,
             {f.name}});
        layout.has_enum_leaf |= f.type.is_enum();
        layout.has_dynamic_leaf |= f.type.dynamic;
      }
      field.leaf_count = layout.leaves.size() - field.first_leaf;
      layout.fields.push_back(std::move(field));
    }
    for (size_t i = 0; i < layout.leaves.size(); ++i) {
      if (is_value_leaf(layout.leaves[i])) layout.value_leaves.push_back(i);
    }
    std::vector<std::string> fields;
    for (const auto& f : layout.fields) fields.push_back(f.api_name);
    layout.init.self = lang::first_free("self", fields);
    layout.init.flat = lang::first_free("flat", fields);
    layout.flatten = flatten;
  }
  return out;
}

}  // namespace

namespace lower {

std::string join_identifier(const std::vector<std::string>& parts) {
  return lang::join_identifier(parts);
}

namespace {

/// A record's default: `{}` or the fields given, each field's own default
/// where none is given.
Value record_default(
    const model::Module& module,
    const model::Type& type,
    const model::Default& d) {
  Value v;
  v.kind = Value::Kind::Record;
  v.decl = type.decl;
  if (d.record_fields.empty()) return v;  // `{}`
  const model::Record& r = module.records[static_cast<size_t>(type.decl)];
  for (size_t i = 0; i < r.fields.size(); ++i) {
    const model::Field& f = r.fields[i];
    const model::Default* given = d.record_value(i);
    const model::Default* value = given ? given : f.default_value ? &*f.default_value : nullptr;
    if (value) {
      v.items.push_back(typed_default(module, f.type, *value));
    } else {  // checked: an all-defaulted record
      Value inner;
      inner.kind = Value::Kind::Record;
      inner.decl = f.type.decl;
      v.items.push_back(std::move(inner));
    }
    v.given.push_back(given != nullptr);
  }
  return v;
}

/// A list's default: its items, or one literal repeated to a fixed size.
Value list_default(const model::Module& module, const model::Type& list, const model::Default& d) {
  using K = syntax::Literal::Kind;
  const syntax::Literal& lit = d.literal;
  model::Type element = list.inner();
  if (element.is_optional()) element = element.inner();
  Value v;
  v.kind = Value::Kind::List;
  if (lit.kind == K::List) {
    for (size_t i = 0; i < lit.items.size(); ++i) {
      model::Default item;
      item.literal = lit.items[i];
      if (i < d.item_constants.size()) item.constant = d.item_constants[i];
      v.items.push_back(typed_default(module, element, item));
    }
  } else {  // `int[2] x=1` means [1, 1]
    model::Default item;
    item.literal = lit;
    item.constant = d.constant;
    for (int64_t i = 0; i < list.suffixes.back().size; ++i)
      v.items.push_back(typed_default(module, element, item));
  }
  return v;
}

/// A named constant of a builtin type (`ScalarType`, `Layout`,
/// `MemoryFormat`, `Device`), or nullopt for other types.
std::optional<Value> constant_default(const model::Type& scalar, const model::Default& d) {
  Value v;
  switch (scalar.builtin) {
    case model::Builtin::ScalarType:
    case model::Builtin::Layout:
    case model::Builtin::MemoryFormat:
      v.kind = Value::Kind::Constant;
      v.constant_type = scalar.builtin;
      v.text = d.constant;
      return v;
    case model::Builtin::Device:
      v.kind = Value::Kind::Device;
      v.text = d.constant;
      return v;
    default:
      return std::nullopt;
  }
}

/// A bool, int, float or string literal as a value.
Value literal_value(const syntax::Literal& lit) {
  using K = syntax::Literal::Kind;
  Value v;
  switch (lit.kind) {
    case K::Bool:
      v.kind = Value::Kind::Bool;
      v.bool_value = lit.bool_value;
      break;
    case K::Int:
      v.kind = Value::Kind::Int;
      v.int_value = lit.int_value;
      break;
    case K::Float:
      v.kind = Value::Kind::Float;
      v.text = lit.text;
      break;
    case K::String:
      v.kind = Value::Kind::Str;
      v.text = lit.string_value;
      break;
    case K::Identifier:
      // ATen's reduction default `Mean` is the int 1 (at::Reduction::Mean).
      if (lit.string_value == "Mean") {
        v.kind = Value::Kind::Int;
        v.int_value = 1;
      } else {
        v.kind = Value::Kind::Str;
        v.text = lit.string_value;
      }
      break;
    default:
      break;
  }
  return v;
}

}  // namespace

Value typed_default(const model::Module& module, const model::Type& type, const model::Default& d) {
  if (type.is_record_list()) {  // `[]`, checked
    Value v;
    v.kind = Value::Kind::List;
    return v;
  }
  if (type.is_optional_record()) return Value{};  // `None`, checked
  if (type.is_record()) return record_default(module, type, d);
  if (d.literal.kind == syntax::Literal::Kind::None) return Value{};
  const model::Type scalar = type.is_optional() ? type.inner() : type;
  if (scalar.is_list()) return list_default(module, scalar, d);
  if (scalar.is_enum()) {
    Value v;
    v.kind = Value::Kind::Enum;
    v.decl = scalar.decl;
    v.text = d.constant;
    return v;
  }
  if (auto constant = constant_default(scalar, d)) return std::move(*constant);
  return literal_value(d.literal);
}

}  // namespace lower

std::string schema_type(const model::Type& type) {
  std::string out;
  syntax::append_schema_type(out, schema_base(type), type.alias, type.suffixes);
  return out;
}

std::optional<std::string> schema_default(const model::Type& type, const model::Default& value) {
  using K = syntax::Literal::Kind;
  const syntax::Literal& lit = value.literal;
  if (lit.kind == K::None) return std::string("None");
  if (type.dynamic) return std::nullopt;  // a Tensor's schema default can only be None
  model::Type scalar = type.is_optional() ? type.inner() : type;
  if (scalar.is_list()) {
    model::Type element = scalar.inner();
    // torch's schema parser takes list defaults for numbers and bools only,
    // and a single scalar for fixed-size lists (`int[2] x=1`).
    bool numeric = element.suffixes.empty() && element.kind == model::Type::Kind::Builtin &&
                   (element.builtin == Builtin::Int || element.builtin == Builtin::SymInt ||
                    element.builtin == Builtin::Float || element.builtin == Builtin::Bool);
    if (!numeric) return std::nullopt;
    if (lit.kind != K::List) return lit.text;
    // Rebuilt from the items: the IDL's spelling may span lines.
    std::string out = "[";
    for (size_t i = 0; i < lit.items.size(); ++i) out += (i ? ", " : "") + lit.items[i].text;
    return out + "]";
  }
  if (scalar.is_enum()) return schema_string_literal(value.constant);
  auto constant = [&](const model::NamedConstant* c) -> std::optional<std::string> {
    if (!c) return std::nullopt;
    if (c->torch_ident && lit.text == c->torch_ident) return lit.text;
    return std::to_string(c->code);
  };
  switch (scalar.builtin) {
    case Builtin::ScalarType:
      return constant(model::find_dtype(value.constant));
    case Builtin::Layout:
      return constant(model::find_layout(value.constant));
    case Builtin::MemoryFormat:
      return constant(model::find_memory_format(value.constant));
    case Builtin::Device:
      // torch keeps an optional device's default as a plain string; leave it
      // to the APIs rather than register a default of the wrong kind.
      if (type.is_optional()) return std::nullopt;
      return schema_string_literal(value.constant);
    case Builtin::Str:
      // Re-quoted, never the IDL's spelling: torch's lexer knows fewer escapes (no `\r`).
      return schema_string_literal(lit.string_value);
    default:
      return lit.text;
  }
}

lower::LoweredModule lower_module(
    const model::Module& module,
    Diagnostics& diags,
    const LowerOptions& options) {
  lower::LoweredModule out;
  if (options.record_layouts) out.records = record_layouts(module);
  if (!options.keep_ops) {
    for (size_t i = 0; i < module.ops.size(); ++i) {
      lower::LoweredOp op;
      OpLowering(module, i, diags, op).run(options);
    }
    return out;
  }
  out.ops.reserve(module.ops.size());
  for (size_t i = 0; i < module.ops.size(); ++i)
    OpLowering(module, i, diags, out.ops.emplace_back()).run(options);
  return out;
}

}  // namespace structop
