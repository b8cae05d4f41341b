// Reference kernels of rms_norm.ops.yaml.
//
//   y = x * r * weight,  r = 1 / sqrt(mean(x^2, -1) + eps)
//   dy/dx: gx = r * (gn - x * r^2 * mean(gn * x, -1)),  gn = gy * weight
//   gweight = sum over the leading dims of gy * x * r
//
// Demonstrates: one kernel per dispatch key (rms_norm_cpu here, rms_norm_cuda
// in rms_norm_kernels.cu), an optional tensor field (cfg.weight) that gets a
// gradient only when it is set, and an overload (rms_norm.gated -> C++
// rms_norm_gated) whose grads record has x, cfg and gate in declaration order.
#include "rms_norm.ops.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

namespace nn::norm {
namespace {

at::Tensor inv_rms(const at::Tensor& x, double eps) {
  return at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps);
}

at::Tensor normalize(const at::Tensor& x, const RmsNormCfg& cfg) {
  const at::Tensor y = x * inv_rms(x, cfg.eps);
  return cfg.weight ? y * *cfg.weight : y;
}

/// Gradients of normalize(x, {weight, eps}) given gy and r = inv_rms(x, eps);
/// weight may be undefined.
struct NormGrads {
  at::Tensor x;
  at::Tensor weight;
};

NormGrads normalize_backward(
    const at::Tensor& x,
    const at::Tensor& r,
    const at::Tensor& weight,
    const at::Tensor& gy,
    bool need_x,
    bool need_weight) {
  NormGrads grads;
  if (need_x) {
    const at::Tensor gn = weight.defined() ? gy * weight : gy;
    grads.x = r * (gn - x * r.pow(2) * (gn * x).mean(-1, /*keepdim=*/true));
  }
  // sym_sizes: the backward also runs under torch.compile's symbolic shapes.
  if (need_weight && weight.defined()) {
    grads.weight = (gy * x * r).sum_to_size_symint(weight.sym_sizes());
  }
  return grads;
}

void save_inputs(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& x,
    const RmsNormCfg& cfg,
    const at::Tensor& gate) {
  ctx->save_for_backward({x, cfg.weight.value_or(at::Tensor()), gate});
  ctx->saved_data["eps"] = cfg.eps;
}

}  // namespace

// ---------------------------------------------------------------------------
// rms_norm: one kernel per dispatch key
// ---------------------------------------------------------------------------

at::Tensor kernels::rms_norm_cpu(const at::Tensor& x, const RmsNormCfg& cfg) {
  return normalize(x, cfg);
}

// The CUDA kernel is rms_norm_kernels.cu, compiled by nvcc. Where the build
// found no nvcc, this version with ATen ops serves the CUDA key instead (it
// runs on CUDA tensors as it is; reduced precision accumulates in float32).
#if !STRUCTOP_EXAMPLES_CUDA_KERNELS
at::Tensor kernels::rms_norm_cuda(const at::Tensor& x, const RmsNormCfg& cfg) {
  if (x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16) {
    return normalize(x.to(at::kFloat), cfg).to(x.scalar_type());
  }
  return normalize(x, cfg);
}
#endif

void kernels::rms_norm_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& x,
    const RmsNormCfg& cfg,
    const at::Tensor& /*output*/) {
  save_inputs(ctx, x, cfg, at::Tensor());
}

rms_norm_grads kernels::rms_norm_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_output) {
  const auto saved = ctx->get_saved_variables();
  const at::Tensor& x = saved[0];
  NormGrads g = normalize_backward(
      x,
      inv_rms(x, ctx->saved_data["eps"].toDouble()),
      saved[1],
      grad_output,
      ctx->needs_input_grad(rms_norm_grad_slot::x),
      ctx->needs_input_grad(rms_norm_grad_slot::cfg_weight));
  return {/*x=*/std::move(g.x), /*cfg=*/{/*weight=*/std::move(g.weight)}};
}

// ---------------------------------------------------------------------------
// rms_norm.gated: y = normalize(x, cfg) * silu(gate)
// ---------------------------------------------------------------------------

at::Tensor kernels::rms_norm_gated(
    const at::Tensor& x,
    const RmsNormCfg& cfg,
    const at::Tensor& gate) {
  return normalize(x, cfg) * at::silu(gate);
}

void kernels::rms_norm_gated_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& x,
    const RmsNormCfg& cfg,
    const at::Tensor& gate,
    const at::Tensor& /*output*/) {
  save_inputs(ctx, x, cfg, gate);
}

rms_norm_gated_grads kernels::rms_norm_gated_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_output) {
  const auto saved = ctx->get_saved_variables();
  const at::Tensor& x = saved[0];
  const at::Tensor& weight = saved[1];
  const at::Tensor& gate = saved[2];
  const at::Tensor r = inv_rms(x, ctx->saved_data["eps"].toDouble());
  NormGrads g = normalize_backward(
      x,
      r,
      weight,
      grad_output * at::silu(gate),
      ctx->needs_input_grad(rms_norm_gated_grad_slot::x),
      ctx->needs_input_grad(rms_norm_gated_grad_slot::cfg_weight));
  at::Tensor grad_gate;
  if (ctx->needs_input_grad(rms_norm_gated_grad_slot::gate)) {
    const at::Tensor n = weight.defined() ? x * r * weight : x * r;  // normalize(x, cfg)
    grad_gate = at::silu_backward(grad_output * n, gate);
  }
  return {
      /*x=*/std::move(g.x),
      /*cfg=*/{/*weight=*/std::move(g.weight)},
      /*gate=*/std::move(grad_gate)};
}

}  // namespace nn::norm
