// Lowering of one op (lower/lowering.h: lower_module) as one class whose member
// functions live in one file per concern; internal to lower/:
//   lowering.cpp     run(), flattening parameters and records, returns
//   api_facts.cpp    the names of the generated APIs and their collisions
//   op_schema.cpp    `mutates:` and `meta:` names, schema defaults, the schema text
#pragma once

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include "base/duplicates.h"
#include "base/quote.h"
#include "check/describe.h"
#include "lang/api_names.h"
#include "lang/generated_names.h"
#include "lang/python_names.h"
#include "lower/lowering.h"
#include "syntax/schema_parser.h"

namespace structop::lowering {

using model::Builtin;

/// The base of a type in the schema: enums lower to `str`, dynamic numbers
/// to `Tensor` (a 0-dim CPU tensor); records never reach a schema.
inline std::string_view schema_base(const model::Type& type) {
  if (type.dynamic) return "Tensor";
  return type.is_enum() ? "str" : model::schema_name(type.builtin);
}

/// "1 name", "2 names".
inline std::string count(size_t n, const char* noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

/// A name users may write in `mutates:` / `meta:`, and the slots it stands for.
struct NameTarget {
  std::vector<size_t> slots;
};

class OpLowering {
 public:
  /// Lowers op `op_index` of `module` into `out` (in place: a LoweredOp is
  /// large, and moving it costs as much as some of the lowering).
  OpLowering(
      const model::Module& module,
      size_t op_index,
      Diagnostics& diags,
      lower::LoweredOp& out);

  void run(const LowerOptions& options);

 private:
  // ---- flattening (rules 1-3) ------------------------------------------------

  void flatten_param(size_t index);

  /// `given` is the record default that applies here (the parameter's, or
  /// an enclosing field's), or null: it replaces the whole record value, so
  /// a field it does not set keeps the default the record declares.
  void flatten_record(
      size_t param,
      int record,
      const std::string& name,
      const std::string& path,
      const model::Default* given,
      std::vector<size_t>* fields);

  // ---- returns (rule 5: a returned record is one output per leaf) ----------

  void lower_returns();

  /// The outputs of the leaves of record `decl`, returned as return `ret`:
  /// `name` is the lowered name so far (`stats`), `member` the C++ and
  /// Python access so far (`.inner`), `fields` the field indices.
  void return_leaves(
      size_t ret,
      int decl,
      const std::string& name,
      const std::string& member,
      std::vector<size_t>& fields);

  /// Return `i`'s IDL name, or `output` (`output<i>` among several).
  std::string return_name(size_t i) const;

  /// The facts of a slot that follow from its type and default.
  void complete_slot(lower::Slot& s);

  // ---- facts for the APIs ---------------------------------------------------

  void api_facts();
  void plain_slot_names();

  // The generated functions' own names give way to the user's (names.h,
  // rule 4): `ctx` (setup_context, backward) and `error` (Python) get a
  // number where a parameter or output has their name. `api_names` holds
  // the parameters' and outputs' API names.
  void local_names(const std::vector<std::string>& api_names);

  /// The field of record leaf `s` (Slot::fields walked from its parameter's record).
  const model::Field& leaf_field(const lower::Slot& s) const;

  /// Two slots with one name where (at least) one name is pinned
  /// (`schema_name:`, SPEC rule 3.7: a pinned name must be unique in the op).
  void report_pinned_collision(const lower::Slot& first, const lower::Slot& later);

  /// A pinned name stays as written, a Python keyword too (`schema_name:
  /// from` keeps a shipped schema); torch.fx cannot bind such an argument by
  /// name, so the op cannot be `pt2_compliant_tag` (a parameter's own name
  /// gets a `_` instead, flatten_param).
  void check_pinned_keywords();

  void check_collisions();

  // ---- mutates / meta names ------------------------------------------------

  // Every name a user may write for a tensor (or group of tensors): parameter
  // names, dotted paths of leaves and sub-records, and lowered names.
  void build_names();

  std::vector<std::string> valid_names(bool plain_tensors_only) const;

  /// "valid names are ..." for `mutates:` (any tensor) or `meta:` (plain
  /// tensors only), with a guess when `name` looks like a typo (`guess`).
  std::string valid_names_hint(const std::string& name, bool plain_only, bool guess_typo = true)
      const;

  void report_unknown(const syntax::Name& n, const char* key, bool plain_only);

  /// The slot named `name` (lowered name or dotted path), if any.
  const lower::Slot* find_slot(const std::string& name) const;

  void resolve_mutates();

  void resolve_meta();

  /// `meta:` left out: output k copies the k-th tensor input.
  void identity_meta(size_t tensor_outputs);

  /// One name of `meta: [names]`: the plain tensor it names, or a diagnostic.
  void meta_source(const syntax::Name& n);

  std::string return_list() const;

  // ---- schema defaults and printing ----------------------------------------

  void apply_schema_defaults();

  /// The schema text and each slot's schema type (once per op).
  void print_schema();

  // The compiler never hands torch a schema it has not validated: torch's
  // parser rejects a positional parameter without default after one with a
  // default, and duplicate names. Names were checked by check_collisions();
  // check the defaults here, on the slots
  // the text is printed from. (The text itself is printed from checked
  // parts only; tests/corpus re-parses every printed schema with torch's own
  // parser, over all of native_functions.yaml and every example.) Runs with
  // or without the text, which it prints for its message if need be.
  void self_check();

  const model::Module& module_;
  const model::Op& op_;
  Diagnostics& diags_;
  lower::LoweredOp& out_;
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

}  // namespace structop::lowering
