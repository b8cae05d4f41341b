#include <algorithm>

#include "base/duplicates.h"
#include "base/name_index.h"
#include "check/resolver_impl.h"
#include "lang/generated_names.h"

namespace structop::resolving {

void Resolver::resolve_op(const syntax::OpDecl& decl) {
  const syntax::FuncSig& sig = decl.sig;
  model::Op op = op_header(decl);
  // "op `name.overload`", for messages about its parameters and returns.
  const std::string op_label = "op `" + op.qualified_name() + "`";
  bool ok = check_signature_names(sig, op_label);
  ok &= resolve_params(sig, op_label, op);
  if (ok) ok = resolve_dynamic(decl, op_label, op);
  // Checks that need every parameter resolved; the returns and dispatch
  // keys are checked either way, so one run reports all of an op's errors.
  if (ok) {
    ok = check_lowered_count(sig, op_label, op);
    if (ok) check_positional_defaults(op);
  }
  ok &= resolve_returns(sig, op_label, op);
  check_dispatch(decl, op);
  check_tags(decl, op);
  check_pt2_compliant(decl, op);
  if (!ok) return;
  check_backward(decl, op);
  ops_spans_.push_back(sig.name.span);
  module_->ops.push_back(std::move(op));
}

model::Op Resolver::op_header(const syntax::OpDecl& decl) {
  const syntax::FuncSig& sig = decl.sig;
  model::Op op;
  op.name = sig.name.text;
  op.overload = sig.overload.text;
  op.api_name = lang::op_cpp_name(op);
  op.span = decl.func_span;
  op.name_span = sig.name.span;
  op.backward = decl.backward;
  op.annotations = decl.annotations;
  op.doc = decl.doc;
  op.mutates = decl.mutates;
  op.meta_names = decl.meta.names;
  op.meta = decl.meta.kind == syntax::MetaDecl::Kind::Identity ? model::MetaKind::Identity
            : decl.meta.kind == syntax::MetaDecl::Kind::Custom ? model::MetaKind::Custom
                                                               : model::MetaKind::Names;
  return op;
}

bool Resolver::check_signature_names(const syntax::FuncSig& sig, const std::string& op_label) {
  bool ok = check_name(sig.name, NameUse::Op, op_label);
  if (!sig.overload.text.empty()) ok &= check_name(sig.overload, NameUse::Overload, op_label);
  for (const auto& p : sig.params)
    ok &= check_name(p.name, NameUse::Param, Subject::param(p.name.text, op_label));
  for (const auto& r : sig.returns) {
    if (!r.name.text.empty())
      ok &= check_name(r.name, NameUse::Return, Subject::ret(r.name.text, op_label));
  }

  const auto param_name = [&](size_t i) {
    return std::optional<std::string_view>(sig.params[i].name.text);
  };
  for (auto [first, later] : find_duplicates(sig.params.size(), param_name)) {
    const syntax::Name& n = sig.params[later].name;
    diags_.error(
        n.span,
        fmt::format("{} is declared twice", Subject::param(n.text, op_label)),
        "rename one of them");
    diags_.note(sig.params[first].name.span, "first declared here");
    ok = false;
  }
  return ok;
}

bool Resolver::resolve_params(
    const syntax::FuncSig& sig,
    const std::string& op_label,
    model::Op& op) {
  bool ok = true;
  op.params.reserve(sig.params.size());
  for (const auto& p : sig.params) {
    const Subject what = Subject::param(p.name.text, op_label);
    auto type = resolve_type(p.type, Use::Param, what);
    if (!type) {
      ok = false;
      continue;
    }
    model::Param param;
    param.name = p.name.text;
    param.api_name = lang::api_spelling(param.name);
    param.type = std::move(*type);
    param.kwarg_only = p.kwarg_only;
    param.span = p.name.span;
    if (p.default_value) {
      if (auto d = check_default(param.type, *p.default_value, what, false, *module_, diags_)) {
        param.default_value = std::make_shared<const model::Default>(std::move(*d));
      } else {
        ok = false;
      }
    }
    op.params.push_back(std::move(param));
  }
  return ok;
}

bool Resolver::mark_dynamic(model::Type& type, const Span& span, const Subject& what) {
  const auto number = [](const model::Type& t) {
    return t.suffixes.empty() &&
           (t.is_builtin(model::Builtin::Int) || t.is_builtin(model::Builtin::Float));
  };
  if (!number(type)) {
    diags_.error(
        span,
        fmt::format(
            "{} has type `{}`; only `int` and `float` can be dynamic",
            what.str(),
            describe_type(type, *module_)),
        type.holds_tensor()
            ? "a Tensor is already a graph input under torch.compile: drop `dynamic`"
        : type.is_optional() && number(type.inner())
            ? "a dynamic number cannot be optional: give it a default instead of None"
            : "a value that changes per call and is not a number: pass it as a Tensor");
    return false;
  }
  type.dynamic = true;
  return true;
}

bool Resolver::resolve_dynamic(
    const syntax::OpDecl& decl,
    const std::string& op_label,
    model::Op& op) {
  bool ok = true;
  const auto listed = [&](size_t i) {
    return std::optional<std::string_view>(decl.dynamic[i].text);
  };
  std::vector<bool> repeated(decl.dynamic.size());
  for (auto [first, later] : find_duplicates(decl.dynamic.size(), listed)) {
    const syntax::Name& n = decl.dynamic[later];
    diags_.error(n.span, fmt::format("`dynamic` lists `{}` twice", n.text), "list it once");
    repeated[later] = true;
    ok = false;
  }
  std::vector<std::string> names;
  for (const auto& p : op.params) names.push_back(p.name);
  for (size_t i = 0; i < decl.dynamic.size(); ++i) {
    if (repeated[i]) continue;
    const syntax::Name& n = decl.dynamic[i];
    auto it = std::find_if(op.params.begin(), op.params.end(), [&](const model::Param& p) {
      return p.name == n.text;
    });
    if (it == op.params.end()) {
      std::string guess = closest_match(n.text, names);
      diags_.error(
          n.span,
          fmt::format("{} has no parameter `{}` (listed in `dynamic`)", op_label, n.text),
          n.text.find('.') != std::string::npos
              ? "a record field is dynamic in its record: give the field `dynamic: true`"
          : guess.empty() ? "list `int` or `float` parameters of the op"
                          : fmt::format("did you mean `{}`?", guess));
      ok = false;
      continue;
    }
    ok &= mark_dynamic(it->type, n.span, Subject::param(it->name, op_label));
  }
  return ok;
}

bool Resolver::check_lowered_count(
    const syntax::FuncSig& sig,
    const std::string& op_label,
    const model::Op& op) {
  size_t lowered_count = 0;
  for (const auto& p : op.params) {
    lowered_count += p.type.is_record() ? record_leaves_[static_cast<size_t>(p.type.decl)] : 1;
  }
  total_lowered_ += lowered_count;
  if (lowered_count > kMaxLoweredParams) {
    diags_.error(
        sig.name.span,
        fmt::format(
            "{} lowers to {} parameters; at most {} are supported",
            op_label,
            lowered_count,
            kMaxLoweredParams),
        "pass big groups of values as a Tensor or a list");
    return false;
  }
  if (total_lowered_ > kMaxTotalLoweredParams) {
    if (!total_reported_) {
      diags_.error(
          sig.name.span,
          fmt::format(
              "the ops of this file lower to more than {} parameters in total (reached at {})",
              kMaxTotalLoweredParams,
              op_label),
          "split the ops into several IDL files");
      total_reported_ = true;
    }
    return false;
  }
  return true;
}

bool Resolver::resolve_returns(
    const syntax::FuncSig& sig,
    const std::string& op_label,
    model::Op& op) {
  bool ok = true;
  op.returns.reserve(sig.returns.size());
  for (const auto& r : sig.returns) {
    const Subject what = Subject::ret(r.name.text, op_label);
    auto type = resolve_type(r.type, Use::Return, what);
    if (!type) {
      ok = false;
      continue;
    }
    op.returns.push_back({r.name.text, std::move(*type), r.type.span});
  }
  return ok;
}

void Resolver::check_positional_defaults(model::Op& op) {
  bool tail_defaulted[2] = {true, true};  // positional, kwarg-only
  for (auto it = op.params.rbegin(); it != op.params.rend(); ++it) {
    bool& tail = tail_defaulted[it->kwarg_only ? 1 : 0];
    if (it->type.is_plain_record() && !it->default_value) {
      const model::Record& r = module_->records[static_cast<size_t>(it->type.decl)];
      it->implicit_default = r.all_defaulted && (tail || it->kwarg_only);
      tail = tail && it->implicit_default;
    } else {
      tail = tail && it->default_value != nullptr;
    }
  }
  const model::Param* first_default = nullptr;
  for (const auto& p : op.params) {
    if (p.kwarg_only) continue;
    bool has_default = p.default_value != nullptr || p.implicit_default;
    if (has_default) {
      if (!first_default) first_default = &p;
    } else if (first_default) {
      diags_.error(
          p.span,
          fmt::format(
              "parameter `{}` of op `{}` has no default but follows `{}`, which has one",
              p.name,
              op.qualified_name(),
              first_default->name),
          fmt::format(
              "give `{}` a default, move it before `{}`, or make it keyword-only after `*`",
              p.name,
              first_default->name));
      return;
    }
  }
}

void Resolver::check_dispatch(const syntax::OpDecl& decl, model::Op& op) {
  std::set<std::string> seen;
  for (const auto& key : decl.dispatch) {
    if (key.text == "Meta") {
      diags_.error(
          key.span,
          fmt::format("op `{}`: `Meta` is not a dispatch key here", op.qualified_name()),
          "Meta kernels come from `meta:` (identity, a list of names, or `custom`)");
      continue;
    }
    const auto& keys = model::dispatch_keys();
    if (std::find(keys.begin(), keys.end(), key.text) == keys.end()) {
      std::string guess = key.text == "GPU" || key.text == "gpu" ? "CUDA"
                                                                 : closest_match(key.text, keys);
      diags_.error(
          key.span,
          fmt::format("op `{}`: unknown dispatch key `{}`", op.qualified_name(), key.text),
          guess.empty() ? fmt::format("valid keys are {}", quoted_list(keys))
                        : fmt::format("did you mean `{}`?", guess));
      continue;
    }
    if (!seen.insert(key.text).second) {
      diags_.error(
          key.span,
          fmt::format("op `{}` lists dispatch key `{}` twice", op.qualified_name(), key.text),
          "remove the duplicate");
      continue;
    }
    op.dispatch.push_back(key.text);
  }
}

void Resolver::check_tags(const syntax::OpDecl& decl, model::Op& op) {
  const auto& tags = model::torch_tags();
  for (const auto& tag : decl.tags) {
    if (std::find(tags.begin(), tags.end(), tag.text) == tags.end()) {
      std::string guess = closest_match(tag.text, tags);
      diags_.error(
          tag.span,
          fmt::format("op `{}`: unknown tag `{}`", op.qualified_name(), tag.text),
          guess.empty() ? fmt::format("torch's operator tags are {}", quoted_list(tags))
                        : fmt::format("did you mean `{}`?", guess));
      continue;
    }
    if (std::find(op.tags.begin(), op.tags.end(), tag.text) != op.tags.end()) {
      diags_.error(
          tag.span,
          fmt::format("op `{}` lists tag `{}` twice", op.qualified_name(), tag.text),
          "remove the duplicate");
      continue;
    }
    op.tags.push_back(tag.text);
  }
}

void Resolver::check_op_names() {
  // Ops of one C++ name (`a.b` and `a_b`, or one op declared twice): a flat
  // index finds them, and each op keeps its earlier namesake (rarely one).
  const auto& ops = module_->ops;
  constexpr uint32_t kNone = UINT32_MAX;
  NameIndex last_named(ops.size());  // C++ name -> the last op called so
  NameArena names;
  std::vector<uint32_t> earlier(ops.size(), kNone);
  std::string cpp;
  for (size_t i = 0; i < ops.size(); ++i) {
    ops[i].cpp_name_into(cpp);
    auto [last, fresh] = last_named.insert(names.keep(cpp), static_cast<uint32_t>(i));
    if (fresh) continue;
    earlier[i] = last;
    last = static_cast<uint32_t>(i);
  }
  // Per op with an earlier namesake, the first op of its qualified name (the
  // same op twice) else the first of its C++ name; reported in that order.
  std::vector<std::pair<size_t, size_t>> twice, same_cpp;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (earlier[i] == kNone) continue;
    size_t first = i, first_same_op = kNone;
    for (uint32_t j = earlier[i]; j != kNone; j = earlier[j]) {
      first = j;
      if (ops[j].name == ops[i].name && ops[j].overload == ops[i].overload) first_same_op = j;
    }
    if (first_same_op != kNone) {
      twice.emplace_back(first_same_op, i);
    } else {
      same_cpp.emplace_back(first, i);
    }
  }
  for (auto [first, later] : twice) {
    diags_.error(
        ops_spans_[later],
        fmt::format("op `{}` is declared twice", ops[later].qualified_name()),
        "give one of them an overload name, e.g. `name.variant(...)`");
    diags_.note(ops_spans_[first], "first declared here");
  }
  for (auto [first, later] : same_cpp) {
    const std::string first_name = ops[first].qualified_name();
    ops[later].cpp_name_into(cpp);
    diags_.error(
        ops_spans_[later],
        fmt::format(
            "ops `{}` and `{}` would both be called `{}` in C++ and Python",
            first_name,
            ops[later].qualified_name(),
            cpp),
        "rename one of them");
    diags_.note(ops_spans_[first], fmt::format("`{}` is declared here", first_name));
  }
}

}  // namespace structop::resolving
