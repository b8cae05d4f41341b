// Reference kernels of weights.ops.yaml: what a user writes into the stubs
// structopc emits (weights.ops.stubs.cpp).
//
// Demonstrates: a forward kernel reading tensors two records deep
// (cfg.inner.w), setup_context saving tensors and a scalar, and a backward
// filling the nested grad record {x, cfg: {inner: {w, b}}}, computing only
// the gradients that are asked for (ctx->needs_input_grad).
//
// Definitions are qualified (`kernels::op`), so a signature that does not
// match weights.ops.h is a compile error rather than a link error.
#include "weights.ops.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

namespace weights {

// out = (x * cfg.inner.w + cfg.inner.b) * cfg.scale; x, w and b have the same shape.
at::Tensor kernels::op(const at::Tensor& x, const WeightCfg& cfg) {
  return (x * cfg.inner.w + cfg.inner.b) * cfg.scale;
}

void kernels::op_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& x,
    const WeightCfg& cfg,
    const at::Tensor& /*output*/) {
  ctx->save_for_backward({x, cfg.inner.w});
  ctx->saved_data["scale"] = cfg.scale;
}

op_grads kernels::op_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_output) {
  const auto saved = ctx->get_saved_variables();
  const at::Tensor& x = saved[0];
  const at::Tensor& w = saved[1];
  const at::Tensor g = grad_output * ctx->saved_data["scale"].toDouble();
  const bool need_x = ctx->needs_input_grad(op_grad_slot::x);
  const bool need_w = ctx->needs_input_grad(op_grad_slot::cfg_inner_w);
  const bool need_b = ctx->needs_input_grad(op_grad_slot::cfg_inner_b);
  return {
      /*x=*/need_x ? g * w : at::Tensor(),
      /*cfg=*/{/*inner=*/{/*w=*/need_w ? g * x : at::Tensor(), /*b=*/need_b ? g : at::Tensor()}},
  };
}

}  // namespace weights
