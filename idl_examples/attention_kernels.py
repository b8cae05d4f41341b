"""Python kernels of attention.ops.yaml (see attention_kernels.cpp for the
formulas: plain torch ops, O(L^2) memory).

Demonstrates: reading an enum and optional scalars from a record, a fake
kernel (the IDL says `meta: custom`: lse has no input's shape), two outputs
with a gradient each, a keyword-only record parameter (setup_context gets it
in keyword_only_inputs, like torch.library), a gradient for an optional
tensor inside a record (cfg.alibi_slopes), and rebuilding the record in
backward from what setup_context saved (records are frozen dataclasses:
dataclasses.replace makes a changed copy).
"""

import dataclasses
import math

import torch

import attention_ops as A


def resolved_scale(cfg, q):
    # Under torch.compile(dynamic=True) this guards on the head dimension only.
    return cfg.scale if cfg.scale is not None else 1.0 / math.sqrt(int(q.shape[-1]))


def distance(lq, lk, like):
    """Query position - key position, [Lq, Lk]; query i sits at i + Lk - Lq."""
    qpos = torch.arange(lq, dtype=like.dtype, device=like.device).unsqueeze(1) + (lk - lq)
    kpos = torch.arange(lk, dtype=like.dtype, device=like.device).unsqueeze(0)
    return qpos - kpos


def hidden(signed_distance, cfg):
    """True where cfg.mask hides the key from the query."""
    if cfg.mask == A.MaskMode.none:
        return torch.zeros_like(signed_distance, dtype=torch.bool)
    if cfg.mask == A.MaskMode.causal:
        return signed_distance < 0
    return (signed_distance < 0) | (signed_distance >= cfg.window)


def compute_logits(q, k, cfg, bias):
    """(logits, tanh of the softcap or None, |i - j|)."""
    s = torch.matmul(q, k.transpose(-2, -1)) * resolved_scale(cfg, q)
    tanh = None
    if cfg.softcap is not None:
        tanh = torch.tanh(s / cfg.softcap)
        s = tanh * cfg.softcap
    if bias is not None:
        s = s + bias
    d = distance(q.shape[-2], k.shape[-2], q)
    dist = d.abs()
    if cfg.alibi_slopes is not None:
        s = s - cfg.alibi_slopes.view(-1, 1, 1) * dist
    return s.masked_fill(hidden(d, cfg), -math.inf), tanh, dist


@A.attention.register_kernel(None)
def attention(q, k, v, *, cfg, bias=None):
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise RuntimeError(
            f"attention: q, k and v must be [B, H, L, D], got {list(q.shape)}, "
            f"{list(k.shape)}, {list(v.shape)}"
        )
    logits, _, _ = compute_logits(q, k, cfg, bias)
    lse = torch.logsumexp(logits, -1)
    return torch.matmul(torch.exp(logits - lse.unsqueeze(-1)), v), lse


@A.attention.register_fake
def attention_fake(q, k, v, *, cfg, bias=None):
    """out [B, H, Lq, Dv], lse [B, H, Lq]: shapes that no single input has."""
    return q.new_empty((*q.shape[:-1], v.shape[-1])), q.new_empty(q.shape[:-1])


def attention_setup_context(ctx, inputs, keyword_only_inputs, output):
    q, k, v = inputs
    cfg, bias = keyword_only_inputs["cfg"], keyword_only_inputs["bias"]
    ctx.save_for_backward(q, k, v, bias, cfg.alibi_slopes, output[1])
    # The record without its tensor (saved above), with the scale resolved.
    ctx.cfg = dataclasses.replace(cfg, scale=resolved_scale(cfg, q), alibi_slopes=None)


def attention_backward(ctx, grad_out, grad_lse):
    q, k, v, bias, slopes, lse = ctx.saved_tensors
    cfg = dataclasses.replace(ctx.cfg, alibi_slopes=slopes)
    logits, tanh, dist = compute_logits(q, k, cfg, bias)
    p = torch.exp(logits - lse.unsqueeze(-1))
    gp = torch.matmul(grad_out, v.transpose(-2, -1))
    gl = p * (gp - (gp * p).sum(-1, keepdim=True)) + grad_lse.unsqueeze(-1) * p
    gs = gl * (1 - tanh * tanh) if tanh is not None else gl
    return (
        torch.matmul(gs, k) * cfg.scale,
        torch.matmul(gs.transpose(-2, -1), q) * cfg.scale,
        torch.matmul(p.transpose(-2, -1), grad_out),
        A.AttnCfgGrad(alibi_slopes=-(gl * dist).sum((0, 2, 3)) if slopes is not None else None),
        gl.sum_to_size(bias.shape) if bias is not None else None,
    )


A.attention.register_autograd(attention_backward, setup_context=attention_setup_context)


def rotate(x, cfg):
    """x [..., L, D] -> [x1 * cos - x2 * sin, x1 * sin + x2 * cos] (halves x1, x2)."""
    d = x.shape[-1]
    if d % 2 != 0:
        raise RuntimeError(f"attention::rotary: the last dimension must be even, got {d}")
    half = d // 2
    inv_freq = torch.pow(
        cfg.theta, -torch.arange(half, dtype=torch.float64, device=x.device) / half
    )
    pos = torch.arange(cfg.offset, cfg.offset + x.shape[-2], dtype=torch.float64, device=x.device)
    angle = pos.unsqueeze(1) * inv_freq.unsqueeze(0)  # [L, half]
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


@A.rotary.register_kernel(None)
def rotary(q, k, cfg):
    return rotate(q, cfg), rotate(k, cfg)
