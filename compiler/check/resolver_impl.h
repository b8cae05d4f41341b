// The resolver (check/resolver.h: resolve()) as one class whose member
// functions live in one file per concern; internal to check/:
//   resolver.cpp         run(), the torch and C++ namespaces, the symbol table
//   resolve_records.cpp  record order and cycles, enums, records and their defaults
//   resolve_types.cpp    type expressions: built-ins, records and enums,
//                        suffixes, which types fit where
//   op_rules.cpp         op signatures, positional defaults, `dispatch:`,
//                        `tags:`, op names unique across the file
//   pt2_rules.cpp        what `pt2_compliant_tag` and `backward: true` need
#pragma once

#include <fmt/format.h>
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/duplicates.h"
#include "check/defaults.h"
#include "check/describe.h"
#include "check/file_stem.h"
#include "check/names.h"
#include "check/resolver.h"
#include "check/subject.h"
#include "lang/api_names.h"
#include "lang/cpp_names.h"
#include "lang/python_names.h"
#include "lang/schema_names.h"
#include "syntax/schema_parser.h"

namespace structop::resolving {

using model::Builtin;
using syntax::TypeSuffix;

/// Records may nest this deep (the lowering recurses once per level, and
/// each level adds to every lowered name; check/limits.h has the others).
constexpr size_t kMaxRecordDepth = 100;
/// An op may lower to at most this many parameters; a record may have at most
/// this many leaves (nesting can multiply them: R2 {a: R1, b: R1} ...).
constexpr size_t kMaxLoweredParams = 100000;
constexpr size_t kLeafCountCap = kMaxLoweredParams + 1;
/// All ops of a file together may lower to at most this many parameters
/// (a big record used by many ops multiplies; PyTorch's own 2,500 ATen ops
/// have about 12,000).
constexpr size_t kMaxTotalLoweredParams = 200000;

/// Where a type is used; decides which types are allowed.
enum class Use { Field, Param, Return };
class Resolver {
 public:
  Resolver(const LoadedIdl& idl, const SourceManager& sources, Diagnostics& diags)
      : idl_(idl), sources_(sources), diags_(diags) {}

  model::Module run();

 private:
  struct Symbol {
    enum class Kind { Enum, Record } kind;
    const syntax::EnumDecl* enum_decl = nullptr;
    const syntax::RecordDecl* record_decl = nullptr;
    const syntax::IdlFile* file = nullptr;
    int index = -1;  // final index in the module
  };

  /// Module::includes index of a file, -1 for the main file.
  int include_index(const syntax::IdlFile* file) const;

  static std::string cpp_namespace_of(const syntax::IdlFile& f);

  /// Why `word` cannot be used as it is in generated C++, or "".
  static std::string cpp_reserved_reason(const std::string& word);

  // The torch namespace names the ops in the schema (`ns::op`), in Python
  // (`torch.ops.ns`) and in the TORCH_LIBRARY macros, which expand macros in
  // their arguments. Generated code lives in the C++ namespace; one that is
  // (or starts with) a namespace of the standard library or of libtorch, or
  // has a keyword or macro as a component, or starts with a name the C
  // library or libtorch declare at global scope (`time`, `log`), cannot work.
  void check_cpp_namespace(const syntax::IdlFile& f);

  // ---- names ---------------------------------------------------------------

  enum class NameUse { Op, Overload, Param, Return, Field, Record, Enum, EnumValue };

  /// Reports a name that cannot work wherever it is used (check/names.h,
  /// rules 1 and 2); `what` describes it (`parameter `x` of op `f``).
  /// Returns false if it reported.
  /// `what` (a std::string or a Subject) is only formatted for a diagnostic.
  template <typename What>
  bool check_name(const syntax::Name& n, NameUse use, const What& what) {
    const std::string& text = n.text;
    const bool in_schema = use == NameUse::Op || use == NameUse::Overload ||
                           use == NameUse::Param || use == NameUse::Return || use == NameUse::Field;
    if (in_schema && lang::is_schema_keyword(text)) {
      diags_.error(
          n.span,
          fmt::format(
              "{}: torch's schema parser reserves the word `{}`{}",
              what,
              text,
              use == NameUse::Field ? " (fields are schema parameters once flattened)" : ""),
          fmt::format("rename it, e.g. `{}_`", text));
      return false;
    }
    if (use == NameUse::Overload && (text == "default" || text.rfind("__", 0) == 0)) {
      diags_.error(
          n.span,
          text == "default"
              ? fmt::format(
                    "{}: `default` cannot be an overload name; torch calls the op without "
                    "overload `default`",
                    what)
              : fmt::format(
                    "{}: torch's schema parser rejects overload names beginning with `__`",
                    what),
          "choose another overload name");
      return false;
    }
    // Op names keep ATen's `__and__`; they are not macros.
    if (use != NameUse::Op && use != NameUse::Overload && lang::is_implementation_reserved(text)) {
      diags_.error(
          n.span,
          fmt::format(
              "{}: names beginning with `__` or with `_` and a capital are reserved for the C++ "
              "compiler, which defines macros like `__LINE__`",
              what),
          "rename it");
      return false;
    }
    if (use == NameUse::Field && text == "mro") {
      diags_.error(
          n.span,
          fmt::format(
              "{}: Python's dataclasses would take the method `mro`, which every class has, for "
              "the field's default",
              what),
          "rename the field");
      return false;
    }
    if (use == NameUse::EnumValue &&
        (text == "mro" || (text.size() > 2 && text.front() == '_' && text.back() == '_'))) {
      diags_.error(
          n.span,
          fmt::format(
              "{}: Python's enum.Enum cannot have a member `{}` (it reserves `mro` and names "
              "beginning and ending with `_`)",
              what,
              text),
          "rename the value");
      return false;
    }
    return true;
  }

  // ---- declarations --------------------------------------------------------

  void declare(const syntax::Name& name, Symbol sym);

  void declare_all();

  const Symbol* lookup(const std::string& name) const;

  // ---- record order and cycles ---------------------------------------------

  // Depth-first over record-typed fields; emits records after their
  // dependencies and reports each cycle once, at the field that closes it.
  // Iterative (an explicit stack), so a long chain of records cannot
  // overflow the call stack.
  void order_records();

  // ---- enums and records ---------------------------------------------------

  void resolve_enums();

  void resolve_records();

  /// Record `record_order_[i]` into `module_->records[i]`, with its leaf facts.
  void resolve_record(size_t i);

  /// Field `f` of `r` with its type and default checked; nullopt when its type
  /// is bad or closes a cycle (already reported).
  std::optional<model::Field> resolve_field(
      const syntax::RecordDecl& r,
      const syntax::FieldDecl& f);

  /// What field `field` adds to record `i`'s leaf facts (tensors, grads,
  /// defaults, depth, leaf count); reports nesting too deep.
  void add_leaf_facts(
      size_t i,
      const syntax::FieldDecl& f,
      const model::Field& field,
      bool& broken);

  // ---- types ---------------------------------------------------------------

  std::vector<std::string> all_type_names() const;

  /// The type `t` names (a built-in, enum or record) with its suffixes and
  /// alias, unchecked; nullopt after a diagnostic (or for a broken declaration).
  std::optional<model::Type> resolve_base(const syntax::TypeExpr& t, const Subject& what);
  std::optional<model::Type> resolve_type(const syntax::TypeExpr& t, Use use, const Subject& what);
  /// Whether record type `out` (`t` as written) can be used as `use` says:
  /// its suffixes, and the leaves an optional record, a list of records or a
  /// returned record need. Reports if not.
  bool check_record_type(
      const syntax::TypeExpr& t,
      const model::Type& out,
      Use use,
      const Subject& what);
  bool check_returned_record(
      const syntax::TypeExpr& t,
      const model::Type& out,
      const Subject& what);
  bool check_optional_record(
      const syntax::TypeExpr& t,
      const model::Type& out,
      const Subject& what);
  /// Whether enum type `out` can be used as `use` says (not returned, lists
  /// only plain or optional). Reports if not.
  bool check_enum_type(
      const syntax::TypeExpr& t,
      const model::Type& out,
      Use use,
      const Subject& what);

  /// The path of a list of records inside `r` (at any depth), or empty.
  std::string record_list_inside(const model::Record& r, const std::string& prefix) const;

  /// The path and type of a `Tensor[]` or `Tensor?[]` leaf inside `r` (at
  /// any depth), or empty.
  std::string tensor_list_inside(const model::Record& r, const std::string& prefix) const;

  /// Whether `r` has a leaf that is never None when `r` is given: one of a
  /// type that is not optional, outside any optional record inside `r`
  /// (lowering takes the first as the presence witness of `r?`).
  bool has_required_leaf(const model::Record& r) const;

  /// A field at any depth below `r` (through its plain record fields) that
  /// is not itself a plain record and whose type `bad` rejects: its path
  /// (`prefix` + names, `Stats.m.n`) and the field; the first in field order.
  struct FoundField {
    std::string path;
    const model::Field* field = nullptr;
  };
  std::optional<FoundField> find_field(
      const model::Record& r,
      const std::string& prefix,
      const std::function<bool(const model::Type&)>& bad) const;

  /// The path of the first leaf of `r` (a returnable record) that is not a
  /// `Tensor`, or empty.
  std::string non_tensor_leaf(const model::Record& r, const std::string& prefix) const;

  /// Why record `r` cannot be returned, or empty: a leaf whose type is not
  /// `Tensor`, `int`, `float` or `bool`, an optional record or a list of
  /// records inside it. `prefix` spells the leaf's path (`Stats.`).
  std::string unreturnable_leaf(const model::Record& r, const std::string& prefix) const;

  /// Why record `r` cannot be the item type of a list, or empty: a leaf whose
  /// list is not a schema type (`float?`, `int[]`, `ScalarType`), or a list
  /// of records inside it. `prefix` spells the leaf's path (`Layer.`).
  std::string unlistable_leaf(const model::Record& r, const std::string& prefix) const;

  bool check_suffixes(
      const syntax::TypeExpr& t,
      const model::Type& type,
      Use use,
      const Subject& what);

  void report_unknown_type(const syntax::TypeExpr& t, const Subject& what);

  // ---- ops -----------------------------------------------------------------

  void resolve_op(const syntax::OpDecl& decl);

  /// The op's facts that need no checking (names, spans, doc, annotations).
  model::Op op_header(const syntax::OpDecl& decl);

  /// The op's, overload's, parameters' and returns' names; no parameter twice.
  bool check_signature_names(const syntax::FuncSig& sig, const std::string& op_label);

  /// Resolves each parameter's type and default into `op.params` (the bad
  /// ones are left out); false if one was bad.
  bool resolve_params(const syntax::FuncSig& sig, const std::string& op_label, model::Op& op);
  /// `dynamic:` of an op: each name a parameter of type int or float, made dynamic.
  bool resolve_dynamic(const syntax::OpDecl& decl, const std::string& op_label, model::Op& op);
  /// Makes `type` dynamic (Type::dynamic), or reports at `span` why it cannot be.
  bool mark_dynamic(model::Type& type, const Span& span, const Subject& what);

  /// The op's lowered parameters, and the file's so far, within the limits.
  bool check_lowered_count(
      const syntax::FuncSig& sig,
      const std::string& op_label,
      const model::Op& op);

  /// Resolves each return's type into `op.returns`; false if one was bad.
  bool resolve_returns(const syntax::FuncSig& sig, const std::string& op_label, model::Op& op);

  // Positional parameters with defaults must come last (Python's rule, and
  // torch's schema parser crashes otherwise). A record whose fields all have
  // defaults counts as defaulted where callers may omit it: when every
  // parameter after it in its group (positional / keyword-only) may be too.
  void check_positional_defaults(model::Op& op);

  void check_dispatch(const syntax::OpDecl& decl, model::Op& op);

  void check_tags(const syntax::OpDecl& decl, model::Op& op);

  /// `pt2_compliant_tag` promises that torch.compile and torch.export handle
  /// the op; two schemas cannot keep that promise whatever the kernels do.
  void check_pt2_compliant(const syntax::OpDecl& decl, const model::Op& op);

  void check_backward(const syntax::OpDecl& decl, const model::Op& op);

  void check_op_names();

  const LoadedIdl& idl_;
  const SourceManager& sources_;
  Diagnostics& diags_;
  model::Module* module_ = nullptr;
  std::map<std::string, Symbol> symbols_;
  std::vector<const syntax::RecordDecl*> record_order_;
  std::set<const syntax::FieldDecl*> cyclic_;
  // Per record (model index): problems already reported, so uses are skipped
  // quietly; nesting depth; number of leaves (saturating at kLeafCountCap).
  std::vector<bool> record_broken_;
  std::vector<size_t> record_depth_;
  std::vector<size_t> record_leaves_;
  size_t total_lowered_ = 0;
  bool total_reported_ = false;
  std::vector<Span> ops_spans_;
};

}  // namespace structop::resolving
