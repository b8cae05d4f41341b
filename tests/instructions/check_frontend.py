#!/usr/bin/env python3
"""CI guard: structopc's front end costs at most LIMIT times a bare yaml-cpp
load of the same IDL, counted in instructions (callgrind), not timed.

Runs frontend_instructions (this folder) under `valgrind --tool=callgrind`
on PyTorch's native_functions.yaml wrapped as one IDL, and compares the
instructions of structop::compile (load + check + lower, as `structopc
--check`) with those of YAML::Load of the same text. Fails when the ratio is
above --limit or a step is missing. docs/benchmarks.md has the numbers and
the timed benchmark (tests/bench/frontend/run.sh).

Usage: check_frontend.py PROGRAM NATIVE_FUNCTIONS_YAML [--every N] [--limit X] [--valgrind PATH]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from callgrind_steps import steps  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("program")
    p.add_argument("native_functions")
    p.add_argument(
        "--every",
        type=int,
        default=1,
        help="keep every N-th func line (a smaller corpus, a faster test)",
    )
    p.add_argument("--limit", type=float, default=1.3)
    p.add_argument("--valgrind", default="valgrind")
    a = p.parse_args()

    counts, out = steps([a.program, a.native_functions, str(a.every)], a.valgrind)
    yaml, ours = counts.get("yaml-cpp load"), counts.get("structopc front end")
    if not yaml or not ours:
        print(f"missing a step in callgrind's dumps: {counts}\n{out}")
        return 1
    ratio = ours / yaml
    print(out.strip())
    print(f"yaml-cpp load:        {yaml:>13,} instructions")
    print(f"structopc front end:  {ours:>13,} instructions (load + check + lower)")
    verdict = "ok" if ratio <= a.limit else "FAILED"
    print(f"ratio: {ratio:.3f} (limit {a.limit}) {verdict}")
    return 0 if ratio <= a.limit else 1


if __name__ == "__main__":
    sys.exit(main())
