#include "lower/op_lowering.h"

#include <algorithm>

#include <fmt/format.h>

namespace structop::lowering {

void OpLowering::plain_slot_names() {
  // A plain parameter's C++ name and API path are its name and its API
  // spelling, each one segment (a record leaf's were set as it was
  // flattened). Only emitters read them: not made under --check.
  for (lower::Slot& s : out_.slots) {
    if (s.from_record()) continue;
    const model::Param& p = op_.params[s.param];
    s.cpp_name = p.name;
    s.api_path = p.api_name;
    s.segments = {s.path};
    s.api_segments = {s.api_path};
  }
}

void OpLowering::api_facts() {
  plain_slot_names();
  const lang::OpNames names = lang::op_names(op_);
  out_.names = {
      names.meta,
      names.setup_context,
      names.backward,
      names.grads,
      names.grad_slot,
      names.adapter};
  // Parameters of the record-form APIs. C++ default arguments only for the
  // trailing run of parameters that all have one (a keyword-only parameter
  // without default ends the run).
  size_t first_cpp_default = op_.params.size();
  while (first_cpp_default > 0) {
    const model::Param& p = op_.params[first_cpp_default - 1];
    if (!p.default_value && !p.implicit_default) break;
    --first_cpp_default;
  }
  std::vector<std::string> taken;
  for (size_t i = 0; i < op_.params.size(); ++i) {
    const model::Param& p = op_.params[i];
    lower::ApiParam a;
    a.name = p.api_name;
    a.type = p.type;
    if (p.default_value) {
      a.default_value = lower::typed_default(module_, p.type, *p.default_value);
    } else if (p.implicit_default) {
      a.default_value = lower::Value{};
      a.default_value->kind = lower::Value::Kind::Record;
      a.default_value->decl = p.type.decl;
    }
    a.kwarg_only = p.kwarg_only;
    a.cpp_default = i >= first_cpp_default;
    taken.push_back(a.name);
    out_.api_params.push_back(std::move(a));
  }
  // Return names: never a parameter's.
  for (size_t i = 0; i < out_.api_returns.size(); ++i) {
    lower::ApiReturn& a = out_.api_returns[i];
    std::string n = lang::api_spelling(return_name(i));
    while (std::find(taken.begin(), taken.end(), n) != taken.end()) n = "out_" + n;
    taken.push_back(n);
    a.name = n;
  }
  for (auto& o : out_.outputs) o.api_path = out_.api_returns[o.ret].name + o.member_path;
  // C++ names of the slots (`<op>_grad_slot`): unique among themselves and
  // the record-form parameters and outputs.
  std::set<std::string> used(taken.begin(), taken.end());
  for (auto& s : out_.slots) {
    if (!s.from_record()) {
      s.cpp_name = lang::api_spelling(s.cpp_name);
      continue;
    }
    std::string base = s.cpp_name;
    for (int n = 2; used.count(s.cpp_name); ++n) s.cpp_name = fmt::format("{}{}", base, n);
    used.insert(s.cpp_name);
  }
  // Gradients: one rule (model::Type::takes_grad).
  for (size_t i = 0; i < out_.slots.size(); ++i) {
    if (!out_.slots[i].takes_grad) continue;
    out_.grad_slots.push_back(i);
    out_.has_grad_list |= out_.slots[i].grad_list;
    const size_t p = out_.slots[i].param;
    if (out_.grad_params.empty() || out_.grad_params.back() != p) out_.grad_params.push_back(p);
  }
  // Forward kernels.
  for (size_t k = 0; k < names.kernels.size(); ++k) {
    out_.kernels.push_back(
        {names.kernels[k],
         op_.dispatch.empty() ? std::nullopt : std::optional<std::string>(op_.dispatch[k])});
  }
  local_names(taken);
}

void OpLowering::local_names(const std::vector<std::string>& api_names) {
  // The kernels' signatures name records and enums: a `ctx` parameter
  // must not hide one of those either.
  std::vector<std::string> hiding = api_names;
  std::vector<std::string> params;
  for (const auto& a : out_.api_params) params.push_back(a.name);
  for (const auto& r : module_.records) hiding.push_back(lang::api_spelling(r.name));
  for (const auto& e : module_.enums) hiding.push_back(lang::api_spelling(e.name));
  out_.locals.ctx = lang::first_free("ctx", hiding);
  out_.locals.stack = lang::first_free("stack", hiding);
  out_.locals.error = lang::first_free("error", params);
  // The Python function's other locals must not hide a parameter, nor the
  // function itself (which `failed` takes).
  params.push_back(op_.api_name);
  out_.locals.item = lang::first_free("r", params);
  out_.locals.override = lang::first_free("override", params);
  // The tuple `args` and the lists `args_<k>`.
  const auto taken = [&params](const std::string& base) {
    return std::any_of(params.begin(), params.end(), [&base](const std::string& p) {
      return p == base || (p.size() > base.size() + 1 && p.compare(0, base.size(), base) == 0 &&
                           p[base.size()] == '_' &&
                           p.find_first_not_of("0123456789", base.size() + 1) == std::string::npos);
    });
  };
  std::string args = "args";
  for (int n = 2; taken(args); ++n) args = fmt::format("args{}", n);
  out_.locals.args = args;
}

const model::Field& OpLowering::leaf_field(const lower::Slot& s) const {
  const model::Field* f = nullptr;
  int decl = op_.params[s.param].type.decl;
  for (size_t i : s.fields) {
    f = &module_.records[static_cast<size_t>(decl)].fields[i];
    decl = f->type.decl;
  }
  return *f;
}

void OpLowering::report_pinned_collision(const lower::Slot& first, const lower::Slot& later) {
  const lower::Slot& pinned = later.pinned ? later : first;
  const lower::Slot& other = later.pinned ? first : later;
  const model::Field& field = leaf_field(pinned);
  const bool same_field = other.pinned && &leaf_field(other) == &field;
  std::string hint;
  if (same_field) {
    hint =
        "a pinned name is the whole lowered name, whatever path reaches the field: use a record "
        "with pinned names once per op, or pin the names in a copy of the record";
  } else if (!other.from_record()) {
    hint = fmt::format(
        "rename the parameter `{}`, or pin another name (an op's lowered names are unique)",
        other.path);
  } else {
    hint = "pin another name, or rename the field (an op's lowered names are unique)";
  }
  diags_.error(
      field.schema_name->span,
      fmt::format(
          "op `{}`: the pinned name `{}` of `{}` is also the lowered name of `{}`",
          op_.qualified_name(),
          pinned.name,
          pinned.path,
          other.path),
      hint);
  diags_.note(
      op_.params[other.param].span,
      fmt::format("`{}` comes from parameter `{}`", other.path, op_.params[other.param].name));
}

void OpLowering::check_pinned_keywords() {
  if (std::find(op_.tags.begin(), op_.tags.end(), "pt2_compliant_tag") == op_.tags.end()) return;
  for (const auto& s : out_.slots) {
    if (!s.pinned || !lang::is_python_keyword(s.name)) continue;
    diags_.error(
        leaf_field(s).schema_name->span,
        fmt::format(
            "op `{}` is `pt2_compliant_tag`, but the pinned name `{}` of `{}` is a Python "
            "keyword: torch.compile binds custom-op arguments by name and cannot bind it",
            op_.qualified_name(),
            s.name,
            s.path),
        fmt::format("pin another name (e.g. `{}_`), or drop the tag", s.name));
    diags_.note(
        op_.params[s.param].span,
        fmt::format("`{}` comes from parameter `{}`", s.path, op_.params[s.param].name));
  }
}

void OpLowering::check_collisions() {
  const auto slot_name = [&](size_t i) {
    return std::optional<std::string_view>(out_.slots[i].name);
  };
  for (auto [first_index, later_index] : find_duplicates(out_.slots.size(), slot_name)) {
    const lower::Slot& first = out_.slots[first_index];
    const lower::Slot& later = out_.slots[later_index];
    // `from` and `from_`: the same name in the APIs, reported below.
    if ((first.python_keyword || later.python_keyword) && !first.pinned && !later.pinned) {
      continue;
    }
    if (first.pinned || later.pinned) {
      report_pinned_collision(first, later);
      continue;
    }
    diags_.error(
        op_.params[later.param].span,
        fmt::format(
            "op `{}`: `{}` and `{}` both lower to the parameter name `{}`",
            op_.qualified_name(),
            first.path,
            later.path,
            later.name),
        "record leaves are named `param__field`; rename the field or the parameter");
    if (first.param != later.param) {
      diags_.note(
          op_.params[first.param].span,
          fmt::format("`{}` comes from parameter `{}`", first.path, op_.params[first.param].name));
    }
  }
  // Keyword names get a trailing `_` in C++ and Python; that must stay unique
  // too. (Without a keyword the names are the parameters', already unique.)
  if (std::all_of(op_.params.begin(), op_.params.end(), [](const model::Param& p) {
        return p.api_name == p.name;
      })) {
    return;
  }
  std::vector<std::string_view> api;
  api.reserve(op_.params.size());
  for (const auto& p : op_.params) api.emplace_back(p.api_name);
  for (auto [first, later] : find_duplicates(api)) {
    const model::Param& a = op_.params[first];
    const model::Param& b = op_.params[later];
    // Two plain parameters, one a Python keyword: the schema's names too.
    const bool in_schema = !a.type.is_record() && !b.type.is_record() &&
                           (lang::is_python_keyword(a.name) || lang::is_python_keyword(b.name));
    diags_.error(
        b.span,
        fmt::format(
            "op `{}`: parameters `{}` and `{}` would both be called `{}` in {}",
            op_.qualified_name(),
            a.name,
            b.name,
            b.api_name,
            in_schema ? "the schema, C++ and Python" : "C++ and Python"),
        "rename one of them");
  }
}

}  // namespace structop::lowering
