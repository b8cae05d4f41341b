// X.ops.cpp: registration of the lowered schemas and, per op, one adapter
// struct `op_<op>` between the flat arguments the dispatcher passes and the
// records the kernels take:
//   kernel     registered for every key the op implements (its devices,
//              Meta, and Autograd with `backward: true`); unflattens the
//              records for the kernel it routes to: the forward kernel(s),
//              the meta kernel (identity, listed inputs, or kernels::<op>_meta),
//              or the autograd path (graph node + setup_context)
//   backward   the node's backward: kernels::<op>_backward -> flat grads
// plus the C++ call API declared in X.ops.h. One kernel function per op
// means the dispatcher's templates are instantiated once per op, not three
// times. The shared machinery lives in runtime/include/structop/.
#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "check/describe.h"
#include "check/names.h"
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

/// `(a, b)` and `{a, b}`: lists the printer lays out where they land.
std::string args(const Strings& items) {
  return "(" + CodePrinter::list(items) + ")";
}
std::string braces(const Strings& items) {
  return "{" + CodePrinter::list(items) + "}";
}

/// A raw string literal, `R"(text)"`, so that schemas read as torch prints
/// them; the delimiter grows until `)delim"` does not occur in the text.
std::string raw_string_literal(const std::string& text) {
  std::string delim;
  while (text.find(")" + delim + "\"") != std::string::npos) delim += "s";
  return "R\"" + delim + "(" + text + ")" + delim + "\"";
}

class SourceEmitter {
 public:
  explicit SourceEmitter(const EmitInput& in)
      : in_(in), m_(in.module), types_(in.module), adapter_types_(in.module, true) {
    for (const auto& lo : in.lowered.ops) ops_.emplace_back(m_, lo, types_);
  }

  std::string run() {
    prologue();
    if (!ops_.empty()) {  // an IDL of records only has nothing to adapt or call
      p_.line(fmt::format("namespace {} {{", m_.cpp_namespace));
      p_.line("namespace {");
      unflatten_functions();
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

 private:
  // ---- records -------------------------------------------------------------

  const model::Record& record(int decl) const { return m_.records[static_cast<size_t>(decl)]; }
  const lower::RecordLayout& layout(int decl) const {
    return in_.lowered.records[static_cast<size_t>(decl)];
  }

  /// `unflatten_R(path, leaves...)` with the given leaf expressions (one per
  /// leaf of R, in order).
  std::string unflatten_call(int decl, const std::string& path_expr, Strings leaves) const {
    if (layout(decl).has_enum_leaf) leaves.insert(leaves.begin(), path_expr);
    return model::unflatten_name(record(decl)) + args(leaves);
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
      const lower::RecordLayout& lay = layout(decl);
      Strings params;
      if (lay.has_enum_leaf) params.push_back("const structop::ArgPath& path");
      for (const auto& leaf : lay.leaves)
        params.push_back(types_.flat_type(leaf.type) + " " + leaf.cpp_name);
      const std::string type = types_.record_name(decl);
      Strings fields;
      for (size_t i = 0; i < r.fields.size(); ++i) {
        const model::Field& f = r.fields[i];
        const lower::RecordField& rf = lay.fields[i];
        const std::string leaf_path = fmt::format(
            "structop::ArgPath(path, {})",
            cpp_string_literal(f.name));
        if (f.type.is_record()) {
          Strings leaves;
          for (size_t l = rf.first_leaf; l < rf.first_leaf + rf.leaf_count; ++l)
            leaves.push_back(lay.leaves[l].cpp_name);
          fields.push_back(unflatten_call(f.type.decl, leaf_path, leaves));
        } else {
          fields.push_back(
              types_.flat_to_value(f.type, lay.leaves[rf.first_leaf].cpp_name, leaf_path));
        }
      }
      p_.line();
      p_.emit(
          {{"type", type},
           {"name", model::unflatten_name(r)},
           {"params", args(params)},
           {"init", braces(fields)}},
          R"cc(
            $type$ $name$$params$ {
              return $type$$init$;
            }
          )cc");
    }
  }

  // ---- per op --------------------------------------------------------------

  Strings flat_params(const CppOp& op) const {
    Strings out;
    for (const auto& s : op.lowered().slots)
      out.push_back(types_.flat_type(s.type) + " " + s.adapter_name);
    return out;
  }

  Strings flat_names(const CppOp& op) const {
    Strings out;
    for (const auto& s : op.lowered().slots) out.push_back(s.adapter_name);
    return out;
  }

  /// True when the kernels' arguments differ from the flat ones (a record to
  /// build or an enum to parse).
  static bool needs_records(const model::Op& o) {
    return std::any_of(o.params.begin(), o.params.end(), [](const model::Param& p) {
      return p.type.is_record() || p.type.is_enum();
    });
  }

  /// The `with_records` lambda: builds the record-form arguments from the
  /// flat ones and calls `fn` with them. Empty when there is nothing to build.
  std::string with_records(const CppOp& op) const {
    const model::Op& o = op.op();
    if (!needs_records(o)) return {};
    const lower::LoweredOp& lo = op.lowered();
    Strings locals, call_args;
    for (size_t i = 0; i < o.params.size(); ++i) {
      const model::Param& p = o.params[i];
      const std::string& name = lo.api_params[i].adapter_name;
      const std::string path = fmt::format(
          "structop::ArgPath(op_name, {})",
          cpp_string_literal(p.name));
      if (p.type.is_record()) {
        Strings leaves;
        for (const auto& s : lo.slots) {
          if (s.param == i) leaves.push_back(s.adapter_name);
        }
        locals.push_back(fmt::format(
            "const {} {} = {};",
            adapter_types_.record_name(p.type.decl),
            name,
            unflatten_call(p.type.decl, path, leaves)));
        call_args.push_back(name);
      } else if (p.type.is_enum()) {
        const lower::Slot& s = *std::find_if(
            lo.slots.begin(),
            lo.slots.end(),
            [&](const lower::Slot& slot) { return slot.param == i; });
        call_args.push_back(adapter_types_.flat_to_value(p.type, s.adapter_name, path));
      } else {
        call_args.push_back(name);
      }
    }
    CodePrinter p(2, false);
    p.emit({{"locals", join(locals, "\n")}, {"args", args(call_args)}}, R"cc(
      // The kernels take records: built from the flat arguments when one runs.
      const auto with_records = [&](auto&& fn) {
        $locals$
        return fn$args$;
      };
    )cc");
    return p.str();
  }

  /// A call of kernel `fn` with the record-form arguments.
  std::string kernel_call(const CppOp& op, const std::string& fn) const {
    if (needs_records(op.op())) return "with_records(" + fn + ")";
    Strings names;
    for (const auto& p : op.lowered().api_params) names.push_back(p.adapter_name);
    return fn + args(names);
  }

  /// The enumerators of the adapter's `Kernel`: one per forward kernel
  /// (`forward`, or the `dispatch:` keys in lower case), `meta`, `autograd`.
  static Strings kernel_enumerators(const CppOp& op) {
    Strings out;
    for (const auto& k : op.kernels()) {
      if (!k.dispatch_key) {
        out.push_back("forward");
        continue;
      }
      std::string lower = *k.dispatch_key;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) {
        return static_cast<char>(std::tolower(c));
      });
      out.push_back(lower);
    }
    out.push_back("meta");
    if (op.op().backward) out.push_back("autograd");
    return out;
  }

  void op_section(const CppOp& op) {
    p_.line();
    slot_table(op);
    // find_op("ns::op") or, for an overload, find_op("ns::op", "overload").
    Strings find_args = {cpp_string_literal(m_.namespace_ + "::" + op.op().name)};
    if (!op.op().overload.empty()) find_args.push_back(cpp_string_literal(op.op().overload));
    const std::string find = "structop::find_op<signature>";
    std::string backward = op.op().backward ? backward_members(op) : "";
    Strings params = flat_params(op);
    // Only the autograd path needs the key set (to redispatch below autograd).
    if (op.op().backward) params.insert(params.begin(), "c10::DispatchKeySet ks");
    p_.emit(
        {{"adapter", op.names().adapter},
         {"op", cpp_string_literal(op.qualified())},
         {"kernels", join(kernel_enumerators(op), ", ")},
         {"ret", op.return_type()},
         {"find", find + args(find_args)},
         {"backward", backward},
         {"params", args(params)},
         {"body", kernel_body(op)}},
        R"cc(

          struct $adapter$ {
            static constexpr const char* op_name = $op$;
            /// The kernels this adapter implements; an instance is registered for each.
            enum class Kernel { $kernels$ };
            Kernel kernel;
            $backward$

            $ret$ operator()$params$ {
              $body$
            }

            using signature = structop::kernel_signature<decltype(&$adapter$::operator())>;

            static const c10::TypedOperatorHandle<signature>& handle() {
              static const auto handle = $find$;
              return handle;
            }
          };
        )cc");
  }

  std::string kernel_body(const CppOp& op) const {
    const lower::LoweredOp& lo = op.lowered();
    const bool returns = op.return_type() != "void";
    const std::string ret = returns ? "return " : "";
    // Meta.
    std::string meta;
    if (op.op().meta == model::MetaKind::Custom) {
      meta = ret + kernel_call(op, "kernels::" + op.names().meta) + ";" +
             (returns ? "" : "\nreturn;");
    } else {
      Strings outs;
      for (size_t slot : lo.meta_sources)
        outs.push_back(fmt::format("structop::meta_like({})", lo.slots[slot].adapter_name));
      meta = outs.empty()       ? "return;"
             : outs.size() == 1 ? "return " + outs[0] + ";"
                                : "return " + braces(outs) + ";";
    }
    // Forward kernel(s): the last one needs no test.
    const Strings names = kernel_enumerators(op);
    std::string forward;
    for (size_t k = 0; k < op.kernels().size(); ++k) {
      const std::string call = ret + kernel_call(op, "kernels::" + op.kernels()[k].name) + ";";
      if (k + 1 == op.kernels().size()) {
        forward += call;
      } else {
        forward += fmt::format(
            "if (kernel == Kernel::{}) {{\n  {}{}\n}}\n",
            names[k],
            call,
            returns ? "" : "\n  return;");
      }
    }
    CodePrinter p(2, false);
    p.emit(
        {{"with_records", with_records(op)},
         {"autograd", op.op().backward ? autograd_path(op) : ""},
         {"meta", meta},
         {"forward", forward}},
        R"cc(
          $with_records$
          $autograd$
          if (kernel == Kernel::meta) {
            $meta$
          }
          $forward$
        )cc");
    return trimmed(p.str());
  }

  /// Text without its trailing newlines (for substitution as one value).
  static std::string trimmed(std::string text) {
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }

  /// The Autograd route: a graph node when some tensor slot requires grad.
  std::string autograd_path(const CppOp& op) const {
    const lower::LoweredOp& lo = op.lowered();
    Strings grad_inputs = {"backward_def"};
    for (size_t slot : op.grad_slots()) grad_inputs.push_back(lo.slots[slot].adapter_name);
    Strings redispatch = {"handle()", "ks"};
    for (const auto& n : flat_names(op)) redispatch.push_back(n);
    Strings outs;
    for (const auto& o : lo.outputs) outs.push_back(o.adapter_name);
    std::string result_decl, result;
    Strings unpack;
    if (lo.outputs.size() == 1) {
      result = outs[0];
      result_decl = fmt::format("{} {}", op.return_type(), outs[0]);
    } else {
      result = "outputs";
      result_decl = "auto outputs";
      for (size_t i = 0; i < outs.size(); ++i)
        unpack.push_back(fmt::format("auto& {} = std::get<{}>(outputs);", outs[i], i));
    }
    const std::string setup = "kernels::" + op.names().setup_context;
    std::string run_setup;
    if (needs_records(op.op())) {
      CodePrinter p(2, false);
      p.emit({{"setup", setup}, {"outputs", join(outs, ", ")}}, R"cc(
        with_records([&](const auto&... args) {
          grad_fn->run_setup_context($setup$, args..., $outputs$);
        });
      )cc");
      run_setup = trimmed(p.str());
    } else {
      Strings setup_args = {setup};
      for (const auto& p : lo.api_params) setup_args.push_back(p.adapter_name);
      setup_args.insert(setup_args.end(), outs.begin(), outs.end());
      run_setup = "grad_fn->run_setup_context" + args(setup_args) + ";";
    }
    CodePrinter p(2, false);
    p.emit(
        {{"make", args(grad_inputs)},
         {"decl", result_decl},
         {"redispatch", args(redispatch)},
         {"unpack", join(unpack, "\n")},
         {"run_setup", run_setup},
         {"outputs", join(outs, ", ")},
         {"result", result}},
        R"cc(
          if (kernel == Kernel::autograd) {
            // Null when grad mode is off or no tensor slot requires grad: then no
            // autograd state is created at all.
            auto grad_fn = structop::make_grad_fn$make$;
            $decl$ = structop::redispatch_below_autograd$redispatch$;
            if (grad_fn) {
              $unpack$
              $run_setup$
              grad_fn->record_outputs($outputs$);
            }
            return $result$;
          }
        )cc");
    return trimmed(p.str());
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
      if (s.default_value && !s.schema_default)
        notes.push_back("default " + describe_default(*s.default_value) + " in the APIs");
      rows.push_back(
          {std::to_string(i),
           s.path,
           s.name,
           s.schema_type,
           comment_text(s.schema_default.value_or("")),
           notes.empty() ? "" : comment_text("(" + join(notes, ", ") + ")")});
    }
    size_t width[6] = {};
    for (const auto& r : rows) {
      for (size_t c = 0; c < 6; ++c) width[c] = std::max(width[c], r[c].size());
    }
    std::string table;
    for (const auto& r : rows) {
      std::string line = "//  ";
      for (size_t c = 0; c < 5; ++c) line += fmt::format(" {:<{}}", r[c], width[c] + 1);
      // The notes go on a line of their own where they would pass the limit.
      const bool own_line = line.size() + 1 + r[5].size() > CodePrinter::kColumns;
      if (!r[5].empty())
        line += own_line ? "\n//" + std::string(5 + width[0] + 2, ' ') + r[5] : " " + r[5];
      while (line.back() == ' ') line.pop_back();
      table += line + "\n";
    }
    table.pop_back();
    std::string title = "// " + comment_text(original_signature(op.op(), m_));
    p_.emit(
        {{"title", title}, {"table", table}},
        R"cc(
          // ===========================================================================
          $title$
          $table$
          // ===========================================================================
        )cc");
  }

  /// The graph node's side of the adapter: the grad slots' paths and backward.
  std::string backward_members(const CppOp& op) const {
    const lower::LoweredOp& lo = op.lowered();
    Strings paths, moves, grads;
    for (size_t slot : op.grad_slots()) {
      paths.push_back(cpp_string_literal(lo.slots[slot].path));
      moves.push_back(fmt::format("std::move(grads.{})", lo.slots[slot].api_path));
    }
    if (op.list_output()) {
      grads.push_back("grad_outputs");
    } else {
      for (size_t i = 0; i < lo.outputs.size(); ++i)
        grads.push_back(fmt::format("grad_outputs[{}]", i));
    }
    CodePrinter p(2, false);
    p.emit(
        {{"paths", braces(paths)},
         {"count", std::to_string(paths.size())},
         {"grads_type", op.names().grads},
         {"backward", op.names().backward},
         {"grads", join(grads, ", ")},
         {"moves", args(moves)}},
        R"cc(

          // Original path of each tensor slot, in lowered order (= the node's edges).
          static constexpr const char* grad_paths[] = $paths$;

          static torch::autograd::variable_list backward(
              torch::autograd::AutogradContext* ctx,
              const torch::autograd::variable_list& grad_outputs) {
            $grads_type$ grads = kernels::$backward$(ctx, $grads$);
            return structop::grad_list$moves$;
          }

          static constexpr structop::BackwardDef backward_def = {op_name, grad_paths, $count$, &backward};
        )cc");
    std::string text = p.str();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }

  // ---- call API and registration -------------------------------------------

  /// `return fn(args);` (`fn(args);` for void), as a statement at indent 2.
  std::string call_statement(
      const std::string& ret,
      const std::string& fn,
      const Strings& call_args) const {
    return (ret == "void" ? "" : "return ") + fn + args(call_args) + ";";
  }

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
        const std::string& access = s.api_path;
        args.push_back(
            s.from_record() || p.type.is_enum() ? types_.value_to_flat(s.type, access) : access);
      }
      p_.line();
      const std::string& local = op.lowered().locals.op;
      p_.emit(
          {{"decl", signature(op.return_type() + " " + op.name(), op.params(false))},
           {"adapter", op.names().adapter},
           {"local", local},
           {"body", call_statement(op.return_type(), local + ".call", args)}},
          R"cc(
            $decl$ {
              const auto& $local$ = $adapter$::handle();
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
      Strings def_args = {raw_string_literal(op.lowered().schema)};
      if (!tags.empty()) def_args.push_back(braces(tags));
      defs.push_back("m.def" + args(def_args) + ";");
    }
    if (!ops_.empty()) p_.line();  // else the includes' blank line is enough
    p_.emit(
        {{"ns", ns}, {"defs", defs.empty() ? "" : "\n  " + join(defs, "\n  ") + "\n"}},
        R"cc(
          // ===========================================================================
          // Registration
          // ===========================================================================

          TORCH_LIBRARY_FRAGMENT($ns$, m) {$defs$}
        )cc");
    // An adapter instance for every key the op implements (one C++ type per
    // op, so the dispatcher's templates are instantiated once per op),
    // grouped by dispatch key in first-use order. Autograd: the adapter for
    // `backward: true`; otherwise the runtime's no_backward_autograd, so that a backward
    // through what the op returned or wrote raises an error naming it
    // (eagerly and under torch.compile alike), and, for ops that write to
    // inputs, bump_written_versions for ADInplaceOrView (structop/no_backward.h).
    Strings keys;
    std::map<std::string, Strings> by_key;
    Strings meta, autograd, inplace_or_view;
    for (const auto& op : ops_) {
      const std::string name = cpp_string_literal(op.lowered().qualified_name);
      const std::string adapter = cpp + "::" + op.names().adapter;
      auto impl = [&](const std::string& kernel) {
        return "m.impl" +
               args({name, fmt::format("{}{{{}::Kernel::{}}}", adapter, adapter, kernel)}) + ";";
      };
      const Strings kernels = kernel_enumerators(op);
      for (size_t k = 0; k < op.kernels().size(); ++k) {
        const std::string key = op.kernels()[k].dispatch_key.value_or("CompositeExplicitAutograd");
        if (!by_key.count(key)) keys.push_back(key);
        by_key[key].push_back(impl(kernels[k]));
      }
      meta.push_back(impl("meta"));
      autograd.push_back(
          op.op().backward ? impl("autograd")
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
      if (by_key[key].empty()) continue;  // an IDL without ops
      p_.line();
      p_.emit(
          {{"ns", ns}, {"key", key}, {"impls", join(by_key[key], "\n")}},
          R"cc(
            TORCH_LIBRARY_IMPL($ns$, $key$, m) {
              $impls$
            }
          )cc");
    }
  }

  void prologue() {
    p_.emit(
        {{"notice", generated_notice(in_.version, in_.source_name)}, {"stem", m_.stem}},
        R"cc(
          // $notice$
          //
          // Registration of the lowered schemas; per op, the adapter between the flat
          // arguments and the records the kernels take (one kernel for the op's
          // devices, Meta and Autograd); and the C++ call API.
          #include "$stem$.ops.h"

          #include <structop/convert.h>
          #include <structop/registration.h>
        )cc");
    p_.line();
  }

  const EmitInput& in_;
  const model::Module& m_;
  CppTypes types_;
  // Inside an adapter struct its members (`backward`, `Kernel`, ...) hide
  // records and enums of the same name: there they are spelled `::ns::R`.
  CppTypes adapter_types_;
  CodePrinter p_;
  std::vector<CppOp> ops_;
};

}  // namespace

std::string emit_source(const EmitInput& in) {
  return SourceEmitter(in).run();
}

}  // namespace structop
