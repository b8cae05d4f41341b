// structop runtime library: the out-of-line part of structop/runtime.h (the
// code that builds error messages, which runs only when an error is raised).
#include <structop/runtime.h>

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

}  // namespace detail
}  // namespace structop
