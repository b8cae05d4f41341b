"""Python kernel of sampling.ops.yaml (see sampling_kernels.cpp): a logits
processor whose options are all optional (None skips a step).

Demonstrates: every optional field kind as it arrives in Python (float,
int, Tensor, list of ints, str, bool, or None), and a top-level Tensor?
parameter.
"""

import math

import torch

import sampling_ops as S


@S.process_logits.register_kernel(None)
def process_logits(logits, mask, cfg):
    x = logits + cfg.bias if cfg.bias is not None else logits.clone()
    if cfg.temperature is not None:
        if not cfg.temperature > 0:
            raise ValueError(
                f"sampling::process_logits: cfg.temperature must be > 0, got {cfg.temperature}"
            )
        x = x / cfg.temperature
    if mask is not None:
        x = x.masked_fill(mask.logical_not(), -math.inf)
    if cfg.suppress:
        ids = torch.tensor(list(cfg.suppress), dtype=torch.long, device=x.device)
        x = x.index_fill(-1, ids, -math.inf)
    if cfg.top_k is not None:
        if not 0 < cfg.top_k <= x.shape[-1]:
            raise ValueError(
                f"sampling::process_logits: cfg.top_k must be in [1, {x.shape[-1]}], "
                f"got {cfg.top_k}"
            )
        kth = x.topk(cfg.top_k, -1).values[..., -1:]
        x = x.masked_fill(x < kth, -math.inf)
    if cfg.output is not None:
        if cfg.output == "probs":
            x = torch.softmax(x, -1)
        elif cfg.output == "log_probs":
            x = torch.log_softmax(x, -1)
        else:
            raise ValueError(
                f'sampling::process_logits: cfg.output must be "probs", '
                f'"log_probs" or None, got "{cfg.output}"'
            )
    if cfg.greedy:
        x = torch.zeros_like(x).scatter_(-1, x.argmax(-1, keepdim=True), 1.0)
    return x
