"""Python kernels of rms_norm.ops.yaml (see rms_norm_kernels.cpp).

  y = x * r * weight,  r = 1 / sqrt(mean(x^2, -1) + eps)
  dy/dx: gx = r * (gn - x * r^2 * mean(gn * x, -1)),  gn = gy * weight
  gweight = gy * x * r summed to weight's shape

Demonstrates: a kernel per device type (register_kernel("cpu") and
register_kernel("cuda"), as the IDL's `dispatch: [CPU, CUDA]` does for C++),
an optional tensor field (cfg.weight) that gets a gradient only when it is
set, and an overload (rms_norm.gated, Python function rms_norm_gated) whose
backward returns gradients for x, cfg and gate in parameter order; the
gradient of cfg is a dict by field name here.
"""

import torch

import rms_norm_ops as N


def inv_rms(x, eps):
    return torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def normalize(x, cfg):
    y = x * inv_rms(x, cfg.eps)
    return y * cfg.weight if cfg.weight is not None else y


def normalize_backward(x, r, weight, gy, need_x, need_weight):
    """Gradients of normalize(x, (weight, eps)) for x and weight, given gy and r = inv_rms(x, eps)."""
    gx = gweight = None
    if need_x:
        gn = gy * weight if weight is not None else gy
        gx = r * (gn - x * r.pow(2) * (gn * x).mean(-1, keepdim=True))
    if need_weight and weight is not None:
        gweight = (gy * x * r).sum_to_size(weight.shape)
    return gx, gweight


@N.rms_norm.register_kernel("cpu")
def rms_norm_cpu(x, cfg):
    return normalize(x, cfg)


@N.rms_norm.register_kernel("cuda")
def rms_norm_cuda(x, cfg):
    if x.dtype in (torch.float16, torch.bfloat16):  # accumulate in float32
        return normalize(x.float(), cfg).to(x.dtype)
    return normalize(x, cfg)


def rms_norm_setup_context(ctx, inputs, output):
    x, cfg = inputs
    ctx.save_for_backward(x, cfg.weight)
    ctx.eps = cfg.eps


def rms_norm_backward(ctx, grad_output):
    x, weight = ctx.saved_tensors
    need_x, need_cfg = ctx.needs_input_grad
    gx, gweight = normalize_backward(
        x, inv_rms(x, ctx.eps), weight, grad_output, need_x, need_cfg.weight
    )
    return gx, N.RmsNormCfgGrad(weight=gweight)


N.rms_norm.register_autograd(rms_norm_backward, setup_context=rms_norm_setup_context)


@N.rms_norm_gated.register_kernel(None)
def rms_norm_gated(x, cfg, gate):
    """rms_norm(x, cfg) * silu(gate) (the gated norm of Mamba-2)."""
    return normalize(x, cfg) * torch.nn.functional.silu(gate)


def rms_norm_gated_setup_context(ctx, inputs, output):
    x, cfg, gate = inputs
    ctx.save_for_backward(x, cfg.weight, gate)
    ctx.eps = cfg.eps


def rms_norm_gated_backward(ctx, grad_output):
    x, weight, gate = ctx.saved_tensors
    need_x, need_cfg, need_gate = ctx.needs_input_grad
    r = inv_rms(x, ctx.eps)
    silu = torch.nn.functional.silu(gate)
    gx, gweight = normalize_backward(x, r, weight, grad_output * silu, need_x, need_cfg.weight)
    ggate = None
    if need_gate:
        n = x * r * weight if weight is not None else x * r  # normalize(x, cfg)
        sigmoid = torch.sigmoid(gate)
        ggate = grad_output * n * sigmoid * (1 + gate * (1 - sigmoid))
    return gx, {"weight": gweight}, ggate


N.rms_norm_gated.register_autograd(
    rms_norm_gated_backward, setup_context=rms_norm_gated_setup_context
)
