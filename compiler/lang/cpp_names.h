// Names that C++, its libraries and libtorch reserve or declare, which a
// name in generated C++ cannot be (or must be spelled around).
#pragma once

#include <string_view>

namespace structop::lang {

/// A name C++ reserves for the compiler and its library: beginning with `__`,
/// or with `_` and an upper-case letter (`__LINE__`, `_GNU_SOURCE`).
bool is_implementation_reserved(std::string_view name);

/// A predefined macro of the C or C++ standard library, POSIX, GCC or
/// libtorch's headers (`errno`, `NULL`, `EOF`, `INT64_MIN`, `linux`,
/// `CHECK`), or a name with the macro prefix of libtorch or structop (`C10_`,
/// `TORCH_`, `AT_`, `CAFFE2_`, `STRUCTOP_`). The list is lang/lists/cpp_macros.inc
/// (tools/lang_lists.py).
bool is_predefined_macro(std::string_view name);

/// A name that libtorch's or the C library's headers declare at global scope
/// in generated code (`time`, `log`, `printf`, `FILE`, `tm`, `ska`...): a
/// generated namespace cannot take it. The list is lang/lists/cpp_globals.inc
/// (tools/lang_lists.py).
bool is_global_name(std::string_view name);

/// A namespace that C++, libtorch or structop use (`std`, `at`, `c10`,
/// `torch`, `caffe2`, `structop`, and the generated `kernels`): generated
/// code cannot be put in it.
bool is_taken_cpp_namespace(std::string_view name);

}  // namespace structop::lang
