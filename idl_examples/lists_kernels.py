"""Python kernels of lists.ops.yaml (see lists_kernels.cpp).

Demonstrates: list fields arriving as lists (Tensor[], float[], bool[],
Tensor?[], SymInt[]; a tuple where torch left out an argument equal to its
schema default), checks that name the offending field, a Tensor[] output
with a fake kernel, a backward taking one gradient per output piece (a
list), a backward returning one gradient per tensor of list fields (mix),
and enum lists arriving as lists of L.Reduce members.
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
            raise RuntimeError(
                f"multi::mix: cfg.{name} has {given} entries for {n} tensors "
                "(give one per tensor, or none)"
            )
    out = x.clone()
    for i, t in enumerate(cfg.tensors):
        if cfg.enabled and not cfg.enabled[i]:
            continue
        weight = cfg.weights[i] if cfg.weights else 1.0
        offset = cfg.offsets[i] if cfg.offsets else None
        out.add_(t + offset if offset is not None else t, alpha=weight)
    return out


def mix_setup_context(ctx, inputs, output):
    x, cfg = inputs
    n = len(cfg.tensors)
    ctx.weights = [
        (cfg.weights[i] if cfg.weights else 1.0) if not cfg.enabled or cfg.enabled[i] else 0.0
        for i in range(n)
    ]
    ctx.shapes = [t.shape for t in cfg.tensors]
    ctx.offset_shapes = [None if o is None else o.shape for o in cfg.offsets]


def mix_backward(ctx, grad_output):
    """One gradient per tensor of cfg.tensors and cfg.offsets (a list each;
    None where a tensor is disabled, or an offset absent or not needed)."""
    needs_x, needs_cfg = ctx.needs_input_grad  # needs_cfg.tensors: one bool per tensor

    def grad(i, shape, needed):
        if shape is None or ctx.weights[i] == 0.0 or not needed:
            return None
        return (grad_output * ctx.weights[i]).sum_to_size(shape)

    return grad_output, L.MixCfgGrad(
        tensors=[grad(i, s, needs_cfg.tensors[i]) for i, s in enumerate(ctx.shapes)],
        offsets=[grad(i, s, needs_cfg.offsets[i]) for i, s in enumerate(ctx.offset_shapes)],
    )


L.mix.register_autograd(mix_backward, setup_context=mix_setup_context)


@L.blend.register_kernel(None)
def blend(x, terms):
    out = x.clone()
    for term in terms:
        out.add_(term.w + term.b if term.b is not None else term.w, alpha=term.scale)
    return out


def blend_setup_context(ctx, inputs, output):
    terms = inputs[1]
    ctx.terms = [(t.w.shape, None if t.b is None else t.b.shape, t.scale) for t in terms]


def blend_backward(ctx, grad_output):
    """One gradient record per term (L.TermGrad; None for an absent b)."""
    return grad_output, [
        L.TermGrad(
            w=(grad_output * scale).sum_to_size(w),
            b=None if b is None else (grad_output * scale).sum_to_size(b),
        )
        for w, b, scale in ctx.terms
    ]


L.blend.register_autograd(blend_backward, setup_context=blend_setup_context)


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
        raise RuntimeError(
            f"multi::pad: cfg.pad must hold (before, after) pairs for at most "
            f"{x.dim()} dimensions, got {len(cfg.pad)} values"
        )
    sizes = list(x.shape)
    for i in range(len(cfg.pad) // 2):
        sizes[-1 - i] += cfg.pad[2 * i] + cfg.pad[2 * i + 1]
    return x.new_empty(sizes)


def _reduced(t, how, dim):
    """`how` of t along `dim` (kept, size 1), or of all of t for None."""
    if how is L.Reduce.max:
        return t.amax() if dim is None else t.amax(dim, keepdim=True)
    if how is L.Reduce.sum:
        return t.sum() if dim is None else t.sum(dim, keepdim=True)
    return t.mean() if dim is None else t.mean(dim, keepdim=True)


@L.center.register_kernel(None)
def center(x, cfg, *, then=None):
    if len(cfg.steps) != len(cfg.dims):
        raise RuntimeError(
            f"multi::center: cfg.steps has {len(cfg.steps)} entries for "
            f"{len(cfg.dims)} dims (give one per dim)"
        )
    out = x.clone()  # a new tensor even with no steps (no alias of x)
    for how, dim in zip(cfg.steps, cfg.dims):
        out = out - _reduced(out, how, dim)
    for how in then or ():
        out = out - _reduced(out, how, None)
    return out
