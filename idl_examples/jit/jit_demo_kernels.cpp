// Kernels of jit_demo.ops.yaml, compiled by structop.load (see run_jit.py).
//
//   scale_shift(x, cfg) = (x * cfg.affine.w + cfg.affine.b) * cfg.scale
//
// The backward fills the grad record {x, cfg: {affine: {w, b}}}, computing
// only the gradients that are asked for.
#include "jit_demo.ops.h"

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/custom_function.h>

namespace jit_demo {

at::Tensor kernels::scale_shift(const at::Tensor& x, const Cfg& cfg) {
  return x.mul(cfg.affine.w).add(cfg.affine.b).mul(cfg.scale);
}

void kernels::scale_shift_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& x,
    const Cfg& cfg,
    const at::Tensor& /*output*/) {
  ctx->save_for_backward({x, cfg.affine.w});
  ctx->saved_data["scale"] = cfg.scale;
}

scale_shift_grads kernels::scale_shift_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_output) {
  const auto saved = ctx->get_saved_variables();
  const at::Tensor& x = saved[0];
  const at::Tensor& w = saved[1];
  const at::Tensor g = grad_output.mul(ctx->saved_data["scale"].toDouble());
  const bool need_x = ctx->needs_input_grad(scale_shift_grad_slot::x);
  const bool need_w = ctx->needs_input_grad(scale_shift_grad_slot::cfg_affine_w);
  const bool need_b = ctx->needs_input_grad(scale_shift_grad_slot::cfg_affine_b);
  return {
      /*x=*/need_x ? g.mul(w) : at::Tensor(),
      /*cfg=*/
      {/*affine=*/{/*w=*/need_w ? g.mul(x) : at::Tensor(), /*b=*/need_b ? g : at::Tensor()}},
  };
}

}  // namespace jit_demo
