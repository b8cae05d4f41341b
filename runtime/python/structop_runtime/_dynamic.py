"""Dynamic numbers: an IDL `int` or `float` declared `dynamic: true`, which
the schema takes as a 0-dim CPU tensor (float64, int64) so that
torch.compile makes it a graph input instead of a constant it guards on.
The op functions turn the number into that tensor at the call, in the
call's mode (dynamic_float, dynamic_int); a Python kernel gets the number back
(kernel_value)."""

import torch

is_dynamo_compiling = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)


def dynamic(check):
    """The check of a dynamic number: `check` (FLOAT or INT), or its 0-dim tensor."""

    def fits(value):
        return check[0](value) or (isinstance(value, torch.Tensor) and value.dim() == 0)

    return (fits, check[1] + " or a 0-dim tensor", "dynamic", check)


def _flat(value, dtype, number):
    if isinstance(value, torch.Tensor):
        return value
    if is_dynamo_compiling():
        # A pointwise op of the number, which Inductor keeps as a graph input
        # (torch.scalar_tensor(number) would make it specialize on the value).
        return torch.zeros((), dtype=dtype) + value
    if number(value):
        return torch.scalar_tensor(value, dtype=dtype)
    return value  # not a number: the call explains it


def dynamic_float(value):
    """The flat value of a dynamic float: its 0-dim float64 CPU tensor (a
    tensor given is passed as it is; anything else too, for the call to
    explain)."""
    return _flat(value, torch.float64, _is_float)


def dynamic_int(value):
    """The flat value of a dynamic int: its 0-dim int64 CPU tensor."""
    return _flat(value, torch.int64, _is_int)


def _is_float(value):
    return type(value) is float or type(value) is int


def _is_int(value):
    return type(value) is int


def kernel_value(value, op, path):
    """A dynamic leaf as a Python kernel gets it: the number, read from the
    0-dim CPU tensor (no stream to synchronize); while torch traces the op
    (a FakeTensor, FunctionalTensor or meta tensor: torch.compile,
    torch.export, a fake kernel, setup_context under AOTAutograd), the
    tensor itself, which the kernel computes with like the number."""
    if value is None or type(value) is not torch.Tensor or value.is_meta:
        return value
    if value.dim() != 0 or value.device.type != "cpu":
        raise ValueError(
            f"{op}: {path}: a dynamic number takes a 0-dim CPU tensor, got a tensor of shape "
            f"{tuple(value.shape)} on {value.device}"
        )
    return value.item()
