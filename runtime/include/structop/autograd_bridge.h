// structop runtime: the autograd bridge used by generated X.ops.cpp.
//
// A generated Autograd kernel does what PyTorch's own VariableType kernels do
// (collect_next_edges, redispatch below autograd, set_history), with the graph
// node a torch::autograd::CppNode so that kernels get a real AutogradContext:
//
//   auto grad_fn = structop::make_grad_fn<op_backward_adapter>(x, cfg__inner__w, ...);
//   at::Tensor output = structop::redispatch_below_autograd(op_handle(), ks, ...);
//   if (grad_fn) {
//     const WeightCfg cfg = unflatten_WeightCfg(...);
//     grad_fn->run_setup_context(kernels::op_setup_context, x, cfg, output);
//     grad_fn->record_outputs(output);
//   }
//   return output;
//
// Compared with torch::autograd::Function<T>::apply this skips, per call: the
// is_variable_input_/input_info_/output_info_ vectors, the unordered_sets and the
// std::function of _wrap_outputs; and when no input needs
// a gradient it creates nothing at all (make_grad_fn returns null).
//
// libtorch versions: everything used here is API of torch 2.x (tested: 2.6 and
// 2.13): CppNode<T> members ctx_ / set_ctx_grad_fn / save_variables_to_ctx /
// release_variables, Node::next_edge / input_metadata, collect_next_edges,
// compute_requires_grad, set_history, InputMetadata::is_same_shape /
// zeros_like; CppNode<T> reads T::is_traceable (defined below). The one
// difference between the versions is how graph nodes are owned: by
// std::shared_ptr (torch 2.6) or c10::intrusive_ptr (later releases);
// `NodeHandle` below follows whichever the headers use. (_wrap_outputs changed
// signature between releases, which is one reason not to use it.)
#pragma once

#include <structop/runtime.h>

#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/util/SmallVector.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

namespace structop {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// ---------------------------------------------------------------------------
// Gradient checks
// ---------------------------------------------------------------------------

namespace detail {

/// The owning pointer to a graph node that this torch uses (the type of
/// Edge::function): std::shared_ptr<Node> or c10::intrusive_ptr<Node>.
using NodePtr = decltype(torch::autograd::Edge::function);
inline constexpr bool kIntrusiveNodes =
    !std::is_same_v<NodePtr, std::shared_ptr<torch::autograd::Node>>;

/// An owning pointer to a node of type T, of the kind NodePtr is.
template <class T>
using NodeHandle = std::conditional_t<kIntrusiveNodes, c10::intrusive_ptr<T>, std::shared_ptr<T>>;

/// A new node of type T, constructed from `args`. With std::shared_ptr, torch's deleteNode (found by
/// argument-dependent lookup, so it is only looked up where it exists) frees
/// long chains of nodes without deep recursion.
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

/// The input's shape as text ("[2, 3]"), on the error path only, taken from
/// the engine's own message (InputMetadata's shape accessor is not public API).
inline std::string input_shape_text(const torch::autograd::InputMetadata& input,
                                    const at::Tensor& grad) {
  const std::string message = input.incompatible_shape_error_message(0, grad).str();
  const std::string marker = "compatible with ";
  const auto at = message.rfind(marker);
  return at == std::string::npos ? message : message.substr(at + marker.size());
}

}  // namespace detail

/// Checks one gradient returned by a generated op's backward against the
/// metadata of the forward input it is for, naming the input's original path:
/// `demo::op: gradient for cfg.inner.w has shape [3] but the input has shape [2, 3]`.
/// Also checks dtype and device (the engine would otherwise cast the dtype
/// silently, or fail with an index instead of a name).
inline void check_grad(const char* op, const char* path, const at::Tensor& grad,
                       const torch::autograd::InputMetadata& input) {
  const at::ScalarType input_dtype = c10::typeMetaToScalarType(input.dtype());
  TORCH_CHECK(grad.scalar_type() == input_dtype, op, ": gradient for ", path, " has dtype ",
              grad.scalar_type(), " but the input has dtype ", input_dtype);
  TORCH_CHECK(grad.device() == input.device(), op, ": gradient for ", path, " is on device ",
              grad.device(), " but the input is on ", input.device());
  if (grad.is_nested()) return;  // nested shapes: left to the engine
  if (!input.is_same_shape(grad)) {
    TORCH_CHECK(false, op, ": gradient for ", path, " has shape ", grad.sym_sizes(),
                " but the input has shape ", detail::input_shape_text(input, grad));
  }
}

/// Checks the gradients a backward returned, one per edge of `node` (= one per
/// tensor slot of the op, in lowered order; `paths[i]` is slot i's original
/// path). Gradients for inputs that do not require grad are dropped.
template <std::size_t N>
void check_grads(const torch::autograd::Node& node, const char* op, const char* const (&paths)[N],
                 variable_list& grads) {
  TORCH_INTERNAL_ASSERT(grads.size() == N && node.num_outputs() == N, op,
                        ": grad slot count mismatch");
  for (std::size_t i = 0; i < N; ++i) {
    const torch::autograd::Edge& edge = node.next_edge(i);
    if (!edge.is_valid()) {
      grads[i] = at::Tensor();
    } else if (grads[i].defined()) {
      check_grad(op, paths[i], grads[i], edge.function->input_metadata(edge.input_nr));
    }
  }
}

/// Moves the slots of a grads record, given in the op's lowered tensor-slot
/// order, into the list a graph node returns.
template <class... Grads>
variable_list grad_list(Grads&&... grads) {
  variable_list list;
  list.reserve(sizeof...(Grads));
  (list.push_back(std::move(grads).tensor()), ...);
  return list;
}

// ---------------------------------------------------------------------------
// The graph node
// ---------------------------------------------------------------------------

/// The autograd graph node of one generated op.
///
/// `Def` is generated per op:
///
///   struct op_backward_adapter {
///     static constexpr const char* op_name = "demo::op";
///     // original path of each tensor slot, in lowered order (= edge order)
///     static constexpr const char* grad_paths[] = {"x", "cfg.inner.w", "cfg.inner.b"};
///     // calls kernels::op_backward, returns one gradient per tensor slot
///     static variable_list backward(AutogradContext* ctx, const variable_list& grads);
///   };
///
/// Deriving from CppNode<BackwardNode> (rather than Node) is what makes `ctx_` a
/// real AutogradContext: CppNode<T> is the friend that may set its grad_fn and
/// turn save_for_backward() into SavedVariables; release_variables() (freeing
/// saved tensors after backward, and the "backward through the graph a second
/// time" error) is inherited from it too.
template <class Def>
class BackwardNode final : public torch::autograd::CppNode<BackwardNode<Def>> {
 public:
  /// Read by CppNode<T>::compiled_args in libtorch 2.x: not traceable by
  /// compiled autograd (the backward runs arbitrary user C++).
  static constexpr bool is_traceable = false;

  /// Required by CppNode<T>::apply, which apply() below replaces.
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    return Def::backward(ctx, grad_outputs);
  }

  /// The context passed to the op's setup_context and backward kernels.
  AutogradContext* context() noexcept { return &this->ctx_; }

  /// Calls the op's `setup_context(ctx, inputs..., outputs...)` kernel with grad
  /// mode off, as Function<T>::apply runs forward: what it computes and saves
  /// records no history.
  template <class SetupContext, class... Args>
  void run_setup_context(SetupContext&& setup_context, const Args&... args) {
    at::NoGradGuard no_grad;
    setup_context(context(), args...);
  }

  /// Makes `outputs` (the op's results, in order) outputs of this node, then
  /// turns what setup_context saved into SavedVariables (an output saved for
  /// backward is stored without a reference cycle). Call after setup_context:
  /// outputs it marked non-differentiable get no gradient edge.
  template <class... Outputs>
  void record_outputs(Outputs&... outputs) {
    const detail::NodePtr self = detail::node_ptr(this);
    const auto& non_differentiable = this->ctx_.get_non_differentiable();
    (record_output(self, outputs, non_differentiable), ...);
    this->save_variables_to_ctx();
  }

  /// Runs the op's backward: materialises missing output gradients as zeros
  /// (as torch::autograd::Function does by default), calls Def::backward under
  /// the node's lock, and checks every returned gradient by name.
  variable_list apply(variable_list&& grad_outputs) override {
    for (std::size_t i = 0; i < grad_outputs.size(); ++i) {
      if (!grad_outputs[i].defined() && output_defined_[i]) {
        grad_outputs[i] = this->input_metadata(i).zeros_like();
      }
    }
    variable_list grad_inputs;
    {
      std::lock_guard<std::mutex> lock(this->mutex_);
      grad_inputs = Def::backward(&this->ctx_, grad_outputs);
    }
    check_grads(*this, Def::op_name, Def::grad_paths, grad_inputs);
    return grad_inputs;
  }

  /// Shown in errors, the profiler and Python's `y.grad_fn`.
  std::string name() const override { return std::string(Def::op_name) + "_backward"; }

 private:
  void record_output(const detail::NodePtr& self, at::Tensor& output,
                     const std::unordered_set<at::TensorImpl*>& non_differentiable) {
    output_defined_.push_back(output.defined());
    if (!output.defined()) {
      this->add_input_metadata(torch::autograd::Node::undefined_input());
      return;
    }
    // Fresh results of a kernel run below autograd never require grad; one that
    // does is an input returned as is, which must not get this node as grad_fn.
    TORCH_CHECK(!output.requires_grad(), Def::op_name, ": output ", output_defined_.size() - 1,
                " is one of the op's inputs (or already requires grad); an op without "
                "alias annotations must return new tensors, e.g. input.clone()");
    const bool differentiable =
        torch::autograd::isDifferentiableType(output.scalar_type()) &&
        (non_differentiable.empty() || !non_differentiable.count(output.unsafeGetTensorImpl()));
    if (differentiable) {
      torch::autograd::set_history(output, self);
    } else {
      this->add_input_metadata(output);  // keeps output numbering; no edge to this node
    }
  }

  /// A `Tensor[]` output: each element is one output of the node, in order
  /// (the op's backward receives their gradients as one vector).
  void record_output(const detail::NodePtr& self, std::vector<at::Tensor>& outputs,
                     const std::unordered_set<at::TensorImpl*>& non_differentiable) {
    for (at::Tensor& output : outputs) record_output(self, output, non_differentiable);
  }

  /// Per output: defined (gets zeros when its gradient is missing) or not.
  c10::SmallVector<bool, 4> output_defined_;
};

/// The graph node for one call of the op described by `Def`, with one edge per
/// tensor slot (`inputs`: every Tensor / Tensor? leaf, in lowered order); or
/// null when grad mode is off or no input requires grad, in which case the
/// caller must create no autograd state at all.
template <class Def, class... Tensors>
detail::NodeHandle<BackwardNode<Def>> make_grad_fn(const Tensors&... inputs) {
  if (!torch::autograd::compute_requires_grad(inputs...)) return {};
  auto node = detail::new_node<BackwardNode<Def>>();
  node->set_ctx_grad_fn(node);
  node->set_next_edges(torch::autograd::collect_next_edges(inputs...));
  return node;
}

}  // namespace structop
