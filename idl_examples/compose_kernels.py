"""Python kernels of compose.ops.yaml (see compose_kernels.cpp): kernels that
call other structop ops.

A kernel calls another op through its generated Python function
(compose_ops.axpy, rms_norm_ops.rms_norm: records in, a dispatcher call
out), like any torch op. Forward kernels run below autograd, so the calls
they make record no history of their own; a backward calling an op
(mul's) records history only when autograd runs it with create_graph=True,
which makes the gradient differentiable again.
"""

import compose_ops as C
import rms_norm_ops as N


@C.axpy.register_kernel(None)
def axpy(x, y, alpha):
    return y.add(x, alpha=alpha)


def axpy_setup_context(ctx, inputs, output):
    ctx.alpha = inputs[2]


def axpy_backward(ctx, grad_output):
    return grad_output * ctx.alpha, grad_output, None


C.axpy.register_autograd(axpy_backward, setup_context=axpy_setup_context)


@C.mul.register_kernel(None)
def mul(a, b):
    return a * b


def mul_setup_context(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def mul_backward(ctx, grad_output):
    """Calls compose::mul (this op) through its Python function."""
    a, b = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad
    return C.mul(grad_output, b) if need_a else None, C.mul(grad_output, a) if need_b else None


C.mul.register_autograd(mul_backward, setup_context=mul_setup_context)


@C.residual_norm.register_kernel(None)
def residual_norm(x, residual, weight, eps):
    """A plain op (axpy) and a record op (nn::rms_norm) inside a plain op."""
    h = C.axpy(x, residual, alpha=1.0)
    return N.rms_norm(h, N.RmsNormCfg(weight=weight, eps=eps))


@C.clamp_pair.register_kernel(None)
def clamp_pair(a, lo, hi, b):
    return a.clamp(lo, hi), b.clamp(lo, hi)


@C.lerp.register_kernel(None)
def lerp(from_, to, weight):
    return from_ + (to - from_) * weight


def lerp_setup_context(ctx, inputs, output):
    ctx.weight = inputs[2]


def lerp_backward(ctx, grad_output):
    return grad_output * (1.0 - ctx.weight), grad_output * ctx.weight, None


C.lerp.register_autograd(lerp_backward, setup_context=lerp_setup_context)
