// structop runtime, registration part: included only by generated X.ops.cpp.
//
// Heavy (torch/library.h, the dispatcher, autograd); kernel sources never need it.
#pragma once

#include <structop/autograd_bridge.h>
#include <structop/no_backward.h>
#include <structop/runtime.h>

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/DispatchKeySet.h>
#include <torch/library.h>

#include <utility>

namespace structop {

/// The registered op `name` (e.g. "demo::op") bound to its C++ signature, i.e.
/// the dispatcher's types for its lowered (flat) schema. Throws when the op is
/// not registered or the signature does not match the registered kernels.
/// Generated code keeps one in a function-local static per op.
template <class Signature>
c10::TypedOperatorHandle<Signature> find_op(const char* name, const char* overload = "") {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload).typed<Signature>();
}

/// The dispatcher's signature of a generated adapter (a functor registered
/// once per key): its call operator's type without the DispatchKeySet that
/// autograd adapters take first (`using signature =
/// structop::kernel_signature<decltype(&op_x::operator())>;`).
template <class CallOperator>
struct KernelSignature;
template <class C, class R, class... Args>
struct KernelSignature<R (C::*)(Args...)> {
  using type = R(Args...);
};
template <class C, class R, class... Args>
struct KernelSignature<R (C::*)(c10::DispatchKeySet, Args...)> {
  using type = R(Args...);
};
template <class CallOperator>
using kernel_signature = typename KernelSignature<CallOperator>::type;

/// Calls `op`'s kernel for the keys below autograd, as PyTorch's own autograd
/// kernels do: with autograd and ADInplaceOrView excluded for everything the
/// kernel calls in turn, so its internal ops record no history (cheaper, and
/// the op's own graph node is the only one).
template <class Signature, class... Args>
decltype(auto) redispatch_below_autograd(
    const c10::TypedOperatorHandle<Signature>& op,
    c10::DispatchKeySet ks,
    Args&&... args) {
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.redispatch(ks & c10::after_autograd_keyset, std::forward<Args>(args)...);
}

/// Result of an identity meta kernel: a tensor with `like`'s metadata (shape,
/// strides, dtype, device; on Meta tensors no data is allocated).
inline at::Tensor meta_like(const at::Tensor& like) {
  return at::empty_like(like);
}

}  // namespace structop
