#include "check/defaults.h"

#include <algorithm>

#include <fmt/format.h>

#include "syntax/schema_parser.h"

namespace structop {
namespace {

using model::Builtin;
using syntax::Literal;

class DefaultChecker {
 public:
  DefaultChecker(const model::Module& module, Diagnostics& diags, const Subject& what)
      : module_(module), diags_(diags), what_(what) {}

  bool check(const model::Type& type, const Literal& lit, model::Default* out) {
    if (type.is_record_list()) {
      // Each leaf is a list of its own: only the empty list has a default
      // for every one of them.
      if (lit.kind == Literal::Kind::List && lit.items.empty()) return true;
      return fail(lit, type, "a list of records can only default to `[]`");
    }
    if (type.is_optional_record()) {
      // Absent is every leaf None; a present default would need a record
      // literal per leaf's optional schema default, which torch cannot show.
      if (lit.kind == Literal::Kind::None) return true;
      return fail(
          lit,
          type,
          "an optional record defaults only to `None`; to default to a record, make the type "
          "the plain record and give it that default");
    }
    if (type.is_record()) return check_record(type, lit, out);
    if (lit.kind == Literal::Kind::Record) {
      return fail(
          lit,
          type,
          "`{field: value, ...}` is the default of a record; this type takes a schema literal");
    }
    if (lit.kind == Literal::Kind::None) {
      if (type.is_optional()) return true;
      return fail(
          lit,
          type,
          fmt::format(
              "make the type optional (`{}?`) to allow `None`",
              describe_type(type, module_)));
    }
    if (type.is_optional()) return check(type.inner(), lit, out);
    if (type.is_list()) return check_list(type, lit, out);
    return check_scalar(type, lit, &out->constant);
  }

 private:
  bool fail(const Literal& lit, const model::Type& type, std::string hint) {
    diags_.error(
        lit.span,
        fmt::format(
            "default `{}` does not fit {} of type `{}`",
            lit.text,
            what_,
            describe_type(type, module_)),
        std::move(hint));
    return false;
  }

  /// `{name: value, ...}`: each value checked against its field (nested
  /// records recursively, with the field as the subject), every field
  /// without a default of its own set.
  bool check_record(const model::Type& type, const Literal& lit, model::Default* out) {
    const model::Record& r = module_.records[static_cast<size_t>(type.decl)];
    if (lit.kind != Literal::Kind::Record) {
      return fail(
          lit,
          type,
          fmt::format(
              "a record default sets fields by name: `{{field: value, ...}}`, or `{{}}` for the "
              "defaults `{}` declares",
              r.name));
    }
    std::vector<std::string> names;
    names.reserve(r.fields.size());
    for (const auto& f : r.fields) names.push_back(f.name);
    std::vector<int> set_by(r.fields.size(), -1);  // the item setting each field
    std::vector<std::pair<size_t, model::Default>> values;
    bool ok = true;
    for (size_t i = 0; i < lit.keys.size(); ++i) {
      std::optional<size_t> field = record_key(r, names, lit, i, set_by);
      if (!field) {
        ok = false;
        continue;
      }
      set_by[*field] = static_cast<int>(i);
      const model::Field& f = r.fields[*field];
      const Subject sub = Subject::field(r.name, f.name);
      model::Default value;
      value.literal = lit.items[i];
      if (DefaultChecker(module_, diags_, sub).check(f.type, lit.items[i], &value)) {
        values.emplace_back(*field, std::move(value));
      } else {
        ok = false;
      }
    }
    ok &= check_unset_fields(r, lit, set_by);
    std::sort(values.begin(), values.end(), [](const auto& a, const auto& b) {
      return a.first < b.first;
    });
    for (auto& [field, value] : values) {
      out->record_fields.push_back(field);
      out->record_values.push_back(std::move(value));
    }
    return ok;
  }

  /// The field that key `i` of record default `lit` sets; nullopt after a
  /// diagnostic when `r` has no such field or an earlier key set it.
  std::optional<size_t> record_key(
      const model::Record& r,
      const std::vector<std::string>& names,
      const Literal& lit,
      size_t i,
      const std::vector<int>& set_by) {
    const syntax::Name& key = lit.keys[i];
    auto it = std::find(names.begin(), names.end(), key.text);
    if (it == names.end()) {
      std::string guess = closest_match(key.text, names);
      diags_.error(
          key.span,
          fmt::format(
              "record `{}` has no field `{}` (in the default of {})",
              r.name,
              key.text,
              what_),
          guess.empty() ? fmt::format("its fields are {}", quoted_list(names))
                        : fmt::format("did you mean `{}`?", guess));
      return std::nullopt;
    }
    const size_t field = static_cast<size_t>(it - names.begin());
    if (set_by[field] >= 0) {
      diags_.error(
          key.span,
          fmt::format("the default of {} sets field `{}` twice", what_, key.text),
          "remove one of them");
      diags_.note(
          lit.keys[static_cast<size_t>(set_by[field])].span,
          fmt::format("`{}` is first set here", key.text));
      return std::nullopt;
    }
    return field;
  }

  /// Every field of `r` that record default `lit` leaves unset has a default
  /// of its own (or is an all-defaulted record); reports each that has not.
  bool check_unset_fields(
      const model::Record& r,
      const Literal& lit,
      const std::vector<int>& set_by) {
    bool ok = true;
    for (size_t field = 0; field < r.fields.size(); ++field) {
      const model::Field& f = r.fields[field];
      if (set_by[field] >= 0 || f.default_value || f.bad_default) continue;
      if (f.type.is_plain_record() &&
          module_.records[static_cast<size_t>(f.type.decl)].all_defaulted)
        continue;
      diags_.error(
          lit.span,
          fmt::format(
              "the default of {} leaves field `{}.{}` unset, and it has no default",
              what_,
              r.name,
              f.name),
          fmt::format("set it: `{}: VALUE`", f.name));
      ok = false;
    }
    return ok;
  }

  bool check_list(const model::Type& type, const Literal& lit, model::Default* out) {
    model::Type element = type.inner();
    int64_t size = type.suffixes.back().size;
    if (lit.kind != Literal::Kind::List) {
      // torch's schema allows `int[2] x=1`, meaning [1, 1].
      if (size >= 0) return check_scalar(element, lit, &out->constant);
      return fail(lit, type, "write a list, e.g. `[1, 2]` or `[]`");
    }
    // torch reads `int[2] x=[1]` but rejects the op later. ATen's own
    // exceptions: `[]` for "not given" (`int[2] stride=[]`), and `int[1]`,
    // which means any length (`int[1] dim=[-2,-1]`).
    if (size > 1 && !lit.items.empty() && lit.items.size() != static_cast<size_t>(size)) {
      return fail(
          lit,
          type,
          fmt::format(
              "`{}` has a fixed size: give exactly {} value{}, or one value for all of them",
              describe_type(type, module_),
              size,
              size == 1 ? "" : "s"));
    }
    bool ok = true;
    for (const auto& item : lit.items) {
      std::string constant;
      if (item.kind == Literal::Kind::None && element.is_optional()) {
        out->item_constants.emplace_back();
        continue;
      }
      ok &= check_scalar(element.is_optional() ? element.inner() : element, item, &constant);
      out->item_constants.push_back(constant);
    }
    return ok;
  }

  bool check_scalar(const model::Type& type, const Literal& lit, std::string* constant) {
    using K = Literal::Kind;
    if (type.is_enum()) return check_enum(type, lit, constant);
    switch (type.builtin) {
      case Builtin::Tensor:
        return fail(lit, type, "a tensor's only default is `None`, on a `Tensor?`");
      case Builtin::SymInt:
        // c10::SymInt keeps the integers below -2^62 for symbolic values.
        if (lit.kind == K::Int && lit.int_value < -(int64_t{1} << 62)) {
          return fail(
              lit,
              type,
              "a SymInt holds integers from -2^62 (-4611686018427387904) up; use `int` for smaller "
              "ones");
        }
        [[fallthrough]];
      case Builtin::Int:
        // `Mean` is torch's own spelling of at::Reduction::Mean (native_functions.yaml).
        if (lit.kind == K::Int || (lit.kind == K::Identifier && lit.string_value == "Mean"))
          return true;
        return fail(lit, type, "write an integer, e.g. `1` or `-2`");
      case Builtin::DeviceIndex:
        if (lit.kind == K::Int && lit.int_value >= -1 && lit.int_value <= 127) return true;
        return fail(lit, type, "write a device index from -1 to 127");
      case Builtin::Float:
        if (lit.kind == K::Int || lit.kind == K::Float) return true;
        return fail(lit, type, "write a number, e.g. `1.0` or `1e-5`");
      case Builtin::Bool:
        if (lit.kind == K::Bool) return true;
        return fail(lit, type, "write `True` or `False`");
      case Builtin::Str:
        if (lit.kind == K::String) return true;
        return fail(lit, type, fmt::format("quote it: `\"{}\"`", lit.text));
      case Builtin::Scalar:
        if (lit.kind == K::Int || lit.kind == K::Float || lit.kind == K::Bool) return true;
        return fail(lit, type, "write a number or `True`/`False`");
      case Builtin::ScalarType:
        return check_constant(
            type,
            lit,
            model::find_dtype(lit.string_value),
            model::dtype_names(),
            constant);
      case Builtin::Layout:
        return check_constant(
            type,
            lit,
            model::find_layout(lit.string_value),
            model::layout_names(),
            constant);
      case Builtin::MemoryFormat:
        return check_constant(
            type,
            lit,
            model::find_memory_format(lit.string_value),
            model::memory_format_names(),
            constant);
      case Builtin::Device: {
        if (lit.kind != K::String && lit.kind != K::Identifier) {
          return fail(lit, type, "write a device string, e.g. `\"cpu\"` or `\"cuda:0\"`");
        }
        std::string problem = model::check_device(lit.string_value);
        if (!problem.empty()) return fail(lit, type, problem);
        *constant = lit.string_value;
        return true;
      }
      default:
        return fail(
            lit,
            type,
            fmt::format(
                "`{}` values have no default other than `None`",
                model::schema_name(type.builtin)));
    }
  }

  bool check_constant(
      const model::Type& type,
      const Literal& lit,
      const model::NamedConstant* found,
      const std::vector<std::string>& names,
      std::string* constant) {
    if (lit.kind == Literal::Kind::Identifier && found) {
      *constant = found->name;
      return true;
    }
    std::string guess = lit.kind == Literal::Kind::Identifier
                            ? closest_match(lit.string_value, names)
                            : "";
    return fail(
        lit,
        type,
        guess.empty() ? fmt::format("valid values are {}", quoted_list(names))
                      : fmt::format("did you mean `{}`?", guess));
  }

  bool check_enum(const model::Type& type, const Literal& lit, std::string* constant) {
    const model::Enum& e = module_.enums[static_cast<size_t>(type.decl)];
    if (lit.kind == Literal::Kind::Identifier || lit.kind == Literal::Kind::String) {
      for (const auto& v : e.values) {
        if (v == lit.string_value) {
          *constant = v;
          return true;
        }
      }
      diags_.error(
          lit.span,
          fmt::format(
              "default `{}` of {} is not a value of enum `{}`",
              lit.string_value,
              what_,
              e.name),
          [&] {
            std::string guess = closest_match(lit.string_value, e.values);
            return guess.empty() ? fmt::format("valid values are {}", quoted_list(e.values))
                                 : fmt::format(
                                       "did you mean `{}`? valid values are {}",
                                       guess,
                                       quoted_list(e.values));
          }());
      return false;
    }
    return fail(
        lit,
        type,
        fmt::format("write one of the values of `{}`: {}", e.name, quoted_list(e.values)));
  }

  const model::Module& module_;
  Diagnostics& diags_;
  const Subject& what_;
};

}  // namespace

std::optional<model::Default> check_default(
    const model::Type& type,
    const syntax::Literal& lit,
    const Subject& what,
    bool from_yaml_string,
    const model::Module& module,
    Diagnostics& diags) {
  (void)from_yaml_string;
  model::Default out;
  out.literal = lit;
  if (!DefaultChecker(module, diags, what).check(type, lit, &out)) return std::nullopt;
  return out;
}

}  // namespace structop
