// C++ spellings of checked types, for the C++ emitters: the value type a
// record field has, the type torch's dispatcher passes for a schema type,
// and the conversions between the two.
#pragma once

#include <string>
#include <utility>

#include "check/model.h"
#include "emit/code_printer.h"
#include "lower/lowered.h"

namespace structop {

/// Spells types and conversions for one module (records and enums may live
/// in other C++ namespaces when they come from included files).
class CppTypes {
 public:
  /// `fully_qualified`: spell every record and enum `::ns::Name`, for code
  /// inside a scope whose own names could hide them (the adapter structs).
  explicit CppTypes(const model::Module& module, bool fully_qualified = false)
      : m_(module), fully_qualified_(fully_qualified) {}

  /// The C++ name of a record or enum, qualified when it lives in another
  /// namespace than the module's: `WeightCfg`, `::common::Inner`.
  std::string record_name(int decl) const;
  std::string enum_name(int decl) const;
  /// The grad record of a record: `WeightCfgGrad`.
  std::string grad_record_name(int decl) const;
  /// The member type that holds the gradient of a parameter or field of
  /// type `t` (which takes one, or is a record whose fields do): the grad
  /// record, `structop::Grad`, or `std::vector<structop::Grad>` for a list.
  std::string grad_type(const model::Type& t) const;

  /// The value type of a record field: `at::Tensor`, `std::vector<int64_t>`,
  /// `c10::optional<double>`, `MaskType`, `Inner`.
  std::string value_type(const model::Type& t) const;

  /// flat_type(t) as data: the type, and whether it is passed as `const T&`
  /// (then flat_type is `const <type>&`).
  struct FlatSpelling {
    FlatSpelling(std::string spelled, bool const_ref = false)
        : type(std::move(spelled)), by_const_ref(const_ref) {}
    FlatSpelling(const char* spelled, bool const_ref = false)
        : FlatSpelling(std::string(spelled), const_ref) {}
    std::string type;
    bool by_const_ref;
  };
  FlatSpelling flat_spelling(const model::Type& t) const;

  /// The parameter type the dispatcher uses for a (lowered) schema type:
  /// `const at::Tensor&`, `at::IntArrayRef`, `c10::string_view`. Enums are
  /// `str` in the schema, so `c10::string_view`.
  std::string flat_type(const model::Type& t) const;

  /// The parameter type of a plain parameter in the C++ call API and the
  /// kernels: the dispatcher's type, except enums (`MaskType`) and records
  /// (`const WeightCfg&`).
  std::string param_type(const model::Type& t) const;

  /// The return type for a list of outputs: `at::Tensor`, `void`,
  /// `std::tuple<at::Tensor, at::Tensor>`, `std::vector<at::Tensor>`.
  std::string return_type(const std::vector<model::Type>& outputs) const;
  /// The C++ type of one returned value.
  std::string output_type(const model::Type& t) const;

  /// An expression converting the flat argument `expr` (of flat_type(t)) to
  /// value_type(t). `path` is a `structop::ArgPath` expression naming the
  /// leaf, used in enum errors.
  Code flat_to_value(const model::Type& t, const Code& expr, const std::string& path) const;
  /// A flat argument on the dispatcher's stack (the `c10::IValue` expression
  /// `ivalue`) as flat_type(t): `structop::arg<at::IntArrayRef>(args[2])`.
  std::string stack_arg(const model::Type& t, const std::string& ivalue) const;
  /// A record's leaf on the dispatcher's stack, moved out into the record:
  /// as stack_arg, but by value where the flat type is a const reference
  /// (`structop::arg<at::Tensor>(leaves[0])`), so that a tensor leaf costs
  /// no reference count (two atomic operations per call).
  std::string stack_leaf(const model::Type& t, const std::string& ivalue) const;
  /// The list of one leaf of a list of records, of item type `leaf`, from
  /// its stack entry `ivalue`: the stack's own c10::List where it holds one
  /// of the item's C++ type (`structop::leaf_list<at::Tensor>(leaves[0])`,
  /// for Tensor, Tensor?, float, int and bool), else a std::vector of the
  /// item's value type (flat_to_value of `leaf[]`). Items are taken out with
  /// `structop::item(list, i)`.
  Code leaf_list(const model::Type& leaf, const std::string& ivalue, const std::string& path) const;
  /// An expression converting the value `expr` (of value_type(t), or of
  /// param_type(t) for a plain parameter) to an argument of flat_type(t);
  /// for an enum or an optional enum, that argument's IValue.
  Code value_to_flat(const model::Type& t, const Code& expr) const;

  /// A (default) value as a C++ expression of value_type(t) (or param_type(t)).
  Code value(const model::Type& t, const lower::Value& v) const;

  /// True if a record field of type `t` and the flat argument for it have the
  /// same type (up to `const&`), so no conversion is spelled: `double`,
  /// `c10::optional<at::Tensor>`, but not `std::string` (flat: string_view).
  bool same_as_flat(const model::Type& t) const;

 private:
  std::string qualify(const std::string& ns, const std::string& name) const;

  const model::Module& m_;
  bool fully_qualified_;
};

}  // namespace structop
