#!/usr/bin/env python3
"""Decorated Python functions (structop.register_custom_op, issue 42): what a
call, a registration and a training step cost, against baselines measured
in the same run.

Calls (the dc8 case of shim_bench.py: a frozen dataclass of 2 tensors, 4
scalars, a bool and a str; kernel x.clone(), in Python):

  decorated           the op function register_custom_op returns, with the
                      user's dataclass
  flat OpOverload     torch.ops.decobench.dc8.default with the leaves: the
                      same op, its flat call. Target: decorated <= 1.0x.
  generated (YAML)    the same IDL (to_idl) compiled with structopc --emit py
                      into another namespace, the same Python kernel: the
                      generated op function with its generated record (info)
  seed decorator      the stand-in of MagiCompiler's magi_register_custom_op
                      (shim_bench.decorator_stand_in; the package itself is
                      used where it is installed). Target: >= 10x decorated.

Registration (each in a new process, per op, median over 10 ops with an 8-
field nested record and a backward): cold (an empty cache: structopc runs)
and cached (the generated modules there), after the process has registered
one op (the first one in a process also pays for importing the runtime and
torch.library's first use, printed apart). Target: cold <= 5 ms.

Training step: forward + backward of (x * cfg.inner.w + cfg.inner.b) *
cfg.scale on 256 x 1024 and 1024 x 1024 floats, the decorated op
(setup_context + backward) against the same forward and backward as a
torch.autograd.Function in eager ATen. Target: <= 1.05x. For information
also against eager autograd of the forward alone (its own backward
formulas, which this math does not match: a Function with the same math is
itself 1.1x to 1.2x of it here).

Rounds are interleaved; a ratio is the median of per-round ratios.

Usage: decorator_bench.py [--rounds N] [--calls N] [--json FILE]; structop and
structop_runtime importable, $STRUCTOPC set or structopc installed.
"""

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_stats import interleaved_times, median_ratio  # noqa: E402
from shim_bench import SeedDc8, decorator_stand_in  # noqa: E402

import structop  # noqa: E402


def seed_decorator():
    """magi_register_custom_op where installed, else the stand-in."""
    try:
        from magi_compiler.api import magi_register_custom_op
    except ImportError:
        return decorator_stand_in(), "stand-in"

    @magi_register_custom_op(name="decobench::dc8_seed")
    def dc8_seed(x: torch.Tensor, cfg: SeedDc8) -> torch.Tensor:
        return x.clone()

    return dc8_seed, "magi_compiler"


def yaml_op(idl, work):
    """The same IDL as a YAML file in namespace decobench_yaml: its generated module."""
    text = idl.replace("namespace: decobench", "namespace: decobench_yaml")
    path = os.path.join(work, "decobench_yaml.ops.yaml")
    with open(path, "w") as f:
        f.write(text)
    subprocess.run([structop.get_structopc(), "--emit", "py", "-o", work, path], check=True)
    sys.path.insert(0, work)
    import decobench_yaml_ops as module

    return module


REGISTRATION = """
import dataclasses, time, torch, structop

@dataclasses.dataclass(frozen=True)
class Inner:
    w: torch.Tensor
    b: torch.Tensor
    gain: float = 1.0

@dataclasses.dataclass(frozen=True)
class Cfg:
    inner: Inner
    scale: float = 1.0
    shift: float = 0.0
    steps: int = 1
    flag: bool = False
    mode: str = "a"

def setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[1].inner.w)

def backward(ctx, g):
    (w,) = ctx.saved_tensors
    return g * w, None

def make(i):
    def op(x: torch.Tensor, cfg: Cfg) -> torch.Tensor:
        return x * cfg.inner.w
    op.__name__ = op.__qualname__ = f"op{i}"
    return op

times = []
for i in range(11):
    fn = make(i)
    start = time.perf_counter()
    structop.register_custom_op(name=f"regbench::op{i}", setup_context_fn=setup,
                                backward_fn=backward)(fn)
    times.append(time.perf_counter() - start)
print(" ".join(repr(t) for t in times))
"""


def registration():
    """{"first cold": s, "cold": [s per op], "first cached": s, "cached": [...]}."""
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, STRUCTOP_CACHE_DIR=cache)
        for kind in ("cold", "cached"):
            run = subprocess.run(
                [sys.executable, "-c", textwrap.dedent(REGISTRATION)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            times = [float(t) for t in run.stdout.split()]
            out[f"first {kind}"] = times[0]
            out[kind] = times[1:]
    return out


@dataclasses.dataclass(frozen=True)
class Inner:
    w: torch.Tensor
    b: torch.Tensor


@dataclasses.dataclass(frozen=True)
class WeightCfg:
    inner: Inner
    scale: float


class SameMath(torch.autograd.Function):
    """The decorated op's forward and backward as a torch.autograd.Function:
    the same ATen calls, no structop."""

    @staticmethod
    def forward(ctx, x, w, b, scale):
        ctx.save_for_backward(x, w)
        ctx.scale = scale
        return (x * w + b) * scale

    @staticmethod
    def backward(ctx, gy):
        x, w = ctx.saved_tensors
        g = gy * ctx.scale
        return g * w, (g * x).sum(0), g.sum(0), None


def training_ops():
    def setup(ctx, inputs, output):
        x, cfg = inputs
        ctx.save_for_backward(x, cfg.inner.w)
        ctx.scale = cfg.scale

    def backward(ctx, gy):
        x, w = ctx.saved_tensors
        g = gy * ctx.scale
        return g * w, {"inner": {"w": (g * x).sum(0), "b": g.sum(0)}}

    @structop.register_custom_op(
        name="decobench::affine", setup_context_fn=setup, backward_fn=backward
    )
    def affine(x: torch.Tensor, cfg: WeightCfg) -> torch.Tensor:
        return (x * cfg.inner.w + cfg.inner.b) * cfg.scale

    return affine


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=25)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--json", help="write the ratios here too")
    a = p.parse_args()
    torch.set_num_threads(1)

    @structop.register_custom_op(name="decobench::dc8")
    def dc8(x: torch.Tensor, cfg: SeedDc8) -> torch.Tensor:
        return x.clone()

    work = tempfile.mkdtemp(prefix="decobench-")
    generated = yaml_op(dc8.idl, work)
    generated.dc8.register_kernel(None)(lambda x, cfg: x.clone())
    seed, seed_kind = seed_decorator()
    flat = torch.ops.decobench.dc8.default
    x, w, b = (torch.randn(8) for _ in range(3))
    cfg = SeedDc8(w=w, b=b)
    gen_cfg = generated.SeedDc8(w=w, b=b)
    calls = {
        "decorated": lambda: dc8(x, cfg),
        "flat OpOverload": lambda: flat(x, w, b, 1.0, 0.0, None, 1, False, "a"),
        "generated (YAML)": lambda: generated.dc8(x, gen_cfg),
        "seed decorator": lambda: seed(x, cfg),
    }
    for name, call in calls.items():
        torch.testing.assert_close(call(), x, msg=name)
    times = interleaved_times(calls, a.rounds, a.calls)

    affine = training_ops()
    steps = {}
    for rows in (256, 1024):  # 0.25 M and 1 M floats
        xs = torch.randn(rows, 1024, requires_grad=True)
        wt = torch.randn(1024, requires_grad=True)
        bt = torch.randn(1024, requires_grad=True)
        wcfg = WeightCfg(Inner(wt, bt), 2.0)

        def step_decorated(xs=xs, wt=wt, bt=bt, wcfg=wcfg):
            affine(xs, wcfg).sum().backward()

        def step_function(xs=xs, wt=wt, bt=bt):
            SameMath.apply(xs, wt, bt, 2.0).sum().backward()

        def step_eager(xs=xs, wt=wt, bt=bt):
            ((xs * wt + bt) * 2.0).sum().backward()

        step_decorated()
        got = (xs.grad.clone(), wt.grad.clone(), bt.grad.clone())
        for t in (xs, wt, bt):
            t.grad = None
        step_eager()
        for g, t in zip(got, (xs, wt, bt)):
            torch.testing.assert_close(g, t.grad)
        steps[rows] = interleaved_times(
            {
                "decorated fwd+bwd": step_decorated,
                "autograd.Function fwd+bwd": step_function,
                "eager ATen fwd+bwd": step_eager,
            },
            a.rounds,
            max(1, a.calls // 100),
        )
    reg = registration()

    print(
        f"Decorated Python functions, torch {torch.__version__}, {a.rounds} interleaved rounds, "
        f"one thread; seed decorator: {seed_kind}"
    )
    for name in calls:
        print(f"  {name:<22}{statistics.median(times[name]) * 1e6:>10.2f} us per call")
    for rows, by_name in steps.items():
        for name, values in by_name.items():
            print(f"  {name} {rows}x1024{statistics.median(values) * 1e3:>10.3f} ms per step")
    for kind in ("cold", "cached"):
        print(
            f"  registration {kind:<9}{statistics.median(reg[kind]) * 1e3:>10.2f} ms per op "
            f"(the process's first: {reg['first ' + kind] * 1e3:.1f} ms)"
        )
    print()
    results = [
        (
            "decorated call vs flat OpOverload",
            median_ratio(times["decorated"], times["flat OpOverload"]),
            1.0,
            "at most",
        ),
        (
            "decorated call vs generated (YAML) call",
            median_ratio(times["decorated"], times["generated (YAML)"]),
            None,
            "at most",
        ),
        (
            "seed decorator vs decorated call",
            median_ratio(times["seed decorator"], times["decorated"]),
            10.0,
            "at least",
        ),
        *(
            (
                f"decorated fwd+bwd vs autograd.Function, same math, {rows}x1024",
                median_ratio(by_name["decorated fwd+bwd"], by_name["autograd.Function fwd+bwd"]),
                1.05,
                "at most",
            )
            for rows, by_name in steps.items()
        ),
        *(
            (
                f"(info) decorated fwd+bwd vs eager autograd, {rows}x1024",
                median_ratio(by_name["decorated fwd+bwd"], by_name["eager ATen fwd+bwd"]),
                None,
                "at most",
            )
            for rows, by_name in steps.items()
        ),
        ("registration cold, ms per op", statistics.median(reg["cold"]) * 1e3, 5.0, "at most"),
        ("registration cached, ms per op", statistics.median(reg["cached"]) * 1e3, None, "at most"),
    ]
    rows = []
    for label, value, target, kind in results:
        verdict = ""
        if target is not None:
            ok = value <= target if kind == "at most" else value >= target
            verdict = (
                f"{'<=' if kind == 'at most' else '>='} {target:.2f} {'ok' if ok else 'MISSED'}"
            )
        unit = "" if "ms" in label else "x"
        print(f"  {label:<58}{value:7.3f}{unit}  {verdict}")
        rows.append({"label": label, "ratio": value, "target": target, "kind": kind})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"torch": torch.__version__, "ratios": rows}, f)


if __name__ == "__main__":
    main()
