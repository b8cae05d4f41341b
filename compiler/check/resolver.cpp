#include "check/resolver.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/duplicates.h"
#include "check/defaults.h"
#include "check/describe.h"
#include "check/file_stem.h"
#include "check/names.h"
#include "lang/api_names.h"
#include "lang/cpp_names.h"
#include "lang/python_names.h"
#include "lang/schema_names.h"
#include "syntax/schema_parser.h"

namespace structop {
namespace {

using model::Builtin;
using syntax::TypeSuffix;

/// Records may nest this deep (the lowering recurses once per level, and
/// each level adds to every lowered name; check/limits.h has the others).
constexpr size_t kMaxRecordDepth = 100;
/// An op may lower to at most this many parameters; a record may have at most
/// this many leaves (nesting can multiply them: R2 {a: R1, b: R1} ...).
constexpr size_t kMaxLoweredParams = 100000;
constexpr size_t kLeafCountCap = kMaxLoweredParams + 1;
/// All ops of a file together may lower to at most this many parameters
/// (a big record used by many ops multiplies; PyTorch's own 2,500 ATen ops
/// have about 12,000).
constexpr size_t kMaxTotalLoweredParams = 200000;

/// Where a type is used; decides which types are allowed.
enum class Use { Field, Param, Return };

class Resolver {
 public:
  Resolver(const LoadedIdl& idl, const SourceManager& sources, Diagnostics& diags)
      : idl_(idl), sources_(sources), diags_(diags) {}

  model::Module run() {
    model::Module m;
    if (idl_.files.empty()) return m;
    const syntax::IdlFile& main = idl_.files.back();
    m.namespace_ = main.namespace_.text;
    m.namespace_span = main.namespace_.span;
    m.cpp_namespace = cpp_namespace_of(main);
    m.files = idl_.paths;
    m.source_path = sources_.file(main.file_id).path();
    m.stem = idl_stem(m.source_path);
    check_idl_stem(m.source_path, main.file_id, false, diags_);
    m.doc = main.doc;
    for (size_t i = 0; i + 1 < idl_.files.size(); ++i) {
      std::string path = sources_.file(idl_.files[i].file_id).path();
      m.includes.push_back({path, idl_stem(path), false});
      check_idl_stem(path, idl_.files[i].file_id, true, diags_);
    }
    if (idl_.includes.size() == idl_.files.size()) {
      for (size_t i : idl_.includes.back()) {
        if (i < m.includes.size()) m.includes[i].direct = true;
      }
    }
    module_ = &m;

    for (const auto& file : idl_.files) check_cpp_namespace(file);
    declare_all();
    order_records();
    resolve_enums();
    resolve_records();
    m.ops.reserve(main.ops.size());
    for (const auto& op : main.ops) resolve_op(op);
    check_op_names();
    check_generated_name_clashes(m, diags_);
    return m;
  }

 private:
  struct Symbol {
    enum class Kind { Enum, Record } kind;
    const syntax::EnumDecl* enum_decl = nullptr;
    const syntax::RecordDecl* record_decl = nullptr;
    const syntax::IdlFile* file = nullptr;
    int index = -1;  // final index in the module
  };

  /// Module::includes index of a file, -1 for the main file.
  int include_index(const syntax::IdlFile* file) const {
    return file == &idl_.files.back() ? -1 : static_cast<int>(file - idl_.files.data());
  }

  static std::string cpp_namespace_of(const syntax::IdlFile& f) {
    return f.cpp_namespace ? f.cpp_namespace->text : f.namespace_.text;
  }

  /// Why `word` cannot be used as it is in generated C++, or "".
  static std::string cpp_reserved_reason(const std::string& word) {
    if (lang::is_implementation_reserved(word))
      return "reserved for the C++ compiler (names beginning with `__` or `_` and a capital)";
    if (lang::is_predefined_macro(word)) return "a predefined C/C++ macro";
    if (lang::is_reserved_word(word)) return "a C++ or Python keyword";
    return {};
  }

  // The torch namespace names the ops in the schema (`ns::op`), in Python
  // (`torch.ops.ns`) and in the TORCH_LIBRARY macros, which expand macros in
  // their arguments. Generated code lives in the C++ namespace; one that is
  // (or starts with) a namespace of the standard library or of libtorch, or
  // has a keyword or macro as a component, or starts with a name the C
  // library or libtorch declare at global scope (`time`, `log`), cannot work.
  void check_cpp_namespace(const syntax::IdlFile& f) {
    const syntax::Name& ns = f.namespace_;
    std::string ns_problem;
    if (lang::is_schema_keyword(ns.text)) {
      ns_problem = "torch's schema parser reserves that word";
    } else if (lang::is_python_keyword(ns.text)) {
      ns_problem = fmt::format("a Python keyword (`torch.ops.{}` cannot be written)", ns.text);
    } else if (lang::is_predefined_macro(ns.text) || lang::is_implementation_reserved(ns.text)) {
      ns_problem = cpp_reserved_reason(ns.text) + ", which TORCH_LIBRARY would expand";
    }
    if (!ns_problem.empty()) {
      diags_.error(
          ns.span,
          fmt::format("`{}` cannot be the torch namespace: it is {}", ns.text, ns_problem),
          "choose another namespace");
      if (!f.cpp_namespace) return;
    }
    const syntax::Name& name = f.cpp_namespace ? *f.cpp_namespace : f.namespace_;
    if (name.text.empty()) return;
    std::string first = name.text.substr(0, name.text.find("::"));
    static const char* const kTaken[] =
        {"std", "at", "c10", "torch", "caffe2", "structop", "kernels"};
    bool taken = std::any_of(std::begin(kTaken), std::end(kTaken), [&](const char* t) {
      return first == t;
    });
    std::string word = first, reason = taken ? "already used by C++, libtorch or structop" : "";
    if (reason.empty() && lang::is_global_name(first)) {
      reason = fmt::format(
          "declared at global scope by the C library or libtorch (`::{}`), so a namespace "
          "cannot take that name",
          first);
    }
    for (size_t start = 0; reason.empty() && start != std::string::npos;) {
      size_t end = name.text.find("::", start);
      word = name.text.substr(start, end == std::string::npos ? end : end - start);
      reason = cpp_reserved_reason(word);
      start = end == std::string::npos ? end : end + 2;
    }
    if (reason.empty()) return;
    diags_.error(
        name.span,
        fmt::format(
            "`{}` cannot be the C++ namespace of generated code: `{}` is {}",
            name.text,
            word,
            reason),
        f.cpp_namespace ? "choose another `cpp_namespace`"
                        : "add `cpp_namespace: OTHER` (the torch namespace can stay as it is)");
  }

  // ---- names ---------------------------------------------------------------

  enum class NameUse { Op, Overload, Param, Return, Field, Record, Enum, EnumValue };

  /// Reports a name that cannot work wherever it is used (check/names.h,
  /// rules 1 and 2); `what` describes it (`parameter `x` of op `f``).
  /// Returns false if it reported.
  /// `what` (a std::string or a Subject) is only formatted for a diagnostic.
  template <typename What>
  bool check_name(const syntax::Name& n, NameUse use, const What& what) {
    const std::string& text = n.text;
    const bool in_schema = use == NameUse::Op || use == NameUse::Overload ||
                           use == NameUse::Param || use == NameUse::Return || use == NameUse::Field;
    if (in_schema && lang::is_schema_keyword(text)) {
      diags_.error(
          n.span,
          fmt::format(
              "{}: torch's schema parser reserves the word `{}`{}",
              what,
              text,
              use == NameUse::Field ? " (fields are schema parameters once flattened)" : ""),
          fmt::format("rename it, e.g. `{}_`", text));
      return false;
    }
    if (use == NameUse::Overload && (text == "default" || text.rfind("__", 0) == 0)) {
      diags_.error(
          n.span,
          text == "default"
              ? fmt::format(
                    "{}: `default` cannot be an overload name; torch calls the op without "
                    "overload `default`",
                    what)
              : fmt::format(
                    "{}: torch's schema parser rejects overload names beginning with `__`",
                    what),
          "choose another overload name");
      return false;
    }
    // Op names keep ATen's `__and__`; they are not macros.
    if (use != NameUse::Op && use != NameUse::Overload && lang::is_implementation_reserved(text)) {
      diags_.error(
          n.span,
          fmt::format(
              "{}: names beginning with `__` or with `_` and a capital are reserved for the C++ "
              "compiler, which defines macros like `__LINE__`",
              what),
          "rename it");
      return false;
    }
    if (use == NameUse::EnumValue &&
        (text == "mro" || (text.size() > 2 && text.front() == '_' && text.back() == '_'))) {
      diags_.error(
          n.span,
          fmt::format(
              "{}: Python's enum.Enum cannot have a member `{}` (it reserves `mro` and names "
              "beginning and ending with `_`)",
              what,
              text),
          "rename the value");
      return false;
    }
    return true;
  }

  // ---- declarations --------------------------------------------------------

  void declare(const syntax::Name& name, Symbol sym) {
    if (model::builtin_from_name(name.text)) {
      diags_.error(
          name.span,
          fmt::format("`{}` is a built-in type and cannot be redefined", name.text),
          "choose another name");
      return;
    }
    if (name.text == "Dict" || name.text == "Tuple" || name.text == "List" ||
        name.text == "Optional") {
      diags_.error(
          name.span,
          fmt::format("`{}` is reserved and cannot name a record or enum", name.text),
          "choose another name");
      return;
    }
    auto [it, fresh] = symbols_.emplace(name.text, sym);
    if (!fresh) {
      const Symbol& first = it->second;
      Span first_span = first.kind == Symbol::Kind::Enum ? first.enum_decl->name.span
                                                         : first.record_decl->name.span;
      diags_.error(
          name.span,
          fmt::format("`{}` is already defined", name.text),
          "records and enums of a file and its includes share one namespace; rename one");
      diags_.note(first_span, fmt::format("`{}` first defined here", name.text));
    }
  }

  void declare_all() {
    for (const auto& file : idl_.files) {
      const bool main_file = &file == &idl_.files.back();
      for (const auto& e : file.enums) {
        Symbol s{Symbol::Kind::Enum, &e, nullptr, &file, -1};
        declare(e.name, s);
        if (!main_file) continue;  // checked when the included file is compiled
        check_name(e.name, NameUse::Enum, fmt::format("enum `{}`", e.name.text));
        for (const auto& v : e.values)
          check_name(
              v,
              NameUse::EnumValue,
              fmt::format("value `{}` of enum `{}`", v.text, e.name.text));
      }
      for (const auto& r : file.records) {
        Symbol s{Symbol::Kind::Record, nullptr, &r, &file, -1};
        declare(r.name, s);
        if (!main_file) continue;
        check_name(r.name, NameUse::Record, fmt::format("record `{}`", r.name.text));
        for (const auto& f : r.fields) {
          check_name(f.name, NameUse::Field, Subject::field(r.name.text, f.name.text));
          if (f.schema_name)
            check_name(
                *f.schema_name,
                NameUse::Param,
                fmt::format(
                    "the `schema_name` of {}",
                    Subject::field(r.name.text, f.name.text).str()));
        }
      }
    }
  }

  const Symbol* lookup(const std::string& name) const {
    auto it = symbols_.find(name);
    return it == symbols_.end() ? nullptr : &it->second;
  }

  // ---- record order and cycles ---------------------------------------------

  // Depth-first over record-typed fields; emits records after their
  // dependencies and reports each cycle once, at the field that closes it.
  // Iterative (an explicit stack), so a long chain of records cannot
  // overflow the call stack.
  void order_records() {
    std::map<const syntax::RecordDecl*, int> state;  // 1 = on stack, 2 = done
    struct Frame {
      const syntax::RecordDecl* record;
      size_t next_field;  // the field being visited is fields[next_field - 1]
    };
    std::vector<Frame> stack;
    auto finish = [&](const syntax::RecordDecl* r) {
      state[r] = 2;
      auto it = symbols_.find(r->name.text);
      if (it != symbols_.end() && it->second.record_decl == r) {
        it->second.index = static_cast<int>(record_order_.size());
        record_order_.push_back(r);
      }
    };
    for (const auto& file : idl_.files) {
      for (const auto& root : file.records) {
        if (state[&root] != 0) continue;
        state[&root] = 1;
        stack.push_back({&root, 0});
        while (!stack.empty()) {
          Frame& top = stack.back();
          const syntax::RecordDecl* r = top.record;
          if (top.next_field == r->fields.size()) {
            finish(r);
            stack.pop_back();
            continue;
          }
          const syntax::FieldDecl& f = r->fields[top.next_field++];
          const Symbol* s = lookup(f.type.base);
          if (!s || s->kind != Symbol::Kind::Record) continue;
          const syntax::RecordDecl* dep = s->record_decl;
          int& dep_state = state[dep];
          if (dep_state == 1) {
            std::string path;
            bool on = false;
            for (const Frame& frame : stack) {
              if (frame.record == dep) on = true;
              if (!on) continue;
              const syntax::FieldDecl& via = frame.record->fields[frame.next_field - 1];
              path += fmt::format("{}.{} -> ", frame.record->name.text, via.name.text);
            }
            path += dep->name.text;
            diags_.error(
                f.type.span,
                fmt::format("record `{}` contains itself: {}", dep->name.text, path),
                "records are values and cannot nest themselves; break the cycle");
            cyclic_.insert(&f);
            continue;
          }
          if (dep_state == 2) continue;
          dep_state = 1;
          stack.push_back({dep, 0});  // invalidates `top`
        }
      }
    }
  }

  // ---- enums and records ---------------------------------------------------

  void resolve_enums() {
    for (const auto& file : idl_.files) {
      for (const auto& e : file.enums) {
        auto found = symbols_.find(e.name.text);
        // A duplicate or a reserved name, already reported.
        if (found == symbols_.end() || found->second.enum_decl != &e) continue;
        Symbol& sym = found->second;
        model::Enum out;
        out.name = e.name.text;
        out.cpp_namespace = cpp_namespace_of(file);
        out.doc = e.doc;
        out.span = e.name.span;
        out.from_include = &file != &idl_.files.back();
        out.include = include_index(&file);
        if (e.values.empty() && !e.incomplete) {
          diags_.error(
              e.name.span,
              fmt::format("enum `{}` has no values", e.name.text),
              "list at least one value, e.g. `[a, b]`");
        }
        std::map<std::string, Span> seen;
        for (const auto& v : e.values) {
          auto [it, fresh] = seen.emplace(v.text, v.span);
          if (!fresh) {
            diags_.error(
                v.span,
                fmt::format("enum `{}` lists `{}` twice", e.name.text, v.text),
                "remove the duplicate value");
            diags_.note(it->second, "first listed here");
            continue;
          }
          out.values.push_back(v.text);
          out.value_spans.push_back(v.span);
        }
        // A broken enum stays unresolved (index -1): its uses are skipped
        // quietly instead of reporting "unknown type" or bad defaults.
        if (!e.incomplete && !out.values.empty())
          sym.index = static_cast<int>(module_->enums.size());
        module_->enums.push_back(std::move(out));
      }
    }
  }

  void resolve_records() {
    module_->records.resize(record_order_.size());
    record_broken_.assign(record_order_.size(), false);
    record_depth_.assign(record_order_.size(), 1);
    record_leaves_.assign(record_order_.size(), 0);
    for (size_t i = 0; i < record_order_.size(); ++i) {
      const syntax::RecordDecl* r = record_order_[i];
      const Symbol& sym = symbols_.at(r->name.text);
      model::Record& out = module_->records[i];
      out.name = r->name.text;
      out.cpp_namespace = cpp_namespace_of(*sym.file);
      out.doc = r->doc;
      out.span = r->name.span;
      out.from_include = sym.file != &idl_.files.back();
      out.include = include_index(sym.file);
      out.all_defaulted = true;
      // A broken record (problems already reported) is kept out of ops and
      // other records quietly: the first report is the useful one.
      bool broken = r->incomplete;
      if (r->fields.empty() && !r->incomplete) {
        diags_.error(
            r->name.span,
            fmt::format("record `{}` has no fields", r->name.text),
            "add at least one field");
        broken = true;
      }
      for (const auto& f : r->fields) {
        model::Field field;
        field.name = f.name.text;
        field.doc = f.doc;
        field.span = f.name.span;
        const Subject what = Subject::field(r->name.text, f.name.text);
        if (cyclic_.count(&f)) {
          out.all_defaulted = false;
          broken = true;
          continue;
        }
        auto type = resolve_type(f.type, Use::Field, what);
        if (!type) {
          out.all_defaulted = false;
          broken = true;
          continue;
        }
        field.type = std::move(*type);
        if (f.schema_name) {
          if (field.type.is_record()) {
            // A record field has no slot of its own: its leaves do.
            diags_.error(
                f.schema_name->span,
                fmt::format(
                    "{} is a record (`{}`): it has no lowered parameter whose name `schema_name` "
                    "could pin",
                    what.str(),
                    describe_type(field.type, *module_)),
                fmt::format(
                    "pin the names of the leaf fields of `{}` instead",
                    module_->records[static_cast<size_t>(field.type.decl)].name));
          } else {
            field.schema_name = f.schema_name;
          }
        }
        if (f.default_value) {
          field.default_value = check_default(
              field.type,
              *f.default_value,
              what,
              f.default_is_yaml_string,
              *module_,
              diags_);
          field.bad_default = !field.default_value;
        }
        // Leaf facts. Records are ordered, so nested records are complete.
        if (field.type.is_record()) {
          size_t inner_index = static_cast<size_t>(field.type.decl);
          const model::Record& inner = module_->records[inner_index];
          out.has_tensor_leaf |= inner.has_tensor_leaf;
          out.takes_grad |= inner.takes_grad;
          // A list of records needs a default of its own (`[]`).
          // An optional one is required without one (`= None`).
          out.all_defaulted &= (inner.all_defaulted && field.type.is_plain_record()) ||
                               field.default_value.has_value();
          record_depth_[i] = std::max(record_depth_[i], record_depth_[inner_index] + 1);
          record_leaves_[i] = std::min(
              record_leaves_[i] + record_leaves_[inner_index],
              kLeafCountCap);
          if (record_depth_[i] > kMaxRecordDepth && !broken) {
            diags_.error(
                f.type.span,
                fmt::format(
                    "{}: records nest more than {} levels deep here",
                    what,
                    kMaxRecordDepth),
                "flatten some of the nesting");
            broken = true;
          }
        } else {
          out.has_tensor_leaf |= field.type.holds_tensor();
          out.takes_grad |= field.type.takes_grad();
          out.all_defaulted &= field.default_value.has_value();
          record_leaves_[i] = std::min(record_leaves_[i] + 1, kLeafCountCap);
        }
        out.fields.push_back(std::move(field));
      }
      if (record_leaves_[i] > kMaxLoweredParams && !broken) {
        diags_.error(
            r->name.span,
            fmt::format(
                "record `{}` has more than {} leaf fields (counting every nested record)",
                r->name.text,
                kMaxLoweredParams),
            "nested records are copied into each field that uses them; pass big data as a Tensor");
        broken = true;
      }
      record_broken_[i] = broken;
    }
  }

  // ---- types ---------------------------------------------------------------

  std::vector<std::string> all_type_names() const {
    std::vector<std::string> names = model::builtin_names();
    for (const auto& [name, sym] : symbols_) names.push_back(name);
    return names;
  }

  std::optional<model::Type> resolve_type(const syntax::TypeExpr& t, Use use, const Subject& what) {
    model::Type out;
    out.alias = t.alias;
    out.suffixes = t.suffixes;
    if (auto b = model::builtin_from_name(t.base)) {
      out.kind = model::Type::Kind::Builtin;
      out.builtin = *b;
    } else if (const Symbol* s = lookup(t.base)) {
      out.kind = s->kind == Symbol::Kind::Enum ? model::Type::Kind::Enum
                                               : model::Type::Kind::Record;
      out.decl = s->index;
      if (out.decl < 0) return std::nullopt;  // a broken declaration, already reported
      if (out.is_record() && record_broken_[static_cast<size_t>(out.decl)]) return std::nullopt;
    } else {
      report_unknown_type(t, what);
      return std::nullopt;
    }
    Span base_span = t.span.shifted(0, static_cast<int>(t.base.size()));
    if (t.alias && !out.is_builtin(Builtin::Tensor)) {
      diags_.error(t.span, fmt::format("{}: alias annotations apply only to `Tensor`", what));
      return std::nullopt;
    }
    if (t.alias && use == Use::Field) {
      diags_.error(
          t.span,
          fmt::format("{}: alias annotations are not allowed in record fields", what),
          "list the field under the op's `mutates:` instead, e.g. `mutates: [cfg.w]`");
      return std::nullopt;
    }
    if (!check_suffixes(t, out, use, what)) return std::nullopt;
    if (out.is_record()) {
      if (use == Use::Return) {
        // A returned record lowers to one output per leaf: only leaves that
        // are schema return types and need no conversion back.
        if (!t.suffixes.empty()) {
          diags_.error(
              t.span,
              fmt::format(
                  "{} has type `{}`; a record can be returned only as itself",
                  what,
                  syntax::to_schema(t)),
              fmt::format("return a plain `{}`", t.base));
          return std::nullopt;
        }
        if (out.decl >= 0) {
          const model::Record& r = module_->records[static_cast<size_t>(out.decl)];
          if (std::string why = unreturnable_leaf(r, r.name + "."); !why.empty()) {
            diags_.error(
                base_span,
                fmt::format("record `{}` cannot be a return type: {}", t.base, why),
                "a returned record may hold only fields of type Tensor, int, float and bool, "
                "and records of those; return the others as separate outputs");
            return std::nullopt;
          }
        }
        return out;
      }
      const bool plain_list = out.suffixes.size() == 1 && out.is_list() &&
                              out.suffixes.front().size < 0;
      if (!t.suffixes.empty() && !plain_list && !out.is_optional_record()) {
        diags_.error(
            t.span,
            fmt::format(
                "{} has type `{}`, but fixed-size or optional lists of records and lists of "
                "optional records are not supported",
                what,
                syntax::to_schema(t)),
            fmt::format(
                "use a plain `{}`, an optional `{}?` or a list `{}[]`",
                t.base,
                t.base,
                t.base));
        return std::nullopt;
      }
      if (out.is_optional_record() && out.decl >= 0) {
        // Absent is every leaf None; present needs a leaf that is never
        // None (the witness), so that the two cannot be confused.
        const model::Record& r = module_->records[static_cast<size_t>(out.decl)];
        if (std::string list = record_list_inside(r, r.name + "."); !list.empty()) {
          diags_.error(
              t.span,
              fmt::format(
                  "{} has type `{}`, but {} is a list of records, which an optional record "
                  "cannot hold",
                  what,
                  syntax::to_schema(t),
                  list),
              fmt::format("pass the list as a separate parameter, or make `{}` plain", t.base));
          return std::nullopt;
        }
        if (std::string list = tensor_list_inside(r, r.name + "."); !list.empty()) {
          diags_.error(
              t.span,
              fmt::format(
                  "{} has type `{}`, but {}: in an optional record every leaf is optional, and "
                  "an optional list of tensors (`Tensor[]?`) takes no gradient",
                  what,
                  syntax::to_schema(t),
                  list),
              fmt::format(
                  "pass the tensors as a separate `Tensor[]` parameter, or make `{}` plain",
                  t.base));
          return std::nullopt;
        }
        if (!has_required_leaf(r)) {
          diags_.error(
              t.span,
              fmt::format(
                  "{} has type `{}`, but every leaf of record `{}` may be None, so an absent "
                  "`{}` and one whose leaves are all None would have the same flat arguments",
                  what,
                  syntax::to_schema(t),
                  t.base,
                  t.base),
              fmt::format(
                  "give `{}` a field that is not optional (a `Tensor`, a `float`...): it is "
                  "None exactly when the record is absent",
                  t.base));
          return std::nullopt;
        }
      }
      if (plain_list && out.decl >= 0) {
        // Each leaf of the record becomes a list (`Tensor w` -> `Tensor[]
        // cfgs__w`): only leaves whose list is a schema type can.
        const model::Record& r = module_->records[static_cast<size_t>(out.decl)];
        if (std::string why = unlistable_leaf(r, r.name + "."); !why.empty()) {
          diags_.error(
              t.span,
              fmt::format(
                  "{} has type `{}`, but {}: a list of records is one list per leaf, and "
                  "torch's schemas have no list of that type",
                  what,
                  syntax::to_schema(t),
                  why),
              "lists of records take leaves of type Tensor, Tensor?, int, SymInt, float, bool, "
              "str or an enum; pass the others as separate parameters");
          return std::nullopt;
        }
      }
    }
    if (out.is_enum()) {
      if (use == Use::Return) {
        diags_.error(
            base_span,
            fmt::format("enum `{}` cannot be a return type", t.base),
            "return a `str` or an `int`");
        return std::nullopt;
      }
      // `E[]` and `E[]?` lower to `str[]` and `str[]?`; torch's schemas have
      // no list of optional strings for `E?[]`.
      if (!out.suffixes.empty() &&
          out.suffixes.front().kind == syntax::TypeSuffix::Kind::Optional &&
          out.suffixes.size() > 1) {
        diags_.error(
            t.span,
            fmt::format("{}: lists of optional enums are not supported", what),
            fmt::format(
                "use `{}[]` (a list of values) or `{}[]?` (an optional list)",
                t.base,
                t.base));
        return std::nullopt;
      }
      if (!out.suffixes.empty() && out.suffixes.front().kind == syntax::TypeSuffix::Kind::List &&
          out.suffixes.front().size >= 0) {
        diags_.error(
            t.span,
            fmt::format("{}: enum lists have no fixed size", what),
            fmt::format("write `{}[]`", t.base));
        return std::nullopt;
      }
    }
    if (use == Use::Field && out.kind == model::Type::Kind::Builtin &&
        !model::allowed_in_record(out.builtin)) {
      diags_.error(
          base_span,
          fmt::format("{}: `{}` cannot be a record field", what, t.base),
          "pass it as a separate parameter of the op");
      return std::nullopt;
    }
    return out;
  }

  /// The path of a list of records inside `r` (at any depth), or empty.
  std::string record_list_inside(const model::Record& r, const std::string& prefix) const {
    for (const auto& f : r.fields) {
      if (!f.type.is_record()) continue;
      if (f.type.is_record_list()) return "`" + prefix + f.name + "`";
      const auto& inner = module_->records[static_cast<size_t>(f.type.decl)];
      if (std::string path = record_list_inside(inner, prefix + f.name + "."); !path.empty())
        return path;
    }
    return {};
  }

  /// The path and type of a `Tensor[]` or `Tensor?[]` leaf inside `r` (at
  /// any depth), or empty.
  std::string tensor_list_inside(const model::Record& r, const std::string& prefix) const {
    for (const auto& f : r.fields) {
      if (f.type.is_record()) {
        const auto& inner = module_->records[static_cast<size_t>(f.type.decl)];
        if (std::string path = tensor_list_inside(inner, prefix + f.name + "."); !path.empty())
          return path;
      } else if (f.type.takes_grad_list()) {
        return fmt::format("`{}{}` is a `{}`", prefix, f.name, describe_type(f.type, *module_));
      }
    }
    return {};
  }

  /// Whether `r` has a leaf that is never None when `r` is given: one of a
  /// type that is not optional, outside any optional record inside `r`
  /// (lowering takes the first as the presence witness of `r?`).
  bool has_required_leaf(const model::Record& r) const {
    for (const auto& f : r.fields) {
      if (f.type.is_plain_record()) {
        if (has_required_leaf(module_->records[static_cast<size_t>(f.type.decl)])) return true;
      } else if (!f.type.is_record() && !f.type.is_optional()) {
        return true;
      }
    }
    return false;
  }

  /// A field at any depth below `r` (through its plain record fields) that
  /// is not itself a plain record and whose type `bad` rejects: its path
  /// (`prefix` + names, `Stats.m.n`) and the field; the first in field order.
  struct FoundField {
    std::string path;
    const model::Field* field = nullptr;
  };
  std::optional<FoundField> find_field(
      const model::Record& r,
      const std::string& prefix,
      const std::function<bool(const model::Type&)>& bad) const {
    for (const auto& f : r.fields) {
      const std::string path = prefix + f.name;
      if (f.type.is_plain_record()) {
        const auto& inner = module_->records[static_cast<size_t>(f.type.decl)];
        if (auto found = find_field(inner, path + ".", bad)) return found;
      } else if (bad(f.type)) {
        return FoundField{path, &f};
      }
    }
    return std::nullopt;
  }

  /// The path of the first leaf of `r` (a returnable record) that is not a
  /// `Tensor`, or empty.
  std::string non_tensor_leaf(const model::Record& r, const std::string& prefix) const {
    auto found = find_field(r, prefix, [](const model::Type& t) { return !t.is_plain_tensor(); });
    return found ? found->path : std::string();
  }

  /// Why record `r` cannot be returned, or empty: a leaf whose type is not
  /// `Tensor`, `int`, `float` or `bool`, an optional record or a list of
  /// records inside it. `prefix` spells the leaf's path (`Stats.`).
  std::string unreturnable_leaf(const model::Record& r, const std::string& prefix) const {
    auto found = find_field(r, prefix, [](const model::Type& t) {
      return t.is_record() || !t.suffixes.empty() ||
             !(t.is_builtin(Builtin::Tensor) || t.is_builtin(Builtin::Int) ||
               t.is_builtin(Builtin::Float) || t.is_builtin(Builtin::Bool));
    });
    if (!found) return {};
    return fmt::format(
        "field `{}` has type `{}`",
        found->path,
        describe_type(found->field->type, *module_));
  }

  /// Why record `r` cannot be the item type of a list, or empty: a leaf whose
  /// list is not a schema type (`float?`, `int[]`, `ScalarType`), or a list
  /// of records inside it. `prefix` spells the leaf's path (`Layer.`).
  std::string unlistable_leaf(const model::Record& r, const std::string& prefix) const {
    auto found = find_field(r, prefix, [](const model::Type& t) {
      return t.is_record() || !model::Type::listable_leaf(t);
    });
    if (!found) return {};
    const model::Type& t = found->field->type;
    if (t.is_optional_record()) return fmt::format("field `{}` is an optional record", found->path);
    if (t.is_record()) return fmt::format("field `{}` is a list of records", found->path);
    return fmt::format("field `{}` has type `{}`", found->path, describe_type(t, *module_));
  }

  bool check_suffixes(
      const syntax::TypeExpr& t,
      const model::Type& type,
      Use use,
      const Subject& what) {
    int lists = 0;
    for (size_t i = 0; i < t.suffixes.size(); ++i) {
      const auto& s = t.suffixes[i];
      if (s.kind == TypeSuffix::Kind::List) ++lists;
      if (s.kind == TypeSuffix::Kind::Optional && i + 1 < t.suffixes.size() &&
          t.suffixes[i + 1].kind == TypeSuffix::Kind::Optional) {
        diags_.error(
            t.span,
            fmt::format("{}: `{}` is optional twice", what, syntax::to_schema(t)),
            "write a single `?`");
        return false;
      }
    }
    if (lists > 1) {
      diags_.error(
          t.span,
          fmt::format(
              "{}: nested lists like `{}` are not schema types",
              what,
              syntax::to_schema(t)),
          "flatten the data into one list, or use a Tensor");
      return false;
    }
    (void)type;
    (void)use;
    return true;
  }

  void report_unknown_type(const syntax::TypeExpr& t, const Subject& what) {
    Span span = t.span.shifted(0, static_cast<int>(t.base.size()));
    static const std::map<std::string, std::string> kHints = {
        {"Dict", "dict types are not supported; use separate fields or a record"},
        {"dict", "dict types are not supported; use separate fields or a record"},
        {"Tuple", "tuple types are not supported; use a list `T[]` or separate fields"},
        {"tuple", "tuple types are not supported; use a list `T[]` or separate fields"},
        {"List", "write a list as `T[]`, e.g. `int[]`"},
        {"list", "write a list as `T[]`, e.g. `int[]`"},
        {"Optional", "write an optional as `T?`, e.g. `float?`"},
        {"double", "the schema's floating-point type is `float` (a C++ double)"},
        {"int64_t", "the schema's integer type is `int` (a C++ int64_t)"},
        {"string", "the schema's string type is `str`"},
        {"Tensor?", "write `Tensor?`"},
    };
    std::string hint;
    if (auto it = kHints.find(t.base); it != kHints.end()) {
      hint = it->second;
    } else if (std::string guess = closest_match(t.base, all_type_names()); !guess.empty()) {
      hint = fmt::format("did you mean `{}`?", guess);
    } else {
      hint = "define it under `records:` or `enums:`, or include the file that does";
    }
    diags_.error(span, fmt::format("{}: unknown type `{}`", what, t.base), hint);
  }

  // ---- ops -----------------------------------------------------------------

  void resolve_op(const syntax::OpDecl& decl) {
    const syntax::FuncSig& sig = decl.sig;
    model::Op op;
    op.name = sig.name.text;
    op.overload = sig.overload.text;
    op.span = decl.func_span;
    op.name_span = sig.name.span;
    op.backward = decl.backward;
    op.annotations = decl.annotations;
    op.doc = decl.doc;
    op.mutates = decl.mutates;
    op.meta_names = decl.meta.names;
    op.meta = decl.meta.kind == syntax::MetaDecl::Kind::Identity ? model::MetaKind::Identity
              : decl.meta.kind == syntax::MetaDecl::Kind::Custom ? model::MetaKind::Custom
                                                                 : model::MetaKind::Names;
    // "op `name.overload`", for messages about its parameters and returns.
    const std::string op_label = "op `" + op.qualified_name() + "`";
    bool ok = check_name(sig.name, NameUse::Op, op_label);
    if (!sig.overload.text.empty()) ok &= check_name(sig.overload, NameUse::Overload, op_label);
    for (const auto& p : sig.params)
      ok &= check_name(p.name, NameUse::Param, Subject::param(p.name.text, op_label));
    for (const auto& r : sig.returns) {
      if (!r.name.text.empty())
        ok &= check_name(r.name, NameUse::Return, Subject::ret(r.name.text, op_label));
    }

    std::vector<std::string_view> names;
    names.reserve(sig.params.size());
    for (const auto& p : sig.params) names.emplace_back(p.name.text);
    for (auto [first, later] : find_duplicates(names)) {
      const syntax::Name& n = sig.params[later].name;
      diags_.error(
          n.span,
          fmt::format("{} is declared twice", Subject::param(n.text, op_label)),
          "rename one of them");
      diags_.note(sig.params[first].name.span, "first declared here");
      ok = false;
    }
    op.params.reserve(sig.params.size());
    for (const auto& p : sig.params) {
      const Subject what = Subject::param(p.name.text, op_label);
      auto type = resolve_type(p.type, Use::Param, what);
      if (!type) {
        ok = false;
        continue;
      }
      model::Param param;
      param.name = p.name.text;
      param.type = std::move(*type);
      param.kwarg_only = p.kwarg_only;
      param.span = p.name.span;
      if (p.default_value) {
        if (auto d = check_default(param.type, *p.default_value, what, false, *module_, diags_)) {
          param.default_value = std::make_shared<const model::Default>(std::move(*d));
        } else {
          ok = false;
        }
      }
      op.params.push_back(std::move(param));
    }
    // Checks that need every parameter resolved; the returns and dispatch
    // keys are checked either way, so one run reports all of an op's errors.
    if (ok) {
      size_t lowered_count = 0;
      for (const auto& p : op.params) {
        lowered_count += p.type.is_record() ? record_leaves_[static_cast<size_t>(p.type.decl)] : 1;
      }
      total_lowered_ += lowered_count;
      if (lowered_count > kMaxLoweredParams) {
        diags_.error(
            sig.name.span,
            fmt::format(
                "{} lowers to {} parameters; at most {} are supported",
                op_label,
                lowered_count,
                kMaxLoweredParams),
            "pass big groups of values as a Tensor or a list");
        ok = false;
      } else if (total_lowered_ > kMaxTotalLoweredParams) {
        if (!total_reported_) {
          diags_.error(
              sig.name.span,
              fmt::format(
                  "the ops of this file lower to more than {} parameters in total (reached at {})",
                  kMaxTotalLoweredParams,
                  op_label),
              "split the ops into several IDL files");
          total_reported_ = true;
        }
        ok = false;
      } else {
        check_positional_defaults(op);
      }
    }

    for (const auto& r : sig.returns) {
      const Subject what = Subject::ret(r.name.text, op_label);
      auto type = resolve_type(r.type, Use::Return, what);
      if (!type) {
        ok = false;
        continue;
      }
      op.returns.push_back({r.name.text, std::move(*type), r.type.span});
    }
    check_dispatch(decl, op);
    check_tags(decl, op);
    check_pt2_compliant(decl, op);
    if (!ok) return;
    check_backward(decl, op);
    ops_spans_.push_back(sig.name.span);
    module_->ops.push_back(std::move(op));
  }

  // Positional parameters with defaults must come last (Python's rule, and
  // torch's schema parser crashes otherwise). A record whose fields all have
  // defaults counts as defaulted where callers may omit it: when every
  // parameter after it in its group (positional / keyword-only) may be too.
  void check_positional_defaults(model::Op& op) {
    bool tail_defaulted[2] = {true, true};  // positional, kwarg-only
    for (auto it = op.params.rbegin(); it != op.params.rend(); ++it) {
      bool& tail = tail_defaulted[it->kwarg_only ? 1 : 0];
      if (it->type.is_plain_record() && !it->default_value) {
        const model::Record& r = module_->records[static_cast<size_t>(it->type.decl)];
        it->implicit_default = r.all_defaulted && (tail || it->kwarg_only);
        tail = tail && it->implicit_default;
      } else {
        tail = tail && it->default_value != nullptr;
      }
    }
    const model::Param* first_default = nullptr;
    for (const auto& p : op.params) {
      if (p.kwarg_only) continue;
      bool has_default = p.default_value != nullptr || p.implicit_default;
      if (has_default) {
        if (!first_default) first_default = &p;
      } else if (first_default) {
        diags_.error(
            p.span,
            fmt::format(
                "parameter `{}` of op `{}` has no default but follows `{}`, which has one",
                p.name,
                op.qualified_name(),
                first_default->name),
            fmt::format(
                "give `{}` a default, move it before `{}`, or make it keyword-only after `*`",
                p.name,
                first_default->name));
        return;
      }
    }
  }

  void check_dispatch(const syntax::OpDecl& decl, model::Op& op) {
    std::set<std::string> seen;
    for (const auto& key : decl.dispatch) {
      if (key.text == "Meta") {
        diags_.error(
            key.span,
            fmt::format("op `{}`: `Meta` is not a dispatch key here", op.qualified_name()),
            "Meta kernels come from `meta:` (identity, a list of names, or `custom`)");
        continue;
      }
      const auto& keys = model::dispatch_keys();
      if (std::find(keys.begin(), keys.end(), key.text) == keys.end()) {
        std::string guess = key.text == "GPU" || key.text == "gpu" ? "CUDA"
                                                                   : closest_match(key.text, keys);
        diags_.error(
            key.span,
            fmt::format("op `{}`: unknown dispatch key `{}`", op.qualified_name(), key.text),
            guess.empty() ? fmt::format("valid keys are {}", quoted_list(keys))
                          : fmt::format("did you mean `{}`?", guess));
        continue;
      }
      if (!seen.insert(key.text).second) {
        diags_.error(
            key.span,
            fmt::format("op `{}` lists dispatch key `{}` twice", op.qualified_name(), key.text),
            "remove the duplicate");
        continue;
      }
      op.dispatch.push_back(key.text);
    }
  }

  void check_tags(const syntax::OpDecl& decl, model::Op& op) {
    const auto& tags = model::torch_tags();
    for (const auto& tag : decl.tags) {
      if (std::find(tags.begin(), tags.end(), tag.text) == tags.end()) {
        std::string guess = closest_match(tag.text, tags);
        diags_.error(
            tag.span,
            fmt::format("op `{}`: unknown tag `{}`", op.qualified_name(), tag.text),
            guess.empty() ? fmt::format("torch's operator tags are {}", quoted_list(tags))
                          : fmt::format("did you mean `{}`?", guess));
        continue;
      }
      if (std::find(op.tags.begin(), op.tags.end(), tag.text) != op.tags.end()) {
        diags_.error(
            tag.span,
            fmt::format("op `{}` lists tag `{}` twice", op.qualified_name(), tag.text),
            "remove the duplicate");
        continue;
      }
      op.tags.push_back(tag.text);
    }
  }

  /// `pt2_compliant_tag` promises that torch.compile and torch.export handle
  /// the op; two schemas cannot keep that promise whatever the kernels do.
  void check_pt2_compliant(const syntax::OpDecl& decl, const model::Op& op) {
    auto tag = std::find_if(decl.tags.begin(), decl.tags.end(), [](const syntax::Name& t) {
      return t.text == "pt2_compliant_tag";
    });
    if (tag == decl.tags.end()) return;
    // torch.fx prints the op as `torch.ops.ns.op.overload`, which a Python
    // keyword breaks (aten's own `random_.from` has the problem).
    for (const auto* part : {&op.name, &op.overload}) {
      if (!lang::is_python_keyword(*part)) continue;
      diags_.error(
          tag->span,
          fmt::format(
              "op `{}` is named with `{}`, a Python keyword, so it cannot be `pt2_compliant_tag`: "
              "torch.compile writes the op as `torch.ops.{}.{}`",
              op.qualified_name(),
              *part,
              module_->namespace_,
              op.qualified_name()),
          "rename the op or overload, or drop the tag");
      break;
    }
    // A parameter named like a Python keyword is `from_` in the schema
    // (lowering); a pinned one is checked there.
    // FakeTensorMode (and so torch.compile and opcheck) treats an op with no
    // tensor argument that returns one Tensor as a tensor constructor: it
    // runs it with `device=meta`.
    bool tensor_argument = false, device_parameter = false;
    for (const auto& p : op.params) {
      tensor_argument |= p.type.holds_tensor() ||
                         (p.type.is_record() &&
                          module_->records[static_cast<size_t>(p.type.decl)].has_tensor_leaf);
      device_parameter |= p.name == "device" && p.type.is_builtin(Builtin::Device) &&
                          p.type.suffixes.size() <= 1;
    }
    const bool returns_one_tensor = op.returns.size() == 1 && op.returns[0].type.is_plain_tensor();
    if (!tensor_argument && returns_one_tensor && !device_parameter) {
      diags_.error(
          tag->span,
          fmt::format(
              "op `{}` takes no tensor and returns one, so torch.compile treats it as a tensor "
              "constructor and passes it `device=`; it has no `device` parameter",
              op.qualified_name()),
          "add a parameter `Device device` (or `Device? device=None`), as torch's constructors "
          "have, "
          "and create the result on it");
    }
  }

  void check_backward(const syntax::OpDecl& decl, const model::Op& op) {
    if (!op.backward) return;
    if (!decl.mutates.empty()) {
      diags_.error(
          decl.mutates.front().span,
          fmt::format(
              "op `{}`: `backward: true` together with `mutates:` is not supported",
              op.qualified_name()),
          "split the in-place update into its own op without a backward");
    }
    bool has_grad_input = false, has_tensor = false;
    for (const auto& p : op.params) {
      has_grad_input |= module_->takes_grad(p.type);
      has_tensor |= p.type.is_record()
                        ? module_->records[static_cast<size_t>(p.type.decl)].has_tensor_leaf
                        : p.type.holds_tensor();
    }
    if (!has_grad_input) {
      diags_.error(
          op.name_span,
          fmt::format(
              "op `{}` has `backward: true` but no input that takes a gradient",
              op.qualified_name()),
          has_tensor
              ? "only `Tensor`, `Tensor?`, `Tensor[]` and `Tensor?[]` take gradients (an optional "
                "list `Tensor[]?` does not); make the list required, or remove `backward: true`"
              : "remove `backward: true`; there is nothing to differentiate");
    }
    bool has_tensor_output = false;
    for (const auto& r : op.returns) {
      if (r.type.is_builtin(Builtin::Tensor) &&
          (r.type.suffixes.empty() || (r.type.suffixes.size() == 1 && r.type.is_list()))) {
        has_tensor_output = true;
      } else if (r.type.is_plain_record()) {
        const model::Record& rec = module_->records[static_cast<size_t>(r.type.decl)];
        if (std::string leaf = non_tensor_leaf(rec, rec.name + "."); !leaf.empty()) {
          diags_.error(
              r.span,
              fmt::format(
                  "op `{}` has `backward: true`, so a record it returns may hold only tensors, "
                  "but `{}` is not a `Tensor`",
                  op.qualified_name(),
                  leaf),
              "return non-differentiable values from a separate op");
        }
        has_tensor_output = true;
      } else {
        diags_.error(
            r.span,
            fmt::format(
                "op `{}` has `backward: true`, so it may return only `Tensor`, `Tensor[]` or "
                "records of tensors",
                op.qualified_name()),
            "return non-differentiable values from a separate op");
      }
    }
    if (!has_tensor_output && op.returns.empty()) {
      diags_.error(
          op.name_span,
          fmt::format("op `{}` has `backward: true` but returns nothing", op.qualified_name()),
          "remove `backward: true`, or return the result tensor");
    }
  }

  void check_op_names() {
    const auto& ops = module_->ops;
    std::vector<std::string> qualified, cpp;
    qualified.reserve(ops.size());
    cpp.reserve(ops.size());
    for (const auto& op : ops) {
      qualified.push_back(op.qualified_name());
      cpp.push_back(op.cpp_name());
    }
    std::vector<bool> repeated(ops.size(), false);
    for (auto [first, later] :
         find_duplicates(std::vector<std::string_view>(qualified.begin(), qualified.end()))) {
      repeated[later] = true;
      diags_.error(
          ops_spans_[later],
          fmt::format("op `{}` is declared twice", qualified[later]),
          "give one of them an overload name, e.g. `name.variant(...)`");
      diags_.note(ops_spans_[first], "first declared here");
    }
    for (auto [first, later] :
         find_duplicates(std::vector<std::string_view>(cpp.begin(), cpp.end()))) {
      if (repeated[later]) continue;  // the same op twice: reported above
      diags_.error(
          ops_spans_[later],
          fmt::format(
              "ops `{}` and `{}` would both be called `{}` in C++ and Python",
              qualified[first],
              qualified[later],
              cpp[later]),
          "rename one of them");
      diags_.note(ops_spans_[first], fmt::format("`{}` is declared here", qualified[first]));
    }
  }

  const LoadedIdl& idl_;
  const SourceManager& sources_;
  Diagnostics& diags_;
  model::Module* module_ = nullptr;
  std::map<std::string, Symbol> symbols_;
  std::vector<const syntax::RecordDecl*> record_order_;
  std::set<const syntax::FieldDecl*> cyclic_;
  // Per record (model index): problems already reported, so uses are skipped
  // quietly; nesting depth; number of leaves (saturating at kLeafCountCap).
  std::vector<bool> record_broken_;
  std::vector<size_t> record_depth_;
  std::vector<size_t> record_leaves_;
  size_t total_lowered_ = 0;
  bool total_reported_ = false;
  std::vector<Span> ops_spans_;
};

}  // namespace

model::Module resolve(const LoadedIdl& idl, const SourceManager& sources, Diagnostics& diags) {
  return Resolver(idl, sources, diags).run();
}

}  // namespace structop
