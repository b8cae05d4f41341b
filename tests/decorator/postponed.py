"""Decorated functions under postponed annotations (PEP 563), for
test_decorator.py: annotations are strings, resolved by the decorator."""

from __future__ import annotations

import dataclasses

import torch


def local_classes(register_custom_op):
    """Local dataclasses, visible where the op is decorated: resolved."""

    @dataclasses.dataclass(frozen=True)
    class Inner:
        s: float

    @dataclasses.dataclass(frozen=True)
    class Cfg:
        inner: Inner
        n: int

    @register_custom_op(name="postponed::local_op")
    def local_op(x: torch.Tensor, cfg: Cfg) -> torch.Tensor:
        return x * cfg.inner.s + cfg.n

    local_op.Cfg, local_op.Inner = Cfg, Inner
    return local_op


def _hidden_scope():
    @dataclasses.dataclass(frozen=True)
    class Hidden:
        s: float

    @dataclasses.dataclass(frozen=True)
    class Holder:
        inner: Hidden

    return Holder


def unresolvable(register_custom_op):
    """Holder's field names a class local to another function: not resolvable."""
    Holder = _hidden_scope()

    @register_custom_op(name="postponed::hidden_op")
    def hidden_op(x: torch.Tensor, cfg: Holder) -> torch.Tensor:
        return x

    return hidden_op
