"""Python kernels of dtypes.ops.yaml (see dtypes_kernels.cpp).

Demonstrates: ScalarType and Device fields arriving as torch.dtype and
torch.device, a record-only op (no tensor input: registered for every
device, it reads the device from its `device` parameter), fake kernels for
results whose dtype differs from the input's, and a parameter named `from`
(`from_` in Python; a kernel takes its parameters positionally, so any name
works).
"""

import torch

import dtypes_ops as D


@D.cast.register_kernel(None)
def cast(x, cfg):
    return x.to(device=cfg.device, dtype=cfg.dtype, copy=True)


@D.cast.register_fake
def cast_fake(x, cfg):
    return torch.empty_like(x, dtype=cfg.dtype)  # the device stays (meta on Meta)


@D.full.register_kernel(None)
def full(cfg, *, device):
    return torch.full(list(cfg.sizes), cfg.value, dtype=cfg.dtype, device=device)


@D.full.register_fake
def full_fake(cfg, *, device):
    return torch.empty(list(cfg.sizes), dtype=cfg.dtype, device=device)


@D.cast_checked.register_kernel(None)
def cast_checked(x, from_, to):
    if x.dtype != from_:
        raise ValueError(f"dtypes::cast_checked: x has dtype {x.dtype} but `from` is {from_}")
    if not torch.can_cast(from_, to):
        raise ValueError(f"dtypes::cast_checked: {from_} cannot be cast to {to} safely")
    return x.to(to, copy=True)


@D.cast_checked.register_fake
def cast_checked_fake(x, from_, to):
    return torch.empty_like(x, dtype=to)


# to_half is cast with another default for cfg (applied before a kernel
# runs): cast's kernels serve it.
D.to_half.register_kernel(None, cast)
D.to_half.register_fake(cast_fake)
