// structop runtime: the autograd bridge used by generated X.ops.cpp.
//
// A generated Autograd kernel does what PyTorch's own VariableType kernels do
// (collect_next_edges, redispatch below autograd, set_history), with the graph
// node a torch::autograd::CppNode so that kernels get a real AutogradContext:
//
//   auto grad_fn = structop::make_grad_fn(backward_def, x, cfg_inner_w, ...);
//   at::Tensor output = structop::redispatch_below_autograd(handle(), ks, ...);
//   if (grad_fn) {
//     const WeightCfg cfg = unflatten_WeightCfg(...);
//     grad_fn->run_setup_context(kernels::op_setup_context, x, cfg, output);
//     grad_fn->record_outputs(output);
//   }
//   return output;
//
// The node is one class for every op (BackwardNode, not a template per op):
// what differs per op is data, a BackwardDef. A class template per op would
// instantiate CppNode's virtual functions for every op with a backward; that
// was most of the compile time of a generated X.ops.cpp.
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

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
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
inline std::string input_shape_text(
    const torch::autograd::InputMetadata& input,
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
inline void check_grad(
    const char* op,
    const char* path,
    const at::Tensor& grad,
    const torch::autograd::InputMetadata& input) {
  const at::ScalarType input_dtype = c10::typeMetaToScalarType(input.dtype());
  TORCH_CHECK(
      grad.scalar_type() == input_dtype,
      op,
      ": gradient for ",
      path,
      " has dtype ",
      grad.scalar_type(),
      " but the input has dtype ",
      input_dtype);
  TORCH_CHECK(
      grad.device() == input.device(),
      op,
      ": gradient for ",
      path,
      " is on device ",
      grad.device(),
      " but the input is on ",
      input.device());
  if (grad.is_nested()) return;  // nested shapes: left to the engine
  if (!input.is_same_shape(grad)) {
    TORCH_CHECK(
        false,
        op,
        ": gradient for ",
        path,
        " has shape ",
        grad.sym_sizes(),
        " but the input has shape ",
        detail::input_shape_text(input, grad));
  }
}

/// Checks the gradients a backward returned, one per edge of `node` (= one per
/// tensor slot of the op, in lowered order; `paths[i]` is slot i's original
/// path). Gradients for inputs that do not require grad are dropped.
inline void check_grads(
    const torch::autograd::Node& node,
    const char* op,
    const char* const* paths,
    std::size_t count,
    variable_list& grads) {
  TORCH_INTERNAL_ASSERT(
      grads.size() == count && node.num_outputs() == count,
      op,
      ": grad slot count mismatch");
  for (std::size_t i = 0; i < count; ++i) {
    const torch::autograd::Edge& edge = node.next_edge(i);
    if (!edge.is_valid()) {
      grads[i] = at::Tensor();
    } else if (grads[i].defined()) {
      check_grad(op, paths[i], grads[i], edge.function->input_metadata(edge.input_nr));
    }
  }
}

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

// Deriving from CppNode<BackwardNode> (rather than Node) is what makes `ctx_` a
// real AutogradContext: CppNode<T> is the friend that may set its grad_fn and
// turn save_for_backward() into SavedVariables; release_variables() (freeing
// saved tensors after backward, and the "backward through the graph a second
// time" error) is inherited from it too.

/// What a generated adapter tells the bridge about one op with a backward:
/// a constant in X.ops.cpp (`op_<op>::backward_def`).
struct BackwardDef {
  const char* op_name;            // "demo::op", for messages
  const char* const* grad_paths;  // original path of each grad slot, in order
  std::size_t grad_count;
  /// kernels::<op>_backward, mapped onto the grad slots.
  variable_list (*backward)(AutogradContext* ctx, const variable_list& grad_outputs);
};

namespace detail {

/// The key under which a node's context names its op (see BackwardNode::backward).
inline constexpr const char* kOpKey = "structop.op";

struct DefRegistry {
  struct Entry {
    const BackwardDef* def;
    c10::IValue name;  // the op name, made once: nodes copy a reference
  };
  std::mutex mutex;
  std::unordered_map<std::string, Entry> defs;
};

inline DefRegistry& def_registry() {
  static DefRegistry registry;
  return registry;
}

/// Remembers `def` by op name and returns the name as an IValue for the
/// node's context (cheap after the first node of an op on a thread).
inline const c10::IValue& remember(const BackwardDef& def) {
  thread_local const BackwardDef* last = nullptr;
  thread_local const c10::IValue* last_name = nullptr;
  if (last == &def) return *last_name;
  DefRegistry& r = def_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it =
      r.defs.try_emplace(def.op_name, DefRegistry::Entry{&def, c10::IValue(def.op_name)}).first;
  last = &def;
  last_name = &it->second.name;
  return *last_name;
}

inline const BackwardDef& recall(const std::string& op_name) {
  DefRegistry& r = def_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.defs.find(op_name);
  TORCH_CHECK(it != r.defs.end(), "structop: no backward registered for op ", op_name);
  return *it->second.def;
}

}  // namespace detail

/// The graph node of every generated op with a backward.
class BackwardNode final : public torch::autograd::CppNode<BackwardNode> {
 public:
  /// Kernels are opaque C++: compiled autograd must not trace into them.
  static constexpr bool is_traceable = false;

  explicit BackwardNode(const BackwardDef& def) : def_(def) {
    // CppNode's functional replay (compiled autograd) calls the static
    // backward below with the context only; the context names the op.
    this->ctx_.saved_data[detail::kOpKey] = detail::remember(def);
  }

  /// CppNode's static entry point: the op comes from the context.
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    return detail::recall(ctx->saved_data.at(detail::kOpKey).toStringRef())
        .backward(ctx, grad_outputs);
  }

  AutogradContext* context() noexcept { return &this->ctx_; }

  /// Calls the op's setup_context(ctx, args...) with grad mode off.
  template <class SetupContext, class... Args>
  void run_setup_context(SetupContext&& setup_context, const Args&... args) {
    at::NoGradGuard no_grad;
    setup_context(context(), args...);
  }

  /// Attaches the outputs (tensors or tensor lists, in output order) to this
  /// node, then saves what setup_context asked for.
  template <class... Outputs>
  void record_outputs(Outputs&... outputs) {
    const detail::NodePtr self = detail::node_ptr(this);
    const auto& non_differentiable = this->ctx_.get_non_differentiable();
    (record_output(self, outputs, non_differentiable), ...);
    this->save_variables_to_ctx();
  }

  variable_list apply(variable_list&& grad_outputs) override {
    // Undefined output grads become zeros (materialized as
    // autograd::Function does by default), except for undefined outputs.
    for (std::size_t i = 0; i < grad_outputs.size(); ++i) {
      if (!grad_outputs[i].defined() && output_defined_[i]) {
        grad_outputs[i] = this->input_metadata(i).zeros_like();
      }
    }
    variable_list grad_inputs;
    {
      std::lock_guard<std::mutex> lock(this->mutex_);
      grad_inputs = def_.backward(&this->ctx_, grad_outputs);
    }
    check_grads(*this, def_.op_name, def_.grad_paths, def_.grad_count, grad_inputs);
    return grad_inputs;
  }

  std::string name() const override { return std::string(def_.op_name) + "_backward"; }

 private:
  void record_output(
      const detail::NodePtr& self,
      at::Tensor& output,
      const std::unordered_set<at::TensorImpl*>& non_differentiable) {
    output_defined_.push_back(output.defined());
    if (!output.defined()) {
      this->add_input_metadata(torch::autograd::Node::undefined_input());
      return;
    }
    TORCH_CHECK(
        !output.requires_grad(),
        def_.op_name,
        ": output ",
        output_defined_.size() - 1,
        " is one of the op's inputs (or already requires grad); an op without "
        "alias annotations must return new tensors, e.g. input.clone()");
    const bool differentiable = torch::autograd::isDifferentiableType(output.scalar_type()) &&
                                (non_differentiable.empty() ||
                                 !non_differentiable.count(output.unsafeGetTensorImpl()));
    if (differentiable) {
      torch::autograd::set_history(output, self);
    } else {
      this->add_input_metadata(output);  // keeps output numbering; no edge to this node
    }
  }

  void record_output(
      const detail::NodePtr& self,
      std::vector<at::Tensor>& outputs,
      const std::unordered_set<at::TensorImpl*>& non_differentiable) {
    for (at::Tensor& output : outputs) record_output(self, output, non_differentiable);
  }

  const BackwardDef& def_;
  c10::SmallVector<bool, 4> output_defined_;
};

/// The graph node for one call, or null when grad mode is off or no input
/// requires grad. `inputs` are the op's grad slots in order (Tensor or
/// optional<Tensor>): the node's edges.
template <class... Tensors>
detail::NodeHandle<BackwardNode> make_grad_fn(const BackwardDef& def, const Tensors&... inputs) {
  if (!torch::autograd::compute_requires_grad(inputs...)) return {};
  auto node = detail::new_node<BackwardNode>(def);
  node->set_ctx_grad_fn(node);
  node->set_next_edges(torch::autograd::collect_next_edges(inputs...));
  return node;
}

}  // namespace structop
