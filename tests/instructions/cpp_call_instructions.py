#!/usr/bin/env python3
"""CI guard: a call through the generated C++ call API costs at most LIMIT
times the hand-written flat op called through its typed handle, counted in
instructions (callgrind), not timed. bench_overhead's pairs
(tests/bench/bench_main.cpp, C++ kernels): bench::rec8 with an 8-leaf record
(2 tensors, 5 scalars, an enum) against bench_ref::flat8, and bench::items8
with a list of 8 records of 4 leaves against bench_ref::flat_items on the
leaves' lists, built once, no input requiring grad; and forward+backward
(torch::autograd::grad of x, w and b) through bench::rec8_grad's generated
autograd bridge against bench_ref::flat8_fn, a torch::autograd::Function.

`bench_overhead --count TOGGLE_LIB` calls each case N and 2N times between
callgrind client requests; under `valgrind --tool=callgrind
--instr-atstart=no`, (I(2N) - I(N)) / N is one call's instructions with the
loop's start-up cancelled.

Usage: cpp_call_instructions.py BENCH_OVERHEAD TOGGLE_LIB [--limit X]
         [--list-limit X] [--fwd-bwd-limit X] [--valgrind PATH]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from callgrind_steps import per_call, steps  # noqa: E402

CALLS = 2000  # bench_main.cpp's kCalls
PAIRS = (
    ("8-leaf record", "call/generated_record", "call/handwritten_flat", "limit"),
    (
        "list of 8 records",
        "items/generated_record_list",
        "items/handwritten_flat_lists",
        "list_limit",
    ),
    (
        "forward+backward",
        "fwd_bwd/generated_bridge",
        "fwd_bwd/autograd_function",
        "fwd_bwd_limit",
    ),
)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("bench_overhead")
    p.add_argument("toggle")
    p.add_argument("--limit", type=float, default=1.0, help="for the 8-leaf record")
    p.add_argument("--list-limit", type=float, default=1.10, help="for the list of records")
    p.add_argument(
        "--fwd-bwd-limit", type=float, default=1.0, help="for forward+backward vs a Function"
    )
    p.add_argument("--valgrind", default="valgrind")
    a = p.parse_args()
    counts, out = steps(
        [a.bench_overhead, "--count", a.toggle], a.valgrind, extra=["--instr-atstart=no"]
    )
    try:
        counted = per_call(counts, CALLS, [name for pair in PAIRS for name in pair[1:3]])
    except KeyError as missing:
        print(f"{missing.args[0]}\n{out}")
        return 1
    print(f"Instructions per call (callgrind, {CALLS} and {2 * CALLS} calls):")
    ok = True
    for label, record, flat, limit_name in PAIRS:
        limit = getattr(a, limit_name)
        ratio = counted[record] / counted[flat]
        ok &= ratio <= limit
        print(f"  {label}: generated call {counted[record]:.0f}, flat call {counted[flat]:.0f}")
        print(
            f"  {label}: ratio {ratio:.3f} (limit {limit}) {'ok' if ratio <= limit else 'FAILED'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
