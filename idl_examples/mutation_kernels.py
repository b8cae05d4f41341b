"""Python kernels of mutation.ops.yaml (see mutation_kernels.cpp).

Records are frozen: kernels receive them as frozen dataclasses. Mutation goes
through the tensors they hold (in-place torch ops), and the schema's alias
annotations (`Tensor(a!)`, from the IDL's `mutates:`, what torch.library
calls mutates_args) tell torch which ones change. Such kernels return None.
"""

import mutation_ops as O


@O.adam_step_.register_kernel(None)
def adam_step_(grad, state, hp, step):
    """Adam (Kingma & Ba), with L2 weight decay folded into the gradient as torch.optim.Adam does."""
    if step < 1:
        raise RuntimeError(f"optim::adam_step_: step counts from 1, got {step}")
    g = grad + hp.weight_decay * state.param if hp.weight_decay != 0.0 else grad
    state.exp_avg.lerp_(g, 1.0 - hp.beta1)
    state.exp_avg_sq.mul_(hp.beta2).addcmul_(g, g, value=1.0 - hp.beta2)
    bias_correction1 = 1.0 - hp.beta1**step
    bias_correction2 = 1.0 - hp.beta2**step
    denom = (state.exp_avg_sq / bias_correction2).sqrt_().add_(hp.eps)
    state.param.addcdiv_(state.exp_avg, denom, value=-hp.lr / bias_correction1)


@O.ema_update_.register_kernel(None)
def ema_update_(value, ema):
    ema.average.lerp_(value, 1.0 - ema.decay)


@O.batch_stats_update_.register_kernel(None)
def batch_stats_update_(x, stats):
    stats.mean.lerp_(x.mean(0), stats.momentum)
    stats.var.lerp_(x.var(0, unbiased=True), stats.momentum)


# l2_penalty: lambda * sum(w^2). `p` has no tensor field: its gradient is None.


@O.l2_penalty.register_kernel(None)
def l2_penalty(w, p):
    return w.pow(2).sum() * p.lambda_


@O.l2_penalty.register_fake
def l2_penalty_fake(w, p):
    return w.new_empty(())


def l2_penalty_setup_context(ctx, inputs, output):
    w, p = inputs
    ctx.save_for_backward(w)
    ctx.lambda_ = p.lambda_


def l2_penalty_backward(ctx, grad_output):
    (w,) = ctx.saved_tensors
    return grad_output * w * (2.0 * ctx.lambda_), None


O.l2_penalty.register_autograd(l2_penalty_backward, setup_context=l2_penalty_setup_context)
