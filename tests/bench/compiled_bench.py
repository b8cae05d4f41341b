#!/usr/bin/env python3
"""A record op inside a torch.compile'd model vs the same op called flat.

A small model applies bench.rec8 in a loop of 10 layers, each with its own
8-leaf record (Cfg8: two tensors, five scalars and an enum). Two versions:
the record form through the generated Python API (`bench_ops.rec8(x, cfg)`)
and the flat form (`torch.ops.bench.rec8.default(x, w, b, ...)`). Both are
compiled with inductor (fullgraph=True); the record form must add nothing to
the compiled graph, so its per-call time should equal the flat one's. The
eager times are reported too, for information. Rounds are interleaved; a
ratio is the median over rounds of the per-round ratio.

Usage: compiled_bench.py LIBBENCH_OPS.so DIR_WITH_bench_ops.py [--rounds N] [--calls N] [--json FILE]
bench_ops.py imports structop's Python runtime: put BUILD/runtime/python on
PYTHONPATH (meson test --benchmark does).
"""

import argparse
import json
import random
import statistics
import sys
import timeit

import torch

from bench_stats import median_ratio

LAYERS = 10


def main():
    p = argparse.ArgumentParser()
    p.add_argument("library")
    p.add_argument("module_dir")
    p.add_argument("--rounds", type=int, default=25)
    p.add_argument("--calls", type=int, default=500)
    p.add_argument("--json", help="write the ratios here too")
    a = p.parse_args()

    sys.path.insert(0, a.module_dir)
    import bench_ops  # noqa: E402  (generated)

    bench_ops.load_library(a.library)
    torch.set_num_threads(1)
    cfgs = [
        bench_ops.Cfg8(
            w=torch.randn(8),
            b=torch.randn(8) * 0.1,
            scale=1.0,
            shift=0.0,
            eps=1e-5,
            flag=False,
            steps=1,
            mode=bench_ops.Mode.a,
        )
        for _ in range(LAYERS)
    ]
    flat = torch.ops.bench.rec8.default

    def record_model(x):
        for cfg in cfgs:
            x = bench_ops.rec8(x, cfg)
        return x

    def flat_model(x):
        for cfg in cfgs:
            x = flat(x, cfg.w, cfg.b, 1.0, 0.0, 1e-5, False, 1, "a")
        return x

    # The flat op with every value read from the layer's config, as a model
    # that keeps its settings in objects does: Dynamo then guards on each
    # scalar it reads (the record model reads the same values).
    def flat_read_model(x):
        for cfg in cfgs:
            x = flat(
                x, cfg.w, cfg.b, cfg.scale, cfg.shift, cfg.eps, cfg.flag, cfg.steps, cfg.mode.value
            )
        return x

    x = torch.randn(8)
    calls = {
        "compiled record": torch.compile(record_model, backend="inductor", fullgraph=True),
        "compiled flat": torch.compile(flat_model, backend="inductor", fullgraph=True),
        "compiled flat, read": torch.compile(flat_read_model, backend="inductor", fullgraph=True),
        "eager record": record_model,
        "eager flat": flat_model,
    }
    expected = flat_model(x)
    for name, fn in calls.items():  # compiles, warms up, and proves they compute the same
        torch.testing.assert_close(fn(x), expected, msg=name)

    times = {name: [] for name in calls}
    for _ in range(a.rounds):
        order = list(calls)
        random.shuffle(order)
        for name in order:
            fn = calls[name]
            times[name].append(timeit.timeit(lambda: fn(x), number=a.calls) / a.calls)

    print(f"{'model (10 layers of rec8)':<28}{'median us':>10}")
    for name in calls:
        print(f"{name:<28}{statistics.median(times[name]) * 1e6:>10.2f}")
    r = median_ratio(times["compiled record"], times["compiled flat"])
    r_read = median_ratio(times["compiled record"], times["compiled flat, read"])
    print(f"\ncompiled record / compiled flat: {r:.3f}x (target <= 1.02x)")
    print(f"compiled record / compiled flat, read: {r_read:.3f}x (information)")
    print(
        f"eager record / eager flat:       "
        f"{median_ratio(times['eager record'], times['eager flat']):.3f}x (information)"
    )
    print(
        f"compiled flat / eager flat:      "
        f"{median_ratio(times['compiled flat'], times['eager flat']):.3f}x (information)"
    )
    print(
        f"({a.rounds} interleaved rounds of {a.calls} calls; torch {torch.__version__}, inductor)"
    )
    if a.json:
        ratios = [
            ("10 layers compiled (inductor): record model vs flat model", r, 1.02),
            (
                "(info) 10 layers compiled: record model vs flat model reading its config",
                r_read,
                None,
            ),
            (
                "(info) 10 layers eager: record model vs flat model",
                median_ratio(times["eager record"], times["eager flat"]),
                None,
            ),
        ]
        with open(a.json, "w") as f:
            json.dump(
                {
                    "torch": torch.__version__,
                    "ratios": [
                        {"label": label, "ratio": value, "target": target, "kind": "at most"}
                        for label, value, target in ratios
                    ],
                },
                f,
            )


if __name__ == "__main__":
    main()
