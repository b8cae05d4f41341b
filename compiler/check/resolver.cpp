#include "check/resolver.h"

#include "check/resolver_impl.h"

namespace structop::resolving {

model::Module Resolver::run() {
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

int Resolver::include_index(const syntax::IdlFile* file) const {
  return file == &idl_.files.back() ? -1 : static_cast<int>(file - idl_.files.data());
}

std::string Resolver::cpp_namespace_of(const syntax::IdlFile& f) {
  return f.cpp_namespace ? f.cpp_namespace->text : f.namespace_.text;
}

std::string Resolver::cpp_reserved_reason(const std::string& word) {
  if (lang::is_implementation_reserved(word))
    return "reserved for the C++ compiler (names beginning with `__` or `_` and a capital)";
  if (lang::is_predefined_macro(word)) return "a predefined C/C++ macro";
  if (lang::is_reserved_word(word)) return "a C++ or Python keyword";
  return {};
}

void Resolver::check_cpp_namespace(const syntax::IdlFile& f) {
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

void Resolver::declare(const syntax::Name& name, Symbol sym) {
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

void Resolver::declare_all() {
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

const Resolver::Symbol* Resolver::lookup(const std::string& name) const {
  auto it = symbols_.find(name);
  return it == symbols_.end() ? nullptr : &it->second;
}

}  // namespace structop::resolving

namespace structop {

model::Module resolve(const LoadedIdl& idl, const SourceManager& sources, Diagnostics& diags) {
  return resolving::Resolver(idl, sources, diags).run();
}

}  // namespace structop
