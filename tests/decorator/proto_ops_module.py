"""A Python prototype of two ops (namespace proto), for test_decorator.py's
IDL export and export_to_cpp.py: structop.to_idl(this module) is the IDL
whose C++ kernels (proto_kernels.cpp) register the same schemas."""

import dataclasses
from typing import Optional

import torch

from structop import register_custom_op


@dataclasses.dataclass(frozen=True)
class NormCfg:
    weight: torch.Tensor
    eps: float = 1e-6


@dataclasses.dataclass(frozen=True)
class Gate:
    g: torch.Tensor
    bias: Optional[torch.Tensor] = None


@register_custom_op(name="proto::rms_norm")
def rms_norm(x: torch.Tensor, cfg: NormCfg) -> torch.Tensor:
    """x / rms(x) * cfg.weight"""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + cfg.eps) * cfg.weight


@register_custom_op(name="proto::gate")
def gate(x: torch.Tensor, gate: Gate, *, scale: float = 1.0) -> torch.Tensor:
    y = x * torch.sigmoid(gate.g)
    if gate.bias is not None:
        y = y + gate.bias
    return y * scale
