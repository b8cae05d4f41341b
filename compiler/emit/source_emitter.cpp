// X.ops.cpp: registration of the lowered schemas and, per op, the adapters
// between the flat arguments the dispatcher passes and the records the
// kernels take:
//   <op>_forward           every device (or <op>_forward_<key> per dispatch key)
//   <op>_meta              Meta: identity, listed inputs, or kernels::<op>_meta
//   <op>_autograd          Autograd (backward: true): graph node + setup_context
//   <op>_backward_adapter  the node's backward: kernels::<op>_backward -> flat grads
// plus the C++ call API declared in X.ops.h. The shared machinery lives in
// runtime/include/structop/.
#include <array>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "check/describe.h"
#include "emit/code_printer.h"
#include "emit/cpp_op.h"
#include "emit/emitters.h"
#include "emit/naming.h"

namespace structop {
namespace {

using Strings = std::vector<std::string>;

std::string join(const Strings& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

/// Generated lines stay within this many columns where they can.
constexpr size_t kColumns = 100;

/// An argument or parameter list: `(a, b)` when the whole line fits in
/// kColumns, else one item per line at +4 with the closer on the last item
/// (`(\n    a,\n    b)`). `head` is the line up to the `(` (its indentation
/// included: use `indented`), `tail` the number of characters after the `)`
/// (`;`, ` {`).
std::string arg_list(const Strings& items, size_t head, size_t tail = 2, const char* open = "(",
                     const char* close = ")") {
  std::string flat = open + join(items, ", ") + close;
  if (head + flat.size() + tail <= kColumns) return flat;
  const std::string pad(4, ' ');
  return open + ("\n" + pad) + join(items, ",\n" + pad) + close;
}

/// The same for a braced list: `{a, b}`.
std::string brace_list(const Strings& items, size_t head, size_t tail) {
  return arg_list(items, head, tail, "{", "}");
}

/// A raw string literal, `R"(text)"`, so that schemas read as torch prints
/// them; the delimiter grows until `)delim"` does not occur in the text.
std::string raw_string_literal(const std::string& text) {
  std::string delim;
  while (text.find(")" + delim + "\"") != std::string::npos) delim += "s";
  return "R\"" + delim + "(" + text + ")" + delim + "\"";
}

/// The width of `text` at indentation `indent`.
size_t indented(size_t indent, const std::string& text) { return indent + text.size(); }

class SourceEmitter {
 public:
  explicit SourceEmitter(const EmitInput& in) : in_(in), m_(in.module), types_(in.module) {
    for (const auto& lo : in.lowered.ops) ops_.emplace_back(m_, lo, types_);
  }

  std::string run() {
    prologue();
    p_.line(fmt::format("namespace {} {{", m_.cpp_namespace));
    p_.line("namespace {");
    unflatten_functions();
    for (const auto& op : ops_) op_section(op);
    p_.line();
    p_.line("}  // namespace");
    call_api();
    p_.line();
    p_.line(fmt::format("}}  // namespace {}", m_.cpp_namespace));
    registration();
    return p_.str();
  }

 private:
  // ---- records -------------------------------------------------------------

  const model::Record& record(int decl) const { return m_.records[static_cast<size_t>(decl)]; }

  /// A record's unflatten function needs the ArgPath when an enum leaf (whose
  /// parse error names the path) is inside it.
  bool needs_path(int decl) const {
    for (const auto& f : record(decl).fields) {
      if (f.type.is_record() ? needs_path(f.type.decl) : f.type.is_enum()) {
        return true;
      }
    }
    return false;
  }

  /// The leaves of a record as (relative lowered name, type), depth first.
  void leaves(int decl, const std::string& prefix, std::vector<std::pair<std::string, model::Type>>* out) const {
    for (const auto& f : record(decl).fields) {
      std::string name = prefix.empty() ? f.name : prefix + "__" + f.name;
      if (f.type.is_record()) leaves(f.type.decl, name, out);
      else out->push_back({name, f.type});
    }
  }

  /// `unflatten_R(path, leaves...)`; `head` is the width of the line before it.
  std::string unflatten_call(int decl, const std::string& path_expr, const std::string& prefix,
                             size_t head) const {
    std::vector<std::pair<std::string, model::Type>> ls;
    leaves(decl, "", &ls);
    Strings args;
    if (needs_path(decl)) args.push_back(path_expr);
    for (const auto& [name, type] : ls) args.push_back(api_name(prefix + name));
    std::string name = "unflatten_" + record(decl).name;
    return name + arg_list(args, head + name.size());
  }

  void unflatten_functions() {
    // Records reachable from this file's ops, in dependency order.
    std::set<int> used;
    std::function<void(int)> use = [&](int decl) {
      if (!used.insert(decl).second) return;
      for (const auto& f : record(decl).fields) {
        if (f.type.is_record()) use(f.type.decl);
      }
    };
    for (const auto& op : m_.ops) {
      for (const auto& p : op.params) {
        if (p.type.is_record()) use(p.type.decl);
      }
    }
    if (used.empty()) return;
    p_.emit(R"cc(

      // ===========================================================================
      // Records: flat leaves -> record (a copy of each leaf, nothing more)
      // ===========================================================================
    )cc");
    for (int decl : used) {
      const model::Record& r = record(decl);
      std::vector<std::pair<std::string, model::Type>> ls;
      leaves(decl, "", &ls);
      Strings params;
      bool path = needs_path(decl);
      if (path) params.push_back("const structop::ArgPath& path");
      for (const auto& [name, type] : ls) params.push_back(types_.flat_type(type) + " " + api_name(name));
      // The fields on the `return` line if they fit, else one per line at +4.
      const std::string type = types_.record_name(decl);
      const size_t return_head = indented(2, "return " + type + "{");
      auto fields_at = [&](size_t head) {
        Strings fields;
        for (const auto& f : r.fields) {
          if (f.type.is_record()) {
            std::string child = needs_path(f.type.decl)
                                    ? fmt::format("structop::ArgPath(path, {})", cpp_string_literal(f.name))
                                    : "";
            fields.push_back(unflatten_call(f.type.decl, child, f.name + "__", head));
          } else {
            std::string leaf_path = fmt::format("structop::ArgPath(path, {})", cpp_string_literal(f.name));
            fields.push_back(types_.flat_to_value(f.type, api_name(f.name), leaf_path));
          }
        }
        return fields;
      };
      std::string init = join(fields_at(return_head), ", ");
      if (init.find('\n') != std::string::npos || return_head + init.size() + 2 > kColumns) {
        init = "\n    " + join(fields_at(6), ",\n    ");
      }
      const std::string head = type + " unflatten_" + r.name;
      p_.line();
      p_.emit({{"type", type},
               {"name", r.name},
               {"params", arg_list(params, head.size())},
               {"init", init}},
              R"cc(
        $type$ unflatten_$name$$params$ {
          return $type${$init$};
        }
      )cc");
    }
  }

  // ---- per op --------------------------------------------------------------

  Strings flat_params(const CppOp& op, const std::vector<bool>& unused = {}) const {
    Strings out;
    const auto& slots = op.lowered().slots;
    for (size_t i = 0; i < slots.size(); ++i) {
      std::string name = api_name(slots[i].name);
      if (!unused.empty() && unused[i]) name = "/*" + name + "*/";
      out.push_back(types_.flat_type(slots[i].type) + " " + name);
    }
    return out;
  }

  Strings flat_names(const CppOp& op) const {
    Strings out;
    for (const auto& s : op.lowered().slots) out.push_back(api_name(s.name));
    return out;
  }

  /// Statements building the record-form locals, and the kernel's arguments.
  std::pair<std::string, Strings> record_args(const CppOp& op) const {
    std::string locals;
    Strings args;
    const model::Op& o = op.op();
    for (size_t i = 0; i < o.params.size(); ++i) {
      const model::Param& p = o.params[i];
      std::string name = api_name(p.name);
      std::string path = fmt::format("structop::ArgPath({}, {})", cpp_string_literal(op.qualified()),
                                     cpp_string_literal(p.name));
      if (p.type.is_record()) {
        std::string decl = fmt::format("const {} {} = ", types_.record_name(p.type.decl), name);
        locals += decl + unflatten_call(p.type.decl, path, p.name + "__", indented(2, decl)) + ";\n";
        args.push_back(name);
      } else if (p.type.is_enum()) {
        args.push_back(types_.flat_to_value(p.type, name, path));
      } else {
        args.push_back(name);
      }
    }
    if (!locals.empty()) locals.pop_back();
    return {locals, args};
  }

  void op_section(const CppOp& op) {
    const lower::LoweredOp& lo = op.lowered();
    p_.line();
    slot_table(op);
    std::vector<std::string> flat_types;
    for (const auto& s : lo.slots) flat_types.push_back(types_.flat_type(s.type));
    // find_op("ns::op") or, for an overload, find_op("ns::op", "overload").
    Strings find_args = {cpp_string_literal(m_.namespace_ + "::" + op.op().name)};
    if (!op.op().overload.empty()) find_args.push_back(cpp_string_literal(op.op().overload));
    const std::string find = fmt::format("structop::find_op<{}_signature>", op.name());
    p_.emit({{"name", op.name()},
             {"ret", op.return_type()},
             {"types", arg_list(flat_types, ("using " + op.name() + "_signature = " + op.return_type()).size(), 1)},
             {"find", find + arg_list(find_args, indented(2, "static const auto handle = " + find), 1)}},
            R"cc(

      using $name$_signature = $ret$$types$;

      const c10::TypedOperatorHandle<$name$_signature>& $name$_handle() {
        static const auto handle = $find$;
        return handle;
      }
    )cc");
    forward_adapters(op);
    meta_adapter(op);
    if (op.op().backward) {
      backward_adapter(op);
      autograd_kernel(op);
    }
  }

  void slot_table(const CppOp& op) {
    const lower::LoweredOp& lo = op.lowered();
    std::vector<std::array<std::string, 6>> rows;
    rows.push_back({"slot", "original path", "lowered name", "type", "default", ""});
    for (size_t i = 0; i < lo.slots.size(); ++i) {
      const lower::Slot& s = lo.slots[i];
      Strings notes;
      if (s.kwarg_only) notes.push_back("kwarg-only");
      if (s.type.is_enum()) {
        notes.push_back(describe_type(s.type, m_));
      }
      if (s.default_value && !s.schema_default) notes.push_back("default " + describe_default(*s.default_value) + " applied by the APIs");
      rows.push_back({std::to_string(i), s.path, s.name, s.schema_type, s.schema_default.value_or(""),
                      notes.empty() ? "" : "(" + join(notes, ", ") + ")"});
    }
    size_t width[6] = {};
    for (const auto& r : rows) {
      for (size_t c = 0; c < 6; ++c) width[c] = std::max(width[c], r[c].size());
    }
    std::string table;
    for (const auto& r : rows) {
      std::string line = "//  ";
      for (size_t c = 0; c < 6; ++c) line += fmt::format(" {:<{}}", r[c], c + 1 < 6 ? width[c] + 1 : 0);
      while (line.back() == ' ') line.pop_back();
      table += line + "\n";
    }
    table.pop_back();
    std::string title = fmt::format("// {}", original_signature(op.op(), m_));
    p_.emit({{"title", title}, {"table", table}},
            R"cc(
      // ===========================================================================
      $title$
      $table$
      // ===========================================================================
    )cc");
  }

  /// `return fn(args);` (`fn(args);` for void), as a statement at indent 2.
  std::string call_statement(const std::string& ret, const std::string& fn, const Strings& args) const {
    const std::string head = (ret == "void" ? "" : "return ") + fn;
    return head + arg_list(args, indented(2, head), 1) + ";";
  }

  void forward_adapters(const CppOp& op) {
    auto [locals, args] = record_args(op);
    for (const auto& k : op.kernels()) {
      std::string adapter = op.kernels().size() == 1 && op.op().dispatch.empty()
                                ? op.name() + "_forward"
                                : op.name() + "_forward_" + k.name.substr(op.lowered().cpp_name.size() + 1);
      std::string body = locals.empty() ? "" : locals + "\n";
      body += call_statement(op.return_type(), "kernels::" + k.name, args);
      p_.line();
      p_.emit({{"ret", op.return_type()},
               {"adapter", adapter},
               {"params", arg_list(flat_params(op), (op.return_type() + " " + adapter).size())},
               {"body", body}},
              R"cc(
        $ret$ $adapter$$params$ {
          $body$
        }
      )cc");
    }
  }

  void meta_adapter(const CppOp& op) {
    const lower::LoweredOp& lo = op.lowered();
    std::string body;
    std::vector<bool> unused(lo.slots.size(), true);
    if (op.op().meta == model::MetaKind::Custom) {
      auto [locals, args] = record_args(op);
      body = (locals.empty() ? "" : locals + "\n") +
             call_statement(op.return_type(), "kernels::" + op.name() + "_meta", args);
      unused.assign(lo.slots.size(), false);
    } else {
      Strings outs;
      for (size_t slot : lo.meta_sources) {
        outs.push_back(fmt::format("structop::meta_like({})", api_name(lo.slots[slot].name)));
        unused[slot] = false;
      }
      if (outs.size() == 1) body = "return " + outs[0] + ";";
      else if (outs.size() > 1) body = "return {" + join(outs, ", ") + "};";
    }
    const std::string params =
        arg_list(flat_params(op, unused), (op.return_type() + " " + op.name() + "_meta").size());
    p_.line();
    if (body.empty()) {  // `-> ()`: nothing to shape
      p_.emit({{"name", op.name()}, {"params", params}}, R"cc(
        void $name$_meta$params$ {}
      )cc");
      return;
    }
    p_.emit({{"ret", op.return_type()}, {"name", op.name()}, {"params", params}, {"body", body}},
            R"cc(
      $ret$ $name$_meta$params$ {
        $body$
      }
    )cc");
  }

  std::string grad_access(const CppOp& op, const lower::Slot& s) const { return "grads." + op.slot_access(s); }

  void backward_adapter(const CppOp& op) {
    const lower::LoweredOp& lo = op.lowered();
    Strings paths, moves, grads;
    for (size_t slot : op.grad_slots()) {
      paths.push_back(cpp_string_literal(lo.slots[slot].path));
      moves.push_back(fmt::format("std::move({})", grad_access(op, lo.slots[slot])));
    }
    if (op.list_output()) {
      grads.push_back("grad_outputs");
    } else {
      for (size_t i = 0; i < lo.outputs.size(); ++i) grads.push_back(fmt::format("grad_outputs[{}]", i));
    }
    p_.line();
    p_.emit({{"name", op.name()},
             {"op", cpp_string_literal(op.qualified())},
             {"paths", brace_list(paths, indented(2, "static constexpr const char* grad_paths[] = "), 1)},
             {"grads", join(grads, ", ")},
             {"moves", arg_list(moves, indented(4, "return structop::grad_list"), 1)}},
            R"cc(
      struct $name$_backward_adapter {
        static constexpr const char* op_name = $op$;
        // Original path of each tensor slot, in lowered order (= the node's edges).
        static constexpr const char* grad_paths[] = $paths$;

        static torch::autograd::variable_list backward(
            torch::autograd::AutogradContext* ctx,
            const torch::autograd::variable_list& grad_outputs) {
          $name$_grads grads = kernels::$name$_backward(ctx, $grads$);
          return structop::grad_list$moves$;
        }
      };
    )cc");
  }

  void autograd_kernel(const CppOp& op) {
    const lower::LoweredOp& lo = op.lowered();
    Strings grad_inputs;
    for (size_t slot : op.grad_slots()) grad_inputs.push_back(api_name(lo.slots[slot].name));
    Strings redispatch = {op.name() + "_handle()", "ks"};
    for (const auto& n : flat_names(op)) redispatch.push_back(n);
    Strings params = flat_params(op);
    params.insert(params.begin(), "c10::DispatchKeySet ks");
    auto [locals, args] = record_args(op);

    const auto& outs = op.output_names();
    std::string result_decl, unpack, result;
    if (lo.outputs.size() == 1) {
      result = outs[0];
      result_decl = fmt::format("{} {}", op.return_type(), outs[0]);
    } else {
      result = "outputs";
      result_decl = "auto outputs";
      unpack = fmt::format("auto& [{}] = outputs;\n", join(outs, ", "));
    }
    // setup_context(ctx, inputs in record form..., outputs...); the node adds ctx.
    Strings setup_args = {"kernels::" + op.name() + "_setup_context"};
    setup_args.insert(setup_args.end(), args.begin(), args.end());
    setup_args.insert(setup_args.end(), outs.begin(), outs.end());
    std::string body = unpack + (locals.empty() ? "" : locals + "\n");
    body += "grad_fn->run_setup_context" + arg_list(setup_args, indented(4, "grad_fn->run_setup_context"), 1) + ";\n";
    body += fmt::format("grad_fn->record_outputs({});", join(outs, ", "));
    const std::string make = fmt::format("auto grad_fn = structop::make_grad_fn<{}_backward_adapter>", op.name());
    p_.line();
    p_.emit({{"ret", op.return_type()},
             {"name", op.name()},
             {"params", arg_list(params, (op.return_type() + " " + op.name() + "_autograd").size())},
             {"inputs", arg_list(grad_inputs, indented(2, make), 1)},
             {"decl", result_decl},
             {"redispatch", arg_list(redispatch, indented(2, result_decl + " = structop::redispatch_below_autograd"), 1)},
             {"body", body},
             {"result", result}},
            R"cc(
      $ret$ $name$_autograd$params$ {
        // Null when grad mode is off or no tensor slot requires grad: then no
        // autograd state is created at all.
        auto grad_fn = structop::make_grad_fn<$name$_backward_adapter>$inputs$;
        $decl$ = structop::redispatch_below_autograd$redispatch$;
        if (grad_fn) {
          $body$
        }
        return $result$;
      }
    )cc");
  }

  // ---- call API and registration -------------------------------------------

  void call_api() {
    p_.emit(R"cc(

      // ===========================================================================
      // C++ call API (declared in the header): record form -> flat dispatcher call
      // ===========================================================================
    )cc");
    for (const auto& op : ops_) {
      Strings args;
      const model::Op& o = op.op();
      for (const auto& s : op.lowered().slots) {
        const model::Param& p = o.params[s.param];
        std::string access = op.slot_access(s);
        args.push_back(s.from_record() || p.type.is_enum() ? types_.value_to_flat(s.type, access) : access);
      }
      p_.line();
      p_.emit({{"decl", signature(op.return_type() + " " + op.name(), op.params(false))},
               {"body", call_statement(op.return_type(), op.name() + "_handle().call", args)}},
              R"cc(
        $decl$ {
          $body$
        }
      )cc");
    }
  }

  void registration() {
    const std::string& ns = m_.namespace_;
    const std::string& cpp = m_.cpp_namespace;
    Strings defs;
    for (const auto& op : ops_) {
      Strings tags;
      for (const auto& t : op.op().tags) tags.push_back("at::Tag::" + t);
      defs.push_back(tags.empty() ? fmt::format("m.def({});", raw_string_literal(op.lowered().schema))
                                  : fmt::format("m.def({}, {{{}}});", raw_string_literal(op.lowered().schema),
                                                join(tags, ", ")));
    }
    p_.line();
    p_.emit({{"ns", ns}, {"defs", join(defs, "\n")}},
            R"cc(
      // ===========================================================================
      // Registration
      // ===========================================================================

      TORCH_LIBRARY_FRAGMENT($ns$, m) {
        $defs$
      }
    )cc");
    // Forward kernels, grouped by dispatch key in first-use order.
    Strings keys;
    std::map<std::string, Strings> by_key;
    for (const auto& op : ops_) {
      for (const auto& k : op.kernels()) {
        std::string adapter = op.op().dispatch.empty() ? op.name() + "_forward"
                                                       : op.name() + "_forward_" + k.name.substr(op.lowered().cpp_name.size() + 1);
        if (!by_key.count(k.dispatch_key)) keys.push_back(k.dispatch_key);
        by_key[k.dispatch_key].push_back(
            fmt::format("m.impl({}, TORCH_FN({}::{}));", cpp_string_literal(op.lowered().qualified_name), cpp, adapter));
      }
    }
    // Autograd: the bridge for `backward: true`; otherwise the runtime's
    // no_backward_autograd, so that a backward through what the op returned
    // or wrote raises an error naming it (eagerly and under torch.compile
    // alike), and, for ops that write to inputs, bump_written_versions for
    // ADInplaceOrView (structop/no_backward.h).
    Strings meta, autograd, inplace_or_view;
    for (const auto& op : ops_) {
      std::string name = cpp_string_literal(op.lowered().qualified_name);
      meta.push_back(fmt::format("m.impl({}, TORCH_FN({}::{}_meta));", name, cpp, op.name()));
      autograd.push_back(
          op.op().backward
              ? fmt::format("m.impl({}, TORCH_FN({}::{}_autograd));", name, cpp, op.name())
              : fmt::format("m.impl({}, structop::no_backward_kernel());", name));
      if (!op.op().backward && op.lowered().writes_inputs) {
        inplace_or_view.push_back(
            fmt::format("m.impl({}, structop::bump_written_versions_kernel());", name));
      }
    }
    keys.push_back("Meta");
    by_key["Meta"] = meta;
    keys.push_back("Autograd");
    by_key["Autograd"] = autograd;
    if (!inplace_or_view.empty()) {
      keys.push_back("ADInplaceOrView");
      by_key["ADInplaceOrView"] = inplace_or_view;
    }
    for (const auto& key : keys) {
      p_.line();
      p_.emit({{"ns", ns}, {"key", key}, {"impls", join(by_key[key], "\n")}},
              R"cc(
        TORCH_LIBRARY_IMPL($ns$, $key$, m) {
          $impls$
        }
      )cc");
    }
  }

  void prologue() {
    p_.emit({{"notice", generated_notice(in_.version, in_.source_name)}, {"stem", m_.stem}},
            R"cc(
      // $notice$
      //
      // Registration of the lowered schemas, the adapters between flat arguments
      // and records, the Meta and Autograd kernels, and the C++ call API.
      #include "$stem$.ops.h"

      #include <structop/convert.h>
      #include <structop/registration.h>
    )cc");
    p_.line();
  }

  const EmitInput& in_;
  const model::Module& m_;
  CppTypes types_;
  CodePrinter p_;
  std::vector<CppOp> ops_;
};

}  // namespace

std::string emit_source(const EmitInput& in) { return SourceEmitter(in).run(); }

}  // namespace structop
