// Facts about torch's schema vocabulary that the checker, the lowering and
// the emitters share: built-in types, dtype / layout / memory-format names,
// device types, dispatch keys. The compiler does not link libtorch, so the
// few enum codes torch's schema parser needs are tabled here (they are stable
// across torch releases).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace structop::model {

/// The schema's own types.
enum class Builtin {
  Tensor,
  Int,
  SymInt,
  Float,
  Bool,
  Str,
  Scalar,
  ScalarType,
  Device,
  Layout,
  MemoryFormat,
  Generator,
  Dimname,
  Stream,
  Storage,
  QScheme,
  DeviceIndex,
  SymBool,
};

/// Schema spelling: `Tensor`, `int`, `ScalarType` ...
const char* schema_name(Builtin b);
std::optional<Builtin> builtin_from_name(std::string_view name);
/// All built-in type names (for "did you mean").
const std::vector<std::string>& builtin_names();
/// Types that may appear as record fields (config values), as opposed to
/// runtime handles like Generator or Stream.
bool allowed_in_record(Builtin b);

/// A named constant of an enum-like torch type (dtype, layout, memory format).
struct NamedConstant {
  const char* name;         // canonical name users write: `float32`, `channels_last`
  int code;                 // the integer torch's schema parser stores
  const char* cpp;          // `at::kFloat`
  const char* python;       // `torch.float32`
  const char* torch_ident;  // spelling torch's schema parser accepts, or nullptr
};

/// Looks up a dtype by canonical name or alias (`float`, `half`, `long`, `cfloat`...).
const NamedConstant* find_dtype(std::string_view name);
const NamedConstant* find_layout(std::string_view name);
const NamedConstant* find_memory_format(std::string_view name);
/// The constant `name` of `type` (ScalarType, Layout or MemoryFormat).
const NamedConstant* find_constant(Builtin type, std::string_view name);
/// Canonical names, for messages.
std::vector<std::string> dtype_names();
std::vector<std::string> layout_names();
std::vector<std::string> memory_format_names();

/// Checks a device string (`cpu`, `cuda`, `cuda:1`, `meta`); "" if valid,
/// otherwise what is wrong.
std::string check_device(std::string_view device);

/// Backend dispatch keys an op may list under `dispatch:`.
const std::vector<std::string>& dispatch_keys();

/// The operator tags torch defines (at::Tag, torch.Tag): those of torch 2.6
/// and those added up to torch 2.13. tests/corpus/tags_test.py checks the
/// list against the torch it runs with.
const std::vector<std::string>& torch_tags();
/// Whether torch 2.6 already defines `tag` (generated code using a newer one
/// needs a newer torch to compile).
bool tag_in_torch_2_6(std::string_view tag);

/// True if `name` is a C++ keyword or alternative token, a Python keyword,
/// or a predefined C/C++ macro (is_predefined_macro: `errno`, `NULL`,
/// `linux`); such names get a trailing `_` in generated APIs (check/names.h).
bool is_reserved_word(std::string_view name);
/// `name` as the generated C++ and Python APIs spell it: a reserved word
/// gets a trailing `_` (`from` -> `from_`); the schema keeps the IDL name.
std::string api_spelling(const std::string& name);
std::string api_spelling(std::string&& name);
/// True if `name` is a Python keyword (keyword.kwlist): not a valid name for
/// a Python parameter, e.g. in torch.fx's signature of a custom op.
bool is_python_keyword(std::string_view name);

}  // namespace structop::model
