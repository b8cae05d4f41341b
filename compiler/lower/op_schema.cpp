#include "lower/op_lowering.h"

namespace structop::lowering {

void OpLowering::build_names() {
  for (size_t i = 0; i < out_.slots.size(); ++i) {
    const lower::Slot& s = out_.slots[i];
    if (!s.type.is_builtin(Builtin::Tensor)) continue;
    targets_[s.name].slots.push_back(i);
    if (s.path != s.name) targets_[s.path].slots.push_back(i);
    // Every enclosing prefix: `cfg`, `cfg.inner`.
    for (size_t dot = s.path.find('.'); dot != std::string::npos; dot = s.path.find('.', dot + 1)) {
      targets_[s.path.substr(0, dot)].slots.push_back(i);
    }
  }
}

std::vector<std::string> OpLowering::valid_names(bool plain_tensors_only) const {
  std::vector<std::string> out;
  for (const auto& [name, target] : targets_) {
    if (plain_tensors_only &&
        !(target.slots.size() == 1 && out_.slots[target.slots[0]].type.is_plain_tensor())) {
      continue;
    }
    out.push_back(name);
  }
  return out;
}

void OpLowering::report_unknown(const syntax::Name& n, const char* key, bool plain_only) {
  diags_.error(
      n.span,
      fmt::format(
          "op `{}`: `{}` in `{}:` is not a tensor parameter or field",
          op_.qualified_name(),
          n.text,
          key),
      valid_names_hint(n.text, plain_only));
}

const lower::Slot* OpLowering::find_slot(const std::string& name) const {
  for (const auto& s : out_.slots) {
    if (s.name == name || s.path == name) return &s;
  }
  return nullptr;
}

void OpLowering::resolve_mutates() {
  for (const auto& n : op_.mutates) {
    auto it = targets_.find(n.text);
    if (it == targets_.end()) {
      if (const lower::Slot* s = find_slot(n.text)) {
        // A parameter or field that exists but holds no tensor.
        diags_.error(
            n.span,
            fmt::format(
                "op `{}`: `{}` in `mutates:` has type `{}`; only tensors can be mutated",
                op_.qualified_name(),
                n.text,
                describe_type(s->type, module_)),
            valid_names_hint(n.text, false, false));
        continue;
      }
      report_unknown(n, "mutates", false);
      continue;
    }
    for (size_t slot : it->second.slots) {
      lower::Slot& s = out_.slots[slot];
      if (s.type.is_list()) {
        diags_.error(
            n.span,
            fmt::format(
                "op `{}`: `{}` is a `{}`; only `Tensor` and `Tensor?` can be mutated",
                op_.qualified_name(),
                s.path,
                schema_type(s.type)),
            "mutate the tensors of a list through a separate op");
        continue;
      }
      if (s.type.alias) continue;  // already annotated in the func line
      s.mutated = true;
    }
  }
}

void OpLowering::resolve_meta() {
  size_t tensor_outputs = 0;
  bool only_tensors = true;
  for (const auto& o : out_.outputs) {
    if (o.type.is_plain_tensor()) {
      ++tensor_outputs;
    } else {
      only_tensors = false;
    }
  }
  if (op_.meta == model::MetaKind::Custom) return;
  if (!only_tensors) {
    diags_.error(
        op_.name_span,
        fmt::format(
            "op `{}` returns `{}`, which a default meta kernel cannot shape",
            op_.qualified_name(),
            return_list()),
        fmt::format("set `meta: custom` and write `kernels::{}`", lang::op_names(op_).meta));
    return;
  }
  if (op_.meta == model::MetaKind::Identity) {
    identity_meta(tensor_outputs);
    return;
  }
  if (op_.meta_names.size() != tensor_outputs) {
    diags_.error(
        op_.meta_names.empty() ? op_.name_span : op_.meta_names.front().span,
        fmt::format(
            "op `{}` has {} but `meta:` lists {}",
            op_.qualified_name(),
            count(tensor_outputs, "tensor output"),
            count(op_.meta_names.size(), "name")),
        "list exactly one tensor input per output, in output order");
    return;
  }
  for (const auto& n : op_.meta_names) meta_source(n);
}

void OpLowering::identity_meta(size_t tensor_outputs) {
  // Output k copies the k-th tensor input: plain `Tensor` parameters
  // first, then tensor fields of records, each in declaration order.
  for (bool record_leaves : {false, true}) {
    for (size_t i = 0; i < out_.slots.size() && out_.meta_sources.size() < tensor_outputs; ++i) {
      const lower::Slot& s = out_.slots[i];
      if (s.type.is_plain_tensor() && s.from_record() == record_leaves)
        out_.meta_sources.push_back(i);
    }
  }
  if (out_.meta_sources.size() < tensor_outputs) {
    diags_.error(
        op_.name_span,
        fmt::format(
            "op `{}` has {} but only {} for the default (identity) meta kernel",
            op_.qualified_name(),
            count(tensor_outputs, "tensor output"),
            count(out_.meta_sources.size(), "plain tensor input")),
        "list one input per output under `meta:` (e.g. `meta: [x, x]`), or set `meta: custom`");
  }
}

void OpLowering::meta_source(const syntax::Name& n) {
  auto it = targets_.find(n.text);
  if (it != targets_.end() && it->second.slots.size() == 1 &&
      out_.slots[it->second.slots[0]].type.is_plain_tensor()) {
    out_.meta_sources.push_back(it->second.slots[0]);
    return;
  }
  if (it != targets_.end() && it->second.slots.size() > 1) {
    diags_.error(
        n.span,
        fmt::format(
            "op `{}`: `{}` in `meta:` stands for {} tensors; name the one each output copies",
            op_.qualified_name(),
            n.text,
            it->second.slots.size()),
        valid_names_hint(n.text, true, false));
  } else if (const lower::Slot* s = find_slot(n.text)) {
    diags_.error(
        n.span,
        fmt::format(
            "op `{}`: `{}` in `meta:` has type `{}`; outputs copy the metadata of a plain "
            "`Tensor`",
            op_.qualified_name(),
            n.text,
            describe_type(s->type, module_)),
        valid_names_hint(n.text, true, false));
  } else {
    report_unknown(n, "meta", true);
  }
}

std::string OpLowering::return_list() const {
  std::string s;
  for (const auto& o : out_.outputs) s += (s.empty() ? "" : ", ") + schema_type(o.type);
  return out_.outputs.size() == 1 ? s : "(" + s + ")";
}

void OpLowering::apply_schema_defaults() {
  bool later_positional_all_defaulted = true;
  for (auto it = out_.slots.rbegin(); it != out_.slots.rend(); ++it) {
    if (it->default_value) {
      auto text = schema_default(it->type, *it->default_value);
      if (text && (it->kwarg_only || later_positional_all_defaulted)) it->schema_default = text;
    }
    if (!it->kwarg_only) later_positional_all_defaulted &= it->schema_default.has_value();
  }
}

void OpLowering::print_schema() {
  // Alias sets for mutated leaves: fresh letters not used by the func line.
  std::set<std::string> used;
  bool any_mutated = std::any_of(out_.slots.begin(), out_.slots.end(), [](const auto& s) {
    return s.mutated;
  });
  if (any_mutated) {
    auto collect = [&](const model::Type& t) {
      if (t.alias) {
        for (const auto& a : t.alias->before) used.insert(a);
        for (const auto& a : t.alias->after) used.insert(a);
      }
    };
    for (const auto& s : out_.slots) collect(s.type);
    for (const auto& o : out_.outputs) collect(o.type);
  }
  auto fresh = [&, next = 0]() mutable {
    while (true) {
      std::string name = next < 26 ? std::string(1, static_cast<char>('a' + next))
                                   : fmt::format("a{}", next - 25);
      ++next;
      if (used.insert(name).second) return name;
    }
  };

  std::string params;
  params.reserve(out_.slots.size() * 24);
  bool star = false;
  for (auto& s : out_.slots) {
    const std::string_view base = schema_base(s.type);
    s.schema_type.clear();
    if (s.mutated) {
      auto a = std::make_shared<syntax::AliasAnnotation>();
      a->before.push_back(fresh());
      a->is_write = true;
      syntax::append_schema_type(s.schema_type, base, a, s.type.suffixes);
    } else {
      syntax::append_schema_type(s.schema_type, base, s.type.alias, s.type.suffixes);
    }
    if (!params.empty()) params += ", ";
    if (s.kwarg_only && !star) {
      params += "*, ";
      star = true;
    }
    params += s.schema_type;
    params += ' ';
    params += s.name;
    if (s.schema_default) {
      params += '=';
      params += *s.schema_default;
    }
  }
  std::string returns;
  bool named = std::any_of(out_.outputs.begin(), out_.outputs.end(), [](const auto& o) {
    return !o.name.empty();
  });
  for (auto& o : out_.outputs) {
    o.schema_type = schema_type(o.type);
    if (!returns.empty()) returns += ", ";
    returns += o.schema_type;
    if (!o.name.empty()) returns.append(1, ' ').append(o.name);
  }
  if (out_.outputs.size() != 1 || named) returns = "(" + returns + ")";
  out_.schema.reserve(op_.name.size() + op_.overload.size() + params.size() + returns.size() + 7);
  out_.schema += op_.name;
  if (!op_.overload.empty()) out_.schema.append(1, '.').append(op_.overload);
  out_.schema += '(';
  out_.schema += params;
  out_.schema += ") -> ";
  out_.schema += returns;
}

void OpLowering::self_check() {
  const lower::Slot* first_default = nullptr;
  for (const auto& s : out_.slots) {
    if (s.kwarg_only) continue;
    if (s.schema_default) {
      if (!first_default) first_default = &s;
    } else if (first_default) {
      if (out_.schema.empty()) print_schema();
      diags_.error(
          op_.span,
          fmt::format(
              "internal error: lowered schema `{}` has positional `{}` without a default "
              "after `{}` with one",
              out_.schema,
              s.name,
              first_default->name),
          "please report this with the IDL file");
      return;
    }
  }
}

}  // namespace structop::lowering
