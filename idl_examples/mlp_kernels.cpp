// Reference kernels of mlp.ops.yaml (records Linear, Lora and enum
// Activation come from common.ops.yaml, in C++ namespace nn).
//
//   linear(x, l) = x @ l.weight^T + l.bias + l.lora.scale * (x @ l.lora.a^T) @ l.lora.b^T
//   mlp(x, cfg)  = cfg.residual_scale * x + linear(act(linear(x, cfg.fc1)), cfg.fc2)
//
// Demonstrates: nested records two and three levels deep, optional tensors
// (bias, LoRA factors) that are None and then get no gradient, a backward
// that fills nested grad records (MlpCfgGrad{LinearGrad{..., LoraGrad}}),
// saving a record's tensors in setup_context and rebuilding it in backward,
// and a record op (linear) called from another record op's kernel (mlp).
#include "mlp.ops.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <utility>

namespace nn::mlp {
namespace {

c10::optional<at::Tensor> optional_tensor(const at::Tensor& t) {
  return t.defined() ? c10::optional<at::Tensor>(t) : c10::nullopt;
}

void check_lora(const Linear& l) {
  TORCH_CHECK_VALUE(
      l.lora.a.has_value() == l.lora.b.has_value(),
      "nn::linear: lora.a and lora.b must be given together (or neither)");
}

at::Tensor linear_forward(const at::Tensor& x, const Linear& l) {
  check_lora(l);
  at::Tensor y = at::matmul(x, l.weight.t());
  if (l.bias) y = y + *l.bias;
  if (l.lora.a) y = y + at::matmul(at::matmul(x, l.lora.a->t()), l.lora.b->t()) * l.lora.scale;
  return y;
}

/// The gradients of linear_forward(x, l) given gy (a vector-Jacobian product): for x and for l's tensors.
std::pair<at::Tensor, LinearGrad> linear_vjp(
    const at::Tensor& x,
    const Linear& l,
    const at::Tensor& gy) {
  // Symbolic sizes: the backward also runs under torch.compile(dynamic=True).
  const at::Tensor x2 = x.reshape_symint({-1, x.sym_size(-1)});
  const at::Tensor gy2 = gy.reshape_symint({-1, gy.sym_size(-1)});
  at::Tensor gx = at::matmul(gy, l.weight);
  at::Tensor ga, gb;
  if (l.lora.a) {
    const at::Tensor& a = *l.lora.a;  // [r, in]
    const at::Tensor& b = *l.lora.b;  // [out, r]
    gx = gx + at::matmul(at::matmul(gy, b), a) * l.lora.scale;
    ga = at::matmul(at::matmul(gy2, b).t(), x2) * l.lora.scale;
    gb = at::matmul(gy2.t(), at::matmul(x2, a.t())) * l.lora.scale;
  }
  return {
      std::move(gx),
      LinearGrad{
          /*weight=*/at::matmul(gy2.t(), x2),
          /*bias=*/l.bias ? gy2.sum(0) : at::Tensor(),
          /*lora=*/{/*a=*/std::move(ga), /*b=*/std::move(gb)}}};
}

/// A Linear's tensors for ctx->save_for_backward (undefined for None).
std::vector<at::Tensor> tensors_of(const Linear& l) {
  return {
      l.weight,
      l.bias.value_or(at::Tensor()),
      l.lora.a.value_or(at::Tensor()),
      l.lora.b.value_or(at::Tensor())};
}

/// The Linear whose tensors_of() start at saved[first].
Linear linear_from(const std::vector<at::Tensor>& saved, size_t first, double lora_scale) {
  Linear l;
  l.weight = saved[first];
  l.bias = optional_tensor(saved[first + 1]);
  l.lora.a = optional_tensor(saved[first + 2]);
  l.lora.b = optional_tensor(saved[first + 3]);
  l.lora.scale = lora_scale;
  return l;
}

at::Tensor activate(const at::Tensor& x, Activation act) {
  switch (act) {
    case Activation::relu:
      return at::relu(x);
    case Activation::gelu:
      return at::gelu(x);
    case Activation::silu:
      return at::silu(x);
  }
  TORCH_CHECK(false, "nn::mlp: unknown activation");
}

at::Tensor activate_backward(const at::Tensor& grad, const at::Tensor& x, Activation act) {
  switch (act) {
    case Activation::relu:
      return grad * (x > 0);
    case Activation::gelu:
      return at::gelu_backward(grad, x);
    case Activation::silu:
      return at::silu_backward(grad, x);
  }
  TORCH_CHECK(false, "nn::mlp: unknown activation");
}

}  // namespace

// ---------------------------------------------------------------------------
// linear
// ---------------------------------------------------------------------------

at::Tensor kernels::linear(const at::Tensor& x, const Linear& layer) {
  return linear_forward(x, layer);
}

at::Tensor kernels::linear_meta(const at::Tensor& x, const Linear& layer) {
  std::vector<c10::SymInt> sizes = x.sym_sizes().vec();  // symbolic under dynamic shapes
  sizes.back() = layer.weight.sym_size(0);
  return at::empty_symint(sizes, x.options());
}

void kernels::linear_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& x,
    const Linear& layer,
    const at::Tensor& /*output*/) {
  std::vector<at::Tensor> saved = tensors_of(layer);
  saved.push_back(x);
  ctx->save_for_backward(saved);
  ctx->saved_data["lora_scale"] = layer.lora.scale;
}

linear_grads kernels::linear_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_output) {
  const auto saved = ctx->get_saved_variables();
  const Linear layer = linear_from(saved, 0, ctx->saved_data["lora_scale"].toDouble());
  auto [grad_x, grad_layer] = linear_vjp(saved[4], layer, grad_output);
  return {/*x=*/std::move(grad_x), /*layer=*/std::move(grad_layer)};
}

// ---------------------------------------------------------------------------
// mlp: three levels deep (cfg.fc1.lora.a)
// ---------------------------------------------------------------------------

at::Tensor kernels::mlp(const at::Tensor& x, const MlpCfg& cfg) {
  // nn::mlp::linear is the generated call API (a dispatcher call), not kernels::linear.
  const at::Tensor h = activate(nn::mlp::linear(x, cfg.fc1), cfg.act);
  return nn::mlp::linear(h, cfg.fc2) + x * cfg.residual_scale;
}

void kernels::mlp_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& x,
    const MlpCfg& cfg,
    const at::Tensor& /*output*/) {
  std::vector<at::Tensor> saved = tensors_of(cfg.fc1);
  for (at::Tensor& t : tensors_of(cfg.fc2)) saved.push_back(std::move(t));
  saved.push_back(x);
  ctx->save_for_backward(saved);
  ctx->saved_data["fc1.lora.scale"] = cfg.fc1.lora.scale;
  ctx->saved_data["fc2.lora.scale"] = cfg.fc2.lora.scale;
  ctx->saved_data["act"] = static_cast<int64_t>(cfg.act);
  ctx->saved_data["residual_scale"] = cfg.residual_scale;
}

mlp_grads kernels::mlp_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_output) {
  const auto saved = ctx->get_saved_variables();
  const Linear fc1 = linear_from(saved, 0, ctx->saved_data["fc1.lora.scale"].toDouble());
  const Linear fc2 = linear_from(saved, 4, ctx->saved_data["fc2.lora.scale"].toDouble());
  const at::Tensor& x = saved[8];
  const auto act = static_cast<Activation>(ctx->saved_data["act"].toInt());

  const at::Tensor pre = linear_forward(x, fc1);
  auto [grad_h, grad_fc2] = linear_vjp(activate(pre, act), fc2, grad_output);
  auto [grad_x, grad_fc1] = linear_vjp(x, fc1, activate_backward(grad_h, pre, act));
  grad_x = grad_x + grad_output * ctx->saved_data["residual_scale"].toDouble();
  return {
      /*x=*/std::move(grad_x),
      /*cfg=*/{/*fc1=*/std::move(grad_fc1), /*fc2=*/std::move(grad_fc2)}};
}

}  // namespace nn::mlp
