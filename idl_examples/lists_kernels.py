"""Python kernels of lists.ops.yaml (see lists_kernels.cpp).

Demonstrates: list fields arriving as lists (Tensor[], float[], bool[],
Tensor?[], SymInt[]; a tuple where torch left out an argument equal to its
schema default), checks that name the offending field, a Tensor[] output
with a fake kernel, and a backward taking one gradient per output piece (a
list).
"""
import torch

import lists_ops as L


@L.mix.register_kernel(None)
def mix(x, cfg):
    """x + sum_i enabled[i] * weights[i] * (tensors[i] + offsets[i])."""
    n = len(cfg.tensors)
    for name in ("weights", "enabled", "offsets"):
        given = len(getattr(cfg, name))
        if given not in (0, n):
            raise RuntimeError(f"multi::mix: cfg.{name} has {given} entries for {n} tensors "
                               "(give one per tensor, or none)")
    out = x.clone()
    for i, t in enumerate(cfg.tensors):
        if cfg.enabled and not cfg.enabled[i]:
            continue
        weight = cfg.weights[i] if cfg.weights else 1.0
        offset = cfg.offsets[i] if cfg.offsets else None
        out.add_(t + offset if offset is not None else t, alpha=weight)
    return out


@L.chunk.register_kernel(None)
def chunk(x, cfg):
    # The schema promises new tensors (no alias annotation), so no views of x.
    return [piece.clone() for piece in torch.split(x, list(cfg.sizes), cfg.dim)]


@L.chunk.register_fake
def chunk_fake(x, cfg):
    return [torch.empty_like(view) for view in torch.split(x, list(cfg.sizes), cfg.dim)]


def chunk_setup_context(ctx, inputs, output):
    ctx.dim = inputs[1].dim


def chunk_backward(ctx, grad_output):
    """grad_output: one gradient per piece (missing ones arrive as zeros)."""
    return torch.cat(grad_output, ctx.dim), None


L.chunk.register_autograd(chunk_backward, setup_context=chunk_setup_context)


@L.pad.register_kernel(None)
def pad(x, cfg):
    return torch.constant_pad_nd(x, list(cfg.pad), cfg.value)


@L.pad.register_fake
def pad_fake(x, cfg):
    if len(cfg.pad) % 2 != 0 or len(cfg.pad) // 2 > x.dim():
        raise RuntimeError(f"multi::pad: cfg.pad must hold (before, after) pairs for at most "
                           f"{x.dim()} dimensions, got {len(cfg.pad)} values")
    sizes = list(x.shape)
    for i in range(len(cfg.pad) // 2):
        sizes[-1 - i] += cfg.pad[2 * i] + cfg.pad[2 * i + 1]
    return x.new_empty(sizes)
