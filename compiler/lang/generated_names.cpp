#include "lang/generated_names.h"

#include <algorithm>
#include <cctype>

#include "lang/api_names.h"

namespace structop::lang {

std::string op_cpp_name(const model::Op& op) {
  return api_spelling(
      op.overload.empty() ? join_identifier({op.name}) : join_identifier({op.name, op.overload}));
}

OpNames op_names(const model::Op& op) {
  OpNames n;
  n.cpp = op_cpp_name(op);
  auto named = [&](std::string_view suffix) { return join_identifier({n.cpp, suffix}); };
  n.meta = named("meta");
  n.setup_context = named("setup_context");
  n.backward = named("backward");
  n.grads = named("grads");
  n.grad_slot = named("grad_slot");
  n.adapter = join_identifier({"op", n.cpp});
  n.py_op = "_" + n.cpp + "_op";
  n.py_results = "_" + n.cpp + "_results";
  n.py_outputs = "_" + n.cpp + "_outputs";
  op_kernel_names(op, n.cpp, &n.kernels);
  return n;
}

void op_kernel_names(
    const model::Op& op,
    const std::string& cpp,
    std::vector<std::string>* kernels) {
  if (op.dispatch.empty()) {
    kernels->push_back(cpp);
    return;
  }
  for (const auto& key : op.dispatch) {
    std::string lower = key;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) {
      return static_cast<char>(std::tolower(c));
    });
    kernels->push_back(join_identifier({cpp, lower}));
  }
}

const std::string& python_op_global(
    std::string& buffer,
    std::string_view cpp,
    std::string_view suffix) {
  buffer.assign("_").append(cpp).append(suffix);
  return buffer;
}

std::string grad_record_name(const model::Record& r) {
  return r.name + "Grad";
}

std::string unflatten_name(const model::Record& r) {
  return "unflatten_" + r.name;
}

std::string flatten_name(const model::Record& r) {
  return "flatten_" + r.name;
}

std::string unflatten_list_name(const model::Record& r) {
  return "unflatten_" + r.name + "_list";
}

std::string unflatten_optional_name(const model::Record& r) {
  return "unflatten_" + r.name + "_optional";
}

const std::vector<FixedName>& generated_global_names() {
  static const std::vector<FixedName> kNames = [] {
    std::vector<FixedName> names;
    for (const char* ns : {"at", "c10", "caffe2", "std", "structop"})
      names.push_back({ns, "a C++ namespace the generated code refers to", true});
    names.push_back({"kernels", "the C++ namespace of the kernels"});
    names.push_back({"to_string", "the C++ function that spells enum values"});
    names.push_back({"int64_t", "a C++ type the generated code spells unqualified"});
    names.push_back({"torch", "a module the generated Python imports (and a C++ namespace)"});
    for (const char* module : {"dataclasses", "enum", "typing"})
      names.push_back({module, "a module the generated Python imports"});
    names.push_back({"_rt", "the generated Python's name for structop_runtime"});
    for (const char* global :
         {"NAMESPACE", "STRUCTOPC_VERSION", "_IDL_STEM", "load_library", "__all__"})
      names.push_back({global, "a global of the generated Python module"});
    // The parameters and locals of `_<op>_results` / `_<op>_outputs`, which
    // name record classes in their bodies.
    for (const char* local : {"_flat", "_grad", "_result", "_r"})
      names.push_back({local, "a parameter of the generated Python's record-return helpers"});
    for (const char* builtin :
         {"str",
          "getattr",
          "object",
          "AttributeError",
          "TypeError",
          "RuntimeError",
          "__name__",
          "__package__"})
      names.push_back({builtin, "a Python built-in the generated module uses"});
    return names;
  }();
  return kNames;
}

const std::vector<FixedName>& unqualified_cpp_types() {
  static const std::vector<FixedName> kNames = {{"int64_t", "the C++ type `int64_t`"}};
  return kNames;
}

const std::vector<FixedName>& record_body_names() {
  static const std::vector<FixedName> kNames = {
      {"dataclasses", "`dataclasses`, which the generated dataclass uses"},
      {"typing", "`typing`, which the generated dataclass uses"},
      {"torch", "`torch`, which the generated dataclass uses"},
      {"str", "`str`, which the generated dataclass uses"},
      // What the generated __init__ reads besides its parameters (the fields).
      {"_rt", "`_rt`, which the generated dataclass's __init__ uses"},
      {"getattr", "`getattr`, which the generated dataclass's __init__ uses"},
      {"AttributeError", "`AttributeError`, which the generated dataclass's __init__ uses"},
      // Class attributes X_ops.py sets on each record (a field's default is one too).
      {"_structop_fields", "`_structop_fields`, which structop sets on the generated dataclass"},
      {"_structop_grad", "`_structop_grad`, which structop sets on the generated dataclass"},
      {"_structop_flat", "`_structop_flat`, which structop sets on each record"},
      {"_structop_key", "`_structop_key`, which structop sets on each record"},
  };
  return kNames;
}

const std::vector<std::string_view>& python_function_globals() {
  static const std::vector<std::string_view> kNames =
      {"_rt", "getattr", "AttributeError", "TypeError", "RuntimeError"};
  return kNames;
}

}  // namespace structop::lang
