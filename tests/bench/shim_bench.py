#!/usr/bin/env python3
"""The generated Python wrapper vs the flat torch.ops call, on the same op.

bench.rec8(x, cfg) takes an 8-leaf record (Cfg8: two tensors, six scalars and
an enum); the wrapper flattens it and calls torch.ops.bench.rec8.default. The
baseline is that same call with the flat arguments written out (and, for
information, the OpOverloadPacket spelling torch.ops.bench.rec8(...)). Rounds
are interleaved; a ratio is the median over rounds of (wrapper / baseline)
within a round, which cancels the machine's drift.

Usage: shim_bench.py LIBBENCH_OPS.so DIR_WITH_bench_ops.py [--rounds N] [--calls N]
bench_ops.py imports structop's Python runtime: put BUILD/runtime/python on
PYTHONPATH (meson test --benchmark does).
"""
import argparse
import statistics
import sys

import torch

from bench_stats import interleaved_times, median_ratio


def main():
    p = argparse.ArgumentParser()
    p.add_argument("library")
    p.add_argument("module_dir")
    p.add_argument("--rounds", type=int, default=25)
    p.add_argument("--calls", type=int, default=2000)
    a = p.parse_args()

    sys.path.insert(0, a.module_dir)
    import bench_ops  # noqa: E402  (generated)

    bench_ops.load_library(a.library)
    torch.set_num_threads(1)
    x, w, b = (torch.randn(8) for _ in range(3))
    cfg = bench_ops.Cfg8(w=w, b=b, scale=1.0, shift=0.0, eps=1e-5, flag=False, steps=1,
                         mode=bench_ops.Mode.a)
    default = torch.ops.bench.rec8.default
    packet = torch.ops.bench.rec8
    calls = {
        "wrapper": lambda: bench_ops.rec8(x, cfg),
        "flat .default": lambda: default(x, w, b, 1.0, 0.0, 1e-5, False, 1, "a"),
        "flat packet": lambda: packet(x, w, b, 1.0, 0.0, 1e-5, False, 1, "a"),
    }
    expected = x + w * b
    for name, call in calls.items():  # warm up, and prove they compute the same
        torch.testing.assert_close(call(), expected, msg=name)

    times = interleaved_times(calls, a.rounds, a.calls)

    def ratio(name, base):
        return median_ratio(times[name], times[base])

    print(f"{'call':<16}{'median us':>10}")
    for name in calls:
        print(f"{name:<16}{statistics.median(times[name]) * 1e6:>10.2f}")
    r = ratio("wrapper", "flat .default")
    print(f"\nwrapper / flat .default: {r:.3f}x (target <= 1.3x)")
    print(f"wrapper / flat packet:   {ratio('wrapper', 'flat packet'):.3f}x (information)")
    print(f"({a.rounds} interleaved rounds of {a.calls} calls; torch {torch.__version__})")


if __name__ == "__main__":
    main()
