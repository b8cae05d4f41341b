"""Python kernels of weights.ops.yaml: the ops of weights_kernels.cpp, written
in Python against the generated weights_ops.py. Importing this module
registers them (a process that loads the compiled examples instead must not
import it: an op has one registration).

Demonstrates: a forward kernel reading tensors two records deep
(cfg.inner.w), setup_context saving tensors and a scalar, and a backward
returning the nested grad record (WeightCfgGrad / InnerGrad), computing only
the gradients that are asked for (ctx.needs_input_grad has one entry per
parameter, a WeightCfgGrad of bools for cfg).
"""

import weights_ops as W


@W.op.register_kernel(None)  # every device
def op(x, cfg):
    """out = (x * cfg.inner.w + cfg.inner.b) * cfg.scale; x, w and b have the same shape."""
    return (x * cfg.inner.w + cfg.inner.b) * cfg.scale


def op_setup_context(ctx, inputs, output):
    x, cfg = inputs
    ctx.save_for_backward(x, cfg.inner.w)
    ctx.scale = cfg.scale


def op_backward(ctx, grad_output):
    x, w = ctx.saved_tensors
    g = grad_output * ctx.scale
    need_x, need_cfg = ctx.needs_input_grad
    return (
        g * w if need_x else None,
        W.WeightCfgGrad(
            inner=W.InnerGrad(
                w=g * x if need_cfg.inner.w else None, b=g if need_cfg.inner.b else None
            )
        ),
    )


W.op.register_autograd(op_backward, setup_context=op_setup_context)


@W.affine.register_kernel(None)
def affine(x, post, gate):
    """Optional records: each absent one skips its step. All tensors have x's shape."""
    y = x * post.w + post.b if post is not None else x.clone()
    if gate is not None:
        y = y * gate.g
        if gate.bias is not None:
            y = y * gate.bias.w + gate.bias.b
    return y


def affine_setup_context(ctx, inputs, output):
    x, post, gate = inputs
    ctx.save_for_backward(
        x,
        post.w if post is not None else None,
        post.b if post is not None else None,
        gate.g if gate is not None else None,
        gate.bias.w if gate is not None and gate.bias is not None else None,
    )


def affine_backward(ctx, grad_output):
    x, w, b, g, w2 = ctx.saved_tensors
    y1 = x * w + b if w is not None else x  # after post
    y2 = y1 * g if g is not None else y1  # after the gate
    d = grad_output  # d(out)/d(current stage), from the last stage back
    bias_grad = gate_g = post_grad = None
    if w2 is not None:
        bias_grad = W.InnerGrad(w=d * y2, b=d)
        d = d * w2
    if g is not None:
        gate_g = d * y1
        d = d * g
    if w is not None:
        post_grad = W.InnerGrad(w=d * x, b=d)
        d = d * w
    gate_grad = W.GateGrad(g=gate_g, bias=bias_grad) if g is not None else None
    return d, post_grad, gate_grad


W.affine.register_autograd(affine_backward, setup_context=affine_setup_context)


@W.moments.register_kernel(None)
def moments(x):
    """A record return: the kernel returns a Moments; torch sees its leaves as
    the outputs stats__mean and stats__var."""
    mean = x.mean(-1, keepdim=True)
    centered = x - mean
    return centered, W.Moments(mean=mean, var=(centered * centered).mean(-1, keepdim=True))


@W.moments.register_fake
def moments_fake(x):
    stat = x.new_empty((*x.shape[:-1], 1))
    return x.new_empty(x.shape), W.Moments(mean=stat, var=stat.clone())


def moments_setup_context(ctx, inputs, output):
    centered, stats = output  # record form, as the kernel returned it
    ctx.save_for_backward(centered)


def moments_backward(ctx, grad_centered, grad_stats):
    """grad_stats is a MomentsGrad: the output gradients in record form."""
    (centered,) = ctx.saved_tensors
    n = centered.shape[-1]
    grad_x = grad_centered - grad_centered.mean(-1, keepdim=True)
    return grad_x + grad_stats.mean / n + grad_stats.var * 2.0 * centered / n


W.moments.register_autograd(moments_backward, setup_context=moments_setup_context)


@W.extent.register_kernel(None)
def extent(x):
    return W.Extent(peak=x.abs().max(), dims=x.dim())


@W.extent.register_fake
def extent_fake(x):
    return W.Extent(peak=x.new_empty(()), dims=x.dim())
