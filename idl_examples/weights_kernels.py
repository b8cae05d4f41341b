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
        W.WeightCfgGrad(inner=W.InnerGrad(w=g * x if need_cfg.inner.w else None,
                                          b=g if need_cfg.inner.b else None)),
    )


W.op.register_autograd(op_backward, setup_context=op_setup_context)
