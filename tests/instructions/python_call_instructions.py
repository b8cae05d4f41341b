#!/usr/bin/env python3
"""CI guard: an eager record call through the generated Python API costs at
most LIMIT times the flat call of the same op (its OpOverload with the flat
arguments written out), counted in instructions (callgrind), not timed.

Two ops of idl_examples (C++ kernels, no input requiring grad):
weights::op(Tensor x, WeightCfg cfg) (a nested record with an enum leaf),
and multi::blend(Tensor x, Term[] terms) with a list of 4 records against
the flat call on the leaves' 4-item lists, built once outside the loop.
Under `valgrind --tool=callgrind --instr-atstart=no` this script imports torch
uncounted, then counts N and 2N calls of each form between callgrind client
requests (callgrind_toggle); (I(2N) - I(N)) / N is a call's instructions with
the loop's start-up cancelled. Repeated runs agree within about 1%. A
process's counts also move with Python's string hash seed, which lays out
the dicts that names are looked up in (up to 8% for one call on torch 2.6):
one process is counted per seed of --seeds (PYTHONHASHSEED; 0,1,2 by
default), and each ratio checked is the median of theirs.

Usage: python_call_instructions.py TOGGLE_LIB EXAMPLES_LIB MODULE_DIR [--limit X]
         [--list-limit X] [--seeds 0,1,2] [--valgrind PATH]
MODULE_DIR holds weights_ops.py and lists_ops.py; structop_runtime must be
importable.
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from callgrind_steps import add_seeds_argument, count_calls, counted_seeds, parse_seeds  # noqa: E402

CALLS = 200


def inner(toggle, library, module_dir):
    """Runs under callgrind: the counted loops."""
    sys.path.insert(0, module_dir)
    import lists_ops
    import torch
    import weights_ops

    weights_ops.load_library(library)
    torch.set_num_threads(1)
    x, w, b = (torch.randn(8) for _ in range(3))
    cfg = weights_ops.WeightCfg(
        inner=weights_ops.Inner(w=w, b=b), scale=2.0, mode=weights_ops.MaskType.causal
    )
    terms = [lists_ops.Term(w=w, b=b, scale=0.5) for _ in range(4)]
    term_w, term_b, term_scale = [w] * 4, [b] * 4, [0.5] * 4
    flat, flat_blend = torch.ops.weights.op.default, torch.ops.multi.blend.default
    calls = {
        "record": lambda: weights_ops.op(x, cfg),
        "flat": lambda: flat(x, w, b, 2.0, "causal"),
        "blend record": lambda: lists_ops.blend(x, terms),
        "blend flat": lambda: flat_blend(x, term_w, term_b, term_scale),
    }
    torch.testing.assert_close(calls["record"](), calls["flat"]())
    torch.testing.assert_close(calls["blend record"](), calls["blend flat"]())
    for call in calls.values():
        for _ in range(CALLS):  # warm up
            call()
    count_calls(calls, toggle, CALLS)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("toggle")
    p.add_argument("library")
    p.add_argument("module_dir")
    p.add_argument("--limit", type=float, default=1.0, help="for weights::op")
    p.add_argument("--list-limit", type=float, default=1.0, help="for multi::blend")
    add_seeds_argument(p)
    p.add_argument("--valgrind", default="valgrind")
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.inner:
        inner(a.toggle, a.library, a.module_dir)
        return 0

    names = ["record", "flat", "blend record", "blend flat"]
    seeds = parse_seeds(a.seeds)
    command = [sys.executable, os.path.abspath(__file__), "--inner", a.toggle, a.library]
    try:
        runs = counted_seeds(command + [a.module_dir], seeds, CALLS, a.valgrind, names)
    except KeyError as missing:
        print(missing.args[0])
        return 1
    print(
        f"Instructions per call (callgrind, {CALLS} and {2 * CALLS} calls; "
        f"PYTHONHASHSEED {', '.join(map(str, seeds))}; ratios: the median of the seeds')"
    )
    ok = True
    for op, record, flat, limit in (
        ("weights::op", "record", "flat", a.limit),
        ("multi::blend, 4 records", "blend record", "blend flat", a.list_limit),
    ):
        ratios = [run[record] / run[flat] for run in runs]
        ratio = statistics.median(ratios)
        ok &= ratio <= limit
        for seed, run, r in zip(seeds, runs, ratios):
            print(
                f"  {op}, seed {seed}: record call {run[record]:.0f}, "
                f"flat call {run[flat]:.0f}, {r:.3f}"
            )
        verdict = "ok" if ratio <= limit else "FAILED"
        print(f"  {op}: ratio {ratio:.3f} (limit {limit}) {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
