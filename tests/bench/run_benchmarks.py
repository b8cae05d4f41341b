#!/usr/bin/env python3
"""Build and run the overhead benchmarks, print medians and ratios.

usage: run_benchmarks.py [--build-dir DIR | --exe PATH] [--repetitions N]
                         [--min-time SECONDS] [--cpu N] [--check]

With --build-dir (default: build) the benchmark is built first with
`meson compile`; with --exe an already built bench_overhead is run, pinned to
one CPU (--cpu, default the last; -1 to not pin). Repetitions are interleaved:
each round runs every benchmark once, in random order. A ratio is the median
over rounds of (benchmark / baseline) within the round, which cancels the
machine's drift between rounds (shared CPUs, frequency changes).
--check exits 1 when a ratio misses its target.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

from bench_stats import median_ratio, rounds

# (label, benchmark, baseline, target): benchmark / baseline should be <= target.
RATIOS = [
    ("C++ call, 8-leaf record vs hand-written flat op",
     "call/generated_record", "call/handwritten_flat", 1.05),
    ("forward+backward, generated bridge vs autograd::Function",
     "fwd_bwd/generated_bridge", "fwd_bwd/autograd_function", 1.00),
    ("no grad needed, backward op vs op without autograd",
     "no_grad/generated_bridge", "no_grad/without_autograd", 1.10),
    ("C++ call, list of 8 records of 4 leaves vs hand-written flat op on the lists",
     "items/generated_record_list", "items/handwritten_flat_lists", 1.10),
    ("(info) forward building the graph, generated bridge vs autograd::Function",
     "fwd_graph/generated_bridge", "fwd_graph/autograd_function", None),
    ("(info) no grad needed, autograd::Function vs op without autograd",
     "no_grad/autograd_function", "no_grad/without_autograd", None),
]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = p.add_mutually_exclusive_group()
    where.add_argument("--build-dir", default="build", help="Meson build directory")
    where.add_argument("--exe", help="an already built bench_overhead")
    p.add_argument("--repetitions", type=int, default=25)
    p.add_argument("--min-time", type=float, default=0.1, help="seconds per repetition")
    p.add_argument("--cpu", type=int, default=os.cpu_count() - 1,
                   help="CPU to pin the benchmark to (-1: do not pin)")
    p.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    return p.parse_args()


def build(build_dir):
    subprocess.run(["meson", "compile", "-C", build_dir, "bench_overhead"], check=True)
    return os.path.join(build_dir, "tests", "bench", "bench_overhead")


def run(exe, repetitions, min_time):
    cmd = [exe, "--benchmark_format=json",
           f"--benchmark_repetitions={repetitions}",
           f"--benchmark_min_time={min_time}",
           "--benchmark_enable_random_interleaving=true"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    args = parse_args()
    exe = args.exe or build(args.build_dir)
    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})  # inherited by the benchmark process
    report = run(exe, args.repetitions, args.min_time)
    per_round = rounds(report)
    times = {name: statistics.median(ts) for name, ts in per_round.items()}

    ctx = report.get("context", {})
    load = ", ".join(f"{x:.2f}" for x in ctx.get("load_avg", []))
    pinned = f"pinned to CPU {args.cpu}" if args.cpu >= 0 else "not pinned"
    print(f"bench_overhead: CPU time per call, {args.repetitions} interleaved rounds, "
          f"{pinned} ({ctx.get('num_cpus', '?')} CPUs, load {load})")
    print(f"  {'benchmark':32s} {'median':>10s} {'min':>10s} {'max':>10s}")
    for name in sorted(per_round):
        ts = per_round[name]
        print(f"  {name:32s} {times[name]:10.1f} {min(ts):10.1f} {max(ts):10.1f} ns")
    print()
    print(f"  {'ratio (median over rounds)':75s} {'value':>6s} {'target':>7s}")
    missed = 0
    for label, bench, base, target in RATIOS:
        ratio = median_ratio(per_round[bench], per_round[base])
        verdict = ""
        if target is not None:
            ok = ratio <= target
            missed += not ok
            verdict = f"<= {target:.2f} {'ok' if ok else 'MISSED'}"
        print(f"  {label:75s} {ratio:6.3f} {verdict}")
    return 1 if (args.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
