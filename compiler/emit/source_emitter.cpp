// X.ops.cpp: registration of the lowered schemas and, per op, one adapter
// struct `op_<op>` between the flat arguments the dispatcher passes (on its
// stack, as c10::IValues) and the records the kernels take:
//   with_args  unflattens the flat arguments once into the kernels' record
//              form and calls a kernel with them; shared by
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
// templated on an op's C++ type is instantiated by registration.
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
#include "lang/generated_names.h"

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

  /// `unflatten_R(path, leaves)`: a record of type `t` (`R`, `R[]` or `R?`)
  /// from its flat leaves, which start at the stack entry `leaves_expr` (a
  /// `c10::IValue*` expression).
  std::string unflatten_call(
      const model::Type& t,
      const std::string& path_expr,
      const std::string& leaves_expr) const {
    const model::Record& r = record(t.decl);
    Strings call_args;
    if (!t.is_plain_record() || takes_path(t.decl)) call_args.push_back(path_expr);
    call_args.push_back(leaves_expr);
    const std::string name = t.is_record_list()       ? lang::unflatten_list_name(r)
                             : t.is_optional_record() ? lang::unflatten_optional_name(r)
                                                      : lang::unflatten_name(r);
    return name + args(call_args);
  }

  /// unflatten_<R> takes the record's path: for its enum leaves' errors,
  /// or for a list of records or an optional record inside it, whose checks
  /// name it.
  bool takes_path(int decl) const {
    const lower::RecordLayout& lay = layout(decl);
    return lay.has_enum_leaf || lay.has_record_list || lay.has_optional_record;
  }

  /// A flat argument on the stack as the dispatcher's C++ type for `type`.
  std::string stack_arg(const model::Type& type, const std::string& ivalue) const {
    return types_.stack_arg(type, ivalue);
  }

  void unflatten_functions() {
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

  /// `c10::optional<R> unflatten_R_optional(path, leaves)`: an optional
  /// record from its leaves (each optional in the schema): absent when its
  /// presence witness (RecordLayout::required_leaves) is None, then every
  /// leaf must be None; present, every required leaf must be given.
  void unflatten_optional_function(int decl) {
    const lower::RecordLayout& lay = layout(decl);
    const std::string type = adapter_types_.record_name(decl);
    Strings paths, required;
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

  /// `R unflatten_R([path,] leaves)`: a record from its leaves.
  void unflatten_function(int decl) {
    {
      const model::Record& r = record(decl);
      const lower::RecordLayout& lay = layout(decl);
      Strings params;
      if (takes_path(decl)) params.push_back("const structop::ArgPath& path");
      params.push_back("c10::IValue* leaves");
      // Spelled `::ns::R` as in the adapters: a parameter (`path`, `leaves`)
      // must not hide a record or enum of that name.
      const std::string type = adapter_types_.record_name(decl);
      Strings fields;
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
              stack_arg(lay.leaves[rf.first_leaf].type, leaf),
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

  /// `std::vector<R> unflatten_R_list(path, leaves)`: a list of records from
  /// one list per leaf (R's leaves, as lists), which must have one length.
  void unflatten_list_function(int decl) {
    const lower::RecordLayout& lay = layout(decl);
    const std::string type = adapter_types_.record_name(decl);
    Strings lists, lengths;
    for (size_t k = 0; k < lay.leaves.size(); ++k) {
      const lower::RecordLeaf& leaf = lay.leaves[k];
      std::string path = "path";
      for (const std::string& part : model::split_path(leaf.path))
        path = fmt::format("structop::ArgPath({}, {})", path, cpp_string_literal(part));
      lists.push_back(fmt::format(
          "auto l{} = {};",
          k,
          adapter_types_.leaf_list(leaf.type, fmt::format("leaves[{}]", k), path)));
      lengths.push_back(fmt::format("{{{}, l{}.size()}}", cpp_string_literal(leaf.path), k));
    }
    size_t next = 0;
    const std::string item = item_init(decl, next);
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

  /// `::ns::R{structop::item(l0, i), ::ns::Inner{...}, ...}`: item `i` of a list
  /// of records from the leaves' lists `l<next>`, `l<next + 1>`, ...
  std::string item_init(int decl, size_t& next) const {
    Strings fields;
    for (const auto& f : record(decl).fields) {
      if (f.type.is_record()) {
        fields.push_back(item_init(f.type.decl, next));
      } else {
        fields.push_back(fmt::format("structop::item(l{}, i)", next++));
      }
    }
    return adapter_types_.record_name(decl) + braces(fields);
  }

  /// A leaf of a list of records (Slot::list_depth) across the list:
  /// `structop::gather(cfg.layers, &Layer::inner, &Inner::w)` (the call API),
  /// or with `grads` the backward's `structop::take_grads(grads.cfg.layers,
  /// &LayerGrad::inner, &InnerGrad::w)`.
  std::string list_leaf(const model::Op& o, const lower::Slot& s, bool grads) const {
    const Strings parts = model::split_path(s.api_path);
    const size_t depth = *s.list_depth;
    Strings list(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(depth + 1));
    // The record of the list's items, then one member pointer per field below.
    int decl = o.params[s.param].type.decl;
    for (size_t k = 0; k < depth; ++k) decl = record(decl).fields[s.fields[k]].type.decl;
    Strings call_args = {(grads ? "grads." : "") + join(list, ".")};
    for (size_t k = depth; k < s.fields.size(); ++k) {
      const std::string owner = grads ? types_.grad_record_name(decl) : types_.record_name(decl);
      call_args.push_back(fmt::format("&{}::{}", owner, layout(decl).fields[s.fields[k]].api_name));
      decl = record(decl).fields[s.fields[k]].type.decl;
    }
    return (grads ? "structop::take_grads" : "structop::gather") + args(call_args);
  }

  /// A leaf below optional records (Slot::optional_at) in the call API:
  /// `cfg && cfg->inner ? c10::IValue(cfg->inner->w) : c10::IValue()`, the
  /// leaf's flat value when every one of them is present, else None.
  std::string optional_leaf(const lower::Slot& s) const {
    const Strings parts = model::split_path(s.api_path);
    Strings present;
    std::string access = parts[0];
    for (size_t k = 0; k < s.fields.size(); ++k) {
      const bool optional = std::find(s.optional_at.begin(), s.optional_at.end(), k) !=
                            s.optional_at.end();
      if (optional) present.push_back(access);
      access += (optional ? "->" : ".") + parts[k + 1];
    }
    return fmt::format(
        "{} ? c10::IValue({}) : c10::IValue()",
        join(present, " && "),
        types_.value_to_flat(s.declared_type, access));
  }

  // ---- per op --------------------------------------------------------------

  /// The kernels' arguments (record form) from the flat ones at `args`.
  Strings kernel_args(const CppOp& op) const {
    const model::Op& o = op.op();
    const lower::LoweredOp& lo = op.lowered();
    Strings out;
    for (size_t i = 0; i < o.params.size(); ++i) {
      const model::Param& p = o.params[i];
      const auto first = std::find_if(lo.slots.begin(), lo.slots.end(), [&](const lower::Slot& s) {
        return s.param == i;
      });
      const size_t slot = static_cast<size_t>(first - lo.slots.begin());
      const std::string path = fmt::format(
          "structop::ArgPath(op_name, {})",
          cpp_string_literal(p.name));
      if (p.type.is_record()) {
        // Held (structop::Held): its destructor is compiled once per record
        // type instead of in every kernel call.
        out.push_back(
            "structop::Held<" + adapter_types_.value_type(p.type) + ">" +
            braces({unflatten_call(
                p.type,
                path,
                slot == 0 ? "args" : fmt::format("args + {}", slot))}));
      } else {
        const std::string flat = stack_arg(first->type, fmt::format("args[{}]", slot));
        out.push_back(p.type.is_enum() ? adapter_types_.flat_to_value(p.type, flat, path) : flat);
      }
    }
    return out;
  }

  /// The names of the adapter's forward kernels: `forward`, or the
  /// `dispatch:` keys in lower case (`cpu`, `cuda`).
  static Strings forward_names(const CppOp& op) {
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
    return out;
  }

  /// The body of a boxed kernel that calls `kernel_fn` through with_args.
  std::string boxed_call(const CppOp& op, const std::string& kernel_fn) const {
    const std::string call = "with_args" +
                             args({"structop::arguments(stack, num_args)", kernel_fn});
    if (op.return_type() == "void") return call + ";\nstructop::return_nothing(stack, num_args);";
    // Held until it is on the stack, so that its destructor is not compiled
    // here (structop::Held).
    const std::string result =
        "structop::Held<" + op.flat_return_type() + ">" +
        braces({op.lowered().has_record_return ? "flat_outputs(" + call + ")" : call});
    return "structop::return_outputs" + args({"stack", "num_args", result}) + ";";
  }

  /// A record returned by the op, built from its leaves' flat outputs:
  /// `Stats{leaf(1), leaf(2)}` (`StatsGrad{...}` with `grad`); `next` is the
  /// first leaf's output and moves past the record.
  std::string record_from_outputs(
      const model::Type& type,
      size_t& next,
      const std::function<std::string(size_t)>& leaf,
      bool grad) const {
    const model::Record& r = m_.records[static_cast<size_t>(type.decl)];
    Strings fields;
    for (const auto& f : r.fields) {
      fields.push_back(
          f.type.is_record() ? record_from_outputs(f.type, next, leaf, grad) : leaf(next++));
    }
    // Spelled `::ns::R`: inside the adapter a member could hide the record.
    return (grad ? adapter_types_.grad_record_name(type.decl)
                 : adapter_types_.record_name(type.decl)) +
           braces(fields);
  }

  /// The op's returns in record form from its flat outputs, `leaf(k)` the
  /// k-th: one value per return (a record's grad record with `grad`).
  Strings returns_from_outputs(
      const CppOp& op,
      const std::function<std::string(size_t)>& leaf,
      bool grad) const {
    Strings values;
    for (const auto& r : op.lowered().api_returns) {
      size_t next = r.first_output;
      values.push_back(
          r.type.is_plain_record() ? record_from_outputs(r.type, next, leaf, grad)
                                   : leaf(r.first_output));
    }
    return values;
  }

  /// With records among the returns: the adapter's conversions between the
  /// kernels' results and the flat outputs.
  std::string record_return_members(const CppOp& op) const {
    const lower::LoweredOp& lo = op.lowered();
    if (!lo.has_record_return) return "";
    const bool one_return = lo.api_returns.size() == 1;
    const bool one_output = lo.outputs.size() == 1;
    Strings leaves;
    for (const auto& o : lo.outputs) {
      const std::string base = one_return ? "result" : fmt::format("std::get<{}>(result)", o.ret);
      leaves.push_back("std::move(" + base + o.member_path + ")");
    }
    const std::string flat = one_output ? leaves[0] : "std::make_tuple" + args(leaves);
    const Strings values = returns_from_outputs(
        op,
        [&](size_t k) {
          return one_output ? std::string("std::move(flat)")
                            : fmt::format("std::move(std::get<{}>(flat))", k);
        },
        false);
    const std::string records = one_return ? values[0] : "std::make_tuple" + args(values);
    std::vector<model::Type> types;
    for (const auto& r : lo.api_returns) types.push_back(r.type);
    const std::string ret = adapter_types_.return_type(types);
    CodePrinter p(2, false);
    p.emit(
        {{"flat_outputs",
          signature(
              "static " + op.flat_return_type() + " flat_outputs",
              {{ret + "&&", "result", std::nullopt}})},
         {"record_outputs",
          signature(
              "static " + ret + " record_outputs",
              {{op.flat_return_type() + "&&", "flat", std::nullopt}})},
         {"flat", flat},
         {"records", records}},
        R"cc(

          /// The kernels' results with each returned record as its leaves, in
          /// the flat outputs' order.
          $flat_outputs$ {
            return $flat$;
          }

          /// The flat outputs back in record form (the C++ call API).
          $record_outputs$ {
            return $records$;
          }
        )cc");
    return trimmed(p.str());
  }

  /// The boxed Meta kernel of an op with `meta: custom` (an identity meta is
  /// the runtime's, registered with impl_meta_like).
  std::string meta_member(const CppOp& op) const {
    if (op.op().meta != model::MetaKind::Custom) return "";
    CodePrinter p(2, false);
    p.emit(
        {{"params", kBoxedParams}, {"body", boxed_call(op, "kernels::" + op.names().meta)}},
        R"cc(

          static void meta$params$ {
            $body$
          }
        )cc");
    return trimmed(p.str());
  }

  static constexpr const char* kBoxedParams =
      "(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack* stack)";

  void op_section(const CppOp& op) {
    const lower::LoweredOp& lo = op.lowered();
    p_.line();
    slot_table(op);
    Strings find_args = {cpp_string_literal(m_.namespace_ + "::" + op.op().name)};
    if (!op.op().overload.empty()) find_args.push_back(cpp_string_literal(op.op().overload));
    Strings flat_types;
    for (const auto& s : lo.slots) flat_types.push_back(types_.flat_type(s.type));
    std::string kernels;
    const Strings names = forward_names(op);
    for (size_t k = 0; k < names.size(); ++k) {
      CodePrinter p(2, false);
      p.emit(
          {{"name", names[k]},
           {"params", kBoxedParams},
           {"body", boxed_call(op, "kernels::" + op.kernels()[k].name)}},
          R"cc(

            static void $name$$params$ {
              $body$
            }
          )cc");
      kernels += p.str();
    }
    p_.emit(
        {{"adapter", op.names().adapter},
         {"op", cpp_string_literal(op.qualified())},
         {"num_args", std::to_string(lo.slots.size())},
         {"signature", op.flat_return_type() + args(flat_types)},
         {"args_param", lo.slots.empty() ? "c10::IValue* /*args*/" : "c10::IValue* args"},
         {"kernel_args", args(kernel_args(op))},
         {"kernels", trimmed(kernels)},
         {"records", record_return_members(op)},
         {"meta", meta_member(op)},
         {"backward", op.op().backward ? backward_members(op) : ""},
         {"find", join(find_args, ", ")}},
        R"cc(

          struct $adapter$ {
            static constexpr const char* op_name = $op$;
            static constexpr std::size_t num_args = $num_args$;
            /// The dispatcher's C++ types for the flat schema.
            using signature = $signature$;

            /// Unflattens the flat arguments at `args` (on the dispatcher's stack) into
            /// the kernels' record form, once, and calls `fn` with them.
            template <class Fn>
            static decltype(auto) with_args($args_param$, Fn&& fn) {
              return fn$kernel_args$;
            }
            $records$
            $kernels$
            $meta$
            $backward$

            /// The op, for the C++ call API.
            static inline structop::OpRef handle{$find$};
          };
        )cc");
  }

  /// Text without its trailing newlines (for substitution as one value).
  static std::string trimmed(std::string text) {
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
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

  /// The autograd bridge's side of the adapter: setup_context, backward and
  /// the BackwardDef that names them with the grad slots and their paths.
  std::string backward_members(const CppOp& op) const {
    const lower::LoweredOp& lo = op.lowered();
    Strings paths, slots, lists, moves, grads;
    for (size_t slot : op.grad_slots()) {
      paths.push_back(cpp_string_literal(lo.slots[slot].path));
      slots.push_back(std::to_string(slot));
      lists.push_back(lo.slots[slot].grad_list ? "true" : "false");
      const lower::Slot& s = lo.slots[slot];
      moves.push_back(
          s.list_depth ? list_leaf(op.op(), s, true)
                       : fmt::format("std::move(grads.{})", s.api_path));
    }
    // With a list slot the gradients are laid out per edge (one per tensor of
    // a list), which only the call knows: structop::grad_edges.
    if (lo.has_grad_list) moves.insert(moves.begin(), {"ctx", "backward_def"});
    grads.push_back("ctx");
    if (op.list_output()) {
      grads.push_back("grad_outputs");
    } else {
      for (auto& g : returns_from_outputs(
               op,
               [](size_t k) { return fmt::format("grad_outputs[{}]", k); },
               true))
        grads.push_back(std::move(g));
    }
    Strings setup_args = {"ctx", "inputs..."};
    for (auto& o : returns_from_outputs(
             op,
             [&](size_t k) {
               // A tensor by reference (no copy to destroy), others as values.
               return lo.outputs[k].type.is_plain_tensor()
                          ? fmt::format("outputs[{}].toTensor()", k)
                          : fmt::format(
                                "structop::output<{}>(outputs[{}])",
                                types_.output_type(lo.outputs[k].type),
                                k);
             },
             false))
      setup_args.push_back(std::move(o));
    CodePrinter p(2, false);
    p.emit(
        {{"setup", "kernels::" + op.names().setup_context + args(setup_args)},
         {"paths", braces(paths)},
         {"slots", braces(slots)},
         {"lists",
          lo.has_grad_list ? "\n// Whether each grad slot is a list (one edge per tensor).\n"
                             "static constexpr bool grad_lists[] = " +
                                 braces(lists) + ";"
                           : ""},
         {"collect", lo.has_grad_list ? "grad_edges" : "grad_list"},
         {"def",
          braces(
              {"op_name",
               "grad_paths",
               "grad_slots",
               lo.has_grad_list ? "grad_lists" : "nullptr",
               std::to_string(paths.size()),
               "&setup_context",
               "&backward"})},
         {"grads_type", op.names().grads},
         {"call", braces({"kernels::" + op.names().backward + args(grads)})},
         {"moves", args(moves)}},
        R"cc(

          static void setup_context(
              torch::autograd::AutogradContext* ctx,
              c10::IValue* args,
              const c10::IValue* outputs) {
            with_args(args, [&](const auto&... inputs) {
              $setup$;
            });
          }

          static structop::variable_list backward(
              torch::autograd::AutogradContext* ctx,
              const structop::variable_list& grad_outputs) {
            structop::Held<$grads_type$> held$call$;
            $grads_type$& grads = held.value;
            return structop::$collect$$moves$;
          }

          // Original path and flat argument of each grad slot (= the node's edges).
          static constexpr const char* grad_paths[] = $paths$;
          static constexpr std::size_t grad_slots[] = $slots$;$lists$
          static constexpr structop::BackwardDef backward_def = $def$;
        )cc");
    return trimmed(p.str());
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
      // C++ call API (declared in the header): record form -> boxed dispatcher call
      // ===========================================================================
    )cc");
    for (const auto& op : ops_) {
      const model::Op& o = op.op();
      Strings call_args = {op.names().adapter + "::handle"};
      for (const auto& s : op.lowered().slots) {
        const model::Param& p = o.params[s.param];
        if (s.list_depth) {  // one leaf across a list of records
          call_args.push_back(types_.value_to_flat(s.type, list_leaf(o, s, false)));
          continue;
        }
        if (!s.optional_at.empty()) {  // a leaf below optional records
          call_args.push_back(optional_leaf(s));
          continue;
        }
        const std::string& access = s.api_path;
        call_args.push_back(
            s.from_record() || p.type.is_enum() ? types_.value_to_flat(s.type, access) : access);
      }
      p_.line();
      p_.emit(
          {{"decl", signature(op.return_type() + " " + op.name(), op.params(false))},
           {"body",
            op.lowered().has_record_return
                ? "return " + op.names().adapter + "::record_outputs" +
                      args(
                          {"structop::call<" + op.names().adapter + "::signature>" +
                           args(call_args)}) +
                      ";"
                : call_statement(
                      op.return_type(),
                      "structop::call<" + op.names().adapter + "::signature>",
                      call_args)}},
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
      Strings def_args = {"m", raw_string_literal(op.lowered().schema)};
      if (!tags.empty()) def_args.push_back(braces(tags));
      defs.push_back("structop::define" + args(def_args) + ";");
    }
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
    p_.line();
    p_.emit(
        {{"ns", ns}, {"defs", "\n  " + join(defs, "\n  ") + "\n"}},
        R"cc(
          // ===========================================================================
          // Registration
          // ===========================================================================

          TORCH_LIBRARY_FRAGMENT($ns$, m) {$defs$}
        )cc");
    // The adapters' boxed kernels, grouped by dispatch key in first-use
    // order. Autograd: the runtime's bridge with the adapter's BackwardDef
    // for `backward: true`; otherwise the runtime's not-implemented kernel,
    // so that a backward through what the op returned or wrote raises an
    // error naming it (eagerly and under torch.compile alike), and, for ops
    // that write to inputs, the kernel that bumps their version counters for
    // ADInplaceOrView (runtime/src/no_backward.cpp).
    Strings keys;
    std::map<std::string, Strings> by_key;
    Strings meta, autograd, inplace_or_view;
    for (const auto& op : ops_) {
      const std::string name = cpp_string_literal(op.lowered().qualified_name);
      const std::string adapter = cpp + "::" + op.names().adapter;
      auto impl = [&](const std::string& kernel) {
        return "structop::impl" + args({"m", name, "&" + adapter + "::" + kernel}) + ";";
      };
      const Strings names = forward_names(op);
      for (size_t k = 0; k < op.kernels().size(); ++k) {
        const std::string key = op.kernels()[k].dispatch_key.value_or("CompositeExplicitAutograd");
        if (!by_key.count(key)) keys.push_back(key);
        by_key[key].push_back(impl(names[k]));
      }
      if (op.op().meta == model::MetaKind::Custom) {
        meta.push_back(impl("meta"));
      } else {
        Strings like;
        for (size_t slot : op.lowered().meta_sources) like.push_back(std::to_string(slot));
        meta.push_back("structop::impl_meta_like" + args({"m", name, braces(like)}) + ";");
      }
      autograd.push_back(
          op.op().backward
              ? "structop::impl_autograd" + args({"m", name, adapter + "::backward_def"}) + ";"
              : fmt::format("structop::impl_no_backward(m, {});", name));
      if (!op.op().backward && op.lowered().writes_inputs) {
        inplace_or_view.push_back(
            fmt::format("structop::impl_bump_written_versions(m, {});", name));
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
          // arguments on the dispatcher's stack and the records the kernels take
          // (boxed kernels for the op's devices and Meta, what the runtime's autograd
          // bridge calls); and the C++ call API.
          #include "$stem$.ops.h"

          #include <structop/convert.h>
          #include <structop/registration.h>
        )cc");
    p_.line();
  }

  const EmitInput& in_;
  const model::Module& m_;
  CppTypes types_;
  // Inside an adapter struct its members (`backward`, `meta`, ...) hide
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
