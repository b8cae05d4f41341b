#!/usr/bin/env python3
"""First use of structop.load against torch.utils.cpp_extension.load (issue
45): what a new user waits for the first time, with no compiler cache.

  structop   structop.load("jit_demo", idl_examples/jit/jit_demo.ops.yaml,
             sources=[jit_demo_kernels.cpp]) with an empty structop cache:
             structopc, the C++ runtime library for this torch (once per
             torch and compiler; a new user pays it on the first call), the
             generated code and the kernels, linked and loaded.
  baseline   torch.utils.cpp_extension.load of the same op flattened by hand
             (first_use/flat_jit_demo.cpp: the record's fields as arguments,
             the schema by hand, a CPU kernel and an autograd.Function, with
             torch/extension.h), in an empty build folder.
  cached     structop.load again in a new process, its build published.

Each load runs in a process of its own (the time is the call's, measured in
that process, after `import torch`), with ccache off (CCACHE_DISABLE=1,
STRUCTOP_NO_COMPILER_WRAPPER=1), in alternating order; the ratio is the
median of the per-round ratios. Target: structop / baseline <= 1.0, cached
reload under 50 ms. Each op is called and its gradients compared with the
math (so that neither side is timed for a build that does not work).

Usage: first_use.py [--rounds N] [--json FILE]; structop importable (with
its runtime headers and sources, as installed or as tests/decorator/pkg
holds them), $STRUCTOPC set or structopc installed.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from bench_stats import median_ratio  # noqa: E402

CHECK = """
x = torch.randn(4, 3, requires_grad=True)
w = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
y = CALL
torch.testing.assert_close(y, (x * w + b) * 2.0)
y.sum().backward()
torch.testing.assert_close(x.grad, 2.0 * w.detach())
torch.testing.assert_close(b.grad, torch.full_like(b, 2.0))
"""

STRUCTOP = (
    """
import sys, time, torch, structop
start = time.perf_counter()
ops = structop.load("jit_demo", sys.argv[1], sources=[sys.argv[2]])
elapsed = time.perf_counter() - start
"""
    + CHECK.replace("CALL", "ops.scale_shift(x, ops.Cfg(ops.Affine(w, b)))")
    + "print(elapsed)\n"
)

BASELINE = (
    """
import sys, time, torch
from torch.utils.cpp_extension import load
start = time.perf_counter()
load("flat_jit_demo", [sys.argv[1]], build_directory=sys.argv[2], is_python_module=False)
elapsed = time.perf_counter() - start
"""
    + CHECK.replace("CALL", "torch.ops.flat_jit_demo.scale_shift(x, w, b)")
    + "print(elapsed)\n"
)


def timed(script, args, env):
    result = subprocess.run(
        [sys.executable, "-c", script, *args], env=env, capture_output=True, text=True
    )
    if result.returncode != 0:
        sys.exit(f"first_use: a load failed:\n{result.stdout}\n{result.stderr}")
    return float(result.stdout.split()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", help="write the ratios here too")
    a = p.parse_args()
    # Builds use every CPU, as on a user's machine (run_benchmarks.py pins
    # its benchmarks to one).
    os.sched_setaffinity(0, range(os.cpu_count()))
    env = dict(os.environ, CCACHE_DISABLE="1", STRUCTOP_NO_COMPILER_WRAPPER="1")
    env.pop("TORCH_EXTENSIONS_DIR", None)
    jit = os.path.join(ROOT, "idl_examples", "jit")
    times = {"structop": [], "baseline": [], "cached": []}
    with tempfile.TemporaryDirectory(prefix="first-use-") as work:
        example = os.path.join(work, "jit")
        shutil.copytree(jit, example)
        idl = os.path.join(example, "jit_demo.ops.yaml")
        kernels = os.path.join(example, "jit_demo_kernels.cpp")
        flat = os.path.join(HERE, "first_use", "flat_jit_demo.cpp")
        for i in range(a.rounds):
            cache = os.path.join(work, f"cache{i}")
            build = os.path.join(work, f"torch-build{i}")
            os.makedirs(build)
            senv = dict(env, STRUCTOP_CACHE_DIR=cache)
            order = ["structop", "baseline"] if i % 2 == 0 else ["baseline", "structop"]
            for name in order:
                if name == "structop":
                    times["structop"].append(timed(STRUCTOP, [idl, kernels], senv))
                else:
                    times["baseline"].append(timed(BASELINE, [flat, build], env))
            times["cached"].append(timed(STRUCTOP, [idl, kernels], senv))
            print(
                f"  round {i + 1}: structop {times['structop'][-1]:.1f} s, "
                f"cpp_extension.load {times['baseline'][-1]:.1f} s, "
                f"cached {times['cached'][-1] * 1e3:.0f} ms",
                flush=True,
            )
    ratio = median_ratio(times["structop"], times["baseline"])
    cached_ms = statistics.median(times["cached"]) * 1e3
    print(f"First use, {a.rounds} rounds, no compiler cache, {os.cpu_count()} CPUs")
    print(
        f"  structop.load, runtime library included {statistics.median(times['structop']):8.1f} s"
    )
    print(
        f"  torch.utils.cpp_extension.load            {statistics.median(times['baseline']):8.1f} s"
    )
    print(f"  structop.load, cached                     {cached_ms:8.0f} ms")
    print(
        f"  first use vs cpp_extension.load {ratio:.3f}x  "
        f"<= 1.00 {'ok' if ratio <= 1.0 else 'MISSED'}"
    )
    print(f"  cached reload {cached_ms:.0f} ms  < 50 {'ok' if cached_ms < 50 else 'MISSED'}")
    if a.json:
        rows = [
            {
                "label": "first structop.load vs cpp_extension.load",
                "ratio": ratio,
                "target": 1.0,
                "kind": "at most",
            },
            {
                "label": "cached structop.load, ms",
                "ratio": cached_ms,
                "target": 50.0,
                "kind": "at most",
            },
        ]
        with open(a.json, "w") as f:
            json.dump({"ratios": rows}, f)


if __name__ == "__main__":
    main()
