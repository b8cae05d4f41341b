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

#include "lang/api_names.h"

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

}  // namespace structop::model
