// The checked model: what the resolver produces from one IDL file and its
// includes. Names are resolved to declarations, defaults are known to fit
// their types, records are acyclic and listed in dependency order. Lowering
// and the emitters trust it; they never look at the syntax tree.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/source.h"
#include "check/builtins.h"
#include "syntax/ast.h"

namespace structop::model {

/// A resolved type: a built-in, an enum or a record, with schema suffixes.
struct Type {
  enum class Kind { Builtin, Enum, Record };

  Kind kind = Kind::Builtin;
  Builtin builtin = Builtin::Tensor;  // when kind == Builtin
  int decl = -1;                      // index into Module::enums or Module::records
  syntax::AliasRef alias;
  syntax::Suffixes suffixes;
  /// `dynamic: true` on an `int` or `float` (checked): the value varies per
  /// call, so the schema takes it as a 0-dim CPU tensor (a graph input under
  /// torch.compile, not a constant) while the APIs keep the number.
  bool dynamic = false;

  bool is_builtin(Builtin b) const { return kind == Kind::Builtin && builtin == b; }
  bool is_record() const { return kind == Kind::Record; }
  bool is_enum() const { return kind == Kind::Enum; }
  bool is_optional() const {
    return !suffixes.empty() && suffixes.back().kind == syntax::TypeSuffix::Kind::Optional;
  }
  bool is_list() const {
    return !suffixes.empty() && suffixes.back().kind == syntax::TypeSuffix::Kind::List;
  }
  /// `T[]` or `T[]?`: a list, possibly optional.
  bool is_list_or_optional_list() const {
    return is_list() || (is_optional() && inner().is_list());
  }
  /// `Tensor` with no suffix (alias annotations allowed).
  bool is_plain_tensor() const { return is_builtin(Builtin::Tensor) && suffixes.empty(); }
  /// Contains a Tensor anywhere (`Tensor`, `Tensor?`, `Tensor[]`, `Tensor?[]`).
  bool holds_tensor() const { return is_builtin(Builtin::Tensor); }
  /// `Tensor`, `Tensor?`, `Tensor[]` or `Tensor?[]`: a leaf that receives a
  /// gradient (one per tensor of a list). Not `Tensor[]?`: a list that may be
  /// absent has no gradient. The one rule: the checker, lowering and every
  /// emitter use it.
  bool takes_grad() const {
    if (!is_builtin(Builtin::Tensor)) return false;
    if (suffixes.empty()) return true;
    if (suffixes.size() == 1) return true;                              // `Tensor?` or `Tensor[]`
    return suffixes.size() == 2 && inner().is_optional() && is_list();  // `Tensor?[]`
  }
  /// A record leaf that can be an item of a list of records (`R[]` lowers
  /// each leaf `T` to `T[]`): Tensor, Tensor?, int, SymInt, float, bool,
  /// str, or an enum (lowered to str[]).
  static bool listable_leaf(const Type& t) {
    if (t.dynamic) return false;  // a list of 0-dim tensors would hide the numbers' count
    if (t.is_enum()) return t.suffixes.empty();
    if (t.is_record()) return false;
    if (t.is_builtin(Builtin::Tensor))
      return t.suffixes.empty() || (t.suffixes.size() == 1 && t.is_optional());
    if (!t.suffixes.empty()) return false;
    switch (t.builtin) {
      case Builtin::Int:
      case Builtin::SymInt:
      case Builtin::Float:
      case Builtin::Bool:
      case Builtin::Str:
        return true;
      default:
        return false;
    }
  }
  /// A record without suffixes (not `R[]`, not `R?`).
  bool is_plain_record() const { return is_record() && suffixes.empty(); }
  /// `R?`: an optional record (each leaf optional in the schema).
  bool is_optional_record() const { return is_record() && suffixes.size() == 1 && is_optional(); }
  /// `R[]`: a list of records.
  bool is_record_list() const { return is_record() && is_list(); }
  /// A takes_grad leaf that is a list (`Tensor[]`, `Tensor?[]`): its gradient
  /// is a list with one entry per tensor of the input.
  bool takes_grad_list() const { return takes_grad() && is_list(); }
  /// The same type without its last suffix (element of a list, payload of an optional).
  Type inner() const {
    Type t = *this;
    if (!t.suffixes.empty()) t.suffixes.pop_back();
    return t;
  }
};

/// A default value that fits its type. `literal` is the spelling the user
/// wrote; `constant` is the canonical name for enum values, dtypes, layouts
/// and memory formats (`causal`, `float32`, `strided`), else empty.
struct Default {
  syntax::Literal literal;
  std::string constant;
  /// Per-item canonical names when the default is a list of such constants.
  std::vector<std::string> item_constants;
  /// A record default (`{w_scale: 2.0}`): the fields it sets, in field order
  /// (indices into Record::fields), and each one's checked default. A field
  /// it does not set keeps the default its record declares.
  std::vector<size_t> record_fields;
  std::vector<Default> record_values;

  /// The default this record default gives field `field`, or null.
  const Default* record_value(size_t field) const {
    for (size_t i = 0; i < record_fields.size(); ++i)
      if (record_fields[i] == field) return &record_values[i];
    return nullptr;
  }
};

struct Enum {
  std::string name;
  std::string cpp_namespace;
  std::vector<std::string> values;
  std::vector<Span> value_spans;  // parallel to values
  std::string doc;
  Span span;
  bool from_include = false;
  /// The file that declares it: an index into Module::includes, or -1 for
  /// the main file.
  int include = -1;
};

struct Field {
  std::string name;
  Type type;
  std::optional<Default> default_value;
  /// The IDL gives a default that did not fit (reported): a record default
  /// that leaves the field unset does not report it again.
  bool bad_default = false;
  std::string doc;
  Span span;
  /// `schema_name:`: the leaf's lowered name, whatever path reaches it (checked:
  /// an identifier the schema accepts, on a field that is not a record).
  std::optional<syntax::Name> schema_name;
};

struct Record {
  std::string name;
  std::string cpp_namespace;
  std::vector<Field> fields;
  std::string doc;
  Span span;
  bool from_include = false;
  /// The file that declares it: an index into Module::includes, or -1 for
  /// the main file.
  int include = -1;
  /// Some leaf (at any depth) is a Tensor, `Tensor?`, `Tensor[]` or `Tensor?[]`.
  bool has_tensor_leaf = false;
  /// Some leaf (at any depth) takes a gradient (Type::takes_grad, lists
  /// included): the record has a grad record, and an op taking it can have
  /// `backward: true`.
  bool takes_grad = false;
  /// Every field has a default (its own, or it is a record whose fields all
  /// have one), so `Record{}` is a complete value.
  bool all_defaulted = false;
};

struct Param {
  std::string name;
  /// The name in the C++ and Python APIs (lang::api_spelling): `name`, or
  /// `name_` for a word C++ or Python reserves. Spelled once, when resolved.
  std::string api_name;
  Type type;
  /// Null without a default. (A pointer: most parameters have none, and a
  /// Default is large; ATen's 2,500 ops have about 20,000 parameters.)
  std::shared_ptr<const Default> default_value;
  bool kwarg_only = false;
  /// A record parameter whose fields all have defaults, with only defaulted
  /// positional parameters after it: the APIs let callers omit it.
  bool implicit_default = false;
  Span span;
};

struct Return {
  std::string name;  // may be empty
  Type type;
  Span span;
};

enum class MetaKind { Identity, Names, Custom };

struct Op {
  std::string name;
  std::string overload;  // may be empty
  /// The op's name in C++ and Python (lang::op_cpp_name: `name_overload`,
  /// `_` after a reserved word). Spelled once, when resolved.
  std::string api_name;
  std::vector<Param> params;
  std::vector<Return> returns;
  MetaKind meta = MetaKind::Identity;
  std::vector<syntax::Name> meta_names;  // resolved by lowering
  std::vector<syntax::Name> mutates;     // resolved by lowering
  bool backward = false;
  std::vector<std::string> dispatch;
  std::vector<std::string> tags;  // torch operator tags (at::Tag), in IDL order
  /// Free-form strings for downstream tools (`annotations:`), in IDL order;
  /// structop only passes them on (X.ops.json, X_ops.py).
  std::vector<std::string> annotations;
  std::string doc;
  Span span;       // the `func:` value
  Span name_span;  // the op name inside it

  /// `name.overload`, or `name`.
  std::string qualified_name() const { return overload.empty() ? name : name + "." + overload; }
  /// `name_overload`, or `name` (before api_name's spelling rules), in `out`.
  void cpp_name_into(std::string& out) const {
    out.assign(name);
    if (!overload.empty()) out.append(1, '_').append(overload);
  }
};

/// An IDL file the main file includes, directly or through another include.
/// Its records and enums are generated from it on its own (`structopc
/// shared.ops.yaml`): the main file's generated code uses them from there.
struct IncludedFile {
  std::string path;  // as found: relative to the including file, or in a -I folder
  std::string stem;  // `shared` for shared.ops.yaml: shared.ops.h, shared_ops.py
  /// Listed in the main file's `include:` (else included by an included file).
  bool direct = false;
};

/// Everything one compilation knows, in declaration order; records are in
/// dependency order (a record comes after every record it contains).
struct Module {
  std::string namespace_;
  Span namespace_span;  // the value of `namespace:` in the main file
  std::string cpp_namespace;
  std::string source_path;  // the main IDL file as given on the command line
  std::string stem;         // `demo` for demo.ops.yaml
  /// Every included file, in dependency order (a file after the files it includes).
  std::vector<IncludedFile> includes;
  std::string doc;
  std::vector<Enum> enums;
  std::vector<Record> records;
  std::vector<Op> ops;
  /// Every IDL file read (main file first), for depfiles.
  std::vector<std::string> files;

  /// A parameter or field of type `t` receives a gradient: Type::takes_grad,
  /// or a record with such a leaf (Record::takes_grad).
  bool takes_grad(const Type& t) const {
    return t.is_record() ? records[static_cast<size_t>(t.decl)].takes_grad : t.takes_grad();
  }
};

}  // namespace structop::model
