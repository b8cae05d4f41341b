// Reference kernels of schedule.ops.yaml: what a user writes into the stubs
// structopc emits (schedule.ops.stubs.cpp).
//
// Demonstrates: dynamic numbers (structop::Dynamic<double>, <int64_t>),
// read as numbers by the forward kernels, and saved as their 0-dim tensors
// (tensor()) by setup_context, so that under torch.compile the backward
// follows each call's value instead of the one it was traced with.
#include "schedule.ops.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

namespace schedule {

// gain * (x - sigma * eps) / (step + 1)
at::Tensor kernels::denoise(const at::Tensor& x, const at::Tensor& eps, const Noise& noise) {
  const double sigma = noise.sigma;
  const int64_t step = noise.step;
  return (x - eps * sigma) * (noise.gain / static_cast<double>(step + 1));
}

void kernels::denoise_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& /*x*/,
    const at::Tensor& /*eps*/,
    const Noise& noise,
    const at::Tensor& /*output*/) {
  ctx->saved_data["sigma"] = noise.sigma.tensor();  // the tensors: not known while traced
  ctx->saved_data["step"] = noise.step.tensor();
  ctx->saved_data["gain"] = noise.gain;  // a constant
}

denoise_grads kernels::denoise_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_output) {
  const at::Tensor sigma = ctx->saved_data["sigma"].toTensor();
  const at::Tensor step = ctx->saved_data["step"].toTensor();
  const at::Tensor g = grad_output * ctx->saved_data["gain"].toDouble() / (step + 1);
  return {/*x=*/g, /*eps=*/-g * sigma};
}

at::Tensor kernels::scale(const at::Tensor& x, structop::Dynamic<double> factor) {
  return x * factor;
}

void kernels::scale_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& /*x*/,
    structop::Dynamic<double> factor,
    const at::Tensor& /*output*/) {
  ctx->saved_data["factor"] = factor.tensor();
}

scale_grads kernels::scale_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_output) {
  return {/*x=*/grad_output * ctx->saved_data["factor"].toTensor()};
}

}  // namespace schedule
