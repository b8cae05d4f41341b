// Reference kernels of mutation.ops.yaml.
//
// Records are frozen: kernels receive them by const reference. Mutation goes
// through the tensors they hold (at::Tensor's in-place methods are const),
// and the schema's alias annotations tell torch which ones change.
#include "mutation.ops.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>

namespace optim {

// Adam (Kingma & Ba), with L2 weight decay folded into the gradient as
// torch.optim.Adam does.
void kernels::adam_step_(
    const at::Tensor& grad,
    const AdamState& state,
    const AdamHyper& hp,
    int64_t step) {
  TORCH_CHECK(step >= 1, "optim::adam_step_: step counts from 1, got ", step);
  const at::Tensor g = hp.weight_decay != 0.0 ? grad + hp.weight_decay * state.param : grad;
  state.exp_avg.lerp_(g, 1.0 - hp.beta1);
  state.exp_avg_sq.mul_(hp.beta2).addcmul_(g, g, 1.0 - hp.beta2);
  const double bias_correction1 = 1.0 - std::pow(hp.beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(hp.beta2, static_cast<double>(step));
  const at::Tensor denom = (state.exp_avg_sq / bias_correction2).sqrt_().add_(hp.eps);
  state.param.addcdiv_(state.exp_avg, denom, -hp.lr / bias_correction1);
}

void kernels::ema_update_(const at::Tensor& value, const Ema& ema) {
  ema.average.lerp_(value, 1.0 - ema.decay);
}

void kernels::batch_stats_update_(const at::Tensor& x, const BatchStats& stats) {
  stats.mean.lerp_(x.mean(0), stats.momentum);
  stats.var.lerp_(x.var(0, /*unbiased=*/true), stats.momentum);
}

// ---------------------------------------------------------------------------
// l2_penalty: lambda * sum(w^2). `p` has no tensor field, so l2_penalty_grads
// has a member for `w` only.
// ---------------------------------------------------------------------------

at::Tensor kernels::l2_penalty(const at::Tensor& w, const Penalty& p) {
  return w.pow(2).sum() * p.lambda_;
}

at::Tensor kernels::l2_penalty_meta(const at::Tensor& w, const Penalty& /*p*/) {
  return at::empty({}, w.options());
}

void kernels::l2_penalty_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& w,
    const Penalty& p,
    const at::Tensor& /*output*/) {
  ctx->save_for_backward({w});
  ctx->saved_data["lambda"] = p.lambda_;
}

l2_penalty_grads kernels::l2_penalty_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_output) {
  const at::Tensor w = ctx->get_saved_variables()[0];
  return {/*w=*/grad_output * w * (2.0 * ctx->saved_data["lambda"].toDouble())};
}

}  // namespace optim
