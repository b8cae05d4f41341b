// structop runtime library, internal: the graph node of every generated op
// with a backward (runtime/src/autograd.cpp). Not installed.
#pragma once

#include <structop/autograd_bridge.h>

#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace structop {
namespace detail {

/// The owning pointer to a graph node that this torch uses (the type of
/// Edge::function): std::shared_ptr<Node> or c10::intrusive_ptr<Node>.
using NodePtr = decltype(torch::autograd::Edge::function);
inline constexpr bool kIntrusiveNodes =
    !std::is_same_v<NodePtr, std::shared_ptr<torch::autograd::Node>>;

/// An owning pointer to a node of type T, of the kind NodePtr is.
template <class T>
using NodeHandle = std::conditional_t<kIntrusiveNodes, c10::intrusive_ptr<T>, std::shared_ptr<T>>;

/// A new node of type T, constructed from `args`. With std::shared_ptr,
/// torch's deleteNode (found by argument-dependent lookup, so it is only
/// looked up where it exists) frees long chains of nodes without deep
/// recursion.
template <class T, class... Args>
NodeHandle<T> new_node(Args&&... args) {
  if constexpr (kIntrusiveNodes) {
    return c10::make_intrusive<T>(std::forward<Args>(args)...);
  } else {
    return NodeHandle<T>(new T(std::forward<Args>(args)...), [](T* node) { deleteNode(node); });
  }
}

/// Another owning pointer to `node`, which is owned already. (`Ptr` is a
/// parameter so that the branch not taken is not looked into.)
template <class T, class Ptr = NodePtr>
Ptr node_ptr(T* node) {
  if constexpr (kIntrusiveNodes) {
    return Ptr::reclaim_copy(static_cast<torch::autograd::Node*>(node));
  } else {
    return node->shared_from_this();
  }
}

/// Checks one gradient returned by a generated op's backward against the
/// metadata of the forward input it is for, naming the input's original path
/// (with `[item]` for an item of a list slot; `item` is -1 otherwise):
/// `demo::op: gradient for cfg.inner.w has shape [3] but the input has shape [2, 3]`.
/// Also checks dtype and device (the engine would otherwise cast the dtype
/// silently, or fail with an index instead of a name).
void check_grad(
    const char* op,
    const char* path,
    int64_t item,
    const at::Tensor& grad,
    const torch::autograd::InputMetadata& input);

/// For an op with list grad slots (BackwardDef::grad_lists), the number of
/// tensors of each grad slot in this call (-1: not a list), which the bridge
/// saved in `ctx`, copied into `storage`; null for an op without list slots.
const std::vector<int64_t>* edge_counts(
    AutogradContext* ctx,
    const BackwardDef& def,
    std::vector<int64_t>& storage);

/// Checks the gradients a backward returned, one per edge of `node` (one per
/// grad slot of the op in lowered order, or per tensor of a list slot, as
/// `counts` says). Gradients for inputs that do not require grad are dropped.
void check_grads(
    const torch::autograd::Node& node,
    const BackwardDef& def,
    const std::vector<int64_t>* counts,
    variable_list& grads);

// Deriving from CppNode<BackwardNode> (rather than Node) is what makes `ctx_` a
// real AutogradContext: CppNode<T> is the friend that may set its grad_fn and
// turn save_for_backward() into SavedVariables; release_variables() (freeing
// saved tensors after backward, and the "backward through the graph a second
// time" error) is inherited from it too.

/// The graph node of every generated op with a backward.
class BackwardNode final : public torch::autograd::CppNode<BackwardNode> {
 public:
  /// Kernels are opaque C++: compiled autograd must not trace into them.
  static constexpr bool is_traceable = false;

  explicit BackwardNode(const BackwardDef& def);

  /// CppNode's static entry point: the op comes from the context.
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs);

  AutogradContext* context() noexcept { return &this->ctx_; }

  /// Attaches the op's outputs (`count` IValues, each a tensor or a tensor
  /// list, in output order) to this node, then saves what setup_context asked
  /// for.
  void record_outputs(c10::IValue* outputs, std::size_t count);

  variable_list apply(variable_list&& grad_outputs) override;
  std::string name() const override;

 private:
  void record_output(
      const NodePtr& self,
      at::Tensor& output,
      const std::unordered_set<at::TensorImpl*>& non_differentiable);

  const BackwardDef& def_;
};

/// The graph node for one call, or null when grad mode is off or no grad slot
/// of `args` (the op's flat arguments) requires grad.
NodeHandle<BackwardNode> make_grad_fn(const BackwardDef& def, const c10::IValue* args);

}  // namespace detail
}  // namespace structop
