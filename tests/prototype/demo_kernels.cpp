// Kernels of demo.ops.yaml: what a user writes into the stubs structopc emits
// (demo.ops.stubs.cpp). Definitions are qualified (`kernels::op`), so a signature
// that does not match demo.ops.h is a compile error, not a link error.
#include "demo.ops.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>  // AutogradContext: ops with backward

namespace demo {

// ---------------------------------------------------------------------------
// op: out = (x * w + b) * scale
// ---------------------------------------------------------------------------

at::Tensor kernels::op(const at::Tensor& x, const WeightCfg& cfg) {
  return (x * cfg.inner.w + cfg.inner.b) * cfg.scale;
}

void kernels::op_setup_context(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                               const WeightCfg& cfg, const at::Tensor& /*output*/) {
  ctx->save_for_backward({x, cfg.inner.w});
  ctx->saved_data["scale"] = cfg.scale;
}

op_grads kernels::op_backward(torch::autograd::AutogradContext* ctx,
                              const at::Tensor& grad_output) {
  const auto saved = ctx->get_saved_variables();
  const at::Tensor& x = saved[0];
  const at::Tensor& w = saved[1];
  const at::Tensor g = grad_output * ctx->saved_data["scale"].toDouble();
  // Compute only the gradients the caller asked for; an undefined one means none.
  const bool need_x = ctx->needs_input_grad(op_grad_slot::x);
  const bool need_w = ctx->needs_input_grad(op_grad_slot::cfg__inner__w);
  return {
      /*x=*/need_x ? g * w : at::Tensor(),
      /*cfg=*/{/*inner=*/{/*w=*/need_w ? g * x : at::Tensor(), /*b=*/g}},
  };
}

// ---------------------------------------------------------------------------
// two: sum = (a + b) * scale + w ; prod = a * b * inner.b
// ---------------------------------------------------------------------------

std::tuple<at::Tensor, at::Tensor> kernels::two(const at::Tensor& a, const at::Tensor& b,
                                                const WeightCfg& cfg) {
  return {(a + b) * cfg.scale + cfg.inner.w, a * b * cfg.inner.b};
}

void kernels::two_setup_context(torch::autograd::AutogradContext* ctx, const at::Tensor& a,
                                const at::Tensor& b, const WeightCfg& cfg,
                                const at::Tensor& /*sum*/, const at::Tensor& /*prod*/) {
  ctx->save_for_backward({a, b, cfg.inner.b});
  ctx->saved_data["scale"] = cfg.scale;
}

two_grads kernels::two_backward(torch::autograd::AutogradContext* ctx, const at::Tensor& grad_sum,
                                const at::Tensor& grad_prod) {
  const auto saved = ctx->get_saved_variables();
  const at::Tensor& a = saved[0];
  const at::Tensor& b = saved[1];
  const at::Tensor& ib = saved[2];
  const at::Tensor gs = grad_sum * ctx->saved_data["scale"].toDouble();
  return {
      /*a=*/gs + grad_prod * b * ib,
      /*b=*/gs + grad_prod * a * ib,
      /*cfg=*/{/*inner=*/{/*w=*/grad_sum, /*b=*/grad_prod * a * b}},
  };
}

// ---------------------------------------------------------------------------
// fwd_only: out = (x * w + b) * scale + index of mode (shows the enum arriving)
// ---------------------------------------------------------------------------

at::Tensor kernels::fwd_only(const at::Tensor& x, const WeightCfg& cfg) {
  return (x * cfg.inner.w + cfg.inner.b) * cfg.scale + static_cast<double>(cfg.mode);
}

// ---------------------------------------------------------------------------
// scale_: w *= scale ; b += x   (in place, visible to the caller)
// ---------------------------------------------------------------------------

void kernels::scale_(const at::Tensor& x, const WeightCfg& cfg) {
  cfg.inner.w.mul_(cfg.scale);
  cfg.inner.b.add_(x);
}

}  // namespace demo
