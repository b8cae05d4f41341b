#include "check/names.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>

#include "check/builtins.h"

namespace structop::model {

bool is_schema_keyword(std::string_view name) {
  // Every word torch 2.6's schema parser refuses as an op, overload,
  // parameter or return name (tests/corpus checks the list against torch).
  static constexpr std::string_view kWords[] = {
      "Ellipsis", "False", "None",   "NoneType", "True",   "and",   "as",
      "assert",   "break", "class",  "continue", "def",    "del",   "elif",
      "else",     "for",   "global", "if",       "import", "in",    "is",
      "not",      "or",    "pass",   "raise",    "return", "while", "with"};
  return std::find(std::begin(kWords), std::end(kWords), name) != std::end(kWords);
}

WordList::WordList(std::string_view words) {
  size_t start = words.find_first_not_of(" \n");
  while (start != std::string_view::npos) {
    size_t end = words.find_first_of(" \n", start);
    sorted_.push_back(words.substr(start, end == std::string_view::npos ? end : end - start));
    start = words.find_first_not_of(" \n", end);
  }
  std::sort(sorted_.begin(), sorted_.end());
}

bool WordList::contains(std::string_view word) const {
  return std::binary_search(sorted_.begin(), sorted_.end(), word);
}

bool is_implementation_reserved(std::string_view name) {
  return name.size() >= 2 && name[0] == '_' &&
         (name[1] == '_' || std::isupper(static_cast<unsigned char>(name[1])));
}

std::string join_identifier(const std::vector<std::string>& parts) {
  std::string out;
  bool trailing = false;
  for (const auto& part : parts) {
    std::string_view p = part;
    if (!out.empty()) {
      while (!p.empty() && p.front() == '_') p.remove_prefix(1);
    }
    const size_t end = p.find_last_not_of('_');
    if (end != std::string_view::npos && end + 1 < p.size()) {
      trailing = true;
      p = p.substr(0, end + 1);
    }
    if (p.empty()) continue;
    if (!out.empty()) out += '_';
    out += p;
  }
  if (trailing) out += '_';
  return out;
}

OpNames op_names(const Op& op) {
  OpNames n;
  n.cpp = api_spelling(join_identifier(
      op.overload.empty() ? std::vector<std::string>{op.name}
                          : std::vector<std::string>{op.name, op.overload}));
  auto named = [&](const char* suffix) { return join_identifier({n.cpp, suffix}); };
  n.meta = named("meta");
  n.setup_context = named("setup_context");
  n.backward = named("backward");
  n.grads = named("grads");
  n.grad_slot = named("grad_slot");
  n.adapter = join_identifier({"op", n.cpp});
  n.py_op = "_" + n.cpp + "_op";
  n.py_params = "_" + n.cpp + "_params";
  n.py_records = "_" + n.cpp + "_records";
  if (op.dispatch.empty()) {
    n.kernels.push_back(n.cpp);
  } else {
    for (const auto& key : op.dispatch) {
      std::string lower = key;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) {
        return static_cast<char>(std::tolower(c));
      });
      n.kernels.push_back(join_identifier({n.cpp, lower}));
    }
  }
  return n;
}

std::string grad_record_name(const Record& r) {
  return r.name + "Grad";
}

std::string unflatten_name(const Record& r) {
  return "unflatten_" + r.name;
}

std::string unflatten_list_name(const Record& r) {
  return "unflatten_" + r.name + "_list";
}

std::string unflatten_optional_name(const Record& r) {
  return "unflatten_" + r.name + "_optional";
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot; (dot = path.find('.', start)) != std::string_view::npos; start = dot + 1)
    parts.emplace_back(path.substr(start, dot - start));
  parts.emplace_back(path.substr(start));
  return parts;
}

std::string first_free(const std::string& base, const std::vector<std::string>& taken) {
  std::string name = base;
  for (int n = 2; std::find(taken.begin(), taken.end(), name) != taken.end(); ++n)
    name = fmt::format("{}{}", base, n);
  return name;
}

}  // namespace structop::model

namespace structop {
namespace {

/// What a name of the generated code is, and which declaration it belongs to
/// (none for the fixed names).
struct NameUse {
  std::string what;
  const void* owner = nullptr;
  /// Only a type hides it (a C++ namespace: `at::Tensor` ignores functions).
  bool types_only = false;
};

class ClashChecker {
 public:
  ClashChecker(const model::Module& m, Diagnostics& diags) : m_(m), diags_(diags) {}

  void run() {
    generated_names();
    // Declarations of included files are checked when those are compiled,
    // but take their names here too.
    for (const auto& r : m_.records) {
      if (r.from_include)
        declared_.emplace(model::api_spelling(r.name), Declared{"record", r.name});
    }
    for (const auto& e : m_.enums) {
      if (e.from_include) declared_.emplace(model::api_spelling(e.name), Declared{"enum", e.name});
    }
    for (const auto& r : m_.records) {
      if (!r.from_include) declaration(r.span, "record", r.name, model::api_spelling(r.name), &r);
    }
    for (const auto& e : m_.enums) {
      if (!e.from_include) declaration(e.span, "enum", e.name, model::api_spelling(e.name), &e);
    }
    for (size_t i = 0; i < m_.ops.size(); ++i) {
      const model::Op& op = m_.ops[i];
      declaration(op.name_span, "op", op.qualified_name(), names_[i].cpp, &op);
    }
    kernel_clashes();
    hidden_types();
    python_locals();
  }

 private:
  void take(const std::string& name, std::string what, const void* owner = nullptr) {
    uses_.emplace(name, NameUse{std::move(what), owner, false});
  }

  void generated_names() {
    for (const char* ns : {"at", "c10", "caffe2", "std", "structop"})
      uses_.emplace(ns, NameUse{"a C++ namespace the generated code refers to", nullptr, true});
    take("kernels", "the C++ namespace of the kernels");
    take("to_string", "the C++ function that spells enum values");
    take("int64_t", "a C++ type the generated code spells unqualified");
    take("torch", "a module the generated Python imports (and a C++ namespace)");
    for (const char* module : {"dataclasses", "enum", "typing"})
      take(module, "a module the generated Python imports");
    take("_rt", "the generated Python's name for structop_runtime");
    for (const char* global :
         {"NAMESPACE", "STRUCTOPC_VERSION", "_IDL_STEM", "load_library", "_bind", "__all__"})
      take(global, "a global of the generated Python module");
    // The parameters and locals of `_<op>_results` / `_<op>_outputs`, which
    // name record classes in their bodies.
    for (const char* local : {"_flat", "_grad", "_result", "_r"})
      take(local, "a parameter of the generated Python's record-return helpers");
    for (const char* builtin :
         {"str",
          "getattr",
          "AttributeError",
          "TypeError",
          "RuntimeError",
          "__name__",
          "__package__"})
      take(builtin, "a Python built-in the generated module uses");
    for (const auto& r : m_.records) {
      take(
          model::unflatten_name(r),
          fmt::format("the C++ function that builds record `{}`", r.name),
          &r);
      take(
          model::unflatten_list_name(r),
          fmt::format("the C++ function that builds a list of record `{}`", r.name),
          &r);
      take(
          model::unflatten_optional_name(r),
          fmt::format("the C++ function that builds an optional record `{}`", r.name),
          &r);
      if (r.takes_grad)
        take(model::grad_record_name(r), fmt::format("the grad record of record `{}`", r.name), &r);
    }
    names_.reserve(m_.ops.size());
    for (const auto& op : m_.ops) {
      names_.push_back(model::op_names(op));
      const model::OpNames& n = names_.back();
      const std::string label = op.qualified_name();
      take(n.adapter, fmt::format("the C++ adapter of op `{}`", label), &op);
      take(n.py_op, fmt::format("the Python global holding op `{}`", label), &op);
      take(n.py_params, fmt::format("the Python global checking op `{}`'s arguments", label), &op);
      take(
          n.py_records,
          fmt::format("the Python function giving op `{}`'s arguments record form", label),
          &op);
      if (op.backward) {
        take(n.grads, fmt::format("the C++ struct of op `{}`'s gradients", label), &op);
        take(n.grad_slot, fmt::format("the C++ struct of op `{}`'s grad slots", label), &op);
      }
    }
  }

  void declaration(
      const Span& span,
      const char* kind,
      const std::string& name,
      const std::string& spelled,
      const void* self) {
    auto [first, last] = uses_.equal_range(spelled);
    for (auto it = first; it != last; ++it) {
      if (it->second.owner == self) continue;
      if (it->second.types_only && kind == std::string_view("op")) continue;  // ATen's `std`
      diags_.error(
          span,
          fmt::format(
              "{} `{}` cannot be called `{}` in generated code: that is already {}",
              kind,
              name,
              spelled,
              it->second.what),
          fmt::format("rename the {}", kind));
      return;
    }
    // Records, enums and ops share one namespace in C++ and Python. (Two
    // ops, or a record and an enum of one name, are reported by the resolver.)
    auto [other, fresh] = declared_.emplace(spelled, Declared{kind, name});
    const bool both_ops = other->second.kind == std::string_view("op") &&
                          kind == other->second.kind;
    const bool both_types = other->second.kind != std::string_view("op") &&
                            kind != std::string_view("op") && other->second.name == name;
    if (!fresh && !both_ops && !both_types) {
      diags_.error(
          span,
          fmt::format(
              "{} `{}` would be called `{}` in C++ and Python, like {} `{}`",
              kind,
              name,
              spelled,
              other->second.kind,
              other->second.name),
          fmt::format("rename the {}", kind));
    }
  }

  // The kernels the user writes share namespace `kernels`: `a_cpu` is the
  // CPU kernel of `a` with `dispatch: [CPU]`, and the kernel of an op `a_cpu`.
  void kernel_clashes() {
    std::map<std::string, size_t> owner;  // kernel name -> op index
    for (size_t i = 0; i < m_.ops.size(); ++i) {
      const model::Op& op = m_.ops[i];
      const model::OpNames& n = names_[i];
      std::vector<std::string> kernels = n.kernels;
      if (op.meta == model::MetaKind::Custom) kernels.push_back(n.meta);
      if (op.backward) {
        kernels.push_back(n.setup_context);
        kernels.push_back(n.backward);
      }
      for (const auto& k : kernels) {
        auto [it, fresh] = owner.emplace(k, i);
        // The same C++ name twice is reported by the resolver.
        if (fresh || it->second == i || names_[it->second].cpp == n.cpp) continue;
        const model::Op& first = m_.ops[it->second];
        diags_.error(
            op.name_span,
            fmt::format(
                "ops `{}` and `{}` would both have a kernel `kernels::{}`",
                first.qualified_name(),
                op.qualified_name(),
                k),
            "rename one of them");
        diags_.note(first.name_span, fmt::format("`{}` is declared here", first.qualified_name()));
        break;
      }
    }
  }

  // A parameter or field named like a type hides it in C++ (`const Cfg&
  // Cfg, const Cfg& other` does not compile) and in a Python class body.
  void hidden_types() {
    std::map<std::string, std::string> types = {{"int64_t", "the C++ type `int64_t`"}};
    for (const auto& r : m_.records)
      types.emplace(model::api_spelling(r.name), fmt::format("record `{}`", r.name));
    for (const auto& e : m_.enums)
      types.emplace(model::api_spelling(e.name), fmt::format("enum `{}`", e.name));
    // The body of a generated dataclass uses these for its fields.
    std::map<std::string, std::string> class_body = types;
    for (const char* name : {"dataclasses", "typing", "torch", "str"})
      class_body.emplace(name, fmt::format("`{}`, which the generated dataclass uses", name));
    // Class attributes X_ops.py sets on each record (a field's default is one too).
    for (const char* name : {"_structop_fields", "_structop_grad"})
      class_body.emplace(
          name,
          fmt::format("`{}`, which structop sets on the generated dataclass", name));
    for (const auto& r : m_.records) {
      if (r.from_include) continue;
      for (const auto& f : r.fields) {
        auto it = class_body.find(model::api_spelling(f.name));
        if (it == class_body.end()) continue;
        diags_.error(
            f.span,
            fmt::format(
                "field `{}.{}` has the name of {}: the field would hide it in C++ and Python",
                r.name,
                f.name,
                it->second),
            "rename the field");
      }
    }
    for (const auto& op : m_.ops) {
      for (const auto& p : op.params) {
        auto it = types.find(model::api_spelling(p.name));
        if (it == types.end()) {
          if (p.type.is_record()) leaf_names(op, p, p.type.decl, p.name, types);
          continue;
        }
        diags_.error(
            p.span,
            fmt::format(
                "parameter `{}` of op `{}` has the name of {}: the parameter would hide it in C++",
                p.name,
                op.qualified_name(),
                it->second),
            "rename the parameter");
      }
    }
  }

  // The lowered leaves of a record parameter are the parameters of the
  // generated Python `_<op>_records`, which builds the records by name: a
  // leaf named like a record or enum (`cfg__w` and a record `cfg__w`) would
  // hide it there. Reports the first such leaf of `p`.
  bool leaf_names(
      const model::Op& op,
      const model::Param& p,
      int record,
      const std::string& lowered,
      const std::map<std::string, std::string>& types) {
    for (const auto& f : m_.records[static_cast<size_t>(record)].fields) {
      const std::string name = f.schema_name ? f.schema_name->text : lowered + "__" + f.name;
      if (f.type.is_record()) {
        if (leaf_names(op, p, f.type.decl, name, types)) return true;
        continue;
      }
      auto it = types.find(name);
      if (it == types.end()) continue;
      diags_.error(
          p.span,
          fmt::format(
              "op `{}`: the lowered parameter `{}` of `{}` has the name of {}: it would hide it "
              "in the generated Python",
              op.qualified_name(),
              name,
              p.name,
              it->second),
          "rename the record or enum, or the field");
      return true;
    }
    return false;
  }

  // The generated Python function of an op reads these globals after its
  // parameters are bound; a parameter of the same name would hide them.
  void python_locals() {
    for (size_t i = 0; i < m_.ops.size(); ++i) {
      const model::Op& op = m_.ops[i];
      const std::vector<std::string> globals = {
          "_rt",
          "_bind",
          names_[i].py_op,
          names_[i].py_params,
          "AttributeError",
          "TypeError",
          "RuntimeError"};
      for (const auto& p : op.params) {
        const std::string name = model::api_spelling(p.name);
        if (std::find(globals.begin(), globals.end(), name) == globals.end()) continue;
        diags_.error(
            p.span,
            fmt::format(
                "parameter `{}` of op `{}` would hide `{}`, a global the generated Python "
                "function uses",
                p.name,
                op.qualified_name(),
                name),
            "rename the parameter");
      }
    }
  }

  const model::Module& m_;
  Diagnostics& diags_;
  std::multimap<std::string, NameUse> uses_;
  struct Declared {
    const char* kind;
    std::string name;
  };
  std::map<std::string, Declared> declared_;
  std::vector<model::OpNames> names_;  // parallel to m_.ops
};

}  // namespace

void check_generated_name_clashes(const model::Module& m, Diagnostics& diags) {
  ClashChecker(m, diags).run();
}

}  // namespace structop
