// The X.ops.cpp emitter (emit/emitters.h: emit_source) as one class whose member
// functions live in one file per concern; internal to emit/:
//   source_emitter.cpp  run(), records (unflatten functions), call API, registration
//   source_ops.cpp      per op: the adapter struct, its boxed call, slots, backward
#pragma once

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include "check/describe.h"
#include "check/names.h"
#include "emit/code_printer.h"
#include "emit/cpp_op.h"
#include "emit/emitters.h"
#include "emit/naming.h"
#include "lang/generated_names.h"

namespace structop::source_emit {

using Strings = std::vector<std::string>;
using Codes = std::vector<Code>;

inline std::string join(const Strings& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}
inline Code join(const Codes& items, const std::string& sep) {
  Code out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

/// `(a, b)` and `{a, b}`: lists the printer lays out where they land.
inline Code args(const Codes& items) {
  return "(" + Code::list(items) + ")";
}
inline Code braces(const Codes& items) {
  return "{" + Code::list(items) + "}";
}

/// A raw string literal, `R"(text)"`, so that schemas read as torch prints
/// them; the delimiter grows until `)delim"` does not occur in the text.
inline std::string raw_string_literal(const std::string& text) {
  std::string delim;
  while (text.find(")" + delim + "\"") != std::string::npos) delim += "s";
  return "R\"" + delim + "(" + text + ")" + delim + "\"";
}

class SourceEmitter {
 public:
  explicit SourceEmitter(const EmitInput& in);

  std::string run();

 private:
  // ---- records -------------------------------------------------------------

  const model::Record& record(int decl) const { return m_.records[static_cast<size_t>(decl)]; }
  const lower::RecordLayout& layout(int decl) const;

  /// `unflatten_R(path, leaves)`: a record of type `t` (`R`, `R[]` or `R?`)
  /// from its flat leaves, which start at the stack entry `leaves_expr` (a
  /// `c10::IValue*` expression).
  Code unflatten_call(
      const model::Type& t,
      const std::string& path_expr,
      const std::string& leaves_expr) const;

  /// unflatten_<R> takes the record's path: for its enum leaves' errors,
  /// or for a list of records or an optional record inside it, whose checks
  /// name it.
  bool takes_path(int decl) const;

  /// A flat argument on the stack as the dispatcher's C++ type for `type`.
  std::string stack_arg(const model::Type& type, const std::string& ivalue) const;

  void unflatten_functions();

  /// `c10::optional<R> unflatten_R_optional(path, leaves)`: an optional
  /// record from its leaves (each optional in the schema): absent when its
  /// presence witness (RecordLayout::required_leaves) is None, then every
  /// leaf must be None; present, every required leaf must be given.
  void unflatten_optional_function(int decl);

  /// `R unflatten_R([path,] leaves)`: a record from its leaves.
  void unflatten_function(int decl);

  /// `std::vector<R> unflatten_R_list(path, leaves)`: a list of records from
  /// one list per leaf (R's leaves, as lists), which must have one length.
  void unflatten_list_function(int decl);

  /// `::ns::R{structop::item(l0, i), ::ns::Inner{...}, ...}`: item `i` of a list
  /// of records from the leaves' lists `l<next>`, `l<next + 1>`, ...
  Code item_init(int decl, size_t& next) const;

  /// A leaf of a list of records (Slot::list_depth) across the list:
  /// `structop::gather(cfg.layers, &Layer::inner, &Inner::w)` (the call API),
  /// or with `grads` the backward's `structop::take_grads(grads.cfg.layers,
  /// &LayerGrad::inner, &InnerGrad::w)`.
  Code list_leaf(const model::Op& o, const lower::Slot& s, bool grads) const;

  /// A leaf below optional records (Slot::optional_at) in the call API:
  /// `cfg && cfg->inner ? c10::IValue(cfg->inner->w) : c10::IValue()`, the
  /// leaf's flat value when every one of them is present, else None.
  Code optional_leaf(const lower::Slot& s) const;

  // ---- per op --------------------------------------------------------------

  /// The kernels' arguments (record form) from the flat ones at `args`.
  Codes kernel_args(const CppOp& op) const;

  /// The names of the adapter's forward kernels: `forward`, or the
  /// `dispatch:` keys in lower case (`cpu`, `cuda`).
  static Strings forward_names(const CppOp& op);

  /// The body of a boxed kernel that calls `kernel_fn` with the kernel
  /// arguments (kernel_args) and returns its outputs on the stack.
  Code boxed_call(const CppOp& op, const std::string& kernel_fn) const;

  /// A record returned by the op, built from its leaves' flat outputs:
  /// `Stats{leaf(1), leaf(2)}` (`StatsGrad{...}` with `grad`); `next` is the
  /// first leaf's output and moves past the record.
  Code record_from_outputs(
      const model::Type& type,
      size_t& next,
      const std::function<std::string(size_t)>& leaf,
      bool grad) const;

  /// The op's returns in record form from its flat outputs, `leaf(k)` the
  /// k-th: one value per return (a record's grad record with `grad`).
  Codes returns_from_outputs(
      const CppOp& op,
      const std::function<std::string(size_t)>& leaf,
      bool grad) const;

  /// With records among the returns: the adapter's conversions between the
  /// kernels' results and the flat outputs.
  Code record_return_members(const CppOp& op) const;

  /// Whether the adapter has `meta_like`, the flat arguments an identity
  /// Meta kernel copies the metadata of (not for `meta: custom` or an op
  /// without outputs); the member itself.
  static bool has_meta_like(const CppOp& op);
  static Code meta_like_member(const CppOp& op);

  /// The boxed Meta kernel of an op with `meta: custom` (an identity meta is
  /// the runtime's, registered with impl_meta_like).
  Code meta_member(const CppOp& op) const;

  static constexpr const char* kBoxedParams =
      "(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack* stack)";

  void op_section(const CppOp& op);

  /// Text without its trailing newlines (for substitution as one value).
  static Code trimmed(const Code& code);

  void slot_table(const CppOp& op);

  /// The autograd bridge's side of the adapter: setup_context, backward and
  /// the BackwardDef that names them with the grad slots and their paths.
  Code backward_members(const CppOp& op) const;

  /// Per grad slot: its path, flat index, whether it is a list, and how the
  /// backward's result moves its gradient out (`moves`, with the
  /// grad_edges arguments first when a slot is a list).
  struct GradSlotCodes {
    Codes paths, slots, lists, moves;
  };
  GradSlotCodes grad_slot_codes(const CppOp& op) const;

  /// The arguments of the kernels' backward: ctx and the outputs' gradients.
  Codes backward_call_args(const CppOp& op) const;

  /// The arguments of the kernels' setup_context: ctx, the inputs, the outputs.
  Codes setup_context_args(const CppOp& op) const;

  // ---- call API and registration -------------------------------------------

  /// A parameter the C++ call API passes to flatten_<R>: a plain record.
  static bool flattens(const model::Param& p);

  /// `stack.push<flat type>(value);`: slot `s` of `o` pushed for a boxed call,
  /// its value read from the call API's parameter, or with `root` from the
  /// record `root` (flatten_<R>, `s` being a slot of a parameter of type R).
  Code push_statement(
      const model::Op& o,
      const lower::Slot& s,
      const std::string& stack,
      const std::string* root) const;

  /// `void flatten_R(structop::CallStack& stack, const R& value)`: pushes the
  /// leaves of a record that ops take as a plain parameter.
  void flatten_functions();

  void call_api();

  void registration();

  /// The adapters' boxed kernels, grouped by dispatch key in first-use
  /// order. Autograd: the runtime's bridge with the adapter's BackwardDef
  /// for `backward: true`; otherwise the runtime's not-implemented kernel,
  /// so that a backward through what the op returned or wrote raises an
  /// error naming it (eagerly and under torch.compile alike), and, for ops
  /// that write to inputs, the kernel that bumps their version counters for
  /// ADInplaceOrView (runtime/src/no_backward.cpp). Each block registers
  /// its ops as tables (one runtime call per kind of kernel, the entries in
  /// op order), so that a file compiles a few calls instead of one per op
  /// and key.
  struct KernelBlock {
    Codes kernels;      // structop::impl: {"op", &adapter::kernel}
    Codes meta_like;    // structop::impl_meta_like: {"op", adapter::meta_like}
    Codes autograd;     // structop::impl_autograd: {"op", &adapter::backward_def}
    Codes no_backward;  // structop::impl_no_backward: "op"
    Codes bump;         // structop::impl_bump_written_versions: "op"
  };
  struct KernelsByKey {
    Strings keys;
    std::map<std::string, KernelBlock> by_key;
  };
  KernelsByKey kernels_by_key() const;
  /// `structop::fn(m, {entries});`
  static Code table_call(const std::string& fn, const Codes& entries);

  void prologue();

  const EmitInput& in_;
  const model::Module& m_;
  CppTypes types_;
  // Inside an adapter struct its members (`backward`, `meta`, ...) hide
  // records and enums of the same name: there they are spelled `::ns::R`.
  CppTypes adapter_types_;
  CodePrinter p_;
  std::vector<CppOp> ops_;
};

}  // namespace structop::source_emit
