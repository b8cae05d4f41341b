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

// Optional records: each absent one skips its step. All tensors have x's shape.
at::Tensor kernels::affine(
    const at::Tensor& x,
    const c10::optional<Inner>& post,
    const c10::optional<Gate>& gate) {
  at::Tensor y = post ? x * post->w + post->b : x.clone();
  if (gate) {
    y = y * gate->g;
    if (gate->bias) y = y * gate->bias->w + gate->bias->b;
  }
  return y;
}

void kernels::affine_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& x,
    const c10::optional<Inner>& post,
    const c10::optional<Gate>& gate,
    const at::Tensor& /*output*/) {
  // Undefined tensors for absent records (saved and restored as undefined).
  ctx->save_for_backward(
      {x,
       post ? post->w : at::Tensor(),
       post ? post->b : at::Tensor(),
       gate ? gate->g : at::Tensor(),
       gate && gate->bias ? gate->bias->w : at::Tensor()});
}

affine_grads kernels::affine_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_output) {
  const auto saved = ctx->get_saved_variables();
  const at::Tensor &x = saved[0], &w = saved[1], &b = saved[2], &g = saved[3], &w2 = saved[4];
  const at::Tensor y1 = w.defined() ? x * w + b : x;  // after post
  const at::Tensor y2 = g.defined() ? y1 * g : y1;    // after the gate
  // Each stage's gradients; an absent record's stay undefined (no gradient).
  at::Tensor d = grad_output;  // d(out)/d(current stage), from the last stage back
  InnerGrad bias_grad{at::Tensor(), at::Tensor()}, post_grad{at::Tensor(), at::Tensor()};
  at::Tensor gate_grad;
  if (w2.defined()) {
    bias_grad = {/*w=*/d * y2, /*b=*/d};
    d = d * w2;
  }
  if (g.defined()) {
    gate_grad = d * y1;
    d = d * g;
  }
  if (w.defined()) {
    post_grad = {/*w=*/d * x, /*b=*/d};
    d = d * w;
  }
  return {/*x=*/d, /*post=*/std::move(post_grad), /*gate=*/{gate_grad, std::move(bias_grad)}};
}

// A record return: the kernel returns Moments; the generated adapter hands
// torch its leaves as the outputs stats__mean and stats__var.
std::tuple<at::Tensor, Moments> kernels::moments(const at::Tensor& x) {
  at::Tensor mean = x.mean(-1, /*keepdim=*/true);
  at::Tensor centered = x - mean;
  at::Tensor var = (centered * centered).mean(-1, /*keepdim=*/true);
  return {centered, Moments{mean, var}};
}

std::tuple<at::Tensor, Moments> kernels::moments_meta(const at::Tensor& x) {
  std::vector<c10::SymInt> sizes = x.sym_sizes().vec();  // symbolic: torch.compile(dynamic=True)
  sizes.back() = 1;
  return {
      at::empty_like(x),
      Moments{at::empty_symint(sizes, x.options()), at::empty_symint(sizes, x.options())}};
}

void kernels::moments_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& /*x*/,
    const at::Tensor& centered,
    const Moments& /*stats*/) {
  ctx->save_for_backward({centered});
}

// The output gradients come in record form: grad_stats.mean, grad_stats.var.
moments_grads kernels::moments_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_centered,
    const MomentsGrad& grad_stats) {
  const at::Tensor centered = ctx->get_saved_variables()[0];
  // Symbolic, so that torch.compile(dynamic=True) does not specialize on it.
  const c10::Scalar n = centered.sym_size(-1);
  // centered = x - mean: its gradient loses its mean; mean spreads 1/n to
  // each element; var = mean(centered^2) gives 2 * centered / n.
  at::Tensor grad_x = grad_centered - grad_centered.mean(-1, /*keepdim=*/true);
  if (grad_stats.mean.defined()) grad_x = grad_x + grad_stats.mean.tensor() / n;
  if (grad_stats.var.defined()) grad_x = grad_x + grad_stats.var.tensor() * 2.0 * centered / n;
  return {/*x=*/grad_x};
}

Extent kernels::extent(const at::Tensor& x) {
  return {x.abs().max(), x.dim()};
}

Extent kernels::extent_meta(const at::Tensor& x) {
  return {at::empty({}, x.options()), x.dim()};  // static under torch.compile(dynamic=True)
}

}  // namespace weights
