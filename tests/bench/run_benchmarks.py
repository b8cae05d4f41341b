#!/usr/bin/env python3
"""Build and run the overhead benchmarks, print medians and ratios.

usage: run_benchmarks.py [--build-dir DIR | --exe PATH] [--repetitions N]
                         [--min-time SECONDS] [--cpu N] [--check]
       run_benchmarks.py --all [--build-dir DIR] [--cpu N] [--check]

With --build-dir (default: build) the benchmark is built first with
`meson compile`; with --exe an already built bench_overhead is run, pinned to
one CPU (--cpu, default the last; -1 to not pin). Repetitions are interleaved:
each round runs every benchmark once, in random order. A ratio is the median
over rounds of (benchmark / baseline) within the round, which cancels the
machine's drift between rounds (shared CPUs, frequency changes).

--all runs, for the torch of the Python running this script, every
benchmark the call-overhead targets are judged by and prints their ratios
side by side: the C++ call API and autograd (bench_overhead), the eager
Python record calls against the flat calls (shim_bench.py, timed and, with
valgrind, in instructions), a compiled 10-layer model (compiled_bench.py,
likewise), ops from decorated Python functions (decorator_bench.py: call,
registration, forward+backward), the first structop.load (first_use.py),
the compile time of a generated X.ops.cpp against its includes
(compile_time.py, timed and, with valgrind, counted) and the front end
(structopc against a yaml-cpp load of native_functions.yaml: instructions,
frontend_instructions under callgrind, and wall time, frontend_bench). It
builds what they need in DIR first.

--check exits 1 when a ratio misses its target.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from bench_stats import median_ratio, rounds

HERE = os.path.dirname(os.path.abspath(__file__))

# (label, benchmark, baseline, target): benchmark / baseline should be <= target.
RATIOS = [
    (
        "C++ call, 8-leaf record vs hand-written flat op",
        "call/generated_record",
        "call/handwritten_flat",
        1.00,
    ),
    (
        "forward+backward, generated bridge vs autograd::Function",
        "fwd_bwd/generated_bridge",
        "fwd_bwd/autograd_function",
        1.00,
    ),
    (
        "forward+backward, generated bridge vs eager ATen (addcmul)",
        "fwd_bwd/generated_bridge",
        "fwd_bwd/eager_aten",
        1.00,
    ),
    (
        "no grad needed, backward op vs op without autograd",
        "no_grad/generated_bridge",
        "no_grad/without_autograd",
        1.10,
    ),
    (
        "C++ call, list of 8 records of 4 leaves vs hand-written flat op on the lists",
        "items/generated_record_list",
        "items/handwritten_flat_lists",
        1.10,
    ),
    (
        "(info) forward building the graph, generated bridge vs autograd::Function",
        "fwd_graph/generated_bridge",
        "fwd_graph/autograd_function",
        None,
    ),
    (
        "(info) no grad needed, autograd::Function vs op without autograd",
        "no_grad/autograd_function",
        "no_grad/without_autograd",
        None,
    ),
]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = p.add_mutually_exclusive_group()
    where.add_argument("--build-dir", default="build", help="Meson build directory")
    where.add_argument("--exe", help="an already built bench_overhead")
    p.add_argument("--repetitions", type=int, default=25)
    p.add_argument("--min-time", type=float, default=0.1, help="seconds per repetition")
    p.add_argument(
        "--cpu",
        type=int,
        default=os.cpu_count() - 1,
        help="CPU to pin the benchmark to (-1: do not pin)",
    )
    p.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    p.add_argument(
        "--all",
        action="store_true",
        help="every benchmark of the call-overhead targets, ratios side by side",
    )
    return p.parse_args()


def build(build_dir):
    subprocess.run(["meson", "compile", "-C", build_dir, "bench_overhead"], check=True)
    return os.path.join(build_dir, "tests", "bench", "bench_overhead")


def run(exe, repetitions, min_time):
    cmd = [
        exe,
        "--benchmark_format=json",
        f"--benchmark_repetitions={repetitions}",
        f"--benchmark_min_time={min_time}",
        "--benchmark_enable_random_interleaving=true",
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def overhead(args, exe):
    """bench_overhead's ratios: [(label, ratio, target)], after printing its times."""
    report = run(exe, args.repetitions, args.min_time)
    per_round = rounds(report)
    times = {name: statistics.median(ts) for name, ts in per_round.items()}

    ctx = report.get("context", {})
    load = ", ".join(f"{x:.2f}" for x in ctx.get("load_avg", []))
    pinned = f"pinned to CPU {args.cpu}" if args.cpu >= 0 else "not pinned"
    print(
        f"bench_overhead: CPU time per call, {args.repetitions} interleaved rounds, "
        f"{pinned} ({ctx.get('num_cpus', '?')} CPUs, load {load})"
    )
    print(f"  {'benchmark':32s} {'median':>10s} {'min':>10s} {'max':>10s}")
    for name in sorted(per_round):
        ts = per_round[name]
        print(f"  {name:32s} {times[name]:10.1f} {min(ts):10.1f} {max(ts):10.1f} ns")
    print()
    return [
        (label, median_ratio(per_round[bench], per_round[base]), target)
        for label, bench, base, target in RATIOS
    ]


def print_ratios(title, ratios):
    """Prints [(label, ratio, target[, at_least])] (at_least: the target is a
    lower bound, a speedup); returns how many missed their target."""
    print(f"  {title:75s} {'value':>6s} {'target':>8s}")
    missed = 0
    for label, ratio, target, *at_least in ratios:
        verdict = ""
        if target is not None:
            at_least = bool(at_least and at_least[0])
            ok = ratio >= target if at_least else ratio <= target
            missed += not ok
            verdict = f"{'>=' if at_least else '<='} {target:.2f} {'ok' if ok else 'MISSED'}"
        print(f"  {label:75s} {ratio:6.3f} {verdict}")
    return missed


def python_json(script, args, env):
    """Runs a Python benchmark of this folder with --json; its ratios."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ratios.json")
        subprocess.run(
            [sys.executable, os.path.join(HERE, script), *args, "--json", out], check=True, env=env
        )
        with open(out) as f:
            return json.load(f)["ratios"]


def everything(args):
    """--all: builds, runs every benchmark, prints every ratio side by side."""
    build_dir = args.build_dir
    bench_dir = os.path.join(build_dir, "tests", "bench")
    targets = [
        "tests/bench/bench_overhead",
        "tests/bench/libbench_ops.so",
        "tests/bench/bench_ops.py",
    ]
    frontend_bench = os.path.join(bench_dir, "frontend", "frontend_bench")
    counter = os.path.join(build_dir, "tests", "instructions", "frontend_instructions")
    toggle = os.path.join(build_dir, "tests", "instructions", "libcallgrind_toggle.so")
    # The optional ones where this build defines them (valgrind, Google
    # Benchmark and torch found at configure time), built or not: some are not
    # built by default, and a fresh build folder has none of them yet.
    listed = subprocess.run(
        ["ninja", "-C", build_dir, "-t", "targets", "all"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    defined = {line.split(":")[0] for line in listed.splitlines()}
    package_stamp = os.path.join(build_dir, "tests", "decorator", "structop_package.stamp")
    for exe in (frontend_bench, counter, toggle, package_stamp):
        target = os.path.relpath(exe, build_dir)
        if target in defined:
            targets.append(target)
        else:
            print(
                f"run_benchmarks.py: {target} is not defined in {build_dir}: its rows are left out"
            )
    subprocess.run(["ninja", "-C", build_dir, *targets], check=True, stdout=subprocess.DEVNULL)
    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})  # inherited by the benchmark processes
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(build_dir, "runtime", "python"), HERE, env.get("PYTHONPATH", "")]
    )
    library = os.path.join(bench_dir, "libbench_ops.so")
    sections = []

    cpp = overhead(args, os.path.join(bench_dir, "bench_overhead"))
    sections.append(("C++ (bench_overhead, CPU time)", cpp))

    # Each Python benchmark timed and, where valgrind runs, counted in instructions.
    counting = os.path.exists(toggle) and shutil.which("valgrind")
    if not counting:
        print("run_benchmarks.py: no valgrind or no callgrind toggle: Python calls are not counted")
    modes = [
        ("shim_bench.py", "Python eager calls"),
        ("compiled_bench.py", "torch.compile, inductor"),
    ]
    for script, what in modes:
        for how, extra in [(", wall time", [])] + (
            [(" --instructions, callgrind", ["--instructions", toggle])] if counting else []
        ):
            ratios = python_json(script, [library, bench_dir, *extra], env)
            sections.append(
                (
                    f"{what} ({script}{how})",
                    [
                        (r["label"], r["ratio"], r["target"], r["kind"] == "at least")
                        for r in ratios
                    ],
                )
            )
            print()

    # Decorated Python functions (structop.register_custom_op): the package
    # as tests/decorator assembles it in the build folder.
    package = os.path.join(build_dir, "tests", "decorator", "pkg")
    if os.path.exists(package_stamp):
        decorator_env = dict(env)
        decorator_env["PYTHONPATH"] = os.pathsep.join([package, env["PYTHONPATH"]])
        decorator_env.setdefault("STRUCTOPC", os.path.join(build_dir, "compiler", "structopc"))
        ratios = python_json("decorator_bench.py", [], decorator_env)
        sections.append(
            (
                "Decorated Python functions (decorator_bench.py, wall time)",
                [(r["label"], r["ratio"], r["target"], r["kind"] == "at least") for r in ratios],
            )
        )
        print()
        # The first structop.load, runtime library included (the same package).
        ratios = python_json("first_use.py", [], decorator_env)
        sections.append(
            (
                "First use (first_use.py, wall time, no compiler cache)",
                [(r["label"], r["ratio"], r["target"], r["kind"] == "at least") for r in ratios],
            )
        )
        print()
    else:
        print(f"run_benchmarks.py: no {package}: the decorator's and first use's rows are left out")

    # Compile time of generated code, with this torch's headers and the
    # compiler $CXX names (c++ by default).
    import torch.utils.cpp_extension  # noqa: E402

    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    flags = [f"-isystem{d}" for d in torch.utils.cpp_extension.include_paths()]
    compile_args = [
        "--structopc",
        os.path.join(build_dir, "compiler", "structopc"),
        "--cxx",
        os.environ.get("CXX", "c++"),
        "--include",
        os.path.join(HERE, "..", "..", "runtime", "include"),
        "--flags",
        " ".join(flags + [f"-D_GLIBCXX_USE_CXX11_ABI={abi}"]),
    ]
    ratios = python_json("compile_time.py", compile_args, env)
    if shutil.which("valgrind"):
        ratios += python_json("compile_time.py", [*compile_args, "--instructions"], env)
    sections.append(
        (
            "Compile time of generated code (compile_time.py, 3 rounds; cachegrind)",
            [(r["label"], r["ratio"], r["target"]) for r in ratios],
        )
    )
    print()

    import torchgen  # noqa: E402  (the torch under test ships its native_functions.yaml)

    nf = os.path.join(
        os.path.dirname(torchgen.__file__), "packaged", "ATen", "native", "native_functions.yaml"
    )
    front = []
    if os.path.exists(counter) and shutil.which("valgrind"):
        sys.path.insert(0, os.path.join(HERE, "..", "instructions"))
        from callgrind_steps import steps  # noqa: E402

        counts, _ = steps([counter, nf, "1"])
        front.append(
            (
                "structopc load+check+lower vs yaml-cpp load, instructions (callgrind)",
                counts["structopc front end"] / counts["yaml-cpp load"],
                1.2,
            )
        )
    if os.path.exists(frontend_bench):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "frontend.json")
            subprocess.run(
                [
                    frontend_bench,
                    nf,
                    os.path.join(build_dir, "compiler", "structopc"),
                    os.path.join(HERE, "..", "..", "idl_examples", "weights.ops.yaml"),
                    "--benchmark_enable_random_interleaving=true",
                    f"--benchmark_out={out}",
                    "--benchmark_out_format=json",
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            with open(out) as f:
                t = {
                    name.split("/")[0]: ts for name, ts in rounds(json.load(f), "real_time").items()
                }
        front.append(
            (
                "structopc load+check+lower vs yaml-cpp load, wall time (frontend_bench)",
                median_ratio(t["BM_StructopcFrontEnd"], t["BM_YamlCppLoad"]),
                1.2,
            )
        )
    sections.append(
        (
            f"Front end, {os.path.relpath(nf, os.path.dirname(os.path.dirname(torchgen.__file__)))}",
            front,
        )
    )

    import torch  # noqa: E402

    print(
        f"\nEvery ratio, torch {torch.__version__}, {os.cpu_count()} CPUs, "
        f"load {', '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    missed = 0
    for title, ratios in sections:
        print(f"\n{title}")
        missed += print_ratios("ratio (median over rounds)", ratios)
    return 1 if (args.check and missed) else 0


def main():
    args = parse_args()
    if args.all:
        return everything(args)
    exe = args.exe or build(args.build_dir)
    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})  # inherited by the benchmark process
    missed = print_ratios("ratio (median over rounds)", overhead(args, exe))
    return 1 if (args.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
