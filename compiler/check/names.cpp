#include "check/names.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

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
  index();
}

WordList::WordList(const std::string_view* begin, const std::string_view* end)
    : sorted_(begin, end) {
  index();
}

void WordList::index() {
  std::sort(sorted_.begin(), sorted_.end());
  for (std::string_view w : sorted_) {
    const auto first = static_cast<unsigned char>(w.front());
    if (first < 128) lengths_[first] |= uint64_t{1} << std::min<size_t>(w.size(), 63);
  }
}

bool WordList::contains(std::string_view word) const {
  if (word.empty()) return false;
  const auto first = static_cast<unsigned char>(word.front());
  if (first < 128 && !(lengths_[first] >> std::min<size_t>(word.size(), 63) & 1)) return false;
  return std::binary_search(sorted_.begin(), sorted_.end(), word);
}

bool is_implementation_reserved(std::string_view name) {
  return name.size() >= 2 && name[0] == '_' &&
         (name[1] == '_' || std::isupper(static_cast<unsigned char>(name[1])));
}

namespace {
template <typename Part>
void join_parts(std::string& out, const Part* begin, const Part* end) {
  out.clear();
  size_t size = 1;  // a trailing `_`
  for (const Part* part = begin; part != end; ++part) size += std::string_view(*part).size() + 1;
  out.reserve(size);
  bool trailing = false;
  for (const Part* part = begin; part != end; ++part) {
    std::string_view p = *part;
    if (!out.empty()) {
      while (!p.empty() && p.front() == '_') p.remove_prefix(1);
    }
    const size_t last = p.find_last_not_of('_');
    if (last != std::string_view::npos && last + 1 < p.size()) {
      trailing = true;
      p = p.substr(0, last + 1);
    }
    if (p.empty()) continue;
    if (!out.empty()) out += '_';
    out += p;
  }
  if (trailing) out += '_';
}
}  // namespace

std::string join_identifier(const std::vector<std::string>& parts) {
  std::string out;
  join_parts(out, parts.data(), parts.data() + parts.size());
  return out;
}

std::string join_identifier(std::initializer_list<std::string_view> parts) {
  std::string out;
  join_parts(out, parts.begin(), parts.end());
  return out;
}

void join_identifier_into(std::string& out, std::initializer_list<std::string_view> parts) {
  join_parts(out, parts.begin(), parts.end());
}

std::string op_cpp_name(const Op& op) {
  return api_spelling(
      op.overload.empty() ? join_identifier({op.name}) : join_identifier({op.name, op.overload}));
}

OpNames op_names(const Op& op) {
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
  n.py_records = "_" + n.cpp + "_records";
  op_kernel_names(op, n.cpp, &n.kernels);
  return n;
}

void op_kernel_names(const Op& op, const std::string& cpp, std::vector<std::string>* kernels) {
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
/// (none for the fixed names). The description is only spelled out for a
/// diagnostic: `what` is a format with `{}` for the owner's name.
struct NameUse {
  enum class Owner { None, Record, Op };
  const char* what;
  Owner owner_kind = Owner::None;
  const void* owner = nullptr;
  /// Only a type hides it (a C++ namespace: `at::Tensor` ignores functions).
  bool types_only = false;
  size_t order = 0;  // when it was taken

  std::string description() const {
    switch (owner_kind) {
      case Owner::Record:
        return fmt::format(fmt::runtime(what), static_cast<const model::Record*>(owner)->name);
      case Owner::Op:
        return fmt::format(
            fmt::runtime(what),
            static_cast<const model::Op*>(owner)->qualified_name());
      case Owner::None:
        break;
    }
    return what;
  }
};

class ClashChecker {
 public:
  ClashChecker(const model::Module& m, Diagnostics& diags) : m_(m), diags_(diags) {}

  void run() {
    spell_declarations();
    generated_names();
    // Declarations of included files are checked when those are compiled,
    // but take their names here too.
    declared_.reserve(op_spelled_.size() + record_spelled_.size() + enum_spelled_.size());
    for (size_t i = 0; i < m_.records.size(); ++i) {
      if (m_.records[i].from_include)
        declared_.emplace(record_spelled_[i], Declared{"record", &m_.records[i]});
    }
    for (size_t i = 0; i < m_.enums.size(); ++i) {
      if (m_.enums[i].from_include)
        declared_.emplace(enum_spelled_[i], Declared{"enum", &m_.enums[i]});
    }
    for (size_t i = 0; i < m_.records.size(); ++i) {
      const model::Record& r = m_.records[i];
      if (!r.from_include) declaration(r.span, Declared{"record", &r}, record_spelled_[i]);
    }
    for (size_t i = 0; i < m_.enums.size(); ++i) {
      const model::Enum& e = m_.enums[i];
      if (!e.from_include) declaration(e.span, Declared{"enum", &e}, enum_spelled_[i]);
    }
    for (size_t i = 0; i < m_.ops.size(); ++i)
      declaration(m_.ops[i].name_span, Declared{"op", &m_.ops[i]}, op_spelled_[i]);
    kernel_clashes();
    hidden_types();
    python_locals();
  }

 private:
  // How records, enums and ops are spelled in C++ and Python, and the set of
  // those names: a generated name only matters when a declaration has it.
  void spell_declarations() {
    record_spelled_.reserve(m_.records.size());
    for (const auto& r : m_.records) record_spelled_.push_back(model::api_spelling(r.name));
    enum_spelled_.reserve(m_.enums.size());
    for (const auto& e : m_.enums) enum_spelled_.push_back(model::api_spelling(e.name));
    op_spelled_.reserve(m_.ops.size());
    for (const auto& op : m_.ops) op_spelled_.push_back(model::op_cpp_name(op));
    spelled_.reserve(record_spelled_.size() + enum_spelled_.size() + op_spelled_.size());
    for (const auto* names : {&record_spelled_, &enum_spelled_, &op_spelled_})
      spelled_.insert(names->begin(), names->end());
  }

  // A name of the generated code, kept (in uses_, with its own copy) only
  // when a declaration is spelled like it.
  void take(std::string_view name, NameUse use) {
    use.order = order_++;
    if (spelled_.count(name)) uses_.emplace(owned_.emplace_back(name), use);
  }
  void take(std::string_view name, const char* what) { take(name, NameUse{what}); }
  void take(std::string_view name, const char* what, const model::Record& r) {
    take(name, NameUse{what, NameUse::Owner::Record, &r});
  }
  void take(std::string_view name, const char* what, const model::Op& op) {
    take(name, NameUse{what, NameUse::Owner::Op, &op});
  }

  void generated_names() {
    for (const char* ns : {"at", "c10", "caffe2", "std", "structop"})
      take(
          ns,
          NameUse{
              "a C++ namespace the generated code refers to",
              NameUse::Owner::None,
              nullptr,
              true});
    take("kernels", "the C++ namespace of the kernels");
    take("to_string", "the C++ function that spells enum values");
    take("int64_t", "a C++ type the generated code spells unqualified");
    take("torch", "a module the generated Python imports (and a C++ namespace)");
    for (const char* module : {"dataclasses", "enum", "typing"})
      take(module, "a module the generated Python imports");
    take("_rt", "the generated Python's name for structop_runtime");
    for (const char* global :
         {"NAMESPACE", "STRUCTOPC_VERSION", "_IDL_STEM", "load_library", "__all__"})
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
      take(model::unflatten_name(r), "the C++ function that builds record `{}`", r);
      take(model::unflatten_list_name(r), "the C++ function that builds a list of record `{}`", r);
      take(
          model::unflatten_optional_name(r),
          "the C++ function that builds an optional record `{}`",
          r);
      if (r.takes_grad) take(model::grad_record_name(r), "the grad record of record `{}`", r);
    }
    // The names of model::op_names, spelled into one buffer (most ops have
    // thousands of siblings and no clash: nothing is kept for them).
    std::string name;
    for (size_t i = 0; i < m_.ops.size(); ++i) {
      const model::Op& op = m_.ops[i];
      const std::string& cpp = op_spelled_[i];
      model::join_identifier_into(name, {"op", cpp});
      take(name, "the C++ adapter of op `{}`", op);
      take(python_global(name, cpp, "_op"), "the Python global holding op `{}`", op);
      take(
          python_global(name, cpp, "_records"),
          "the Python function giving op `{}`'s arguments record form",
          op);
      if (op.backward) {
        model::join_identifier_into(name, {cpp, "grads"});
        take(name, "the C++ struct of op `{}`'s gradients", op);
        model::join_identifier_into(name, {cpp, "grad_slot"});
        take(name, "the C++ struct of op `{}`'s grad slots", op);
      }
    }
  }

  /// `_<op>_op`, `_<op>_records` (OpNames::py_op, py_records) in `buffer`.
  static const std::string& python_global(
      std::string& buffer,
      std::string_view cpp,
      std::string_view suffix) {
    buffer.assign("_").append(cpp).append(suffix);
    return buffer;
  }

  /// A declaration's IDL name (an op's with its overload), for messages.
  struct Declared {
    const char* kind;
    const void* decl;  // a model::Record, Enum or Op

    std::string name() const {
      if (kind == std::string_view("op"))
        return static_cast<const model::Op*>(decl)->qualified_name();
      if (kind == std::string_view("record")) return static_cast<const model::Record*>(decl)->name;
      return static_cast<const model::Enum*>(decl)->name;
    }
  };

  void declaration(const Span& span, const Declared& self, std::string_view spelled) {
    const char* kind = self.kind;
    // The use taken first is the one reported.
    const NameUse* clash = nullptr;
    auto [first, last] = uses_.equal_range(spelled);
    for (auto it = first; it != last; ++it) {
      if (it->second.owner == self.decl) continue;
      if (it->second.types_only && kind == std::string_view("op")) continue;  // ATen's `std`
      if (!clash || it->second.order < clash->order) clash = &it->second;
    }
    if (clash) {
      diags_.error(
          span,
          fmt::format(
              "{} `{}` cannot be called `{}` in generated code: that is already {}",
              kind,
              self.name(),
              spelled,
              clash->description()),
          fmt::format("rename the {}", kind));
      return;
    }
    // Records, enums and ops share one namespace in C++ and Python. (Two
    // ops, or a record and an enum of one name, are reported by the resolver.)
    auto [other, fresh] = declared_.emplace(spelled, self);
    if (fresh) return;
    const bool both_ops = other->second.kind == std::string_view("op") &&
                          kind == other->second.kind;
    const bool both_types = other->second.kind != std::string_view("op") &&
                            kind != std::string_view("op") && other->second.name() == self.name();
    if (!both_ops && !both_types) {
      diags_.error(
          span,
          fmt::format(
              "{} `{}` would be called `{}` in C++ and Python, like {} `{}`",
              kind,
              self.name(),
              spelled,
              other->second.kind,
              other->second.name()),
          fmt::format("rename the {}", kind));
    }
  }

  // The kernels the user writes share namespace `kernels`: `a_cpu` is the
  // CPU kernel of `a` with `dispatch: [CPU]`, and the kernel of an op `a_cpu`.
  void kernel_clashes() {
    std::unordered_map<std::string, size_t> owner;  // kernel name -> op index
    owner.reserve(2 * m_.ops.size());
    std::vector<std::string> kernels;
    for (size_t i = 0; i < m_.ops.size(); ++i) {
      const model::Op& op = m_.ops[i];
      const std::string& cpp = op_spelled_[i];
      kernels.clear();
      model::op_kernel_names(op, cpp, &kernels);
      if (op.meta == model::MetaKind::Custom)
        kernels.push_back(model::join_identifier({cpp, "meta"}));
      if (op.backward) {
        kernels.push_back(model::join_identifier({cpp, "setup_context"}));
        kernels.push_back(model::join_identifier({cpp, "backward"}));
      }
      for (auto& k : kernels) {
        auto [it, fresh] = owner.try_emplace(std::move(k), i);
        // The same C++ name twice is reported by the resolver.
        if (fresh || it->second == i || op_spelled_[it->second] == cpp) continue;
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
    std::string py_op;
    for (size_t i = 0; i < m_.ops.size(); ++i) {
      const model::Op& op = m_.ops[i];
      const std::string_view globals[] = {
          "_rt",
          python_global(py_op, op_spelled_[i], "_op"),
          "getattr",
          "AttributeError",
          "TypeError",
          "RuntimeError"};
      for (const auto& p : op.params) {
        // A reserved word is spelled with a trailing `_`, which none of these has.
        if (std::find(std::begin(globals), std::end(globals), p.name) == std::end(globals))
          continue;
        const std::string& name = p.name;
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
  // Parallel to m_.records, m_.enums and m_.ops: their C++ and Python names.
  std::vector<std::string> record_spelled_, enum_spelled_, op_spelled_;
  std::unordered_set<std::string_view> spelled_;  // all of them
  std::unordered_multimap<std::string_view, NameUse> uses_;
  std::deque<std::string> owned_;  // the names in uses_
  size_t order_ = 0;
  std::unordered_map<std::string_view, Declared> declared_;
};

}  // namespace

void check_generated_name_clashes(const model::Module& m, Diagnostics& diags) {
  ClashChecker(m, diags).run();
}

}  // namespace structop
