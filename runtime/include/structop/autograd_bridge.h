// structop runtime: what a generated X.ops.cpp tells the autograd bridge about
// an op with `backward: true`, and the helpers its backward uses.
//
// The bridge itself (the graph node, the boxed Autograd kernel) is compiled
// code of the runtime library (runtime/src/autograd.cpp): one class for every
// op, driven by the op's BackwardDef. Per call it does what PyTorch's own
// VariableType kernels do (collect_next_edges, redispatch below autograd,
// set_history), with the graph node a torch::autograd::CppNode so that kernels
// get a real AutogradContext:
//
//   grad_fn = null when grad mode is off or no grad slot requires grad
//   redispatch the op below autograd (AutoDispatchBelowADInplaceOrView)
//   if (grad_fn) { def.setup_context(ctx, inputs, outputs); record the outputs }
//
// Light: this header names AutogradContext and IValue without including
// their headers.
#pragma once

#include <structop/runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace c10 {
struct IValue;
}  // namespace c10

namespace structop {

using torch::autograd::AutogradContext;

/// torch::autograd::variable_list (the same type).
using variable_list = std::vector<at::Tensor>;

/// What a generated adapter tells the bridge about one op with a backward:
/// a constant in X.ops.cpp (`op_<op>::backward_def`).
struct BackwardDef {
  const char* op_name;            // "demo::op", for messages
  const char* const* grad_paths;  // original path of each grad slot, in order
  const std::size_t* grad_slots;  // flat argument index of each grad slot
  /// Per grad slot, whether it is a list (`Tensor[]`, `Tensor?[]`: one edge
  /// per tensor); null when none is.
  const bool* grad_lists;
  std::size_t grad_count;
  /// kernels::<op>_setup_context on the record form of the op's flat
  /// arguments (`inputs`, the schema's arguments) and its outputs (the
  /// schema's returns); called with grad mode off.
  void (*setup_context)(AutogradContext* ctx, c10::IValue* inputs, const c10::IValue* outputs);
  /// kernels::<op>_backward, mapped onto the grad slots.
  variable_list (*backward)(AutogradContext* ctx, const variable_list& grad_outputs);
};

/// A BackwardDef whose grad_count is the size of its arrays; no grad slot
/// is a list.
template <std::size_t N>
constexpr BackwardDef make_backward_def(
    const char* op_name,
    const char* const (&grad_paths)[N],
    const std::size_t (&grad_slots)[N],
    decltype(BackwardDef::setup_context) setup_context,
    decltype(BackwardDef::backward) backward) {
  return {op_name, grad_paths, grad_slots, nullptr, N, setup_context, backward};
}

/// The same, with whether each grad slot is a list.
template <std::size_t N>
constexpr BackwardDef make_backward_def(
    const char* op_name,
    const char* const (&grad_paths)[N],
    const std::size_t (&grad_slots)[N],
    decltype(BackwardDef::setup_context) setup_context,
    decltype(BackwardDef::backward) backward,
    const bool (&grad_lists)[N]) {
  return {op_name, grad_paths, grad_slots, grad_lists, N, setup_context, backward};
}

namespace detail {
/// grad_list's work, in the runtime library: the list's code (reserve,
/// push_back, reallocation) is compiled once, not in every X.ops.cpp.
variable_list grad_list(Grad* const* grads, std::size_t count);
}  // namespace detail

/// The gradients a generated backward returns, one per grad slot in order
/// (an undefined tensor where the slot has none), moved out of `grads`:
/// each is left holding no tensor, even when this throws.
template <class... Grads>
variable_list grad_list(Grads&&... grads) {
  static_assert(
      (std::is_same_v<Grads, Grad> && ...),
      "grad_list takes the grad record's Grads, moved");
  if constexpr (sizeof...(Grads) == 0) {
    return {};
  } else {
    Grad* const all[] = {&grads...};
    return detail::grad_list(all, sizeof...(Grads));
  }
}

/// A backward kernel's grad record in a generated backward whose grad_list
/// moves every one of its Grads out (no grad slot is a list): nothing is
/// left for its destructor to release, so the record is not destroyed, and
/// no destructor is compiled per op (structop::Held would compile one). An
/// aggregate, so that `Emptied<R> held{kernel(...)}` builds the record in
/// place.
template <class T>
union Emptied {
  T value;
  ~Emptied() {}
};

namespace detail {

/// Lays the gradients of a backward with list slots out as the node's edges:
/// one per tensor of each list, checking each list's length against the
/// input's (the counts the bridge saved in the context at the forward).
class EdgeGrads {
 public:
  EdgeGrads(AutogradContext* ctx, const BackwardDef& def);
  void add(Grad&& grad) {
    list_.push_back(std::move(grad).tensor());
    ++slot_;
  }
  void add(std::vector<Grad>&& grads);
  variable_list take() && { return std::move(list_); }

 private:
  const BackwardDef& def_;
  std::vector<int64_t> counts_;  // per grad slot: tensors in the list, -1 if not a list
  std::size_t slot_ = 0;
  variable_list list_;
};

}  // namespace detail

/// The gradients a generated backward returns when some grad slot is a list
/// (`std::vector<Grad>`): one per edge, a list's tensors in order.
template <class... Grads>
variable_list grad_edges(AutogradContext* ctx, const BackwardDef& def, Grads&&... grads) {
  detail::EdgeGrads edges(ctx, def);
  (edges.add(std::forward<Grads>(grads)), ...);
  return std::move(edges).take();
}

namespace detail {

/// Remembers `def` by op name and returns the name as an IValue for the
/// node's context (cheap after the first node of an op on a thread). The
/// graph node stores it so that compiled autograd's replay, which only has the
/// context, finds the op's BackwardDef again (recall).
const c10::IValue& remember(const BackwardDef& def);

/// The BackwardDef remembered for `op_name`; throws if there is none.
const BackwardDef& recall(const std::string& op_name);

}  // namespace detail
}  // namespace structop
