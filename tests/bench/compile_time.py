#!/usr/bin/env python3
"""Compile time of generated code (a benchmark, not a test).

1. A generated X.ops.cpp for an IDL of 50 ops (records, an enum, half of the
   ops with backward) vs a translation unit with only the torch includes it
   needs (structop/registration.h and structop/convert.h).
2. The light header: a kernel-like TU including the generated X.ops.h vs one
   including ATen/core/Tensor.h (what X.ops.h is meant to cost).

Pair 1 is compiled --repeat times, pair 2 three times as often (it is
quick), alternating the order; medians and per-round ratios are printed, of
wall time and of the compiler's user CPU time (steadier on a loaded machine:
it leaves out the time spent waiting for a CPU).

With --instructions it times nothing: it counts the instructions of the
compiler and its children (cachegrind, --cache-sim=no) compiling pair 1,
both at once, and exits 1 when their ratio is over --limit (the CI guard
compile-time-instructions). GCC's garbage collector is given fixed
parameters there, so that the count does not move with the machine's
memory. --json PATH writes the ratios for run_benchmarks.py --all.

Usage: compile_time.py --structopc PATH --cxx "c++" --include RUNTIME_INCLUDE
                       --flags "TORCH FLAGS" [--ops 50] [--repeat 3] [--opt -O2]
                       [--instructions [--valgrind PATH] [--limit X]]
                       [--json PATH]
"""

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import tempfile
import sys
import time

from bench_stats import median_ratio

TARGET = 1.25  # issue 45: generated code at most 1.25x its includes (time)

IDL_HEAD = """namespace: compile_bench
enums:
  Mode: [fast, exact, safe]
records:
  Inner:
    fields:
      w: Tensor
      b: Tensor? = None
      scale: float = 1.0
  Cfg:
    fields:
      inner: Inner
      mode: Mode = exact
      eps: float = 1e-5
      sizes: int[] = [1, 2]
      name: str? = None
ops:
"""


def write_idl(path, ops):
    with open(path, "w", encoding="utf-8") as f:
        f.write(IDL_HEAD)
        for i in range(ops):
            f.write(f"  - func: op{i}(Tensor x, Cfg cfg, *, float alpha=1.0) -> Tensor\n")
            if i % 2:
                f.write("    backward: true\n")


def compile_once(cxx, flags, source, obj):
    """(wall seconds, user CPU seconds of the compiler and its children)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cxx + flags + ["-c", source, "-o", obj])
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise subprocess.CalledProcessError(os.waitstatus_to_exitcode(status), proc.args)
    return wall, usage.ru_utime


# GCC sizes its garbage collector's heap from the machine's memory; fixed
# parameters make its instruction count the same on every machine.
GCC_FIXED_GC = ["--param", "ggc-min-expand=100", "--param", "ggc-min-heapsize=131072"]


def count_instructions(valgrind, commands):
    """Instructions (cachegrind) of each command and its children, run at once."""
    procs = [
        subprocess.Popen(
            [
                valgrind,
                "--tool=cachegrind",
                "--cache-sim=no",
                "--cachegrind-out-file=/dev/null",
                "--trace-children=yes",
                *command,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]
    counts = []
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"compile_time.py: {' '.join(proc.args)} failed:\n{err}")
        refs = [int(n.replace(",", "")) for n in re.findall(r"I\s+refs:\s+([\d,]+)", err)]
        if not refs:
            raise SystemExit(f"compile_time.py: no instruction count from cachegrind:\n{err}")
        counts.append(sum(refs))
    return counts


def is_gcc(cxx):
    version = subprocess.run(cxx + ["--version"], capture_output=True, text=True).stdout
    return "clang" not in version.lower()


def write_json(path, ratios):
    with open(path, "w") as f:
        json.dump({"ratios": ratios}, f, indent=1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--structopc", required=True)
    p.add_argument("--cxx", required=True)
    p.add_argument("--include", required=True)
    p.add_argument("--flags", default="")
    p.add_argument("--ops", type=int, default=50)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--opt", default="-O2")
    p.add_argument("--instructions", action="store_true", help="count instructions, time nothing")
    p.add_argument("--valgrind", default="valgrind")
    p.add_argument("--limit", type=float, default=1.32, help="for --instructions")
    p.add_argument("--json", help="write the ratios there")
    a = p.parse_args()

    with tempfile.TemporaryDirectory() as work:
        idl = os.path.join(work, "compile_bench.ops.yaml")
        write_idl(idl, a.ops)
        subprocess.run([a.structopc, "--emit", "h,cpp", "-o", work, idl], check=True)
        sources = {
            "generated compile_bench.ops.cpp": os.path.join(work, "compile_bench.ops.cpp"),
            "torch includes only": os.path.join(work, "includes_only.cpp"),
            "kernel TU with compile_bench.ops.h": os.path.join(work, "with_header.cpp"),
            "kernel TU with ATen/core/Tensor.h": os.path.join(work, "with_tensor.cpp"),
        }
        with open(sources["torch includes only"], "w") as f:
            f.write("#include <structop/convert.h>\n#include <structop/registration.h>\n")
        with open(sources["kernel TU with compile_bench.ops.h"], "w") as f:
            f.write(
                '#include "compile_bench.ops.h"\nint64_t f(const at::Tensor& t) { return t.dim(); }\n'
            )
        with open(sources["kernel TU with ATen/core/Tensor.h"], "w") as f:
            f.write(
                "#include <ATen/core/Tensor.h>\nint64_t f(const at::Tensor& t) { return t.dim(); }\n"
            )

        # Meson's compiler command may start with a cache (ccache, sccache):
        # a cached compile measures nothing, so call the compiler itself.
        cxx = shlex.split(a.cxx)
        while len(cxx) > 1 and os.path.basename(cxx[0]) in ("ccache", "sccache"):
            cxx = cxx[1:]
        flags = ["-std=c++17", a.opt, "-fPIC", "-I", work, "-I", a.include] + shlex.split(a.flags)
        out = os.path.join(work, "out.o")
        big = ["generated compile_bench.ops.cpp", "torch includes only"]
        if a.instructions:
            return count_pair(a, cxx, flags, [sources[name] for name in big], work)
        light = ["kernel TU with compile_bench.ops.h", "kernel TU with ATen/core/Tensor.h"]
        # The light pair compiles in about 2 s, so it gets more rounds (the
        # same wall time); both pairs alternate their order between rounds.
        times = {name: [] for name in sources}  # wall seconds per round
        cpu = {name: [] for name in sources}  # user CPU seconds per round
        for pair, rounds in ((big, a.repeat), (light, a.repeat * 3)):
            for r in range(rounds):
                for name in pair if r % 2 == 0 else pair[::-1]:
                    wall, user = compile_once(cxx, flags, sources[name], out)
                    times[name].append(wall)
                    cpu[name].append(user)
        lines = sum(1 for _ in open(sources["generated compile_bench.ops.cpp"]))

    def ratio(pair, t):
        return median_ratio(t[pair[0]], t[pair[1]])

    print(f"{'translation unit':<36}{'wall s':>9}{'user s':>9}{'rounds':>8}  (medians)")
    for name in sources:
        wall, user = statistics.median(times[name]), statistics.median(cpu[name])
        print(f"{name:<36}{wall:>9.2f}{user:>9.2f}{len(times[name]):>8}")
    print(
        f"\ngenerated X.ops.cpp ({a.ops} ops, {lines} lines) / torch includes only: "
        f"{ratio(big, times):.2f}x wall, {ratio(big, cpu):.2f}x user CPU"
    )
    print(
        f"kernel TU with X.ops.h / with ATen/core/Tensor.h: "
        f"{ratio(light, times):.2f}x wall, {ratio(light, cpu):.2f}x user CPU"
    )
    print(f"(ratios: median of per-round ratios; {' '.join(cxx)} {a.opt})")
    if a.json:
        write_json(
            a.json,
            [
                {
                    "label": f"generated X.ops.cpp ({a.ops} ops) / its includes, {what}",
                    "ratio": ratio(big, t),
                    "target": TARGET,
                    "kind": "at most",
                }
                for what, t in (("wall time", times), ("user CPU", cpu))
            ],
        )
    return 0


def count_pair(a, cxx, flags, pair, work):
    """--instructions: the guard. Returns the exit status."""
    if is_gcc(cxx):
        flags = flags + GCC_FIXED_GC
    generated, includes = count_instructions(
        a.valgrind,
        [
            cxx + flags + ["-c", source, "-o", os.path.join(work, f"count{i}.o")]
            for i, source in enumerate(pair)
        ],
    )
    ratio = generated / includes
    ok = ratio <= a.limit
    print(f"Instructions of {' '.join(cxx)} {a.opt} (cachegrind, the compiler and its children):")
    print(f"  generated compile_bench.ops.cpp ({a.ops} ops): {generated:,}")
    print(f"  torch includes only: {includes:,}")
    print(f"  ratio {ratio:.3f} (limit {a.limit}) {'ok' if ok else 'FAILED'}")
    if a.json:
        write_json(
            a.json,
            [
                {
                    "label": f"generated X.ops.cpp ({a.ops} ops) / its includes, instructions",
                    "ratio": ratio,
                    "target": a.limit,
                    "kind": "at most",
                }
            ],
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
