#include "check/builtins.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace structop::model {
namespace {

struct BuiltinEntry {
  Builtin type;
  std::string_view name;  // (not a `const char*`: a lookup compares lengths first)
  bool in_record;
};

constexpr std::array<BuiltinEntry, 18> kBuiltins = {{
    {Builtin::Tensor, "Tensor", true},
    {Builtin::Int, "int", true},
    {Builtin::SymInt, "SymInt", true},
    {Builtin::Float, "float", true},
    {Builtin::Bool, "bool", true},
    {Builtin::Str, "str", true},
    {Builtin::Scalar, "Scalar", true},
    {Builtin::ScalarType, "ScalarType", true},
    {Builtin::Device, "Device", true},
    {Builtin::Layout, "Layout", true},
    {Builtin::MemoryFormat, "MemoryFormat", true},
    {Builtin::Generator, "Generator", false},
    {Builtin::Dimname, "Dimname", false},
    {Builtin::Stream, "Stream", false},
    {Builtin::Storage, "Storage", false},
    {Builtin::QScheme, "QScheme", false},
    {Builtin::DeviceIndex, "DeviceIndex", true},  // torch 2.x: a device ordinal (int8)
    {Builtin::SymBool, "SymBool", false},         // torch 2.x: a symbolic bool (returns)
}};

// Codes are c10::ScalarType values; `torch_ident` is what torch's schema
// parser itself accepts as a default (anything else is lowered to the code).
constexpr NamedConstant kDtypes[] = {
    {"uint8", 0, "at::kByte", "torch.uint8", nullptr},
    {"int8", 1, "at::kChar", "torch.int8", nullptr},
    {"int16", 2, "at::kShort", "torch.int16", nullptr},
    {"int32", 3, "at::kInt", "torch.int32", nullptr},
    {"int64", 4, "at::kLong", "torch.int64", "long"},
    {"float16", 5, "at::kHalf", "torch.float16", nullptr},
    {"float32", 6, "at::kFloat", "torch.float32", "float"},
    {"float64", 7, "at::kDouble", "torch.float64", nullptr},
    {"complex32", 8, "at::kComplexHalf", "torch.complex32", nullptr},
    {"complex64", 9, "at::kComplexFloat", "torch.complex64", "complex"},
    {"complex128", 10, "at::kComplexDouble", "torch.complex128", nullptr},
    {"bool", 11, "at::kBool", "torch.bool", nullptr},
    {"bfloat16", 15, "at::kBFloat16", "torch.bfloat16", nullptr},
};

struct Alias {
  const char* alias;
  const char* canonical;
};
constexpr Alias kDtypeAliases[] = {
    {"byte", "uint8"},
    {"char", "int8"},
    {"short", "int16"},
    {"int", "int32"},
    {"long", "int64"},
    {"half", "float16"},
    {"float", "float32"},
    {"double", "float64"},
    {"chalf", "complex32"},
    {"cfloat", "complex64"},
    {"complex", "complex64"},
    {"cdouble", "complex128"},
};

constexpr NamedConstant kLayouts[] = {
    {"strided", 0, "at::kStrided", "torch.strided", "strided"},
    {"sparse_coo", 1, "at::kSparse", "torch.sparse_coo", nullptr},
};

constexpr NamedConstant kMemoryFormats[] = {
    {"contiguous_format",
     0,
     "at::MemoryFormat::Contiguous",
     "torch.contiguous_format",
     "contiguous_format"},
    {"preserve_format", 1, "at::MemoryFormat::Preserve", "torch.preserve_format", nullptr},
    {"channels_last", 2, "at::MemoryFormat::ChannelsLast", "torch.channels_last", nullptr},
    {"channels_last_3d", 3, "at::MemoryFormat::ChannelsLast3d", "torch.channels_last_3d", nullptr},
};

template <size_t N>
const NamedConstant* find_in(const NamedConstant (&table)[N], std::string_view name) {
  for (const auto& c : table) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

template <size_t N>
std::vector<std::string> names_of(const NamedConstant (&table)[N]) {
  std::vector<std::string> out;
  for (const auto& c : table) out.emplace_back(c.name);
  return out;
}

}  // namespace

const char* schema_name(Builtin b) {
  for (const auto& e : kBuiltins) {
    if (e.type == b) return e.name.data();  // a literal: NUL-terminated
  }
  return "?";
}

std::optional<Builtin> builtin_from_name(std::string_view name) {
  for (const auto& e : kBuiltins) {
    if (name == e.name) return e.type;
  }
  return std::nullopt;
}

const std::vector<std::string>& builtin_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& e : kBuiltins) v.emplace_back(e.name);
    return v;
  }();
  return names;
}

bool allowed_in_record(Builtin b) {
  for (const auto& e : kBuiltins) {
    if (e.type == b) return e.in_record;
  }
  return false;
}

const NamedConstant* find_dtype(std::string_view name) {
  if (const NamedConstant* c = find_in(kDtypes, name)) return c;
  for (const auto& a : kDtypeAliases) {
    if (name == a.alias) return find_in(kDtypes, a.canonical);
  }
  return nullptr;
}

const NamedConstant* find_layout(std::string_view name) {
  return find_in(kLayouts, name);
}
const NamedConstant* find_memory_format(std::string_view name) {
  return find_in(kMemoryFormats, name);
}
const NamedConstant* find_constant(Builtin type, std::string_view name) {
  switch (type) {
    case Builtin::ScalarType:
      return find_dtype(name);
    case Builtin::Layout:
      return find_layout(name);
    case Builtin::MemoryFormat:
      return find_memory_format(name);
    default:
      return nullptr;
  }
}
std::vector<std::string> dtype_names() {
  return names_of(kDtypes);
}
std::vector<std::string> layout_names() {
  return names_of(kLayouts);
}
std::vector<std::string> memory_format_names() {
  return names_of(kMemoryFormats);
}

std::string check_device(std::string_view device) {
  static const char* const kTypes[] = {
      "cpu",
      "cuda",
      "meta",
      "mps",
      "xpu",
      "hip",
      "xla",
      "lazy",
      "ipu",
      "hpu",
      "ve",
      "vulkan",
      "mkldnn",
      "opengl",
      "opencl",
      "ideep",
      "fpga",
      "ort"};
  std::string_view type = device.substr(0, device.find(':'));
  bool known = std::any_of(std::begin(kTypes), std::end(kTypes), [&](const char* t) {
    return type == t;
  });
  if (!known)
    return "unknown device type `" + std::string(type) +
           "` (expected e.g. `cpu`, `cuda`, `cuda:1`, `meta`)";
  if (type.size() < device.size()) {
    std::string_view index = device.substr(type.size() + 1);
    bool digits = !index.empty() && index.size() < 6 &&
                  std::all_of(
                      index.begin(),
                      index.end(),
                      [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (!digits) return "device index `" + std::string(index) + "` is not a non-negative integer";
  }
  return {};
}

const std::vector<std::string>& dispatch_keys() {
  static const std::vector<std::string> keys = {
      "CPU",
      "CUDA",
      "HIP",
      "XPU",
      "MPS",
      "XLA",
      "Lazy",
      "IPU",
      "HPU",
      "VE",
      "PrivateUse1",
      "SparseCPU",
      "SparseCUDA",
      "QuantizedCPU",
      "QuantizedCUDA"};
  return keys;
}

namespace {
struct TagEntry {
  const char* name;
  bool in_torch_2_6;
};
// From torch's tags.yaml (torch.Tag.__members__), sorted.
constexpr TagEntry kTags[] = {
    {"core", true},
    {"cudagraph_unsafe", false},
    {"data_dependent_output", true},
    {"dynamic_output_shape", true},
    {"flexible_layout", true},
    {"generated", true},
    {"inplace", false},
    {"inplace_view", true},
    {"maybe_aliasing_or_mutating", true},
    {"needs_contiguous_strides", false},
    {"needs_exact_strides", false},
    {"needs_fixed_stride_order", true},
    {"nondeterministic_bitwise", true},
    {"nondeterministic_seeded", true},
    {"out", false},
    {"out_variant", false},
    {"pointwise", true},
    {"pt2_compliant_tag", true},
    {"reduction", false},
    {"view_copy", true},
};
}  // namespace

const std::vector<std::string>& torch_tags() {
  static const std::vector<std::string> tags = [] {
    std::vector<std::string> out;
    for (const auto& t : kTags) out.emplace_back(t.name);
    return out;
  }();
  return tags;
}

bool tag_in_torch_2_6(std::string_view tag) {
  for (const auto& t : kTags) {
    if (tag == t.name) return t.in_torch_2_6;
  }
  return false;
}

}  // namespace structop::model
