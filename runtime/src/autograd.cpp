// structop runtime library: the autograd bridge of generated ops with
// `backward: true` (declared in structop/autograd_bridge.h and
// structop/registration.h).
//
// One boxed Autograd kernel class and one graph node class serve every op:
// what differs per op is data, its BackwardDef. Per call the kernel does what
// PyTorch's own VariableType kernels do (collect_next_edges, redispatch below
// autograd, set_history), with the node a torch::autograd::CppNode so that
// kernels get a real AutogradContext. Compared with
// torch::autograd::Function<T>::apply this skips, per call: the input_info_
// vector, the unordered_sets and the std::function of _wrap_outputs; and when
// no input needs a gradient it creates nothing at all. The node fills
// CppNode's is_variable_input_ and output_info_, which compiled autograd
// reads (see record_outputs).
//
// libtorch versions: everything used here is API of torch 2.x (tested: 2.6 and
// 2.13): CppNode<T> members ctx_ / set_ctx_grad_fn / save_variables_to_ctx /
// release_variables, Node::next_edge / input_metadata, impl::gradient_edge,
// set_history, InputMetadata::is_same_shape / zeros_like; CppNode<T> reads
// T::is_traceable (defined below). The one difference between the versions is
// how graph nodes are owned: by std::shared_ptr (torch 2.6) or
// c10::intrusive_ptr (later releases); `NodeHandle` follows whichever the
// headers use.
#include "autograd_node.h"

#include <structop/registration.h>

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/library.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace structop {
namespace detail {

// ---------------------------------------------------------------------------
// The BackwardDef registry
// ---------------------------------------------------------------------------

namespace {

/// The key under which a node's context names its op (see BackwardNode::backward).
constexpr const char* kOpKey = "structop.op";
/// The key under which a node's context holds, for an op with list grad
/// slots, the number of tensors (edges) of each grad slot: -1 for a slot that
/// is not a list. Absent otherwise (every slot is one edge).
constexpr const char* kEdgesKey = "structop.edges";

struct DefRegistry {
  struct Entry {
    const BackwardDef* def;
    c10::IValue name;  // the op name, made once: nodes copy a reference
  };
  std::mutex mutex;
  std::unordered_map<std::string, Entry> defs;
};

DefRegistry& def_registry() {
  static DefRegistry registry;
  return registry;
}

}  // namespace

const c10::IValue& remember(const BackwardDef& def) {
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

const BackwardDef& recall(const std::string& op_name) {
  DefRegistry& r = def_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.defs.find(op_name);
  TORCH_CHECK(it != r.defs.end(), "structop: no backward registered for op ", op_name);
  return *it->second.def;
}

// ---------------------------------------------------------------------------
// Gradient checks
// ---------------------------------------------------------------------------

namespace {

/// The input's shape as text ("[2, 3]"), on the error path only, taken from
/// the engine's own message (InputMetadata's shape accessor is not public API).
std::string input_shape_text(const torch::autograd::InputMetadata& input, const at::Tensor& grad) {
  const std::string message = input.incompatible_shape_error_message(0, grad).str();
  const std::string marker = "compatible with ";
  const auto at = message.rfind(marker);
  return at == std::string::npos ? message : message.substr(at + marker.size());
}

/// `[3]` for item 3 of a list slot, empty for a slot that is not a list (-1).
std::string item_text(int64_t item) {
  return item < 0 ? std::string() : "[" + std::to_string(item) + "]";
}

}  // namespace

void check_grad(
    const char* op,
    const char* path,
    int64_t item,
    const at::Tensor& grad,
    const torch::autograd::InputMetadata& input) {
  const at::ScalarType input_dtype = c10::typeMetaToScalarType(input.dtype());
  TORCH_CHECK(
      grad.scalar_type() == input_dtype,
      op,
      ": gradient for ",
      path,
      item_text(item),
      " has dtype ",
      grad.scalar_type(),
      " but the input has dtype ",
      input_dtype);
  TORCH_CHECK(
      grad.device() == input.device(),
      op,
      ": gradient for ",
      path,
      item_text(item),
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
        item_text(item),
        " has shape ",
        grad.sym_sizes(),
        " but the input has shape ",
        input_shape_text(input, grad));
  }
}

const std::vector<int64_t>* edge_counts(
    AutogradContext* ctx,
    const BackwardDef& def,
    std::vector<int64_t>& storage) {
  if (!def.grad_lists) return nullptr;
  storage = ctx->saved_data.at(kEdgesKey).toIntVector();
  TORCH_INTERNAL_ASSERT(storage.size() == def.grad_count, def.op_name, ": edge count mismatch");
  return &storage;
}

void check_grads(
    const torch::autograd::Node& node,
    const BackwardDef& def,
    const std::vector<int64_t>* counts,
    variable_list& grads) {
  TORCH_INTERNAL_ASSERT(
      grads.size() == node.num_outputs(),
      def.op_name,
      ": grad slot count mismatch");
  std::size_t e = 0;
  for (std::size_t i = 0; i < def.grad_count; ++i) {
    const int64_t count = counts ? (*counts)[i] : -1;
    const int64_t items = count < 0 ? 1 : count;
    for (int64_t item = 0; item < items; ++item, ++e) {
      const torch::autograd::Edge& edge = node.next_edge(e);
      if (!edge.is_valid()) {
        grads[e] = at::Tensor();
      } else if (grads[e].defined()) {
        check_grad(
            def.op_name,
            def.grad_paths[i],
            count < 0 ? -1 : item,
            grads[e],
            edge.function->input_metadata(edge.input_nr));
      }
    }
  }
}

// ---------------------------------------------------------------------------
// The graph node
// ---------------------------------------------------------------------------

BackwardNode::BackwardNode(const BackwardDef& def) : def_(def) {
  // CppNode's functional replay (compiled autograd) calls the static
  // backward below with the context only; the context names the op.
  this->ctx_.saved_data[kOpKey] = remember(def);
}

variable_list BackwardNode::backward(AutogradContext* ctx, variable_list grad_outputs) {
  return recall(ctx->saved_data.at(kOpKey).toStringRef()).backward(ctx, grad_outputs);
}

void BackwardNode::record_outputs(c10::IValue* outputs, std::size_t count) {
  const NodePtr self = node_ptr(this);
  // CppNode's functional replay (compiled autograd, torch >= 2.7) checks the
  // backward's result against one entry per edge here: every edge is a
  // tensor input of the forward.
  this->is_variable_input_.assign(this->num_outputs(), true);
  const auto& non_differentiable = this->ctx_.get_non_differentiable();
  for (std::size_t i = 0; i < count; ++i) {
    if (outputs[i].isTensorList()) {  // Tensor[]: each tensor is an output
      for (at::Tensor output : outputs[i].toTensorVector()) {
        record_output(self, output, non_differentiable);
      }
    } else {
      record_output(self, outputs[i].toTensor(), non_differentiable);
    }
  }
  this->save_variables_to_ctx();
}

variable_list BackwardNode::apply(variable_list&& grad_outputs) {
  // Undefined output grads become zeros (materialized as
  // autograd::Function does by default), except for undefined outputs.
  for (std::size_t i = 0; i < grad_outputs.size(); ++i) {
    if (!grad_outputs[i].defined() && !this->output_info_[i].is_empty) {
      grad_outputs[i] = this->input_metadata(i).zeros_like();
    }
  }
  variable_list grad_inputs;
  {
    std::lock_guard<std::mutex> lock(this->mutex_);
    grad_inputs = def_.backward(&this->ctx_, grad_outputs);
  }
  std::vector<int64_t> storage;
  check_grads(*this, def_, edge_counts(&this->ctx_, def_, storage), grad_inputs);
  return grad_inputs;
}

std::string BackwardNode::name() const {
  return std::string(def_.op_name) + "_backward";
}

void BackwardNode::record_output(
    const NodePtr& self,
    at::Tensor& output,
    const std::unordered_set<at::TensorImpl*>& non_differentiable) {
  if (!output.defined()) {
    this->output_info_.emplace_back();  // is_empty: its grad stays undefined
    this->add_input_metadata(torch::autograd::Node::undefined_input());
    return;
  }
  TORCH_CHECK(
      !output.requires_grad(),
      def_.op_name,
      ": output ",
      this->output_info_.size(),
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
  this->output_info_.emplace_back(output);
}

namespace {

/// The tensor `value` holds (a Tensor, or a Tensor? that may be None), or null
/// when there is none.
const at::Tensor* defined_tensor(const c10::IValue& value) {
  return value.isTensor() && value.toTensor().defined() ? &value.toTensor() : nullptr;
}

/// Calls `f(tensor or null)` for each tensor of grad slot `i` whose argument
/// is `value`: the one tensor, or each item of a list slot (`Tensor[]`, or
/// `Tensor?[]` whose items may be None).
template <class F>
void for_each_grad_tensor(const BackwardDef& def, std::size_t i, const c10::IValue& value, F&& f) {
  if (!def.grad_lists || !def.grad_lists[i]) {
    f(defined_tensor(value));
  } else if (value.isTensorList()) {
    const c10::List<at::Tensor> list = value.toTensorList();
    for (std::size_t j = 0; j < list.size(); ++j) {
      const at::Tensor t = list.get(j);
      f(t.defined() ? &t : nullptr);
    }
  } else {
    for (const c10::IValue& item : value.toListRef()) f(defined_tensor(item));
  }
}

}  // namespace

NodeHandle<BackwardNode> make_grad_fn(const BackwardDef& def, const c10::IValue* args) {
  if (!at::GradMode::is_enabled()) return {};
  bool requires_grad = false;
  for (std::size_t i = 0; i < def.grad_count && !requires_grad; ++i) {
    for_each_grad_tensor(def, i, args[def.grad_slots[i]], [&](const at::Tensor* t) {
      requires_grad |= t && t->requires_grad();
    });
  }
  if (!requires_grad) return {};
  auto node = new_node<BackwardNode>(def);
  node->set_ctx_grad_fn(node);
  torch::autograd::edge_list edges;
  edges.reserve(def.grad_count);
  std::vector<int64_t> counts;  // per slot, for an op with list slots
  for (std::size_t i = 0; i < def.grad_count; ++i) {
    const std::size_t before = edges.size();
    for_each_grad_tensor(def, i, args[def.grad_slots[i]], [&](const at::Tensor* t) {
      if (t) {
        edges.push_back(torch::autograd::impl::gradient_edge(*t));
      } else {
        edges.emplace_back();
      }
    });
    if (def.grad_lists) {
      counts.push_back(def.grad_lists[i] ? static_cast<int64_t>(edges.size() - before) : -1);
    }
  }
  if (def.grad_lists) node->context()->saved_data[kEdgesKey] = c10::IValue(std::move(counts));
  node->set_next_edges(std::move(edges));
  return node;
}

// ---------------------------------------------------------------------------
// Gradients in slot order
// ---------------------------------------------------------------------------

variable_list grad_list(Grad* const* grads, std::size_t count) {
  variable_list list;
  try {
    list.reserve(count);
  } catch (...) {
    // Release the tensors here: the generated backward does not destroy
    // its grad record (Emptied).
    for (std::size_t i = 0; i < count; ++i) Grad dropped(std::move(*grads[i]));
    throw;
  }
  for (std::size_t i = 0; i < count; ++i) list.push_back(std::move(*grads[i]).tensor());
  return list;
}

// ---------------------------------------------------------------------------
// Gradients in edge order (list slots)
// ---------------------------------------------------------------------------

EdgeGrads::EdgeGrads(AutogradContext* ctx, const BackwardDef& def) : def_(def) {
  std::vector<int64_t> storage;
  const std::vector<int64_t>* counts = edge_counts(ctx, def, storage);
  TORCH_INTERNAL_ASSERT(counts, def.op_name, ": grad_edges on an op without list grad slots");
  counts_ = std::move(storage);
  list_.reserve(def.grad_count);
}

void EdgeGrads::add(std::vector<Grad>&& grads) {
  TORCH_INTERNAL_ASSERT(
      slot_ < counts_.size() && counts_[slot_] >= 0,
      def_.op_name,
      ": not a list slot");
  const auto expected = static_cast<std::size_t>(counts_[slot_]);
  TORCH_CHECK(
      grads.size() == expected,
      def_.op_name,
      ": backward returned ",
      grads.size(),
      " gradient",
      grads.size() == 1 ? "" : "s",
      " for ",
      def_.grad_paths[slot_],
      ", but the input list has ",
      expected,
      " tensor",
      expected == 1 ? "" : "s",
      " (give one per tensor; at::Tensor() or c10::nullopt for \"no gradient\")");
  for (Grad& grad : grads) list_.push_back(std::move(grad).tensor());
  ++slot_;
}

// ---------------------------------------------------------------------------
// The boxed Autograd kernel
// ---------------------------------------------------------------------------

namespace {

class AutogradKernel final : public c10::OperatorKernel {
 public:
  explicit AutogradKernel(const BackwardDef& def) : def_(def) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
    const std::size_t num_args = op.schema().arguments().size();
    c10::IValue* args = arguments(stack, num_args);
    // Null when grad mode is off or no grad slot requires grad: then no
    // autograd state is created at all.
    auto grad_fn = make_grad_fn(def_, args);
    if (!grad_fn) {
      redispatch(op, ks, stack);
      return;
    }
    // The redispatch consumes the arguments; setup_context needs them after
    // (and may move values out of its copy).
    torch::jit::Stack inputs(args, args + num_args);
    redispatch(op, ks, stack);
    const std::size_t num_outputs = op.schema().returns().size();
    c10::IValue* outputs = arguments(stack, num_outputs);
    {
      at::NoGradGuard no_grad;
      def_.setup_context(grad_fn->context(), inputs.data(), outputs);
    }
    grad_fn->record_outputs(outputs, num_outputs);
  }

 private:
  /// The op's kernel for the keys below autograd, as PyTorch's own autograd
  /// kernels call it: with autograd and ADInplaceOrView excluded for
  /// everything the kernel calls in turn, so its internal ops record no
  /// history (cheaper, and the op's own graph node is the only one).
  static void redispatch(
      const c10::OperatorHandle& op,
      c10::DispatchKeySet ks,
      torch::jit::Stack* stack) {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.redispatchBoxed(ks & c10::after_autograd_keyset, stack);
  }

  const BackwardDef& def_;
};

}  // namespace

/// The first edge of grad slot `slot` and the number of edges it has (one, or
/// one per tensor of a list slot).
std::pair<std::size_t, std::size_t> slot_edges(AutogradContext* ctx, std::size_t slot) {
  auto it = ctx->saved_data.find(kEdgesKey);
  if (it == ctx->saved_data.end()) return {slot, 1};  // no list slot: one edge each
  const c10::List<int64_t> counts = it->second.toIntList();
  TORCH_CHECK(slot < counts.size(), "structop::needs_input_grad: no grad slot ", slot);
  std::size_t first = 0;
  for (std::size_t i = 0; i < slot; ++i) {
    const int64_t count = counts.get(i);
    first += count < 0 ? 1 : static_cast<std::size_t>(count);
  }
  const int64_t count = counts.get(slot);
  return {first, count < 0 ? 1 : static_cast<std::size_t>(count)};
}

}  // namespace detail

bool needs_input_grad(AutogradContext* ctx, std::size_t slot) {
  const auto [first, count] = detail::slot_edges(ctx, slot);
  for (std::size_t e = first; e < first + count; ++e) {
    if (ctx->needs_input_grad(e)) return true;
  }
  return false;
}

bool needs_input_grad(AutogradContext* ctx, std::size_t slot, std::size_t item) {
  const auto [first, count] = detail::slot_edges(ctx, slot);
  TORCH_CHECK(
      item < count,
      "structop::needs_input_grad: item ",
      item,
      " of grad slot ",
      slot,
      ", which has ",
      count,
      " tensor",
      count == 1 ? "" : "s");
  return ctx->needs_input_grad(first + item);
}

void impl_autograd(torch::Library& m, std::initializer_list<AutogradDef> ops) {
  for (const AutogradDef& op : ops) {
    m.impl(
        op.name,
        torch::CppFunction::makeFromBoxedFunctor(
            std::make_unique<detail::AutogradKernel>(*op.def)));
  }
}

}  // namespace structop
