// structop runtime library: the Autograd and ADInplaceOrView kernels of ops
// declared without `backward: true` (registered by impl_no_backward and
// impl_bump_written_versions, structop/registration.h).
//
// Such an op may be called with inputs that require grad, but a backward
// through what it produced must fail with an error naming the op, as it does
// for PyTorch's own ops without a derivative, eagerly and under torch.compile
// alike. PyTorch's torch::autograd::autogradNotImplementedFallback() does this
// for returned tensors only: a tensor the op writes in place and does not
// return (a `Tensor(a!)` argument of an op returning `()`, the usual shape of
// `mutates:`) kept its old history, so gradients flowed through it as if the
// op had not happened, and its ADInplaceOrView partner bumped the version
// counters of returned tensors only. These two boxed kernels also cover the
// written arguments:
//
//   no_backward_autograd      (Autograd) checks in-place writes the way
//       PyTorch's in-place ops do, runs the op below autograd, then gives each
//       returned tensor and each written argument a NotImplemented node whose
//       backward raises "derivative for NS::op is not implemented".
//   bump_written_versions     (ADInplaceOrView, ops that write to inputs) runs
//       the op, then bumps the version counter of every written argument, so
//       that a tensor saved for another op's backward and then overwritten is
//       detected.
//
// Both read what they need from the op's schema: which arguments are written
// (`Tensor(a!)`).
#include "autograd_node.h"

#include <structop/registration.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/csrc/autograd/VariableTypeUtils.h>
#include <torch/csrc/autograd/functions/basic_ops.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/library.h>

#include <string>
#include <vector>

namespace structop {
namespace detail {
namespace {

/// Calls `fn(tensor)` for every defined tensor in `value` (a Tensor, an
/// optional Tensor, or a list of them). A list's items are read in place
/// (toTensorList().vec() would copy them, a reference count each).
template <class Fn>
void for_each_tensor(const c10::IValue& value, Fn&& fn) {
  if (value.isTensor()) {
    const at::Tensor& t = value.toTensor();
    if (t.defined()) fn(t);
  } else if (value.isList()) {  // Tensor[], Tensor?[]; other lists hold no tensor
    for (const c10::IValue& item : value.toListRef()) {
      if (item.isTensor() && item.toTensor().defined()) fn(item.toTensor());
    }
  }
}

/// Whether argument `i` of `schema` is written by the op (`Tensor(a!)`):
/// what FunctionSchema::is_mutable({input, i}) answers, read from the
/// argument's alias annotation without that call's lookups (this runs for
/// every argument of every call).
bool writes_argument(const c10::FunctionSchema& schema, size_t i) {
  const c10::AliasInfo* alias = schema.arguments()[i].alias_info();
  return alias != nullptr && alias->isWrite();
}

/// A NotImplemented node for `op` whose edges lead to `inputs`.
NodeHandle<torch::autograd::NotImplemented> not_implemented_node(
    const std::string& op,
    const std::vector<at::Tensor>& inputs) {
  auto node = detail::new_node<torch::autograd::NotImplemented>(op);
  node->set_next_edges(torch::autograd::collect_next_edges(inputs));
  return node;
}

}  // namespace
}  // namespace detail

namespace {

/// Autograd kernel of an op without `backward: true` (see the top of this file).
void no_backward_autograd(
    const c10::OperatorHandle& op,
    c10::DispatchKeySet ks,
    torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  const size_t num_arguments = schema.arguments().size();
  const size_t num_returns = schema.returns().size();
  const size_t first = stack->size() - num_arguments;

  std::vector<at::Tensor> requiring_grad;
  if (at::GradMode::is_enabled()) {
    for (size_t i = 0; i < num_arguments; ++i) {
      detail::for_each_tensor((*stack)[first + i], [&](const at::Tensor& t) {
        if (t.requires_grad()) requiring_grad.push_back(t);
      });
    }
  }
  const bool any_requires_grad = !requiring_grad.empty();

  // The written arguments, checked as PyTorch's in-place ops check theirs (a
  // leaf that requires grad, or a view of one, cannot be written).
  std::vector<at::Tensor> written;
  for (size_t i = 0; i < num_arguments; ++i) {
    if (!detail::writes_argument(schema, i)) continue;
    detail::for_each_tensor((*stack)[first + i], [&](const at::Tensor& t) {
      torch::autograd::check_inplace(t, any_requires_grad);
      written.push_back(t);
    });
  }

  {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.redispatchBoxed(ks & c10::after_autograd_keyset, stack);
  }
  if (!any_requires_grad) return;

  const std::string name = schema.operator_name().name;
  // Returned tensors: one node for all of them (as PyTorch's fallback).
  const size_t returns_at = stack->size() - num_returns;
  bool returns_tensor = false;
  for (size_t r = 0; r < num_returns; ++r) {
    detail::for_each_tensor((*stack)[returns_at + r], [&](const at::Tensor&) {
      returns_tensor = true;
    });
  }
  if (returns_tensor) {
    auto node = detail::not_implemented_node(name, requiring_grad);
    for (size_t r = 0; r < num_returns; ++r) {
      detail::for_each_tensor((*stack)[returns_at + r], [&](const at::Tensor& t) {
        if (torch::autograd::isDifferentiableType(t.scalar_type())) {
          torch::autograd::set_history(t, node);
        }
      });
    }
  }
  // Written arguments: a node each (rebasing a view's history needs a node of
  // one input).
  for (const at::Tensor& t : written) {
    if (!torch::autograd::isDifferentiableType(t.scalar_type())) continue;
    auto node = detail::not_implemented_node(name, requiring_grad);
    const uint32_t input_nr = node->add_input_metadata(t);
    torch::autograd::impl::rebase_history(t, torch::autograd::Edge(node, input_nr));
  }
}

/// ADInplaceOrView kernel of an op without `backward: true` that writes to
/// some of its arguments (see the top of this file).
void bump_written_versions(
    const c10::OperatorHandle& op,
    c10::DispatchKeySet ks,
    torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  const size_t num_arguments = schema.arguments().size();
  std::vector<at::Tensor> written;
  const size_t first = stack->size() - num_arguments;
  for (size_t i = 0; i < num_arguments; ++i) {
    if (detail::writes_argument(schema, i)) {
      detail::for_each_tensor((*stack)[first + i], [&](const at::Tensor& t) {
        written.push_back(t);
      });
    }
  }
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.redispatchBoxed(ks & c10::after_ADInplaceOrView_keyset, stack);
  }
  for (const at::Tensor& t : written) torch::autograd::increment_version(t);
}

}  // namespace

void impl_no_backward(torch::Library& m, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&no_backward_autograd>());
  }
}

void impl_bump_written_versions(torch::Library& m, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&bump_written_versions>());
  }
}

}  // namespace structop
