#!/usr/bin/env python3
"""CI guard: an eager record call through the generated Python API costs at
most LIMIT times the flat call of the same op (its OpOverload with the flat
arguments written out), counted in instructions (callgrind), not timed.

The op is weights::op(Tensor x, WeightCfg cfg) of idl_examples/weights.ops.yaml
(a nested record with an enum leaf; C++ kernels, no input requiring grad).
Under `valgrind --tool=callgrind --instr-atstart=no` this script imports torch
uncounted, then counts N and 2N calls of each form between callgrind client
requests (callgrind_toggle); (I(2N) - I(N)) / N is a call's instructions with
the loop's start-up cancelled. Repeated runs agree within about 1%.

Usage: python_call_instructions.py TOGGLE_LIB EXAMPLES_LIB MODULE_DIR [--limit X] [--valgrind PATH]
MODULE_DIR holds weights_ops.py; structop_runtime must be importable.
"""

import argparse
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from callgrind_steps import steps  # noqa: E402

CALLS = 200


def inner(toggle, library, module_dir):
    """Runs under callgrind: the counted loops."""
    lib = ctypes.CDLL(toggle)
    sys.path.insert(0, module_dir)
    import torch
    import weights_ops

    weights_ops.load_library(library)
    torch.set_num_threads(1)
    x, w, b = (torch.randn(8) for _ in range(3))
    cfg = weights_ops.WeightCfg(
        inner=weights_ops.Inner(w=w, b=b), scale=2.0, mode=weights_ops.MaskType.causal
    )
    flat = torch.ops.weights.op.default
    calls = {
        "record": lambda: weights_ops.op(x, cfg),
        "flat": lambda: flat(x, w, b, 2.0, "causal"),
    }
    torch.testing.assert_close(calls["record"](), calls["flat"]())
    for name, call in calls.items():
        for _ in range(CALLS):  # warm up
            call()
        for n in (CALLS, 2 * CALLS):
            lib.structop_callgrind_start()
            for _ in range(n):
                call()
            lib.structop_callgrind_stop(f"{name} {n}".encode())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("toggle")
    p.add_argument("library")
    p.add_argument("module_dir")
    p.add_argument("--limit", type=float, default=1.05)
    p.add_argument("--valgrind", default="valgrind")
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.inner:
        inner(a.toggle, a.library, a.module_dir)
        return 0

    counts, out = steps(
        [sys.executable, os.path.abspath(__file__), "--inner", a.toggle, a.library, a.module_dir],
        a.valgrind,
        extra=["--instr-atstart=no"],
    )
    per_call = {}
    for name in ("record", "flat"):
        one, two = counts.get(f"{name} {CALLS}"), counts.get(f"{name} {2 * CALLS}")
        if not one or not two:
            print(f"missing a step in callgrind's dumps: {sorted(counts)}\n{out}")
            return 1
        per_call[name] = (two - one) / CALLS
    ratio = per_call["record"] / per_call["flat"]
    print(f"weights::op, instructions per call (callgrind, {CALLS} and {2 * CALLS} calls):")
    print(f"  record call weights_ops.op(x, cfg):       {per_call['record']:10.0f}")
    print(f"  flat call torch.ops.weights.op.default:   {per_call['flat']:10.0f}")
    verdict = "ok" if ratio <= a.limit else "FAILED"
    print(f"ratio: {ratio:.3f} (limit {a.limit}) {verdict}")
    return 0 if ratio <= a.limit else 1


if __name__ == "__main__":
    sys.exit(main())
