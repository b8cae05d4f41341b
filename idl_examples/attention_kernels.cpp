// Reference kernels of attention.ops.yaml (plain ATen, O(L^2) memory; a
// fused kernel would replace them without touching the generated code).
//
// Forward, per batch and head:
//   s      = scale * q @ k^T
//   s      = softcap * tanh(s / softcap)                  (if cfg.softcap)
//   logits = s + bias - slope[h] * |i - j|                (bias, cfg.alibi_slopes if given)
//   logits = -inf where cfg.mask hides key j from query i
//   lse    = logsumexp(logits, -1),  p = exp(logits - lse),  out = p @ v
// Backward, given gout and glse:
//   gv = p^T @ gout,  gp = gout @ v^T
//   gl = p * (gp - rowsum(gp * p)) + glse * p             (gradient of the logits)
//   gbias = gl summed to bias's shape,  gslope[h] = -sum(gl * |i - j|)
//   gs = gl * (1 - tanh^2)  (softcap),  gq = scale * gs @ k,  gk = scale * gs^T @ q
//
// Demonstrates: reading an enum and optional scalars from a record, a
// custom meta kernel, two outputs with a gradient each, a gradient for an
// optional tensor inside a record (cfg.alibi_slopes), and rebuilding the
// record in backward from what setup_context saved.
#include "attention.ops.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <limits>

namespace attention {
namespace {

double resolved_scale(const AttnCfg& cfg, const at::Tensor& q) {
  if (cfg.scale) return *cfg.scale;
  // setup_context also runs while torch.compile traces with symbolic shapes:
  // guard on the head dimension only (size() would specialize every dimension).
  return 1.0 / std::sqrt(static_cast<double>(q.sym_size(-1).guard_int(__FILE__, __LINE__)));
}

/// |query position - key position| as [Lq, Lk]; query i sits at i + Lk - Lq.
/// Lengths are SymInts: the backward also runs while torch.compile traces it
/// with symbolic shapes, where size() would specialize them.
at::Tensor distance(
    const c10::SymInt& lq,
    const c10::SymInt& lk,
    const at::TensorOptions& options) {
  const at::Tensor qpos = at::arange(c10::Scalar(lq), options).unsqueeze(1) + c10::Scalar(lk - lq);
  const at::Tensor kpos = at::arange(c10::Scalar(lk), options).unsqueeze(0);
  return qpos - kpos;  // signed: > 0 for keys before the query
}

/// True where cfg.mask hides the key from the query ([Lq, Lk]).
at::Tensor hidden(const at::Tensor& signed_distance, const AttnCfg& cfg) {
  switch (cfg.mask) {
    case MaskMode::none:
      return at::zeros_like(signed_distance, at::kBool);
    case MaskMode::causal:
      return signed_distance < 0;
    case MaskMode::sliding_window:
      return (signed_distance < 0).logical_or(signed_distance >= static_cast<double>(cfg.window));
  }
  TORCH_CHECK(false, "attention: unknown mask mode");
}

struct Logits {
  at::Tensor logits;    // [B, H, Lq, Lk], -inf where hidden
  at::Tensor tanh;      // tanh(s / softcap), when cfg.softcap is set
  at::Tensor distance;  // |i - j|, [Lq, Lk]
};

Logits compute_logits(
    const at::Tensor& q,
    const at::Tensor& k,
    const AttnCfg& cfg,
    const c10::optional<at::Tensor>& bias) {
  Logits l;
  at::Tensor s = at::matmul(q, k.transpose(-2, -1)) * resolved_scale(cfg, q);
  if (cfg.softcap) {
    l.tanh = at::tanh(s / *cfg.softcap);
    s = l.tanh * *cfg.softcap;
  }
  if (bias) s = s + *bias;
  const at::Tensor d = distance(q.sym_size(-2), k.sym_size(-2), q.options());
  l.distance = d.abs();
  if (cfg.alibi_slopes) s = s - cfg.alibi_slopes->view({-1, 1, 1}) * l.distance;
  l.logits = s.masked_fill(hidden(d, cfg), -std::numeric_limits<double>::infinity());
  return l;
}

}  // namespace

// ---------------------------------------------------------------------------
// attention
// ---------------------------------------------------------------------------

std::tuple<at::Tensor, at::Tensor> kernels::attention(
    const at::Tensor& q,
    const at::Tensor& k,
    const at::Tensor& v,
    const AttnCfg& cfg,
    const c10::optional<at::Tensor>& bias) {
  TORCH_CHECK(
      q.dim() == 4 && k.dim() == 4 && v.dim() == 4,
      "attention: q, k and v must be [B, H, L, D], got ",
      q.sizes(),
      ", ",
      k.sizes(),
      ", ",
      v.sizes());
  const at::Tensor logits = compute_logits(q, k, cfg, bias).logits;
  at::Tensor lse = at::logsumexp(logits, -1);
  at::Tensor out = at::matmul(at::exp(logits - lse.unsqueeze(-1)), v);
  return {std::move(out), std::move(lse)};
}

// out [B, H, Lq, Dv], lse [B, H, Lq]: shapes that no single input has.
std::tuple<at::Tensor, at::Tensor> kernels::attention_meta(
    const at::Tensor& q,
    const at::Tensor& /*k*/,
    const at::Tensor& v,
    const AttnCfg& /*cfg*/,
    const c10::optional<at::Tensor>& /*bias*/) {
  // Symbolic sizes, so that the meta kernel also serves torch.compile(dynamic=True).
  std::vector<c10::SymInt> out_sizes = q.sym_sizes().vec();
  out_sizes.back() = v.sym_size(-1);
  return {
      at::empty_symint(out_sizes, q.options()),
      at::empty_symint(q.sym_sizes().slice(0, 3), q.options())};
}

void kernels::attention_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& q,
    const at::Tensor& k,
    const at::Tensor& v,
    const AttnCfg& cfg,
    const c10::optional<at::Tensor>& bias,
    const at::Tensor& /*out*/,
    const at::Tensor& lse) {
  ctx->save_for_backward(
      {q, k, v, bias.value_or(at::Tensor()), cfg.alibi_slopes.value_or(at::Tensor()), lse});
  ctx->saved_data["scale"] = resolved_scale(cfg, q);
  ctx->saved_data["mask"] = static_cast<int64_t>(cfg.mask);
  ctx->saved_data["window"] = cfg.window;
  ctx->saved_data["softcap"] = cfg.softcap;
}

attention_grads kernels::attention_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_out,
    const at::Tensor& grad_lse) {
  const auto saved = ctx->get_saved_variables();
  const at::Tensor& q = saved[0];
  const at::Tensor& k = saved[1];
  const at::Tensor& v = saved[2];
  const at::Tensor& bias = saved[3];
  const at::Tensor& slopes = saved[4];
  const at::Tensor& lse = saved[5];

  // The record as the forward saw it (a plain struct: fields are assignable).
  AttnCfg cfg;
  cfg.scale = ctx->saved_data["scale"].toDouble();
  cfg.mask = static_cast<MaskMode>(ctx->saved_data["mask"].toInt());
  cfg.window = ctx->saved_data["window"].toInt();
  cfg.softcap = ctx->saved_data["softcap"].toOptional<double>();
  if (slopes.defined()) cfg.alibi_slopes = slopes;

  const Logits l =
      compute_logits(q, k, cfg, bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt);
  const at::Tensor p = at::exp(l.logits - lse.unsqueeze(-1));
  const at::Tensor gp = at::matmul(grad_out, v.transpose(-2, -1));
  const at::Tensor gl = p * (gp - (gp * p).sum(-1, /*keepdim=*/true)) + grad_lse.unsqueeze(-1) * p;
  const at::Tensor gs = cfg.softcap ? gl * (1 - l.tanh * l.tanh) : gl;
  const double scale = *cfg.scale;

  attention_grads grads{
      /*q=*/at::matmul(gs, k) * scale,
      /*k=*/at::matmul(gs.transpose(-2, -1), q) * scale,
      /*v=*/at::matmul(p.transpose(-2, -1), grad_out),
      /*cfg=*/
      {/*alibi_slopes=*/slopes.defined() ? -(gl * l.distance).sum({0, 2, 3}) : at::Tensor()},
      /*bias=*/bias.defined() ? gl.sum_to_size_symint(bias.sym_sizes()) : at::Tensor(),
  };
  return grads;
}

// ---------------------------------------------------------------------------
// rotary: x [..., L, D] -> [x1 * cos - x2 * sin, x1 * sin + x2 * cos] (halves x1, x2)
// ---------------------------------------------------------------------------

namespace {

at::Tensor rotate(const at::Tensor& x, const RotaryCfg& cfg) {
  const int64_t d = x.size(-1);
  TORCH_CHECK(d % 2 == 0, "attention::rotary: the last dimension must be even, got ", d);
  const int64_t half = d / 2;
  const auto f64 = x.options().dtype(at::kDouble);
  const at::Tensor inv_freq = at::pow(
      cfg.theta,
      -at::arange(half, f64) / static_cast<double>(half));
  const at::Tensor pos = at::arange(cfg.offset, cfg.offset + x.size(-2), f64);
  const at::Tensor angle = pos.unsqueeze(1) * inv_freq.unsqueeze(0);  // [L, half]
  const at::Tensor cos = angle.cos().to(x.scalar_type());
  const at::Tensor sin = angle.sin().to(x.scalar_type());
  const at::Tensor x1 = x.narrow(-1, 0, half);
  const at::Tensor x2 = x.narrow(-1, half, half);
  return at::cat({x1 * cos - x2 * sin, x1 * sin + x2 * cos}, -1);
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> kernels::rotary(
    const at::Tensor& q,
    const at::Tensor& k,
    const RotaryCfg& cfg) {
  return {rotate(q, cfg), rotate(k, cfg)};
}

}  // namespace attention
