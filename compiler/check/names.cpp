#include "check/names.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "base/name_index.h"
#include "lang/api_names.h"

namespace structop {
namespace {

/// `name` ends with `suffix`.
bool ends_with(std::string_view name, std::string_view suffix) {
  return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
}

/// What a name of the generated code is, and which declaration it belongs to
/// (none for the fixed names). The description is only spelled out for a
/// diagnostic: `what` is a format with `{}` for the owner's name.
struct GeneratedUse {
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
    declared_ = NameIndex(spelled_.size());
    declared_list_.reserve(spelled_.size());
    for (size_t i = 0; i < m_.records.size(); ++i) {
      if (m_.records[i].from_include)
        declare(record_spelled_[i], Declared{"record", &m_.records[i]});
    }
    for (size_t i = 0; i < m_.enums.size(); ++i) {
      if (m_.enums[i].from_include) declare(enum_spelled_[i], Declared{"enum", &m_.enums[i]});
    }
    for (size_t i = 0; i < m_.records.size(); ++i) {
      const model::Record& r = m_.records[i];
      if (!r.from_include) declaration(r.span, Declared{"record", &r}, record_spelled_[i]);
    }
    for (size_t i = 0; i < m_.enums.size(); ++i) {
      const model::Enum& e = m_.enums[i];
      if (!e.from_include) declaration(e.span, Declared{"enum", &e}, enum_spelled_[i]);
    }
    for (const model::Op& op : m_.ops) declaration(op.name_span, Declared{"op", &op}, op.api_name);
    kernel_clashes();
    hidden_names();
  }

 private:
  // How records, enums and ops are spelled in C++ and Python, and the set of
  // those names: a generated name only matters when a declaration has it.
  void spell_declarations() {
    record_spelled_.reserve(m_.records.size());
    for (const auto& r : m_.records) record_spelled_.push_back(lang::api_spelling(r.name));
    enum_spelled_.reserve(m_.enums.size());
    for (const auto& e : m_.enums) enum_spelled_.push_back(lang::api_spelling(e.name));
    spelled_ = NameIndex(record_spelled_.size() + enum_spelled_.size() + m_.ops.size());
    for (const auto* names : {&record_spelled_, &enum_spelled_}) {
      for (const std::string& name : *names) spell(name);
    }
    for (const model::Op& op : m_.ops) spell(op.api_name);
  }
  void spell(std::string_view name) {
    spelled_.insert(name, 0);
    shapes_.adapter |= name.substr(0, 2) == "op";
    shapes_.py_op |= ends_with(name, "_op");
    shapes_.py_results |= ends_with(name, "_results");
    shapes_.py_outputs |= ends_with(name, "_outputs");
  }

  // A name of the generated code, kept (in uses_, with its own copy) only
  // when a declaration is spelled like it.
  void take(std::string_view name, GeneratedUse use) {
    use.order = order_++;
    if (spelled_.contains(name)) uses_.emplace(owned_.keep(name), use);
  }
  void take(std::string_view name, const char* what) { take(name, GeneratedUse{what}); }
  void take(std::string_view name, const char* what, const model::Record& r) {
    take(name, GeneratedUse{what, GeneratedUse::Owner::Record, &r});
  }
  void take(std::string_view name, const char* what, const model::Op& op) {
    take(name, GeneratedUse{what, GeneratedUse::Owner::Op, &op});
  }

  void generated_names() {
    for (const lang::FixedName& fixed : lang::generated_global_names()) {
      take(
          fixed.name,
          GeneratedUse{fixed.what.data(), GeneratedUse::Owner::None, nullptr, fixed.types_only});
    }
    for (const auto& r : m_.records) {
      take(lang::unflatten_name(r), "the C++ function that builds record `{}`", r);
      take(lang::unflatten_list_name(r), "the C++ function that builds a list of record `{}`", r);
      take(
          lang::unflatten_optional_name(r),
          "the C++ function that builds an optional record `{}`",
          r);
      if (r.takes_grad) take(lang::grad_record_name(r), "the grad record of record `{}`", r);
    }
    // The names of lang::op_names, spelled into one buffer (most ops have
    // thousands of siblings and no clash: nothing is kept for them).
    // A name of a shape no declaration has (`op_...`, `_..._op`...) is not
    // spelled at all: it could not be kept.
    std::string name;
    for (size_t i = 0; i < m_.ops.size(); ++i) {
      const model::Op& op = m_.ops[i];
      const std::string& cpp = op.api_name;
      if (shapes_.adapter) {
        lang::join_identifier_into(name, {"op", cpp});
        take(name, "the C++ adapter of op `{}`", op);
      }
      if (shapes_.py_op)
        take(lang::python_op_global(name, cpp, "_op"), "the Python global holding op `{}`", op);
      // (Generated for ops that return records; reserved for every op.)
      if (shapes_.py_results) {
        take(
            lang::python_op_global(name, cpp, "_results"),
            "the Python function giving op `{}`'s results record form",
            op);
      }
      if (shapes_.py_outputs) {
        take(
            lang::python_op_global(name, cpp, "_outputs"),
            "the Python function giving op `{}`'s record results flat",
            op);
      }
      if (op.backward) {
        lang::join_identifier_into(name, {cpp, "grads"});
        take(name, "the C++ struct of op `{}`'s gradients", op);
        lang::join_identifier_into(name, {cpp, "grad_slot"});
        take(name, "the C++ struct of op `{}`'s grad slots", op);
      }
    }
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
    const GeneratedUse* clash = nullptr;
    auto [first, last] = uses_.empty() ? std::pair(uses_.end(), uses_.end())
                                       : uses_.equal_range(spelled);
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
    const Declared* other = declare(spelled, self);
    if (!other) return;
    const bool both_ops = other->kind == std::string_view("op") && kind == other->kind;
    const bool both_types = other->kind != std::string_view("op") &&
                            kind != std::string_view("op") && other->name() == self.name();
    if (!both_ops && !both_types) {
      diags_.error(
          span,
          fmt::format(
              "{} `{}` would be called `{}` in C++ and Python, like {} `{}`",
              kind,
              self.name(),
              spelled,
              other->kind,
              other->name()),
          fmt::format("rename the {}", kind));
    }
  }

  // Takes `spelled` for `self`; the declaration that already had it, if one did.
  const Declared* declare(std::string_view spelled, const Declared& self) {
    auto [index, fresh] = declared_.insert(spelled, static_cast<uint32_t>(declared_list_.size()));
    if (!fresh) return &declared_list_[index];
    declared_list_.push_back(self);
    return nullptr;
  }

  // The kernels the user writes share namespace `kernels`: `a_cpu` is the
  // CPU kernel of `a` with `dispatch: [CPU]`, and the kernel of an op `a_cpu`.
  void kernel_clashes() {
    NameIndex owner(2 * m_.ops.size());  // kernel name -> op index
    NameArena names;
    std::vector<std::string> kernels;
    for (size_t i = 0; i < m_.ops.size(); ++i) {
      const model::Op& op = m_.ops[i];
      const std::string& cpp = op.api_name;
      kernels.clear();
      lang::op_kernel_names(op, cpp, &kernels);
      if (op.meta == model::MetaKind::Custom)
        kernels.push_back(lang::join_identifier({cpp, "meta"}));
      if (op.backward) {
        kernels.push_back(lang::join_identifier({cpp, "setup_context"}));
        kernels.push_back(lang::join_identifier({cpp, "backward"}));
      }
      for (auto& k : kernels) {
        const uint32_t* first_owner = owner.find(k);
        if (!first_owner) {
          owner.insert(names.keep(k), static_cast<uint32_t>(i));
          continue;
        }
        // The same C++ name twice is reported by the resolver.
        if (*first_owner == i || m_.ops[*first_owner].api_name == cpp) continue;
        const model::Op& first = m_.ops[*first_owner];
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

  /// Names a parameter or field cannot take, and what each names (for messages).
  struct Hidden {
    NameIndex index;
    std::vector<std::string> what;

    void add(std::string_view name, std::string description) {
      if (index.insert(name, static_cast<uint32_t>(what.size())).second)
        what.push_back(std::move(description));
    }
    const std::string* find(std::string_view name) const {
      const uint32_t* i = index.find(name);
      return i ? &what[*i] : nullptr;
    }
  };

  // A parameter or field named like a type hides it in C++ (`const Cfg&
  // Cfg, const Cfg& other` does not compile) and in a Python class body;
  // and the generated Python function of an op reads some globals after
  // its parameters are bound, which a parameter of the same name would hide.
  // One pass over the parameters checks both.
  void hidden_names() {
    Hidden types;
    for (const lang::FixedName& fixed : lang::unqualified_cpp_types())
      types.add(fixed.name, std::string(fixed.what));
    for (size_t i = 0; i < m_.records.size(); ++i)
      types.add(record_spelled_[i], fmt::format("record `{}`", m_.records[i].name));
    for (size_t i = 0; i < m_.enums.size(); ++i)
      types.add(enum_spelled_[i], fmt::format("enum `{}`", m_.enums[i].name));
    // The body of a generated dataclass uses these for its fields.
    Hidden class_body = types;
    for (const lang::FixedName& fixed : lang::record_body_names())
      class_body.add(fixed.name, std::string(fixed.what));
    for (const auto& r : m_.records) {
      if (r.from_include) continue;
      for (const auto& f : r.fields) {
        const std::string* hidden = class_body.find(lang::api_spelling(f.name));
        if (!hidden) continue;
        diags_.error(
            f.span,
            fmt::format(
                "field `{}.{}` has the name of {}: the field would hide it in C++ and Python",
                r.name,
                f.name,
                *hidden),
            "rename the field");
      }
    }
    const auto& globals = lang::python_function_globals();
    std::string py_op;
    for (const auto& op : m_.ops) {
      lang::python_op_global(py_op, op.api_name, "_op");
      for (const auto& p : op.params) {
        if (const std::string* hidden = types.find(p.api_name)) {
          diags_.error(
              p.span,
              fmt::format(
                  "parameter `{}` of op `{}` has the name of {}: the parameter would hide it in "
                  "C++",
                  p.name,
                  op.qualified_name(),
                  *hidden),
              "rename the parameter");
        } else if (p.type.is_record()) {
          leaf_names(op, p, p.type.decl, p.name, types);
        }
        // A reserved word is spelled with a trailing `_`, which none of these has.
        if (p.name == py_op || std::find(globals.begin(), globals.end(), p.name) != globals.end()) {
          diags_.error(
              p.span,
              fmt::format(
                  "parameter `{}` of op `{}` would hide `{}`, a global the generated Python "
                  "function uses",
                  p.name,
                  op.qualified_name(),
                  p.name),
              "rename the parameter");
        }
      }
    }
  }

  // A leaf named like a record or enum (`cfg__w` and a record `cfg__w`):
  // refused since the generated Python's `_<op>_records` took the leaves as
  // parameters, where one would have hidden the class. The runtime rebuilds
  // records now (structop_runtime/_records.py), so the rule may be lifted.
  // Reports the first such leaf of `p`.
  bool leaf_names(
      const model::Op& op,
      const model::Param& p,
      int record,
      const std::string& lowered,
      const Hidden& types) {
    for (const auto& f : m_.records[static_cast<size_t>(record)].fields) {
      const std::string name = f.schema_name ? f.schema_name->text : lowered + "__" + f.name;
      if (f.type.is_record()) {
        if (leaf_names(op, p, f.type.decl, name, types)) return true;
        continue;
      }
      const std::string* hidden = types.find(name);
      if (!hidden) continue;
      diags_.error(
          p.span,
          fmt::format(
              "op `{}`: the lowered parameter `{}` of `{}` has the name of {}; a record leaf "
              "cannot lower to a record's or enum's name",
              op.qualified_name(),
              name,
              p.name,
              *hidden),
          "rename the record or enum, or the field");
      return true;
    }
    return false;
  }

  const model::Module& m_;
  Diagnostics& diags_;
  // Parallel to m_.records and m_.enums: their C++ and Python names (an
  // op's is model::Op::api_name).
  std::vector<std::string> record_spelled_, enum_spelled_;
  NameIndex spelled_;  // all of them, and the ops'
  /// Whether some of them has the shape of an op's adapter (`op_...`, see
  /// lang::op_names) or of its Python globals (`_..._op`, `_results`, `_outputs`).
  struct {
    bool adapter = false, py_op = false, py_results = false, py_outputs = false;
  } shapes_;
  std::unordered_multimap<std::string_view, GeneratedUse> uses_;
  NameArena owned_;  // the names in uses_
  size_t order_ = 0;
  NameIndex declared_;  // spelled name -> index in declared_list_
  std::vector<Declared> declared_list_;
};

}  // namespace

void check_generated_name_clashes(const model::Module& m, Diagnostics& diags) {
  ClashChecker(m, diags).run();
}

}  // namespace structop
