#include <algorithm>

#include "emit/source_emitter_impl.h"
// X.ops.cpp: registration of the lowered schemas and, per op, one adapter
// struct `op_<op>` between the flat arguments the dispatcher passes (on its
// stack, as c10::IValues) and the records the kernels take (each kernel
// call unflattens the flat arguments in place, each record once):
//   forward    (or one per `dispatch:` key: cpu, cuda, ...) boxed kernels
//              that call the forward kernel(s),
//   meta       the boxed Meta kernel of `meta: custom` (kernels::<op>_meta;
//              an identity meta is the runtime's, configured with the
//              inputs it copies the metadata of: impl_meta_like),
//   setup_context, backward  what the runtime's autograd bridge calls for an
//              op with `backward: true` (its BackwardDef `backward_def`),
//   handle     the op for the C++ call API (a structop::OpRef)
// plus the C++ call API declared in X.ops.h (a boxed call of the op). Every
// kernel is boxed and registered through non-template runtime functions
// (structop/registration.h, compiled in the runtime library), so nothing
// templated on an op's C++ type is instantiated by registration; each
// TORCH_LIBRARY block passes them tables, one call per kind of kernel.

namespace structop {

namespace source_emit {

SourceEmitter::SourceEmitter(const EmitInput& in)
    : in_(in), m_(in.module), types_(in.module), adapter_types_(in.module, true) {
  for (const auto& lo : in.lowered.ops) ops_.emplace_back(m_, lo, types_);
}

std::string SourceEmitter::run() {
  prologue();
  if (!ops_.empty()) {  // an IDL of records only has nothing to adapt or call
    p_.line(fmt::format("namespace {} {{", m_.cpp_namespace));
    p_.line("namespace {");
    unflatten_functions();
    flatten_functions();
    for (const auto& op : ops_) op_section(op);
    p_.line();
    p_.line("}  // namespace");
    call_api();
    p_.line();
    p_.line(fmt::format("}}  // namespace {}", m_.cpp_namespace));
  }
  registration();
  return p_.str();
}

const lower::RecordLayout& SourceEmitter::layout(int decl) const {
  return in_.lowered.records[static_cast<size_t>(decl)];
}

Code SourceEmitter::unflatten_call(
    const model::Type& t,
    const std::string& path_expr,
    const std::string& leaves_expr) const {
  const model::Record& r = record(t.decl);
  Codes call_args;
  if (!t.is_plain_record() || takes_path(t.decl)) call_args.push_back(path_expr);
  call_args.push_back(leaves_expr);
  const std::string name = t.is_record_list()       ? lang::unflatten_list_name(r)
                           : t.is_optional_record() ? lang::unflatten_optional_name(r)
                                                    : lang::unflatten_name(r);
  return name + args(call_args);
}

bool SourceEmitter::takes_path(int decl) const {
  const lower::RecordLayout& lay = layout(decl);
  return lay.has_enum_leaf || lay.has_dynamic_leaf || lay.has_record_list ||
         lay.has_optional_record;
}

std::string SourceEmitter::stack_arg(const model::Type& type, const std::string& ivalue) const {
  return types_.stack_arg(type, ivalue);
}

void SourceEmitter::unflatten_functions() {
  // Records reachable from this file's ops, in dependency order.
  // `listed`: those used as a list of records (`R[]`), built by
  // unflatten_<R>_list from one list per leaf.
  // `optional`: those used as an optional record (`R?`), built by
  // unflatten_<R>_optional, which calls unflatten_<R>.
  std::set<int> used, listed, optional;
  std::function<void(const model::Type&)> use = [&](const model::Type& t) {
    if (!t.is_record()) return;
    if (t.is_optional_record()) optional.insert(t.decl);
    if (t.is_record_list()) {
      if (!listed.insert(t.decl).second) return;
    } else if (!used.insert(t.decl).second) {
      return;
    }
    for (const auto& f : record(t.decl).fields) use(f.type);
  };
  for (const auto& op : m_.ops) {
    for (const auto& p : op.params) use(p.type);
  }
  if (used.empty() && listed.empty()) return;
  p_.emit(R"cc(

    // ===========================================================================
    // Records: flat leaves (on the dispatcher's stack) -> record
    // ===========================================================================
  )cc");
  std::set<int> all = used;
  all.insert(listed.begin(), listed.end());
  for (int decl : all) {  // dependency order
    if (listed.count(decl)) unflatten_list_function(decl);
    if (used.count(decl)) unflatten_function(decl);
    if (optional.count(decl)) unflatten_optional_function(decl);
  }
}

void SourceEmitter::unflatten_optional_function(int decl) {
  const lower::RecordLayout& lay = layout(decl);
  const std::string type = adapter_types_.record_name(decl);
  Codes paths, required;
  for (const auto& leaf : lay.leaves) paths.push_back(cpp_string_literal(leaf.path));
  for (size_t k : lay.required_leaves) required.push_back(std::to_string(k));
  model::Type plain;
  plain.kind = model::Type::Kind::Record;
  plain.decl = decl;
  p_.line();
  p_.emit(
      {{"type", type},
       {"name", lang::unflatten_optional_name(record(decl))},
       {"params", args({"const structop::ArgPath& path", "c10::IValue* leaves"})},
       {"check",
        "structop::check_optional_record" +
            args({"path", "leaves", braces(paths), braces(required)}) + ";"},
       {"witness", std::to_string(lay.required_leaves.front())},
       {"build", unflatten_call(plain, "path", "leaves")}},
      R"cc(
        c10::optional<$type$> $name$$params$ {
          $check$
          if (leaves[$witness$].isNone()) return c10::nullopt;
          return $build$;
        }
      )cc");
}

void SourceEmitter::unflatten_function(int decl) {
  {
    const model::Record& r = record(decl);
    const lower::RecordLayout& lay = layout(decl);
    Codes params;
    if (takes_path(decl)) params.push_back("const structop::ArgPath& path");
    params.push_back("c10::IValue* leaves");
    // Spelled `::ns::R` as in the adapters: a parameter (`path`, `leaves`)
    // must not hide a record or enum of that name.
    const std::string type = adapter_types_.record_name(decl);
    Codes fields;
    for (size_t i = 0; i < r.fields.size(); ++i) {
      const model::Field& f = r.fields[i];
      const lower::RecordField& rf = lay.fields[i];
      const std::string leaf_path = fmt::format(
          "structop::ArgPath(path, {})",
          cpp_string_literal(f.name));
      if (f.type.is_record()) {
        const std::string at = rf.first_leaf == 0 ? "leaves"
                                                  : fmt::format("leaves + {}", rf.first_leaf);
        fields.push_back(unflatten_call(f.type, leaf_path, at));
      } else {
        const std::string leaf = fmt::format("leaves[{}]", rf.first_leaf);
        fields.push_back(adapter_types_.flat_to_value(
            f.type,
            types_.stack_leaf(lay.leaves[rf.first_leaf].type, leaf),
            leaf_path));
      }
    }
    p_.line();
    p_.emit(
        {{"type", type},
         {"name", lang::unflatten_name(r)},
         {"params", args(params)},
         {"init", braces(fields)}},
        R"cc(
          $type$ $name$$params$ {
            return $type$$init$;
          }
        )cc");
  }
}

void SourceEmitter::unflatten_list_function(int decl) {
  const lower::RecordLayout& lay = layout(decl);
  const std::string type = adapter_types_.record_name(decl);
  Codes lists, lengths;
  for (size_t k = 0; k < lay.leaves.size(); ++k) {
    const lower::RecordLeaf& leaf = lay.leaves[k];
    std::string path = "path";
    for (const std::string& part : leaf.segments)
      path = fmt::format("structop::ArgPath({}, {})", path, cpp_string_literal(part));
    lists.push_back(
        fmt::format("auto l{} = ", k) +
        adapter_types_.leaf_list(leaf.type, fmt::format("leaves[{}]", k), path) + ";");
    lengths.push_back(fmt::format("{{{}, l{}.size()}}", cpp_string_literal(leaf.path), k));
  }
  size_t next = 0;
  const Code item = item_init(decl, next);
  p_.line();
  p_.emit(
      {{"type", type},
       {"name", lang::unflatten_list_name(record(decl))},
       {"params", args({"const structop::ArgPath& path", "c10::IValue* leaves"})},
       {"lists", join(lists, "\n")},
       {"check", "structop::check_lengths" + args({"path", braces(lengths)}) + ";"},
       {"push", "items.push_back" + args({item}) + ";"}},
      R"cc(
        std::vector<$type$> $name$$params$ {
          $lists$
          $check$
          const std::size_t n = l0.size();
          std::vector<$type$> items;
          items.reserve(n);
          for (std::size_t i = 0; i < n; ++i) {
            $push$
          }
          return items;
        }
      )cc");
}

Code SourceEmitter::item_init(int decl, size_t& next) const {
  Codes fields;
  for (const auto& f : record(decl).fields) {
    if (f.type.is_record()) {
      fields.push_back(item_init(f.type.decl, next));
    } else {
      fields.push_back(fmt::format("structop::item(l{}, i)", next++));
    }
  }
  return adapter_types_.record_name(decl) + braces(fields);
}

Code SourceEmitter::list_leaf(const model::Op& o, const lower::Slot& s, bool grads) const {
  const Strings& parts = s.api_segments;
  const size_t depth = *s.list_depth;
  Strings list(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(depth + 1));
  // The record of the list's items, then one member pointer per field below.
  int decl = o.params[s.param].type.decl;
  for (size_t k = 0; k < depth; ++k) decl = record(decl).fields[s.fields[k]].type.decl;
  Codes call_args = {(grads ? "grads." : "") + join(list, ".")};
  for (size_t k = depth; k < s.fields.size(); ++k) {
    const std::string owner = grads ? types_.grad_record_name(decl) : types_.record_name(decl);
    call_args.push_back(fmt::format("&{}::{}", owner, layout(decl).fields[s.fields[k]].api_name));
    decl = record(decl).fields[s.fields[k]].type.decl;
  }
  return (grads ? "structop::take_grads" : "structop::gather") + args(call_args);
}

Code SourceEmitter::optional_leaf(const lower::Slot& s) const {
  const Strings& parts = s.api_segments;
  Strings present;
  std::string access = parts[0];
  for (size_t k = 0; k < s.fields.size(); ++k) {
    const bool optional = std::find(s.optional_at.begin(), s.optional_at.end(), k) !=
                          s.optional_at.end();
    if (optional) present.push_back(access);
    access += (optional ? "->" : ".") + parts[k + 1];
  }
  return join(present, " && ") + " ? c10::IValue(" + types_.value_to_flat(s.declared_type, access) +
         ") : c10::IValue()";
}

Code SourceEmitter::push_statement(
    const model::Op& o,
    const lower::Slot& s,
    const std::string& stack,
    const std::string* root) const {
  const lower::Slot* slot = &s;
  lower::Slot rooted;
  if (root) {  // inside flatten_<R>: the record is `root`, not the parameter
    rooted = s;
    rooted.api_path = *root + s.api_path.substr(s.api_segments[0].size());
    rooted.api_segments[0] = *root;
    slot = &rooted;
  }
  const model::Param& p = o.params[s.param];
  Code value;
  if (s.list_depth) {  // one leaf across a list of records
    value = types_.value_to_flat(s.type, list_leaf(o, *slot, false));
  } else if (!s.optional_at.empty()) {  // a leaf below optional records
    value = optional_leaf(*slot);
  } else if (s.from_record() || p.type.is_enum() || p.type.dynamic) {
    value = types_.value_to_flat(s.type, slot->api_path);
  } else {
    value = slot->api_path;
  }
  return stack + ".push<" + types_.flat_type(s.type) + ">" + args({value}) + ";";
}

bool SourceEmitter::flattens(const model::Param& p) {
  return p.type.is_plain_record();
}

void SourceEmitter::flatten_functions() {
  // One per record that some op takes as a plain parameter (`R cfg`), from
  // the first such parameter's slots: a record's leaves are the same for
  // every parameter of its type.
  std::set<int> done;
  for (const auto& op : ops_) {
    const model::Op& o = op.op();
    const auto& slots = op.lowered().slots;
    for (size_t k = 0; k < slots.size(); ++k) {
      const model::Param& p = o.params[slots[k].param];
      if (!flattens(p) || !done.insert(p.type.decl).second) continue;
      const lower::RecordLayout::FlattenNames& names = layout(p.type.decl).flatten;
      Codes pushes;
      for (size_t leaf = k; leaf < slots.size() && slots[leaf].param == slots[k].param; ++leaf) {
        pushes.push_back(push_statement(o, slots[leaf], names.stack, &names.value));
      }
      p_.line();
      p_.emit(
          {{"name", lang::flatten_name(record(p.type.decl))},
           {"params",
            args(
                {"structop::CallStack& " + names.stack,
                 "const " + adapter_types_.record_name(p.type.decl) + "& " + names.value})},
           {"pushes", join(pushes, "\n")}},
          R"cc(
            void $name$$params$ {
              $pushes$
            }
          )cc");
    }
  }
}

void SourceEmitter::call_api() {
  p_.emit(R"cc(

    // ===========================================================================
    // C++ call API (declared in the header): record form -> boxed dispatcher call
    // ===========================================================================
  )cc");
  for (const auto& op : ops_) {
    const model::Op& o = op.op();
    const lower::LoweredOp& lo = op.lowered();
    const std::string& stack = lo.locals.stack;
    Codes pushes;
    for (size_t k = 0; k < lo.slots.size(); ++k) {
      const lower::Slot& s = lo.slots[k];
      const model::Param& p = o.params[s.param];
      if (!flattens(p)) {
        pushes.push_back(push_statement(o, s, stack, nullptr));
        continue;
      }
      pushes.push_back(
          lang::flatten_name(record(p.type.decl)) + args({stack, s.api_segments[0]}) + ";");
      while (k + 1 < lo.slots.size() && lo.slots[k + 1].param == s.param) ++k;
    }
    const Code call = stack + ".call<" + op.flat_return_type() + ">(" + op.names().adapter +
                      "::handle)";
    p_.line();
    p_.emit(
        {{"decl", signature(op.return_type() + " " + op.name(), op.params(false))},
         {"stack", "structop::CallStack " + stack + "(" + op.names().adapter + "::num_args);"},
         {"pushes", join(pushes, "\n")},
         {"call",
          lo.has_record_return
              ? "return " + op.names().adapter + "::record_outputs" + args({call}) + ";"
              : (op.return_type() == "void" ? "" : "return ") + call + ";"}},
        R"cc(
          $decl$ {
            $stack$
            $pushes$
            $call$
          }
        )cc");
  }
}

void SourceEmitter::registration() {
  if (ops_.empty()) {
    // Nothing to register (an empty TORCH_LIBRARY_FRAGMENT body would not
    // use its `m`, a warning under -Wextra).
    p_.emit(
        {{"stem", comment_text(m_.stem)}},
        R"cc(
          // No ops in $stem$.ops.yaml: nothing to register.
        )cc");
    return;
  }
  // The ops without tags in one table, each op with tags on its own.
  Codes schemas, tagged;
  for (const auto& op : ops_) {
    const Code schema = raw_string_literal(op.lowered().schema);
    Codes tags;
    for (const auto& t : op.op().tags) tags.push_back("at::Tag::" + t);
    if (tags.empty()) {
      schemas.push_back(schema);
    } else {
      tagged.push_back("structop::define" + args({"m", schema, braces(tags)}) + ";");
    }
  }
  if (!schemas.empty()) tagged.insert(tagged.begin(), table_call("define", schemas));
  p_.line();
  p_.emit(
      {{"ns", m_.namespace_}, {"define", join(tagged, "\n")}},
      R"cc(
        // ===========================================================================
        // Registration
        // ===========================================================================

        TORCH_LIBRARY_FRAGMENT($ns$, m) {
          $define$
        }
      )cc");
  const KernelsByKey kernels = kernels_by_key();
  for (const auto& key : kernels.keys) {
    const KernelBlock& block = kernels.by_key.at(key);
    Codes calls;
    for (const auto& [fn, entries] : std::initializer_list<std::pair<const char*, const Codes*>>{
             {"impl", &block.kernels},
             {"impl_meta_like", &block.meta_like},
             {"impl_autograd", &block.autograd},
             {"impl_no_backward", &block.no_backward},
             {"impl_bump_written_versions", &block.bump}}) {
      if (!entries->empty()) calls.push_back(table_call(fn, *entries));
    }
    p_.line();
    p_.emit(
        {{"ns", m_.namespace_}, {"key", key}, {"calls", join(calls, "\n")}},
        R"cc(
          TORCH_LIBRARY_IMPL($ns$, $key$, m) {
            $calls$
          }
        )cc");
  }
}

Code SourceEmitter::table_call(const std::string& fn, const Codes& entries) {
  return "structop::" + fn + args({"m", braces(entries)}) + ";";
}

SourceEmitter::KernelsByKey SourceEmitter::kernels_by_key() const {
  KernelsByKey out;
  KernelBlock meta, autograd, inplace_or_view;
  for (const auto& op : ops_) {
    const std::string name = cpp_string_literal(op.lowered().qualified_name);
    const std::string adapter = m_.cpp_namespace + "::" + op.names().adapter;
    auto kernel = [&](const std::string& fn) { return braces({name, "&" + adapter + "::" + fn}); };
    const Strings names = forward_names(op);
    for (size_t k = 0; k < op.kernels().size(); ++k) {
      const std::string key = op.kernels()[k].dispatch_key.value_or("CompositeExplicitAutograd");
      if (!out.by_key.count(key)) out.keys.push_back(key);
      out.by_key[key].kernels.push_back(kernel(names[k]));
    }
    if (op.op().meta == model::MetaKind::Custom) {
      meta.kernels.push_back(kernel("meta"));
    } else {
      meta.meta_like.push_back(braces({name, has_meta_like(op) ? adapter + "::meta_like" : "{}"}));
    }
    if (op.op().backward) {
      autograd.autograd.push_back(braces({name, "&" + adapter + "::backward_def"}));
    } else {
      autograd.no_backward.push_back(name);
      if (op.lowered().writes_inputs) inplace_or_view.bump.push_back(name);
    }
  }
  out.keys.push_back("Meta");
  out.by_key["Meta"] = meta;
  out.keys.push_back("Autograd");
  out.by_key["Autograd"] = autograd;
  if (!inplace_or_view.bump.empty()) {
    out.keys.push_back("ADInplaceOrView");
    out.by_key["ADInplaceOrView"] = inplace_or_view;
  }
  return out;
}

void SourceEmitter::prologue() {
  p_.emit(
      {{"notice", generated_notice(in_.version, in_.source_name)}, {"stem", m_.stem}},
      R"cc(
        // $notice$
        //
        // Registration of the lowered schemas; per op, the adapter between the flat
        // arguments on the dispatcher's stack and the records the kernels take
        // (boxed kernels for the op's devices and Meta, what the runtime's autograd
        // bridge calls); and the C++ call API.
        //
        // An adapter `op_<op>` has the op's qualified `op_name` and its number of
        // flat arguments, `num_args`; `meta_like`, the flat argument whose metadata
        // each output of the identity Meta kernel copies; its boxed kernels; with a
        // backward, `setup_context`, `backward` and the autograd node's edges (the
        // grad slots: `grad_paths`, their original paths, `grad_slots`, their flat
        // arguments, `grad_lists`, which are lists) in `backward_def`; and `handle`,
        // the op for the C++ call API.
        #include "$stem$.ops.h"

        #include <structop/convert.h>
        #include <structop/registration.h>
      )cc");
  p_.line();
}

}  // namespace source_emit

std::string emit_source(const EmitInput& in) {
  return source_emit::SourceEmitter(in).run();
}

}  // namespace structop
