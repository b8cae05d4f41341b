// The names the generated code gives to things of its own: per op and per
// record (`op_<op>`, `<op>_grads`, `<Record>Grad`, `unflatten_<Record>`...)
// and fixed ones (the C++ namespaces and Python modules it refers to, the
// generated Python's globals and built-ins). A record, enum, op, parameter
// or field of the IDL cannot take one of them (check/names.h, rule 3);
// lowering and the emitters spell them with the functions here, so that
// they all agree.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "check/model.h"

namespace structop::lang {

/// The names generated for one op. None contains `__` (reserved in C++).
struct OpNames {
  std::string cpp;            // `op_overload`: the C++ and Python identifier (api spelling)
  std::string meta;           // kernels::<op>_meta (`meta: custom`)
  std::string setup_context;  // kernels::<op>_setup_context
  std::string backward;       // kernels::<op>_backward
  std::string grads;          // <op>_grads: what backward returns
  std::string grad_slot;      // <op>_grad_slot: index of each grad slot
  std::string adapter;        // op_<op>: the adapter struct (X.ops.cpp)
  std::string py_op;          // _<op>_op: the op's structop_runtime.Op (X_ops.py)
  std::string py_results;     // _<op>_results: flat outputs -> returned records (X_ops.py)
  std::string py_outputs;     // _<op>_outputs: a Python kernel's records -> flat outputs
  /// The forward kernels: `<op>`, or `<op>_<key>` per `dispatch:` key.
  std::vector<std::string> kernels;
};
/// The names generated for `op`.
OpNames op_names(const model::Op& op);
/// OpNames::cpp alone.
std::string op_cpp_name(const model::Op& op);
/// OpNames::kernels, for an op whose OpNames::cpp is `cpp`, appended to `kernels`.
void op_kernel_names(
    const model::Op& op,
    const std::string& cpp,
    std::vector<std::string>* kernels);
/// `_<op>_<suffix>` (OpNames::py_op with `_op`, py_results with `_results`...)
/// for an op whose OpNames::cpp is `cpp`, in `buffer` (its memory reused).
const std::string& python_op_global(
    std::string& buffer,
    std::string_view cpp,
    std::string_view suffix);

/// `<Record>Grad`: the grad record of a record with a tensor that takes a gradient.
std::string grad_record_name(const model::Record& r);
/// `unflatten_<Record>`: builds a record from its leaves (X.ops.cpp).
std::string unflatten_name(const model::Record& r);
/// `flatten_<Record>`: pushes a record's leaves for the C++ call API (X.ops.cpp).
std::string flatten_name(const model::Record& r);
/// `unflatten_R_list`: the generated function building a `std::vector<R>`.
std::string unflatten_list_name(const model::Record& r);
/// `unflatten_R_optional`: the generated function building a `c10::optional<R>`.
std::string unflatten_optional_name(const model::Record& r);

/// A name the generated code uses for itself, whatever the IDL declares, and
/// what it is (for messages: "a module the generated Python imports").
struct FixedName {
  std::string_view name;
  std::string_view what;
  /// Only a type hides it (a C++ namespace: `at::Tensor` ignores functions).
  bool types_only = false;
};

/// The fixed names of the generated C++ and Python at namespace and module
/// scope: the C++ namespaces and types they refer to, the Python modules
/// they import, the generated module's globals and the built-ins it uses.
/// A record, enum or op cannot be called like one.
const std::vector<FixedName>& generated_global_names();

/// The C++ types the generated code spells unqualified in signatures and
/// structs: a parameter or field cannot be called like one.
const std::vector<FixedName>& unqualified_cpp_types();

/// The names the body of a generated Python dataclass uses besides the
/// records, enums and unqualified_cpp_types(): a field cannot be called like one.
const std::vector<FixedName>& record_body_names();

/// The globals the generated Python function of an op reads after its
/// parameters are bound (besides its `_<op>_op`): a parameter cannot be
/// called like one.
const std::vector<std::string_view>& python_function_globals();

}  // namespace structop::lang
