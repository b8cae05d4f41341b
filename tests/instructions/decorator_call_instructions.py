#!/usr/bin/env python3
"""CI guard: a call of an op from a decorated Python function
(structop.register_custom_op, Python kernel) costs at most LIMIT times the
flat OpOverload call of the same op, and the seed decorator's stand-in
(tests/bench/shim_bench.py: decorator_stand_in) at least SPEEDUP times it,
counted in instructions (callgrind), not timed: the dc8 case of
tests/bench (an 8-field frozen dataclass, kernel x.clone()).

As python_call_instructions.py: N and 2N calls of each form between
callgrind client requests, one process per hash seed (--seeds), the median
of the seeds' ratios.

Usage: decorator_call_instructions.py TOGGLE_LIB [--limit X] [--speedup X]
         [--seeds 0,1,2] [--valgrind PATH]
structop (the package), structop_runtime and $STRUCTOPC as for tests/decorator.
"""

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from callgrind_steps import add_seeds_argument, count_calls, counted_seeds, parse_seeds  # noqa: E402

CALLS = 200


def inner(toggle):
    """Runs under callgrind: the counted loops."""
    sys.path.insert(0, os.path.join(HERE, "..", "bench"))
    import torch
    from shim_bench import SeedDc8, decorator_stand_in

    import structop

    torch.set_num_threads(1)

    @structop.register_custom_op(name="decoinstr::dc8")
    def dc8(x: torch.Tensor, cfg: SeedDc8) -> torch.Tensor:
        return x.clone()

    seed = decorator_stand_in()
    flat = torch.ops.decoinstr.dc8.default
    x, w, b = (torch.randn(8) for _ in range(3))
    cfg = SeedDc8(w=w, b=b)
    calls = {
        "decorated": lambda: dc8(x, cfg),
        "flat": lambda: flat(x, w, b, 1.0, 0.0, None, 1, False, "a"),
        "seed": lambda: seed(x, cfg),
    }
    for call in calls.values():
        torch.testing.assert_close(call(), x)
        for _ in range(CALLS):  # warm up
            call()
    count_calls(calls, toggle, CALLS)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("toggle")
    p.add_argument("--limit", type=float, default=1.0, help="decorated / flat at most")
    p.add_argument("--speedup", type=float, default=2.0, help="seed / decorated at least")
    add_seeds_argument(p)
    p.add_argument("--valgrind", default="valgrind")
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.inner:
        inner(a.toggle)
        return 0

    names = ["decorated", "flat", "seed"]
    seeds = parse_seeds(a.seeds)
    try:
        runs = counted_seeds(
            [sys.executable, os.path.abspath(__file__), "--inner", a.toggle],
            seeds,
            CALLS,
            a.valgrind,
            names,
        )
    except KeyError as missing:
        print(missing.args[0])
        return 1
    print(
        f"Instructions per call (callgrind, {CALLS} and {2 * CALLS} calls; "
        f"PYTHONHASHSEED {', '.join(map(str, seeds))}; ratios: the median of the seeds')"
    )
    for seed, run in zip(seeds, runs):
        print(
            f"  seed {seed}: decorated {run['decorated']:.0f}, flat {run['flat']:.0f}, "
            f"seed decorator stand-in {run['seed']:.0f}"
        )
    ratio = statistics.median(run["decorated"] / run["flat"] for run in runs)
    speedup = statistics.median(run["seed"] / run["decorated"] for run in runs)
    ok = ratio <= a.limit and speedup >= a.speedup
    print(f"  decorated / flat OpOverload: {ratio:.3f} (at most {a.limit})")
    print(f"  seed stand-in / decorated: {speedup:.3f} (at least {a.speedup})")
    print("ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
