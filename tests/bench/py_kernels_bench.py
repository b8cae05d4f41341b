#!/usr/bin/env python3
"""A Python-kernel structop op vs the same op written with torch.library.custom_op.

bench.rec8(x, cfg) (bench.ops.yaml: Cfg8, an 8-leaf record of two tensors,
five scalars and an enum) implemented in Python through the generated
bench_ops.py: `@bench_ops.rec8.register_kernel(None)` on a kernel taking the
record, x + cfg.w * cfg.b. No compiled extension is loaded: the op is defined
from Python. Compared with, on the same kernel body:

  custom_op flat   torch.library.custom_op taking the 8 leaves as 8 flat
                   arguments (plus x), called with them: the target is
                   structop <= 1.2x this per call.
  seed stand-in    what a decorator that registers a function with dataclass
                   parameters as a custom op must do (the seed's decorator is
                   not in this repository; this is a stand-in): a
                   torch.library.custom_op over the 8 flat leaves, plus
                   generic flattening of the dataclass at the call
                   (dataclasses.fields, getattr) and unflattening in the
                   kernel (the class built from a dict of the leaves).

Calls run without grad (inference), one thread. For information, also a
forward and backward through bench.rec8_grad (a Python backward registered
with register_autograd) against the flat custom_op with its
register_autograd. Rounds are interleaved; a ratio is the median over rounds
of the per-round ratio (bench_stats).

Usage: py_kernels_bench.py DIR_WITH_bench_ops.py [--rounds N] [--calls N]
bench_ops.py imports structop's Python runtime: put BUILD/runtime/python on
PYTHONPATH (meson test --benchmark does).
"""

import argparse
import dataclasses
import statistics
import sys

import torch

from bench_stats import interleaved_times, median_ratio


def flat_custom_op(name):
    @torch.library.custom_op(f"pkbench::{name}", mutates_args=())
    def rec8_flat(
        x: torch.Tensor,
        w: torch.Tensor,
        b: torch.Tensor,
        scale: float,
        shift: float,
        eps: float,
        flag: bool,
        steps: int,
        mode: str,
    ) -> torch.Tensor:
        return x + w * b

    return rec8_flat


def flat_setup_context(ctx, inputs, output):
    x, w, b = inputs[:3]
    ctx.save_for_backward(w, b)


def flat_backward(ctx, grad):
    w, b = ctx.saved_tensors
    return grad, grad * b, grad * w, None, None, None, None, None, None


@dataclasses.dataclass(frozen=True)
class SeedCfg8:
    w: torch.Tensor
    b: torch.Tensor
    scale: float = 1.0
    shift: float = 0.0
    eps: float = 1e-5
    flag: bool = False
    steps: int = 1
    mode: str = "a"


def seed_stand_in():
    """A dataclass-taking op the way a generic decorator has to build it."""
    names = [f.name for f in dataclasses.fields(SeedCfg8)]

    def user_fn(x, cfg):
        return x + cfg.w * cfg.b

    @torch.library.custom_op("pkbench::rec8_seed", mutates_args=())
    def rec8_seed(
        x: torch.Tensor,
        w: torch.Tensor,
        b: torch.Tensor,
        scale: float,
        shift: float,
        eps: float,
        flag: bool,
        steps: int,
        mode: str,
    ) -> torch.Tensor:
        leaves = (w, b, scale, shift, eps, flag, steps, mode)
        return user_fn(x, SeedCfg8(**dict(zip(names, leaves))))  # generic unflatten

    def call(x, cfg):
        return rec8_seed(
            x, *[getattr(cfg, f.name) for f in dataclasses.fields(cfg)]
        )  # generic flatten

    return call


def main():
    p = argparse.ArgumentParser()
    p.add_argument("module_dir")
    p.add_argument("--rounds", type=int, default=25)
    p.add_argument("--calls", type=int, default=2000)
    a = p.parse_args()

    sys.path.insert(0, a.module_dir)
    import bench_ops  # noqa: E402  (generated)

    @bench_ops.rec8.register_kernel(None)
    def rec8(x, cfg):
        return x + cfg.w * cfg.b

    bench_ops.rec8_grad.register_kernel(None, rec8)

    def setup_context(ctx, inputs, output):
        x, cfg = inputs
        ctx.save_for_backward(cfg.w, cfg.b)

    def backward(ctx, grad):
        w, b = ctx.saved_tensors
        return grad, bench_ops.Cfg8Grad(w=grad * b, b=grad * w)

    bench_ops.rec8_grad.register_autograd(backward, setup_context=setup_context)

    torch.set_num_threads(1)
    torch.set_grad_enabled(False)
    x, w, b = (torch.randn(8) for _ in range(3))
    cfg = bench_ops.Cfg8(
        w=w, b=b, scale=1.0, shift=0.0, eps=1e-5, flag=False, steps=1, mode=bench_ops.Mode.a
    )
    flat = flat_custom_op("rec8_flat")
    flat_grad = flat_custom_op("rec8_flat_grad")
    flat_grad.register_autograd(flat_backward, setup_context=flat_setup_context)
    seed = seed_stand_in()
    seed_cfg = SeedCfg8(w=w, b=b)
    xg, wg, bg = (t.clone().requires_grad_() for t in (x, w, b))
    cfg_grad = bench_ops.Cfg8(w=wg, b=bg)

    def with_grad(call):
        def run():
            with torch.enable_grad():
                out = call()
                out.backward(torch.ones_like(out))
            return out.detach()

        return run

    calls = {
        "structop": lambda: bench_ops.rec8(x, cfg),
        "custom_op flat": lambda: flat(x, w, b, 1.0, 0.0, 1e-5, False, 1, "a"),
        "seed stand-in": lambda: seed(x, seed_cfg),
        "structop fwd+bwd": with_grad(lambda: bench_ops.rec8_grad(xg, cfg_grad)),
        "custom_op fwd+bwd": with_grad(
            lambda: flat_grad(xg, wg, bg, 1.0, 0.0, 1e-5, False, 1, "a")
        ),
    }
    expected = x + w * b
    for name, call in calls.items():  # warm up, and prove they compute the same
        torch.testing.assert_close(call(), expected, msg=name)

    times = interleaved_times(calls, a.rounds, a.calls)

    print(f"{'call':<20}{'median us':>10}")
    for name in calls:
        print(f"{name:<20}{statistics.median(times[name]) * 1e6:>10.2f}")
    r = median_ratio(times["structop"], times["custom_op flat"])
    print(f"\nstructop / custom_op flat: {r:.3f}x (target <= 1.2x)")
    print(
        f"seed stand-in / structop:  {median_ratio(times['seed stand-in'], times['structop']):.3f}x"
    )
    r = median_ratio(times["structop fwd+bwd"], times["custom_op fwd+bwd"])
    print(f"structop / custom_op, forward + backward: {r:.3f}x (information)")
    print(f"({a.rounds} interleaved rounds of {a.calls} calls; torch {torch.__version__})")


if __name__ == "__main__":
    main()
