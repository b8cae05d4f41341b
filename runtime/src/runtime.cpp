// structop runtime library: the out-of-line part of structop/runtime.h (the
// code that builds error messages, which runs only when an error is raised).
#include <structop/runtime.h>

#include <ATen/ops/scalar_tensor.h>
#include <c10/core/DispatchKeySet.h>

#include <string>

namespace structop {

std::string ArgPath::str() const {
  std::string path = parent_ ? parent_->str() + "." : std::string();
  return path + name_;
}

namespace detail {

void throw_invalid_enum(
    const ArgPath* where,
    c10::optional<std::size_t> item,
    const char* type_name,
    c10::string_view text,
    c10::ArrayRef<c10::string_view> names) {
  std::string context;
  if (where) {
    context = std::string(where->op()) + ": " + where->str();
    if (item) context += "[" + std::to_string(*item) + "]";
    context += ": ";
  }
  std::string expected;
  for (const auto& name : names) {
    if (!expected.empty()) expected += ", ";
    expected.append(name.data(), name.size());
  }
  TORCH_CHECK_VALUE(
      false,
      context,
      "invalid value \"",
      std::string(text.data(), text.size()),
      "\" for ",
      type_name,
      "; expected one of: ",
      expected);
}

namespace {

/// Whether the data of `tensor` can be read: not a meta tensor, and not
/// FakeTensor or FunctionalTensor (Python dispatch, functionalization),
/// which torch.compile and torch.export trace with.
bool has_data(const at::Tensor& tensor) {
  constexpr c10::DispatchKeySet traced = c10::python_ks |
                                         c10::DispatchKeySet(c10::DispatchKey::Functionalize);
  return !tensor.is_meta() && !tensor.key_set().has_any(traced);
}

template <class T>
bool read(const at::Tensor& tensor, const ArgPath& where, T* value) {
  TORCH_CHECK_VALUE(
      tensor.defined() && tensor.dim() == 0 && (tensor.is_cpu() || tensor.is_meta()),
      where.op(),
      ": ",
      where.str(),
      ": a dynamic ",
      std::is_same_v<T, double> ? "float" : "int",
      " takes a 0-dim CPU tensor, got ",
      !tensor.defined()   ? std::string("an undefined tensor")
      : tensor.dim() != 0 ? "a tensor of shape " + c10::str(tensor.sizes())
                          : "a tensor on " + tensor.device().str());
  if (!has_data(tensor)) return false;
  *value = tensor.item<T>();
  return true;
}

}  // namespace

bool read_dynamic(const at::Tensor& tensor, const ArgPath& where, double* value) {
  return read(tensor, where, value);
}

bool read_dynamic(const at::Tensor& tensor, const ArgPath& where, int64_t* value) {
  return read(tensor, where, value);
}

at::Tensor dynamic_tensor(double value) {
  return at::scalar_tensor(value, at::TensorOptions().dtype(at::kDouble));
}

at::Tensor dynamic_tensor(int64_t value) {
  return at::scalar_tensor(value, at::TensorOptions().dtype(at::kLong));
}

void throw_unknown_dynamic() {
  TORCH_CHECK(
      false,
      "structop: the value of a dynamic number (`dynamic: true` in the IDL) is not known while "
      "torch traces the op (torch.compile, torch.export, a meta kernel); compute with its "
      "tensor() instead, e.g. save cfg.scale.tensor() for the backward");
}

}  // namespace detail
}  // namespace structop
