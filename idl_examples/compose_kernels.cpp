// Reference kernels of compose.ops.yaml: kernels that call generated ops.
//
// A kernel calls another op through its C++ call API (compose::axpy,
// nn::norm::rms_norm), which goes through the dispatcher like any torch op.
// Forward kernels run below autograd, so the calls they make record no
// history of their own; a backward calling an op (mul_backward) records
// history only when the engine runs it with create_graph=True, which is what
// makes the gradient differentiable again.
#include "compose.ops.h"
#include "rms_norm.ops.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

namespace compose {

// ---------------------------------------------------------------------------
// axpy: alpha * x + y
// ---------------------------------------------------------------------------

at::Tensor kernels::axpy(const at::Tensor& x, const at::Tensor& y, double alpha) {
  return at::add(y, x, alpha);
}

void kernels::axpy_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& /*x*/,
    const at::Tensor& /*y*/,
    double alpha,
    const at::Tensor& /*output*/) {
  ctx->saved_data["alpha"] = alpha;
}

axpy_grads kernels::axpy_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_output) {
  return {/*x=*/grad_output * ctx->saved_data["alpha"].toDouble(), /*y=*/grad_output};
}

// ---------------------------------------------------------------------------
// mul: a * b; the backward calls compose::mul (this op) through its call API
// ---------------------------------------------------------------------------

at::Tensor kernels::mul(const at::Tensor& a, const at::Tensor& b) {
  return a * b;
}

void kernels::mul_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& a,
    const at::Tensor& b,
    const at::Tensor& /*output*/) {
  ctx->save_for_backward({a, b});
}

mul_grads kernels::mul_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_output) {
  const auto saved = ctx->get_saved_variables();
  const at::Tensor& a = saved[0];
  const at::Tensor& b = saved[1];
  return {
      /*a=*/ctx->needs_input_grad(mul_grad_slot::a) ? compose::mul(grad_output, b) : at::Tensor(),
      /*b=*/ctx->needs_input_grad(mul_grad_slot::b) ? compose::mul(grad_output, a) : at::Tensor(),
  };
}

// ---------------------------------------------------------------------------
// residual_norm: a plain op (axpy) and a record op (nn::rms_norm) inside a plain op
// ---------------------------------------------------------------------------

at::Tensor kernels::residual_norm(
    const at::Tensor& x,
    const at::Tensor& residual,
    const at::Tensor& weight,
    double eps) {
  const at::Tensor h = compose::axpy(x, residual, /*alpha=*/1.0);
  nn::norm::RmsNormCfg cfg;
  cfg.weight = weight;
  cfg.eps = eps;
  return nn::norm::rms_norm(h, cfg);
}

// ---------------------------------------------------------------------------
// clamp_pair, lerp
// ---------------------------------------------------------------------------

std::tuple<at::Tensor, at::Tensor> kernels::clamp_pair(
    const at::Tensor& a,
    double lo,
    double hi,
    const at::Tensor& b) {
  return {a.clamp(lo, hi), b.clamp(lo, hi)};
}

at::Tensor kernels::lerp(const at::Tensor& from_, const at::Tensor& to, double weight) {
  return from_ + (to - from_) * weight;
}

void kernels::lerp_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& /*from_*/,
    const at::Tensor& /*to*/,
    double weight,
    const at::Tensor& /*output*/) {
  ctx->saved_data["weight"] = weight;
}

lerp_grads kernels::lerp_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_output) {
  const double weight = ctx->saved_data["weight"].toDouble();
  return {/*from_=*/grad_output * (1.0 - weight), /*to=*/grad_output * weight};
}

}  // namespace compose
