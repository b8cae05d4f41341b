// Names: which IDL names the generated code can use, in one place (README,
// "Names"). The checker reports the names that cannot work; lowering and the
// emitters spell the rest with the functions here, so that they all agree.
//  1. A word torch's schema parser reserves (`class`, `in`, `None`...) cannot
//     name an op, overload, parameter, return or record field (fields become
//     schema parameters when flattened): an error.
//  2. A C++ or Python keyword, or a predefined C/C++ macro (`from`, `errno`,
//     `NULL`, `linux`), stays as it is in the schema and gets a trailing `_`
//     in the generated C++ and Python (model::api_spelling).
//  3. A record, enum or op cannot take a name that the generated code gives
//     to something else (`<Record>Grad`, `<op>_grads`, `op_<op>`, `_<op>_op`,
//     ...) or uses itself (`torch`, `kernels`, `load_library`, ...): an error.
//  4. The generated functions' own locals (`ks`, `ctx`, `error`...) give way
//     to the names of parameters and fields: lowering numbers them (`ctx2`).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"
#include "check/model.h"

namespace structop::model {

/// A word torch's schema parser (the TorchScript lexer) reserves: `class`,
/// `in`, `if`, `None`, `True`... It cannot name anything in a schema.
bool is_schema_keyword(std::string_view name);

/// A predefined macro of the C or C++ standard library, POSIX or GCC
/// (`errno`, `NULL`, `EOF`, `INT64_MIN`, `linux`), or a name with the macro
/// prefix of libtorch or structop (`C10_`, `TORCH_`, `AT_`, `CAFFE2_`,
/// `STRUCTOP_`). The list is in check/macros.cpp.
bool is_predefined_macro(std::string_view name);

/// A name that libtorch's or the C library's headers declare at global scope
/// in generated code (`time`, `log`, `printf`, `FILE`, `tm`, `ska`...): a
/// generated namespace cannot take it. The list is in check/globals.cpp.
bool is_global_name(std::string_view name);

/// A fixed set of words given as one string of words separated by spaces and
/// line breaks (the lists of check/macros.cpp and check/globals.cpp), or as
/// an array. Every name the compiler emits is looked up in these lists, most
/// of them in none: `contains` rejects a word whose first character and
/// length no listed word has before it searches.
class WordList {
 public:
  explicit WordList(std::string_view words);
  WordList(const std::string_view* begin, const std::string_view* end);
  bool contains(std::string_view word) const;

 private:
  void index();
  std::vector<std::string_view> sorted_;
  /// Bit min(length, 63) of lengths_[c] is set when a word starts with c.
  uint64_t lengths_[128] = {};
};

/// A name C++ reserves for the compiler and its library: beginning with `__`,
/// or with `_` and an upper-case letter (`__LINE__`, `_GNU_SOURCE`).
bool is_implementation_reserved(std::string_view name);

/// Joins C++ identifier parts with `_` without creating `__`: a trailing
/// `_` of a part moves to the end (`scale_` + `meta` -> `scale_meta_`).
std::string join_identifier(const std::vector<std::string>& parts);
std::string join_identifier(std::initializer_list<std::string_view> parts);
/// join_identifier into `out` (its memory reused).
void join_identifier_into(std::string& out, std::initializer_list<std::string_view> parts);

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
  std::string py_records;     // _<op>_records: flat arguments -> record form (X_ops.py)
  /// The forward kernels: `<op>`, or `<op>_<key>` per `dispatch:` key.
  std::vector<std::string> kernels;
};
OpNames op_names(const Op& op);
/// OpNames::cpp alone.
std::string op_cpp_name(const Op& op);
/// OpNames::kernels, for an op whose OpNames::cpp is `cpp`, appended to `kernels`.
void op_kernel_names(const Op& op, const std::string& cpp, std::vector<std::string>* kernels);

/// `<Record>Grad`: the grad record of a record with a tensor that takes a gradient.
std::string grad_record_name(const Record& r);
/// `unflatten_<Record>`: builds a record from its leaves (X.ops.cpp).
std::string unflatten_name(const Record& r);
/// `unflatten_R_list`: the generated function building a `std::vector<R>`.
std::string unflatten_list_name(const Record& r);
/// `unflatten_R_optional`: the generated function building a `c10::optional<R>`.
std::string unflatten_optional_name(const Record& r);

/// The parts of a dotted path (`cfg.layers.w` -> `cfg`, `layers`, `w`).
std::vector<std::string> split_path(std::string_view path);

/// `base`, or `base2`, `base3`... : the first not in `taken`.
std::string first_free(const std::string& base, const std::vector<std::string>& taken);

}  // namespace structop::model

namespace structop {

/// Reports records, enums, ops, parameters and fields whose names the
/// generated code cannot use (rules 3 and parts of 1): names taken by
/// generated code, and parameters or fields named like a type. Run by the
/// resolver on the module it built.
void check_generated_name_clashes(const model::Module& m, Diagnostics& diags);

}  // namespace structop
