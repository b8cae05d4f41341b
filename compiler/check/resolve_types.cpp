#include "check/resolver_impl.h"

namespace structop::resolving {

std::vector<std::string> Resolver::all_type_names() const {
  std::vector<std::string> names = model::builtin_names();
  for (const auto& [name, sym] : symbols_) names.push_back(name);
  return names;
}

std::optional<model::Type> Resolver::resolve_base(const syntax::TypeExpr& t, const Subject& what) {
  model::Type out;
  out.alias = t.alias;
  out.suffixes = t.suffixes;
  if (auto b = model::builtin_from_name(t.base)) {
    out.kind = model::Type::Kind::Builtin;
    out.builtin = *b;
  } else if (const Symbol* s = lookup(t.base)) {
    out.kind = s->kind == Symbol::Kind::Enum ? model::Type::Kind::Enum : model::Type::Kind::Record;
    out.decl = s->index;
    if (out.decl < 0) return std::nullopt;  // a broken declaration, already reported
    if (out.is_record() && record_broken_[static_cast<size_t>(out.decl)]) return std::nullopt;
  } else {
    report_unknown_type(t, what);
    return std::nullopt;
  }
  return out;
}

std::optional<model::Type> Resolver::resolve_type(
    const syntax::TypeExpr& t,
    Use use,
    const Subject& what) {
  std::optional<model::Type> resolved = resolve_base(t, what);
  if (!resolved) return std::nullopt;
  const model::Type& out = *resolved;
  const Span base_span = t.span.shifted(0, static_cast<int>(t.base.size()));
  if (t.alias && !out.is_builtin(Builtin::Tensor)) {
    diags_.error(t.span, fmt::format("{}: alias annotations apply only to `Tensor`", what));
    return std::nullopt;
  }
  if (t.alias && use == Use::Field) {
    diags_.error(
        t.span,
        fmt::format("{}: alias annotations are not allowed in record fields", what),
        "list the field under the op's `mutates:` instead, e.g. `mutates: [cfg.w]`");
    return std::nullopt;
  }
  if (!check_suffixes(t, out, use, what)) return std::nullopt;
  if (out.is_record() && !check_record_type(t, out, use, what)) return std::nullopt;
  if (out.is_enum() && !check_enum_type(t, out, use, what)) return std::nullopt;
  if (use == Use::Field && out.kind == model::Type::Kind::Builtin &&
      !model::allowed_in_record(out.builtin)) {
    diags_.error(
        base_span,
        fmt::format("{}: `{}` cannot be a record field", what, t.base),
        "pass it as a separate parameter of the op");
    return std::nullopt;
  }
  return resolved;
}

bool Resolver::check_record_type(
    const syntax::TypeExpr& t,
    const model::Type& out,
    Use use,
    const Subject& what) {
  if (use == Use::Return) return check_returned_record(t, out, what);
  const bool plain_list = out.suffixes.size() == 1 && out.is_list() &&
                          out.suffixes.front().size < 0;
  if (!t.suffixes.empty() && !plain_list && !out.is_optional_record()) {
    diags_.error(
        t.span,
        fmt::format(
            "{} has type `{}`, but fixed-size or optional lists of records and lists of "
            "optional records are not supported",
            what,
            syntax::to_schema(t)),
        fmt::format(
            "use a plain `{}`, an optional `{}?` or a list `{}[]`",
            t.base,
            t.base,
            t.base));
    return false;
  }
  if (out.is_optional_record() && out.decl >= 0 && !check_optional_record(t, out, what)) {
    return false;
  }
  if (plain_list && out.decl >= 0) {
    // Each leaf of the record becomes a list (`Tensor w` -> `Tensor[]
    // cfgs__w`): only leaves whose list is a schema type can.
    const model::Record& r = module_->records[static_cast<size_t>(out.decl)];
    if (auto dynamic = find_field(r, r.name + ".", [](const model::Type& f) {
          return f.dynamic;
        })) {
      diags_.error(
          t.span,
          fmt::format(
              "{} has type `{}`, but field `{}` is dynamic: a list of records cannot hold dynamic "
              "numbers",
              what,
              syntax::to_schema(t),
              dynamic->path),
          "pass the numbers of the list as one Tensor, or the records as separate parameters");
      return false;
    }
    if (std::string why = unlistable_leaf(r, r.name + "."); !why.empty()) {
      diags_.error(
          t.span,
          fmt::format(
              "{} has type `{}`, but {}: a list of records is one list per leaf, and "
              "torch's schemas have no list of that type",
              what,
              syntax::to_schema(t),
              why),
          "lists of records take leaves of type Tensor, Tensor?, int, SymInt, float, bool, "
          "str or an enum; pass the others as separate parameters");
      return false;
    }
  }
  return true;
}

bool Resolver::check_returned_record(
    const syntax::TypeExpr& t,
    const model::Type& out,
    const Subject& what) {
  // A returned record lowers to one output per leaf: only leaves that
  // are schema return types and need no conversion back.
  const Span base_span = t.span.shifted(0, static_cast<int>(t.base.size()));
  if (!t.suffixes.empty()) {
    diags_.error(
        t.span,
        fmt::format(
            "{} has type `{}`; a record can be returned only as itself",
            what,
            syntax::to_schema(t)),
        fmt::format("return a plain `{}`", t.base));
    return false;
  }
  if (out.decl >= 0) {
    const model::Record& r = module_->records[static_cast<size_t>(out.decl)];
    if (std::string why = unreturnable_leaf(r, r.name + "."); !why.empty()) {
      diags_.error(
          base_span,
          fmt::format("record `{}` cannot be a return type: {}", t.base, why),
          "a returned record may hold only fields of type Tensor, int, float and bool, "
          "and records of those; return the others as separate outputs");
      return false;
    }
  }
  return true;
}

bool Resolver::check_optional_record(
    const syntax::TypeExpr& t,
    const model::Type& out,
    const Subject& what) {
  // Absent is every leaf None; present needs a leaf that is never
  // None (the witness), so that the two cannot be confused.
  const model::Record& r = module_->records[static_cast<size_t>(out.decl)];
  if (std::string list = record_list_inside(r, r.name + "."); !list.empty()) {
    diags_.error(
        t.span,
        fmt::format(
            "{} has type `{}`, but {} is a list of records, which an optional record "
            "cannot hold",
            what,
            syntax::to_schema(t),
            list),
        fmt::format("pass the list as a separate parameter, or make `{}` plain", t.base));
    return false;
  }
  if (std::string list = tensor_list_inside(r, r.name + "."); !list.empty()) {
    diags_.error(
        t.span,
        fmt::format(
            "{} has type `{}`, but {}: in an optional record every leaf is optional, and "
            "an optional list of tensors (`Tensor[]?`) takes no gradient",
            what,
            syntax::to_schema(t),
            list),
        fmt::format(
            "pass the tensors as a separate `Tensor[]` parameter, or make `{}` plain",
            t.base));
    return false;
  }
  if (!has_required_leaf(r)) {
    diags_.error(
        t.span,
        fmt::format(
            "{} has type `{}`, but every leaf of record `{}` may be None, so an absent "
            "`{}` and one whose leaves are all None would have the same flat arguments",
            what,
            syntax::to_schema(t),
            t.base,
            t.base),
        fmt::format(
            "give `{}` a field that is not optional (a `Tensor`, a `float`...): it is "
            "None exactly when the record is absent",
            t.base));
    return false;
  }
  return true;
}

bool Resolver::check_enum_type(
    const syntax::TypeExpr& t,
    const model::Type& out,
    Use use,
    const Subject& what) {
  const Span base_span = t.span.shifted(0, static_cast<int>(t.base.size()));
  if (use == Use::Return) {
    diags_.error(
        base_span,
        fmt::format("enum `{}` cannot be a return type", t.base),
        "return a `str` or an `int`");
    return false;
  }
  // `E[]` and `E[]?` lower to `str[]` and `str[]?`; torch's schemas have
  // no list of optional strings for `E?[]`.
  if (!out.suffixes.empty() && out.suffixes.front().kind == syntax::TypeSuffix::Kind::Optional &&
      out.suffixes.size() > 1) {
    diags_.error(
        t.span,
        fmt::format("{}: lists of optional enums are not supported", what),
        fmt::format("use `{}[]` (a list of values) or `{}[]?` (an optional list)", t.base, t.base));
    return false;
  }
  if (!out.suffixes.empty() && out.suffixes.front().kind == syntax::TypeSuffix::Kind::List &&
      out.suffixes.front().size >= 0) {
    diags_.error(
        t.span,
        fmt::format("{}: enum lists have no fixed size", what),
        fmt::format("write `{}[]`", t.base));
    return false;
  }
  return true;
}

std::string Resolver::record_list_inside(const model::Record& r, const std::string& prefix) const {
  for (const auto& f : r.fields) {
    if (!f.type.is_record()) continue;
    if (f.type.is_record_list()) return "`" + prefix + f.name + "`";
    const auto& inner = module_->records[static_cast<size_t>(f.type.decl)];
    if (std::string path = record_list_inside(inner, prefix + f.name + "."); !path.empty())
      return path;
  }
  return {};
}

std::string Resolver::tensor_list_inside(const model::Record& r, const std::string& prefix) const {
  for (const auto& f : r.fields) {
    if (f.type.is_record()) {
      const auto& inner = module_->records[static_cast<size_t>(f.type.decl)];
      if (std::string path = tensor_list_inside(inner, prefix + f.name + "."); !path.empty())
        return path;
    } else if (f.type.takes_grad_list()) {
      return fmt::format("`{}{}` is a `{}`", prefix, f.name, describe_type(f.type, *module_));
    }
  }
  return {};
}

bool Resolver::has_required_leaf(const model::Record& r) const {
  for (const auto& f : r.fields) {
    if (f.type.is_plain_record()) {
      if (has_required_leaf(module_->records[static_cast<size_t>(f.type.decl)])) return true;
    } else if (!f.type.is_record() && !f.type.is_optional()) {
      return true;
    }
  }
  return false;
}

std::optional<Resolver::FoundField> Resolver::find_field(
    const model::Record& r,
    const std::string& prefix,
    const std::function<bool(const model::Type&)>& bad) const {
  for (const auto& f : r.fields) {
    const std::string path = prefix + f.name;
    if (f.type.is_plain_record()) {
      const auto& inner = module_->records[static_cast<size_t>(f.type.decl)];
      if (auto found = find_field(inner, path + ".", bad)) return found;
    } else if (bad(f.type)) {
      return FoundField{path, &f};
    }
  }
  return std::nullopt;
}

std::string Resolver::non_tensor_leaf(const model::Record& r, const std::string& prefix) const {
  auto found = find_field(r, prefix, [](const model::Type& t) { return !t.is_plain_tensor(); });
  return found ? found->path : std::string();
}

std::string Resolver::unreturnable_leaf(const model::Record& r, const std::string& prefix) const {
  auto found = find_field(r, prefix, [](const model::Type& t) {
    return t.is_record() || !t.suffixes.empty() || t.dynamic ||
           !(t.is_builtin(Builtin::Tensor) || t.is_builtin(Builtin::Int) ||
             t.is_builtin(Builtin::Float) || t.is_builtin(Builtin::Bool));
  });
  if (!found) return {};
  if (found->field->type.dynamic) return fmt::format("field `{}` is dynamic", found->path);
  return fmt::format(
      "field `{}` has type `{}`",
      found->path,
      describe_type(found->field->type, *module_));
}

std::string Resolver::unlistable_leaf(const model::Record& r, const std::string& prefix) const {
  auto found = find_field(r, prefix, [](const model::Type& t) {
    return t.is_record() || !model::Type::listable_leaf(t);
  });
  if (!found) return {};
  const model::Type& t = found->field->type;
  if (t.is_optional_record()) return fmt::format("field `{}` is an optional record", found->path);
  if (t.is_record()) return fmt::format("field `{}` is a list of records", found->path);
  return fmt::format("field `{}` has type `{}`", found->path, describe_type(t, *module_));
}

bool Resolver::check_suffixes(
    const syntax::TypeExpr& t,
    const model::Type& type,
    Use use,
    const Subject& what) {
  int lists = 0;
  for (size_t i = 0; i < t.suffixes.size(); ++i) {
    const auto& s = t.suffixes[i];
    if (s.kind == TypeSuffix::Kind::List) ++lists;
    if (s.kind == TypeSuffix::Kind::Optional && i + 1 < t.suffixes.size() &&
        t.suffixes[i + 1].kind == TypeSuffix::Kind::Optional) {
      diags_.error(
          t.span,
          fmt::format("{}: `{}` is optional twice", what, syntax::to_schema(t)),
          "write a single `?`");
      return false;
    }
  }
  if (lists > 1) {
    diags_.error(
        t.span,
        fmt::format("{}: nested lists like `{}` are not schema types", what, syntax::to_schema(t)),
        "flatten the data into one list, or use a Tensor");
    return false;
  }
  (void)type;
  (void)use;
  return true;
}

void Resolver::report_unknown_type(const syntax::TypeExpr& t, const Subject& what) {
  Span span = t.span.shifted(0, static_cast<int>(t.base.size()));
  static const std::map<std::string, std::string> kHints = {
      {"Dict", "dict types are not supported; use separate fields or a record"},
      {"dict", "dict types are not supported; use separate fields or a record"},
      {"Tuple", "tuple types are not supported; use a list `T[]` or separate fields"},
      {"tuple", "tuple types are not supported; use a list `T[]` or separate fields"},
      {"List", "write a list as `T[]`, e.g. `int[]`"},
      {"list", "write a list as `T[]`, e.g. `int[]`"},
      {"Optional", "write an optional as `T?`, e.g. `float?`"},
      {"double", "the schema's floating-point type is `float` (a C++ double)"},
      {"int64_t", "the schema's integer type is `int` (a C++ int64_t)"},
      {"string", "the schema's string type is `str`"},
      {"Tensor?", "write `Tensor?`"},
  };
  std::string hint;
  if (auto it = kHints.find(t.base); it != kHints.end()) {
    hint = it->second;
  } else if (std::string guess = closest_match(t.base, all_type_names()); !guess.empty()) {
    hint = fmt::format("did you mean `{}`?", guess);
  } else {
    hint = "define it under `records:` or `enums:`, or include the file that does";
  }
  diags_.error(span, fmt::format("{}: unknown type `{}`", what, t.base), hint);
}

}  // namespace structop::resolving
