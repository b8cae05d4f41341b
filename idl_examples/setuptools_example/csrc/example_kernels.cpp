// Kernels of idl/example.ops.yaml, built by setup.py into structop_example._ops.
//
//   layer(x, cfg) = act(x * cfg.lin.weight + cfg.lin.bias)
//
// with act = relu or identity (cfg.act) and an optional bias.
#include "example.ops.h"

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/custom_function.h>

namespace st_example {

namespace {

at::Tensor pre_activation(const at::Tensor& x, const Linear1d& lin) {
  at::Tensor y = x.mul(lin.weight);
  return lin.bias ? y.add(*lin.bias) : y;
}

}  // namespace

at::Tensor kernels::layer(const at::Tensor& x, const LayerCfg& cfg) {
  at::Tensor y = pre_activation(x, cfg.lin);
  return cfg.act == Activation::relu ? y.relu() : y;
}

void kernels::layer_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& x,
    const LayerCfg& cfg,
    const at::Tensor& /*output*/) {
  // Where the activation passes the gradient: 1 (identity) or pre > 0 (relu).
  at::Tensor pass = cfg.act == Activation::relu
                        ? pre_activation(x, cfg.lin).gt(0).to(x.scalar_type())
                        : at::Tensor();
  ctx->save_for_backward({x, cfg.lin.weight, pass});
}

layer_grads kernels::layer_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_output) {
  const auto saved = ctx->get_saved_variables();
  const at::Tensor& x = saved[0];
  const at::Tensor& weight = saved[1];
  const at::Tensor g = saved[2].defined() ? grad_output.mul(saved[2]) : grad_output;
  const bool need_bias = ctx->needs_input_grad(layer_grad_slot::cfg_lin_bias);
  return {
      /*x=*/g.mul(weight),
      /*cfg=*/{/*lin=*/{/*weight=*/g.mul(x), /*bias=*/need_bias ? g : at::Tensor()}},
  };
}

}  // namespace st_example
