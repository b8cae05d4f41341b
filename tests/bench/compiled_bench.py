#!/usr/bin/env python3
"""A record op inside a torch.compile'd model vs the same op called flat.

A small model applies bench.rec8 in a loop of 10 layers, each with its own
8-leaf record (Cfg8: two tensors, five scalars and an enum). Two versions:
the record form through the generated Python API (`bench_ops.rec8(x, cfg)`)
and the flat form (`torch.ops.bench.rec8.default(x, w, b, ...)`). Both are
compiled with inductor (fullgraph=True); the record form must add nothing to
the compiled graph, so its per-call time should equal the flat one's. The
eager times are reported too, for information. Rounds are interleaved; a
ratio is the median over rounds of the per-round ratio. A copy of the flat
model is compiled first and never timed: the model compiled first in a
process runs slower than the later ones, whichever it is.

The rounds run in --processes worker processes (3 by default, one after
another), and the ratios pool the rounds of all of them: where a process's
objects and code land in memory, and how it hashes strings, shifts one
process's ratio by up to a percent (one process measured 1.009x to 1.022x
over five runs), so one process is one sample of that, as pyperf's several
processes are. Each process's own ratio is printed too.

With --instructions TOGGLE_LIB (tests/instructions' libcallgrind_toggle.so)
the compiled models' calls are counted in instructions instead of timed, as
shim_bench.py --instructions counts (N and 2N calls under callgrind; the
difference over N is one call): the counts repeat whatever the machine's
load, where a few percent of wall time is within the noise of a shared VM.

Usage: compiled_bench.py LIBBENCH_OPS.so DIR_WITH_bench_ops.py [--processes N] [--rounds N] [--calls N] [--json FILE]
                         [--instructions TOGGLE_LIB [--seeds 0,1,2] [--limit X] [--valgrind PATH]]
bench_ops.py imports structop's Python runtime: put BUILD/runtime/python on
PYTHONPATH (meson test --benchmark does).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import torch

from bench_stats import (
    add_seeds_argument,
    count_calls,
    counted_per_seed,
    interleaved_times,
    median_ratio,
)

LAYERS = 10


def main():
    p = argparse.ArgumentParser()
    p.add_argument("library")
    p.add_argument("module_dir")
    p.add_argument("--processes", type=int, default=3, help="worker processes (wall time)")
    p.add_argument("--rounds", type=int, default=25, help="rounds per process")
    p.add_argument("--calls", type=int, default=500)
    p.add_argument("--json", help="write the ratios here too")
    p.add_argument(
        "--instructions",
        metavar="TOGGLE_LIB",
        help="count instructions under callgrind instead of timing",
    )
    p.add_argument("--valgrind", default="valgrind")
    add_seeds_argument(p)
    p.add_argument(
        "--limit",
        type=float,
        help="with --instructions: exit 1 when the record model costs more than LIMIT x the flat one",
    )
    p.add_argument("--count", metavar="TOGGLE_LIB", help=argparse.SUPPRESS)  # under callgrind
    p.add_argument("--worker", metavar="JSON", help=argparse.SUPPRESS)  # one timed process
    a = p.parse_args()
    if a.instructions:
        return instructions(a)
    if a.worker or a.count:
        return run_models(a)
    return wall_time(a)


def run_models(a):
    """In one process: compile the models, prove they agree, then either
    count their calls (--count, under callgrind) or time them in interleaved
    rounds and write {model: [seconds per call, per round]} to a.worker."""
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

    # Compiled first and never timed: in one process, the model that
    # torch.compile compiles first runs slower than the models compiled
    # after it (0.5% to 1% of this model's call in wall time, none in
    # instructions), and that would land on whichever model comes first
    # below. A copy of flat_model, not flat_model itself: Dynamo keeps its
    # compiled code per code object, so only another function is compiled anew.
    def warm_up_model(x):
        for cfg in cfgs:
            x = flat(x, cfg.w, cfg.b, 1.0, 0.0, 1e-5, False, 1, "a")
        return x

    x = torch.randn(8)
    torch.compile(warm_up_model, backend="inductor", fullgraph=True)(x)
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
    if a.count:
        counted_calls = {name: (lambda fn=calls[name]: fn(x)) for name in COMPILED}
        count_calls(counted_calls, a.count, COUNTED)
        return

    times = interleaved_times(
        {name: (lambda fn=fn: fn(x)) for name, fn in calls.items()}, a.rounds, a.calls
    )
    with open(a.worker, "w") as f:
        json.dump(times, f)


def wall_time(a):
    """The models timed in a.processes processes, one after another; every
    ratio is the median of the per-round ratios of all their rounds."""
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(a.processes):
            out = os.path.join(tmp, f"{k}.json")
            command = [sys.executable, os.path.abspath(__file__), a.library, a.module_dir]
            command += ["--worker", out, "--rounds", str(a.rounds), "--calls", str(a.calls)]
            subprocess.run(command, check=True)
            with open(out) as f:
                runs.append(json.load(f))
    times = {name: [t for run in runs for t in run[name]] for name in runs[0]}

    print(f"{'model (10 layers of rec8)':<28}{'median us':>10}")
    for name in times:
        print(f"{name:<28}{statistics.median(times[name]) * 1e6:>10.2f}")
    r = median_ratio(times["compiled record"], times["compiled flat"])
    r_read = median_ratio(times["compiled record"], times["compiled flat, read"])
    each = ", ".join(
        f"{median_ratio(run['compiled record'], run['compiled flat']):.3f}x" for run in runs
    )
    print(f"\ncompiled record / compiled flat: {r:.3f}x (target <= 1.02x; each process: {each})")
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
        f"({a.processes} processes of {a.rounds} interleaved rounds of {a.calls} calls; "
        f"torch {torch.__version__}, inductor)"
    )
    write_json(
        a.json,
        [
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
        ],
    )


COMPILED = ("compiled record", "compiled flat", "compiled flat, read")
COUNTED = 100  # calls per counted loop (and twice as many)


def instructions(a):
    """--instructions: this script under callgrind; instructions per compiled call."""
    # Python's string hashing is seeded per process, and where guards and
    # the compiled code look names up differs with it: one process's counts
    # move by up to 2% from another's. Counted under fixed seeds (--seeds),
    # the ratio is the median of the seeds' ratios.
    seeds, runs = counted_per_seed(__file__, a, COUNTED, COMPILED)
    per_model = {name: statistics.median(run[name] for run in runs) for name in COMPILED}
    print(
        f"torch.compile'd models (10 layers of rec8), torch {torch.__version__}: instructions "
        f"per call (callgrind, {COUNTED} and {2 * COUNTED} calls; medians over "
        f"PYTHONHASHSEED {', '.join(map(str, seeds))})"
    )
    for name in COMPILED:
        print(f"  {name:<24}{per_model[name]:>10.0f}")
    r = statistics.median(run["compiled record"] / run["compiled flat"] for run in runs)
    r_read = statistics.median(run["compiled record"] / run["compiled flat, read"] for run in runs)
    print(f"compiled record / compiled flat: {r:.3f}x (target <= 1.02x)")
    print(f"compiled record / compiled flat, read: {r_read:.3f}x (information)")
    write_json(
        a.json,
        [
            ("10 layers compiled (inductor): record model vs flat model, instructions", r, 1.02),
            (
                "(info) 10 layers compiled: record model vs flat model reading its config, "
                "instructions",
                r_read,
                None,
            ),
        ],
    )
    if a.limit is not None and r > a.limit:
        print(f"FAIL: the record model costs {r:.3f}x the flat model, above {a.limit}x")
        return 1
    return 0


def write_json(path, ratios):
    """[(label, ratio, target)] (each at most its target) into `path`, if any."""
    if not path:
        return
    with open(path, "w") as f:
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
    sys.exit(main())
