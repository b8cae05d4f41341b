"""Python kernels of schedule.ops.yaml: the ops of schedule_kernels.cpp,
written in Python against the generated schedule_ops.py. Importing this
module registers them.

Demonstrates: dynamic numbers, which a kernel gets as numbers (the 0-dim
tensors while torch traces the op); setup_context keeps them as they come,
so that under torch.compile the backward follows each call's value.
"""

import schedule_ops as S


@S.denoise.register_kernel(None)
def denoise(x, eps, noise):
    """gain * (x - sigma * eps) / (step + 1)"""
    return (x - eps * noise.sigma) * (noise.gain / (noise.step + 1))


def denoise_setup_context(ctx, inputs, output):
    _, _, noise = inputs
    ctx.sigma, ctx.step, ctx.gain = noise.sigma, noise.step, noise.gain


def denoise_backward(ctx, grad_output):
    g = grad_output * ctx.gain / (ctx.step + 1)
    return g, -g * ctx.sigma, None


S.denoise.register_autograd(denoise_backward, setup_context=denoise_setup_context)


@S.scale.register_kernel(None)
def scale(x, factor):
    return x * factor


def scale_setup_context(ctx, inputs, output):
    ctx.factor = inputs[1]


def scale_backward(ctx, grad_output):
    return grad_output * ctx.factor, None


S.scale.register_autograd(scale_backward, setup_context=scale_setup_context)
