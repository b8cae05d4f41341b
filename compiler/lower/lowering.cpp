#include "lower/lowering.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/duplicates.h"
#include "base/quote.h"
#include "check/describe.h"
#include "lang/api_names.h"
#include "lang/generated_names.h"
#include "lang/python_names.h"
#include "syntax/schema_parser.h"

namespace structop {
namespace {

using model::Builtin;

/// The base of a type in the schema: enums lower to `str`; records
/// never reach a schema.
std::string_view schema_base(const model::Type& type) {
  return type.is_enum() ? "str" : model::schema_name(type.builtin);
}

/// "1 name", "2 names".
std::string count(size_t n, const char* noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

/// A name users may write in `mutates:` / `meta:`, and the slots it stands for.
struct NameTarget {
  std::vector<size_t> slots;
};

class OpLowering {
 public:
  OpLowering(const model::Module& module, size_t op_index, Diagnostics& diags)
      : module_(module), op_(module.ops[op_index]), diags_(diags) {
    out_.op = op_index;
    out_.qualified_name = op_.qualified_name();
    out_.cpp_name = lang::op_cpp_name(op_);
  }

  lower::LoweredOp run(bool with_api_facts) {
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
    out_.writes_inputs = std::any_of(
        out_.slots.begin(),
        out_.slots.end(),
        [](const lower::Slot& s) { return s.mutated || (s.type.alias && s.type.alias->is_write); });
    lower_returns();
    resolve_meta();
    apply_schema_defaults();
    print_schema();
    if (with_api_facts) api_facts();
    return std::move(out_);
  }

 private:
  // ---- flattening (rules 1-3) ------------------------------------------------

  void flatten_param(size_t index) {
    const model::Param& p = op_.params[index];
    if (!p.type.is_record()) {
      lower::Slot& s = out_.slots.emplace_back();
      // A Python keyword gets its trailing `_` in the schema too: torch.fx
      // normalizes a custom op's arguments by name (inductor, opcheck's
      // schema check) and cannot bind `from` (it special-cases aten's own).
      s.python_keyword = lang::is_python_keyword(p.name);
      s.name = s.python_keyword ? p.name + "_" : p.name;
      s.path = p.name;
      s.param = index;
      s.type = p.type;
      s.default_value = p.default_value ? &*p.default_value : nullptr;
      s.kwarg_only = p.kwarg_only;
      s.cpp_name = p.name;
      s.api_path = lang::api_spelling(p.name);
      complete_slot(s);
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

  /// `given` is the record default that applies here (the parameter's, or
  /// an enclosing field's), or null: it replaces the whole record value, so
  /// a field it does not set keeps the default the record declares.
  void flatten_record(
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
          s.type.suffixes.push_back({syntax::TypeSuffix::Kind::List, -1, std::nullopt});
          s.list_depth = list_depth_;
        }
        s.default_value = value;
        if (!optional_at_.empty()) {
          // Under an optional record: None when it is absent, and its
          // default is the leaf's (the record's own field defaults are the
          // APIs' business).
          if (!s.type.is_optional())
            s.type.suffixes.push_back({syntax::TypeSuffix::Kind::Optional, -1, std::nullopt});
          s.optional_at = optional_at_;
          s.default_value = optional_default_;
        }
        s.kwarg_only = op_.params[param].kwarg_only;
        s.cpp_name = lang::api_spelling(lang::join_identifier(cpp_parts_));
        for (const auto& part : cpp_parts_)
          s.api_path += (s.api_path.empty() ? "" : ".") + lang::api_spelling(part);
        complete_slot(s);
      }
      fields->pop_back();
      cpp_parts_.pop_back();
    }
  }

  // ---- returns (rule 5: a returned record is one output per leaf) ----------

  void lower_returns() {
    out_.outputs.reserve(op_.returns.size());
    for (size_t i = 0; i < op_.returns.size(); ++i) {
      const model::Return& r = op_.returns[i];
      lower::ApiReturn a;
      a.type = r.type;
      a.first_output = out_.outputs.size();
      if (r.type.is_plain_record()) {
        // Leaves are `<name>__<field>`, with the unnamed return's `output`
        // (a bare field name could be a word the schema parser reserves).
        out_.has_record_return = true;
        std::vector<size_t> fields;
        return_leaves(i, r.type.decl, return_name(i), "", fields);
      } else {
        // api_path is set below, once every return is named.
        out_.outputs.push_back({r.name, false, r.type, schema_type(r.type), i, {}, {}, {}});
      }
      a.output_count = out_.outputs.size() - a.first_output;
      out_.api_returns.push_back(std::move(a));
    }
    std::vector<std::string_view> names;
    std::vector<size_t> named;
    for (size_t i = 0; i < out_.outputs.size(); ++i) {
      if (out_.outputs[i].name.empty()) continue;
      names.emplace_back(out_.outputs[i].name);
      named.push_back(i);
    }
    for (auto [first, later] : find_duplicates(names)) {
      (void)first;
      diags_.error(
          op_.returns[out_.outputs[named[later]].ret].span,
          fmt::format("op `{}`: two outputs are named `{}`", op_.qualified_name(), names[later]),
          "a returned record's leaves are named `return__field`; rename the return or the field");
      check_schema_ = false;
    }
  }

  /// The outputs of the leaves of record `decl`, returned as return `ret`:
  /// `name` is the lowered name so far (`stats`), `member` the C++ and
  /// Python access so far (`.inner`), `fields` the field indices.
  void return_leaves(
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
             schema_type(field.type),
             ret,
             fields,
             {},
             access});
      }
      fields.pop_back();
    }
  }

  /// Return `i`'s IDL name, or `output` (`output<i>` among several).
  std::string return_name(size_t i) const {
    if (!op_.returns[i].name.empty()) return op_.returns[i].name;
    return op_.returns.size() == 1 ? "output" : fmt::format("output{}", i);
  }

  /// The facts of a slot that follow from its type and default.
  void complete_slot(lower::Slot& s) {
    s.takes_grad = s.type.takes_grad();
    s.grad_list = s.type.takes_grad_list();
    if (s.default_value) s.value = lower::typed_default(module_, s.type, *s.default_value);
  }

  // ---- facts for the APIs ---------------------------------------------------

  void api_facts() {
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
      a.name = lang::api_spelling(p.name);
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

  // The generated functions' own names give way to the user's (names.h,
  // rule 4): `ctx` (setup_context, backward) and `error` (Python) get a
  // number where a parameter or output has their name. `api_names` holds
  // the parameters' and outputs' API names.
  void local_names(const std::vector<std::string>& api_names) {
    // The kernels' signatures name records and enums: a `ctx` parameter
    // must not hide one of those either.
    std::vector<std::string> hiding = api_names;
    std::vector<std::string> params;
    for (const auto& a : out_.api_params) params.push_back(a.name);
    for (const auto& r : module_.records) hiding.push_back(lang::api_spelling(r.name));
    for (const auto& e : module_.enums) hiding.push_back(lang::api_spelling(e.name));
    out_.locals.ctx = lang::first_free("ctx", hiding);
    out_.locals.error = lang::first_free("error", params);
  }

  /// The field of record leaf `s` (Slot::fields walked from its parameter's record).
  const model::Field& leaf_field(const lower::Slot& s) const {
    const model::Field* f = nullptr;
    int decl = op_.params[s.param].type.decl;
    for (size_t i : s.fields) {
      f = &module_.records[static_cast<size_t>(decl)].fields[i];
      decl = f->type.decl;
    }
    return *f;
  }

  /// Two slots with one name where (at least) one name is pinned
  /// (`schema_name:`, SPEC rule 3.7: a pinned name must be unique in the op).
  void report_pinned_collision(const lower::Slot& first, const lower::Slot& later) {
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

  /// A pinned name stays as written, a Python keyword too (`schema_name:
  /// from` keeps a shipped schema); torch.fx cannot bind such an argument by
  /// name, so the op cannot be `pt2_compliant_tag` (a parameter's own name
  /// gets a `_` instead, flatten_param).
  void check_pinned_keywords() {
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

  void check_collisions() {
    std::vector<std::string_view> names;
    names.reserve(out_.slots.size());
    for (const auto& s : out_.slots) names.emplace_back(s.name);
    for (auto [first_index, later_index] : find_duplicates(names)) {
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
            fmt::format(
                "`{}` comes from parameter `{}`",
                first.path,
                op_.params[first.param].name));
      }
    }
    // Keyword names get a trailing `_` in C++ and Python; that must stay unique
    // too. (Without a keyword the names are the parameters', already unique.)
    if (std::none_of(op_.params.begin(), op_.params.end(), [](const model::Param& p) {
          return lang::is_reserved_word(p.name);
        })) {
      return;
    }
    std::vector<std::string> spelled;
    spelled.reserve(op_.params.size());
    for (const auto& p : op_.params) spelled.push_back(lang::api_spelling(p.name));
    std::vector<std::string_view> api(spelled.begin(), spelled.end());
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
              spelled[later],
              in_schema ? "the schema, C++ and Python" : "C++ and Python"),
          "rename one of them");
    }
  }

  // ---- mutates / meta names ------------------------------------------------

  // Every name a user may write for a tensor (or group of tensors): parameter
  // names, dotted paths of leaves and sub-records, and lowered names.
  void build_names() {
    for (size_t i = 0; i < out_.slots.size(); ++i) {
      const lower::Slot& s = out_.slots[i];
      if (!s.type.is_builtin(Builtin::Tensor)) continue;
      targets_[s.name].slots.push_back(i);
      if (s.path != s.name) targets_[s.path].slots.push_back(i);
      // Every enclosing prefix: `cfg`, `cfg.inner`.
      for (size_t dot = s.path.find('.'); dot != std::string::npos;
           dot = s.path.find('.', dot + 1)) {
        targets_[s.path.substr(0, dot)].slots.push_back(i);
      }
    }
  }

  std::vector<std::string> valid_names(bool plain_tensors_only) const {
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

  /// "valid names are ..." for `mutates:` (any tensor) or `meta:` (plain
  /// tensors only), with a guess when `name` looks like a typo (`guess`).
  std::string valid_names_hint(const std::string& name, bool plain_only, bool guess_typo = true)
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

  void report_unknown(const syntax::Name& n, const char* key, bool plain_only) {
    diags_.error(
        n.span,
        fmt::format(
            "op `{}`: `{}` in `{}:` is not a tensor parameter or field",
            op_.qualified_name(),
            n.text,
            key),
        valid_names_hint(n.text, plain_only));
  }

  /// The slot named `name` (lowered name or dotted path), if any.
  const lower::Slot* find_slot(const std::string& name) const {
    for (const auto& s : out_.slots) {
      if (s.name == name || s.path == name) return &s;
    }
    return nullptr;
  }

  void resolve_mutates() {
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

  void resolve_meta() {
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
      // Output k copies the k-th tensor input: plain `Tensor` parameters
      // first, then tensor fields of records, each in declaration order.
      for (bool record_leaves : {false, true}) {
        for (size_t i = 0; i < out_.slots.size() && out_.meta_sources.size() < tensor_outputs;
             ++i) {
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
    for (const auto& n : op_.meta_names) {
      auto it = targets_.find(n.text);
      if (it != targets_.end() && it->second.slots.size() == 1 &&
          out_.slots[it->second.slots[0]].type.is_plain_tensor()) {
        out_.meta_sources.push_back(it->second.slots[0]);
        continue;
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
  }

  std::string return_list() const {
    std::string s;
    for (const auto& o : out_.outputs) s += (s.empty() ? "" : ", ") + o.schema_type;
    return out_.outputs.size() == 1 ? s : "(" + s + ")";
  }

  // ---- schema defaults and printing ----------------------------------------

  void apply_schema_defaults() {
    bool later_positional_all_defaulted = true;
    for (auto it = out_.slots.rbegin(); it != out_.slots.rend(); ++it) {
      if (it->default_value) {
        auto text = schema_default(it->type, *it->default_value);
        if (text && (it->kwarg_only || later_positional_all_defaulted)) it->schema_default = text;
      }
      if (!it->kwarg_only) later_positional_all_defaulted &= it->schema_default.has_value();
    }
  }

  void print_schema() {
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
        syntax::AliasAnnotation a;
        a.before.push_back(fresh());
        a.is_write = true;
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
    for (const auto& o : out_.outputs) {
      if (!returns.empty()) returns += ", ";
      returns += o.name.empty() ? o.schema_type : o.schema_type + " " + o.name;
    }
    if (out_.outputs.size() != 1 || named) returns = "(" + returns + ")";
    out_.schema.reserve(out_.qualified_name.size() + params.size() + returns.size() + 6);
    out_.schema += out_.qualified_name;
    out_.schema += '(';
    out_.schema += params;
    out_.schema += ") -> ";
    out_.schema += returns;
    if (check_schema_) self_check();
  }

  // The compiler never hands torch a schema it has not validated: torch's
  // parser rejects a positional parameter without default after one with a
  // default, and duplicate names. Names were checked by check_collisions();
  // check the defaults here, on the slots
  // the text was printed from. (The text itself is printed from checked
  // parts only; tests/corpus re-parses every printed schema with torch's own
  // parser, over all of native_functions.yaml and every example.)
  void self_check() {
    const lower::Slot* first_default = nullptr;
    for (const auto& s : out_.slots) {
      if (s.kwarg_only) continue;
      if (s.schema_default) {
        if (!first_default) first_default = &s;
      } else if (first_default) {
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

  const model::Module& module_;
  const model::Op& op_;
  Diagnostics& diags_;
  lower::LoweredOp out_;
  std::map<std::string, NameTarget> targets_;
  std::vector<std::string> cpp_parts_;  // the path being flattened, for Slot::cpp_name
  /// While flattening the items of a list of records: Slot::list_depth, and
  /// the list's default (`[]`) or null.
  std::optional<size_t> list_depth_;
  const model::Default* list_default_ = nullptr;
  // Inside optional records (`R?`): where they are on the path (Slot::optional_at),
  // and the default every leaf below takes (their `None`, or none).
  std::vector<size_t> optional_at_;
  const model::Default* optional_default_ = nullptr;
  bool check_schema_ = true;
};

/// How each record flattens; records come in dependency order, so a nested
/// record's layout is complete when its container needs it.
std::vector<lower::RecordLayout> record_layouts(const model::Module& module) {
  std::vector<lower::RecordLayout> out(module.records.size());
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
          if (!leaf.pinned) l.name = f.name + "__" + leaf.name;
          if (l.list_depth) {
            ++*l.list_depth;
          } else if (f.type.is_record_list()) {  // one list per leaf
            l.list_depth = 1;
            l.type.suffixes.push_back({syntax::TypeSuffix::Kind::List, -1, std::nullopt});
          }
          if (f.type.is_optional_record() && !l.type.is_optional())
            l.type.suffixes.push_back({syntax::TypeSuffix::Kind::Optional, -1, std::nullopt});
          layout.leaves.push_back(std::move(l));
        }
        if (f.type.is_plain_record()) {
          for (size_t leaf : inner.required_leaves)
            layout.required_leaves.push_back(field.first_leaf + leaf);
        }
        layout.has_record_list |= f.type.is_record_list() || inner.has_record_list;
        layout.has_optional_record |= f.type.is_optional_record() || inner.has_optional_record;
        layout.has_enum_leaf |= inner.has_enum_leaf;
      } else {
        if (!f.type.is_optional()) layout.required_leaves.push_back(layout.leaves.size());
        layout.leaves.push_back(
            {{i},
             f.name,
             f.schema_name ? f.schema_name->text : f.name,
             f.schema_name.has_value(),
             std::nullopt,
             f.type});
        layout.has_enum_leaf |= f.type.is_enum();
      }
      field.leaf_count = layout.leaves.size() - field.first_leaf;
      layout.fields.push_back(std::move(field));
    }
  }
  return out;
}

}  // namespace

namespace lower {

std::string join_identifier(const std::vector<std::string>& parts) {
  return lang::join_identifier(parts);
}

Value typed_default(const model::Module& module, const model::Type& type, const model::Default& d) {
  using K = syntax::Literal::Kind;
  Value v;
  const syntax::Literal& lit = d.literal;
  if (type.is_record_list()) {  // `[]`, checked
    v.kind = Value::Kind::List;
    return v;
  }
  if (type.is_optional_record()) return v;  // `None`, checked
  if (type.is_record()) {
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
  if (lit.kind == K::None) return v;
  const model::Type scalar = type.is_optional() ? type.inner() : type;
  if (scalar.is_list()) {
    model::Type element = scalar.inner();
    if (element.is_optional()) element = element.inner();
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
      for (int64_t i = 0; i < scalar.suffixes.back().size; ++i)
        v.items.push_back(typed_default(module, element, item));
    }
    return v;
  }
  if (scalar.is_enum()) {
    v.kind = Value::Kind::Enum;
    v.decl = scalar.decl;
    v.text = d.constant;
    return v;
  }
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
      break;
  }
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
  out.ops.reserve(module.ops.size());
  for (size_t i = 0; i < module.ops.size(); ++i)
    out.ops.push_back(OpLowering(module, i, diags).run(options.api_facts));
  return out;
}

}  // namespace structop
