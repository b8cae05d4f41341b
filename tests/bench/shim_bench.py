#!/usr/bin/env python3
"""Eager Python calls: the generated record API vs the flat call of the same op.

Each case calls one op of bench.ops.yaml (C++ kernels, libbench_ops.so) in
record form through the generated Python API, and the same op's OpOverload
(torch.ops.bench.<op>.default) with the flat arguments written out as plain
values (a plain str for an enum). Target: record <= 1.0x flat.

  rec8     Cfg8: 2 tensors, 5 scalars, an enum (kernel x + w * b)
  dc8      Dc8: 2 tensors, 4 scalars (one an optional float), a bool, an enum
           (kernel x.clone(), the issue's case)
  nest3    Outer { Mid { Core { w, bias }, scale, mode }, gain, steps }: three
           levels, defaults
  two_rec  two records (Core, Mid) and an enum parameter
  items4   a list of 4 records (Item4[]), against the flat call on the 4
           lists, built once outside the loop

For dc8 also two Python baselines with the same body (x.clone()):
  custom_op flat    torch.library.custom_op over the flat signature: what a
                    Python user writes instead of structop
  decorator         a stand-in of the dataclass decorator structop replaces
                    (magi_register_custom_op, not in this repository): a
                    custom_op over the leaves; at each call the arguments
                    bound to the user's signature with defaults and walked
                    to the leaves, and in the kernel bound to the flat
                    signature and rebuilt into the record, as the published
                    decorator does (decorator_stand_in says where). Target:
                    >= 10x structop.
  minimal decorator (information) the least such a decorator can do: the
                    leaves by dataclasses.fields and getattr, the record
                    rebuilt from a dict, no signature binding.
and, for information, OpOverload._op (what OpOverload.__call__ calls).

Rounds are interleaved; a ratio is the median over rounds of the per-round
ratio, which cancels the machine's drift (bench_stats).

With --instructions TOGGLE_LIB (tests/instructions' libcallgrind_toggle.so)
the same ratios are counted in instructions instead of timed: the script
runs itself under `valgrind --tool=callgrind --instr-atstart=no` and counts
N and 2N calls of each case between callgrind client requests; (I(2N) -
I(N)) / N is one call. A process's counts do not depend on the machine's
load (times on a loaded machine spread by tens of percent), but they move
with Python's hash seed (dicts of names), by up to 8% for one case (torch
2.6, Python 3.13: dc8's flat call 29,609 instructions under seed 8, 27,477
to 27,668 under seeds 0 to 7), so one process is counted per seed
(--seeds, PYTHONHASHSEED 0, 1 and 2 by default) and a ratio is the median
of the seeds' ratios.

Usage: shim_bench.py LIBBENCH_OPS.so DIR_WITH_bench_ops.py [--rounds N] [--calls N] [--json FILE]
                     [--instructions TOGGLE_LIB [--valgrind PATH] [--seeds 0,1,2]]
bench_ops.py imports structop's Python runtime: put BUILD/runtime/python on
PYTHONPATH (meson test --benchmark does).
"""

import argparse
import dataclasses
import functools
import inspect
import json
import statistics
import sys
import typing

import torch

from bench_stats import (
    add_seeds_argument,
    count_calls,
    counted_per_seed,
    interleaved_times,
    median_ratio,
)


@dataclasses.dataclass(frozen=True)
class SeedDc8:
    w: torch.Tensor
    b: torch.Tensor
    scale: float = 1.0
    shift: float = 0.0
    eps: typing.Optional[float] = None
    steps: int = 1
    flag: bool = False
    mode: str = "a"


def decorator_stand_in():
    """A dataclass-taking op built the way the published decorator builds it.

    What magi_register_custom_op (SandAI-org/MagiCompiler,
    magi_compiler/_magi_register_custom_op.py, read, not copied) does per
    call, written here independently: the exposed function binds its
    arguments to the user's signature (inspect.Signature.bind, then
    apply_defaults), walks a tree of the parameters' fields to the flat
    leaves (getattr at each record node) and calls the custom_op with them;
    the custom_op's kernel binds the flat arguments to the lowered
    signature (bind, apply_defaults) and rebuilds each record from its
    leaves (cls(**fields)) before calling the user's function.
    """

    def user_fn(x, cfg):
        return x.clone()

    # Built once, at decoration: the two signatures and the mapping tree.
    # A node is ("leaf", name, flat_name) or ("record", name, cls, children).
    original = inspect.signature(user_fn)
    tree = [
        ("leaf", "x", "x"),
        (
            "record",
            "cfg",
            SeedDc8,
            [("leaf", f.name, f"cfg__{f.name}") for f in dataclasses.fields(SeedDc8)],
        ),
    ]
    hints = typing.get_type_hints(SeedDc8)
    lowered = inspect.Signature(
        [inspect.Parameter("x", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=torch.Tensor)]
        + [
            inspect.Parameter(
                f"cfg__{f.name}", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=hints[f.name]
            )
            for f in dataclasses.fields(SeedDc8)
        ],
        return_annotation=torch.Tensor,
    )

    # The call path's shape as published: the exposed function and the
    # kernel reach the (un)flattening through functools.partial, and each
    # (un)flattening defines its recursive walk per call.
    def flatten_call(tree, signature, args, kwargs):
        def walk(node, value, out):
            if node[0] == "leaf":
                out.append(value)
                return
            for child in node[3]:
                walk(child, getattr(value, child[1]), out)

        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        flat = []
        for node in tree:
            walk(node, bound.arguments[node[1]], flat)
        return flat

    def unflatten_call(signature, tree, args, kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        flat = bound.arguments

        def build(node):
            if node[0] == "leaf":
                return flat[node[2]]
            return node[2](**{child[1]: build(child) for child in node[3]})

        return {node[1]: build(node) for node in tree}

    to_flat = functools.partial(flatten_call, tree, original)
    to_records = functools.partial(unflatten_call, lowered, tree)

    def kernel(*args, **kwargs):
        return user_fn(**to_records(args, kwargs))

    kernel.__signature__ = lowered
    op = torch.library.custom_op("shimbench::dc8_seed", mutates_args=())(kernel)

    def call(*args, **kwargs):
        return op(*to_flat(args, kwargs))

    return call


def minimal_decorator():
    """The least a generic decorator can do: no signature binding."""
    names = [f.name for f in dataclasses.fields(SeedDc8)]

    def user_fn(x, cfg):
        return x.clone()

    @torch.library.custom_op("shimbench::dc8_minimal", mutates_args=())
    def dc8_minimal(
        x: torch.Tensor,
        w: torch.Tensor,
        b: torch.Tensor,
        scale: float,
        shift: float,
        eps: typing.Optional[float],
        steps: int,
        flag: bool,
        mode: str,
    ) -> torch.Tensor:
        cfg = SeedDc8(**dict(zip(names, (w, b, scale, shift, eps, steps, flag, mode))))
        return user_fn(x, cfg)

    def call(x, cfg):
        return dc8_minimal(x, *[getattr(cfg, f.name) for f in dataclasses.fields(cfg)])

    return call


def flat_custom_op():
    @torch.library.custom_op("shimbench::dc8_flat", mutates_args=())
    def dc8_flat(
        x: torch.Tensor,
        w: torch.Tensor,
        b: torch.Tensor,
        scale: float,
        shift: float,
        eps: typing.Optional[float],
        steps: int,
        flag: bool,
        mode: str,
    ) -> torch.Tensor:
        return x.clone()

    return dc8_flat


# (label, record call, flat call, target): record / flat <= target.
RATIOS = [
    ("rec8: record call vs flat OpOverload", "rec8 record", "rec8 flat", 1.0),
    ("dc8: record call vs flat OpOverload", "dc8 record", "dc8 flat", 1.0),
    ("nest3: record call vs flat OpOverload", "nest3 record", "nest3 flat", 1.0),
    ("two_rec: record call vs flat OpOverload", "two_rec record", "two_rec flat", 1.0),
    ("items4: record call vs flat OpOverload", "items4 record", "items4 flat", 1.0),
    (
        "dc8: record call vs custom_op flat (Python kernel)",
        "dc8 record",
        "dc8 custom_op flat",
        None,
    ),
    ("dc8: (info) OpOverload._op vs flat OpOverload", "dc8 _op", "dc8 flat", None),
]
# (label, slower, faster, at least): slower / faster >= target.
SPEEDUPS = [
    ("dc8: dataclass decorator stand-in vs record call", "dc8 decorator", "dc8 record", 10.0),
    ("dc8: (info) minimal decorator vs record call", "dc8 minimal decorator", "dc8 record", None),
]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("library")
    p.add_argument("module_dir")
    p.add_argument("--rounds", type=int, default=25)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--json", help="write the ratios here too")
    p.add_argument(
        "--instructions",
        metavar="TOGGLE_LIB",
        help="count instructions under callgrind instead of timing",
    )
    p.add_argument("--valgrind", default="valgrind")
    add_seeds_argument(p)
    p.add_argument("--count", metavar="TOGGLE_LIB", help=argparse.SUPPRESS)  # under callgrind
    a = p.parse_args()
    if a.instructions:
        return instructions(a)

    sys.path.insert(0, a.module_dir)
    import bench_ops  # noqa: E402  (generated)

    bench_ops.load_library(a.library)
    torch.set_num_threads(1)
    ops = torch.ops.bench
    x, w, b = (torch.randn(8) for _ in range(3))
    rec8 = bench_ops.Cfg8(
        w=w, b=b, scale=1.0, shift=0.0, eps=1e-5, flag=False, steps=1, mode=bench_ops.Mode.a
    )
    dc8 = bench_ops.Dc8(
        w=w, b=b, scale=1.0, shift=0.0, eps=None, steps=1, flag=False, mode=bench_ops.Mode.a
    )
    outer = bench_ops.Outer(mid=bench_ops.Mid(core=bench_ops.Core(w=w)))
    core, mid = bench_ops.Core(w=w, bias=0.5), bench_ops.Mid(core=bench_ops.Core(w=b))
    items = [bench_ops.Item4(w=w, b=b, scale=2.0, steps=3) for _ in range(4)]
    item_w, item_b, item_scale, item_steps = [w] * 4, [b] * 4, [2.0] * 4, [3] * 4
    seed, seed_cfg = decorator_stand_in(), SeedDc8(w=w, b=b)
    minimal = minimal_decorator()
    custom = flat_custom_op()
    flat = {
        name: getattr(ops, name).default for name in ("rec8", "dc8", "nest3", "two_rec", "items8")
    }
    dc8_op = flat["dc8"]._op

    calls = {
        "rec8 record": lambda: bench_ops.rec8(x, rec8),
        "rec8 flat": lambda: flat["rec8"](x, w, b, 1.0, 0.0, 1e-5, False, 1, "a"),
        "dc8 record": lambda: bench_ops.dc8(x, dc8),
        "dc8 flat": lambda: flat["dc8"](x, w, b, 1.0, 0.0, None, 1, False, "a"),
        "dc8 _op": lambda: dc8_op(x, w, b, 1.0, 0.0, None, 1, False, "a"),
        "dc8 custom_op flat": lambda: custom(x, w, b, 1.0, 0.0, None, 1, False, "a"),
        "dc8 decorator": lambda: seed(x, seed_cfg),
        "dc8 minimal decorator": lambda: minimal(x, seed_cfg),
        "nest3 record": lambda: bench_ops.nest3(x, outer),
        "nest3 flat": lambda: flat["nest3"](x, w, 0.0, 1.0, "b", 1.0, 2),
        "two_rec record": lambda: bench_ops.two_rec(x, core, mid, bench_ops.Mode.c),
        "two_rec flat": lambda: flat["two_rec"](x, w, 0.5, b, 0.0, 1.0, "b", "c"),
        "items4 record": lambda: bench_ops.items8(x, items),
        "items4 flat": lambda: flat["items8"](x, item_w, item_b, item_scale, item_steps),
    }
    for name, call in calls.items():  # warm up, and prove they compute the same
        expected = x + w * b if name.startswith("rec8") or name.startswith("items4") else x
        torch.testing.assert_close(call(), expected, msg=name)

    if a.count:
        count_calls(calls, a.count, COUNTED)
        return

    times = interleaved_times(calls, a.rounds, a.calls)

    print(
        f"Python eager calls, torch {torch.__version__}, {a.rounds} interleaved rounds of "
        f"{a.calls} calls, one thread"
    )
    print(f"  {'call':<22}{'median us':>10}")
    for name in calls:
        print(f"  {name:<22}{statistics.median(times[name]) * 1e6:>10.2f}")
    print()
    report(times, a.json, median_ratio)


COUNTED = 200  # calls per counted loop (and twice as many)


def instructions(a):
    """--instructions: this script under callgrind; the ratios of instructions per call."""
    seeds, runs = counted_per_seed(__file__, a, COUNTED)
    per_call = {name: [run[name] for run in runs] for name in runs[0]}  # in seed order
    print(
        f"Python eager calls, torch {torch.__version__}: instructions per call (callgrind, "
        f"{COUNTED} and {2 * COUNTED} calls; PYTHONHASHSEED {', '.join(map(str, seeds))})"
    )
    for name, values in per_call.items():
        print(f"  {name:<22}" + "".join(f"{value:>10.0f}" for value in values))
    print()
    report(per_call, a.json, median_ratio, unit="instructions")


def report(values, json_path, ratio_of, unit="time"):
    """Prints RATIOS and SPEEDUPS from `values` (per case: what ratio_of takes)."""
    results = []
    suffix = ", instructions" if unit == "instructions" else ""
    for label, num, den, target in RATIOS:
        r = ratio_of(values[num], values[den])
        results.append({"label": label + suffix, "ratio": r, "target": target, "kind": "at most"})
    for label, slow, fast, least in SPEEDUPS:
        r = ratio_of(values[slow], values[fast])
        results.append({"label": label + suffix, "ratio": r, "target": least, "kind": "at least"})
    for res in results:
        verdict = ""
        if res["target"] is not None:
            ok = (
                res["ratio"] <= res["target"]
                if res["kind"] == "at most"
                else res["ratio"] >= res["target"]
            )
            sign = "<=" if res["kind"] == "at most" else ">="
            verdict = f"{sign} {res['target']:.2f} {'ok' if ok else 'MISSED'}"
        print(f"  {res['label']:<58}{res['ratio']:7.3f}x  {verdict}")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"torch": torch.__version__, "ratios": results}, f)


if __name__ == "__main__":
    main()
