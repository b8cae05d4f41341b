#!/usr/bin/env python3
"""PT2 checks of every example op, called through the generated Python API.

For each op of each example module (X_ops.py, record form: `weights_ops.op(x,
cfg)`), on the torch this interpreter has:

  - torch.library.opcheck on its OpOverload with the flat arguments the
    record call lowers to (found through the function's `slot_map` and
    `schema`), with and without inputs that require grad for ops with
    `backward: true`; every check must report SUCCESS;
  - torch.compile(fullgraph=True) with the eager and inductor backends of one
    function per example that calls all its ops, with records built inside
    the function and records passed in: results (and, for the mutation
    example, the caller's tensors) equal eager, gradients equal eager; and
    dynamic=True over three input sizes, compiled once;
  - torch.export of one module per example (records built in forward), run,
    saved and loaded; and modules that take records as inputs (records are
    pytree nodes with a serialized type name);
  - ops without `backward: true`: a backward through them raises an error
    naming the op, eagerly and under torch.compile;
  - FakeTensorMode through the record API: shapes and dtypes;
  - compiled autograd: each op's backward gives the eager gradients (torch
    2.7 and later; torch 2.6 refuses a C++ backward, with an error naming it);
  - importing a generated module a second time under another name.

With --python-kernels, the ops are the examples' Python kernels
(idl_examples/<stem>_kernels.py, KERNELS_DIR) instead of the compiled
library: the same checks.

Usage: test_pt2.py (LIBSTRUCTOP_EXAMPLES.so | --python-kernels KERNELS_DIR) GENERATED_MODULE_DIR
"""

import collections
import dataclasses
import enum
import importlib
import importlib.util
import inspect
import keyword
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
from contextlib import nullcontext

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import unittest_main  # noqa: E402  (tests/support: a skipped case is not a pass)

import torch
from torch._dynamo import compiled_autograd
from torch.utils import _pytree

LIBRARY = None
KERNELS_DIR = None  # --python-kernels: the Python kernels instead of LIBRARY
MODULE_DIR = None

# stem of the IDL file -> the generated module (filled in by load_modules()).
STEMS = [
    "weights",
    "attention",
    "rms_norm",
    "mutation",
    "lists",
    "dtypes",
    "compose",
    "sampling",
    "mlp",
    "schedule",
]
MODULES = {}


def load_modules():
    global W, A, N, M, L, D, C, S, P, Q
    if MODULE_DIR not in sys.path:
        sys.path.insert(0, MODULE_DIR)
    for stem in STEMS:
        MODULES[stem] = importlib.import_module(stem + "_ops")
    if KERNELS_DIR:
        if KERNELS_DIR not in sys.path:
            sys.path.insert(0, KERNELS_DIR)
        for stem in STEMS:  # each registers its ops' Python kernels
            importlib.import_module(stem + "_kernels")
    else:
        MODULES["weights"].load_library(
            LIBRARY
        )  # registers every example; each module binds on first use
    W, A, N, M, L, D, C, S, P, Q = (MODULES[s] for s in STEMS)


def setUpModule():
    load_modules()


def t(*shape, rg=False, dtype=torch.float64):
    return torch.randn(*shape, dtype=dtype).requires_grad_(rg)


def pos(*shape, rg=False):
    """Positive values (variances), a leaf."""
    return (torch.rand(*shape, dtype=torch.float64) + 0.5).requires_grad_(rg)


# ---------------------------------------------------------------------------
# From a record-form call to the OpOverload and its flat arguments
# ---------------------------------------------------------------------------


def overload_of(fn):
    """The OpOverload a generated function calls, from its `schema` attribute."""
    qualified = fn.schema.split("(", 1)[0]  # "nn::rms_norm.gated"
    namespace, name = qualified.split("::")
    name, _, overload = name.partition(".")
    return getattr(getattr(getattr(torch.ops, namespace), name), overload or "default")


def python_name(name):
    return name + "_" if keyword.iskeyword(name) else name


def flat_call(fn, *args, **kwargs):
    """The OpOverload and the flat (args, kwargs) that fn(*args, **kwargs) lowers
    to: every slot of fn.slot_map read from the bound (defaulted) arguments;
    enums as their strings, dynamic numbers as their 0-dim tensors;
    keyword-only schema arguments by name."""
    op = overload_of(fn)
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    values = {}
    for path, lowered in fn.slot_map.items():
        first, *rest = path.split(".")
        value = bound.arguments[python_name(first)]
        for part in rest:
            if value is None:  # an absent optional record: every leaf None
                break
            if isinstance(value, (list, tuple)):  # a list of records: the leaf of each
                value = [getattr(v, python_name(part)) for v in value]
            else:
                value = getattr(value, python_name(part))
        values[lowered] = value.value if isinstance(value, enum.Enum) else value
    schema_args = op._schema.arguments
    assert sorted(values) == sorted(a.name for a in schema_args), (values.keys(), op._schema)
    for a in schema_args:  # a dynamic number: its 0-dim CPU tensor (float64, int64)
        value = values[a.name]
        if str(a.type).startswith("Tensor") and type(value) in (int, float):
            values[a.name] = torch.scalar_tensor(
                value, dtype=torch.int64 if type(value) is int else torch.float64
            )
    flat_args = tuple(values[a.name] for a in schema_args if not a.kwarg_only)
    flat_kwargs = {a.name: values[a.name] for a in schema_args if a.kwarg_only}
    return op, flat_args, flat_kwargs


def tensors_of(tree):
    return [x for x in _pytree.tree_leaves(tree) if isinstance(x, torch.Tensor)]


def assert_same_values(test, got, want, msg=""):
    """Same pytree structure; tensors close (inf equal), other leaves equal."""
    got_leaves, got_spec = _pytree.tree_flatten(got)
    want_leaves, want_spec = _pytree.tree_flatten(want)
    test.assertEqual(str(got_spec), str(want_spec), msg)
    for i, (a, b) in enumerate(zip(got_leaves, want_leaves)):
        if isinstance(b, torch.Tensor):
            torch.testing.assert_close(a, b, msg=lambda m: f"{msg} leaf {i}: {m}")
        else:
            test.assertEqual(a, b, f"{msg} leaf {i}")


def returned_leaves(result):
    """The outputs of a call that returned records, each record replaced by
    its fields depth first (the flat op's outputs); None if none is a record."""

    def leaves(value):
        if dataclasses.is_dataclass(value):
            return [x for f in dataclasses.fields(value) for x in leaves(getattr(value, f.name))]
        return [value]

    values = result if isinstance(result, tuple) else (result,)
    if not any(dataclasses.is_dataclass(v) for v in values):
        return None
    return tuple(x for v in values for x in leaves(v))


def grads_of(outputs, inputs):
    """d(sum of every output that requires grad)/d(each input that requires grad)."""
    outs = [o for o in tensors_of(outputs) if o.requires_grad]
    leaves = [x for x in tensors_of(inputs) if x.requires_grad and x.is_leaf]
    if not outs:
        return []
    loss = sum(o.sum() for o in outs)
    return list(torch.autograd.grad(loss, leaves, allow_unused=True))


# ---------------------------------------------------------------------------
# One representative call per op (record form), for opcheck, FakeTensorMode
# and the no-backward errors. make(rg) -> (args, kwargs); rg: float inputs
# require grad (mutated tensors are then non-leaf, as in-place on a leaf that
# requires grad is an error of its own).
# ---------------------------------------------------------------------------

Case = collections.namedtuple("Case", "stem fn label backward make")


def _attention_full(rg):
    cfg = A.AttnCfg(
        scale=0.5, mask=A.MaskMode.sliding_window, window=3, softcap=5.0, alibi_slopes=t(2, rg=rg)
    )
    return (t(1, 2, 3, 8, rg=rg), t(1, 2, 5, 8, rg=rg), t(1, 2, 5, 6, rg=rg)), dict(
        cfg=cfg, bias=t(1, 2, 3, 5, rg=rg)
    )


def _mask(*shape):
    m = torch.rand(*shape) > 0.3
    m[..., -1] = True  # every row keeps a token
    return m


CASES = [
    Case(
        "weights",
        "op",
        "",
        True,
        lambda rg: (
            (
                t(3, 4, rg=rg),
                W.WeightCfg(
                    W.Inner(t(3, 4, rg=rg), t(3, 4, rg=rg)), scale=2.0, mode=W.MaskType.full
                ),
            ),
            {},
        ),
    ),
    Case(
        "weights",
        "affine",
        "",
        True,
        lambda rg: (
            (
                t(3, 4, rg=rg),
                W.Inner(t(3, 4, rg=rg), t(3, 4, rg=rg)),
                W.Gate(t(3, 4, rg=rg), bias=W.Inner(t(3, 4, rg=rg), t(3, 4, rg=rg))),
            ),
            {},
        ),
    ),
    Case(
        "weights",
        "affine",
        "absent",
        True,
        lambda rg: ((t(3, 4, rg=rg), None, W.Gate(t(3, 4, rg=rg))), {}),
    ),
    Case("weights", "moments", "", True, lambda rg: ((t(3, 4, rg=rg),), {})),
    Case("weights", "extent", "", False, lambda rg: ((t(3, 4, rg=rg),), {})),
    Case("attention", "attention", "", True, _attention_full),
    Case(
        "attention",
        "attention",
        "defaults",
        True,
        lambda rg: ((t(1, 2, 4, 8, rg=rg), t(1, 2, 4, 8, rg=rg), t(1, 2, 4, 8, rg=rg)), {}),
    ),
    Case(
        "attention",
        "rotary",
        "",
        False,
        lambda rg: (
            (t(1, 2, 4, 8, rg=rg), t(1, 2, 4, 8, rg=rg), A.RotaryCfg(theta=500.0, offset=3)),
            {},
        ),
    ),
    Case(
        "rms_norm",
        "rms_norm",
        "",
        True,
        lambda rg: ((t(3, 8, rg=rg), N.RmsNormCfg(weight=t(8, rg=rg), eps=1e-5)), {}),
    ),
    Case("rms_norm", "rms_norm", "no_weight", True, lambda rg: ((t(3, 8, rg=rg),), {})),
    Case(
        "rms_norm",
        "rms_norm_gated",
        "",
        True,
        lambda rg: ((t(3, 8, rg=rg), N.RmsNormCfg(weight=t(8, rg=rg)), t(3, 8, rg=rg)), {}),
    ),
    Case(
        "mutation",
        "adam_step_",
        "",
        False,
        lambda rg: (
            (
                t(5, rg=rg),
                M.AdamState(t(5, rg=rg) * 1, t(5, rg=rg) * 1, pos(5, rg=rg) * 1),
                M.AdamHyper(lr=0.01, weight_decay=0.1),
                3,
            ),
            {},
        ),
    ),
    Case(
        "mutation",
        "ema_update_",
        "",
        False,
        lambda rg: ((t(5, rg=rg), M.Ema(t(5, rg=rg) * 1, decay=0.9)), {}),
    ),
    Case(
        "mutation",
        "batch_stats_update_",
        "",
        False,
        lambda rg: (
            (t(6, 4, rg=rg), M.BatchStats(t(4, rg=rg) * 1, pos(4, rg=rg) * 1, momentum=0.2)),
            {},
        ),
    ),
    Case(
        "mutation",
        "l2_penalty",
        "",
        True,
        lambda rg: ((t(3, 4, rg=rg), M.Penalty(lambda_=0.5)), {}),
    ),
    Case(
        "lists",
        "mix",
        "",
        True,
        lambda rg: (
            (
                t(3, rg=rg),
                L.MixCfg(
                    tensors=[t(3, rg=rg), t(3, rg=rg)],
                    weights=[2.0, 0.5],
                    enabled=[True, True],
                    offsets=[t(3, rg=rg), None],
                ),
            ),
            {},
        ),
    ),
    Case(
        "lists",
        "blend",
        "",
        True,
        lambda rg: (
            (
                t(2, 3, rg=rg),
                [L.Term(t(2, 3, rg=rg), t(1, 3, rg=rg), 2.0), L.Term(w=t(3, rg=rg), scale=-0.5)],
            ),
            {},
        ),
    ),
    Case(
        "lists", "chunk", "", True, lambda rg: ((t(2, 6, rg=rg), L.ChunkCfg(sizes=[1, 2, 3])), {})
    ),
    Case(
        "lists",
        "pad",
        "",
        False,
        lambda rg: ((t(2, 3, rg=rg), L.PadCfg(pad=[1, 2, 0, 1], value=0.5)), {}),
    ),
    Case(
        "lists",
        "center",
        "",
        False,
        lambda rg: (
            (t(3, 4, rg=rg), L.CenterCfg(steps=[L.Reduce.max, "sum"], dims=[0, 1])),
            dict(then=[L.Reduce.mean]),
        ),
    ),
    Case("lists", "center", "defaults", False, lambda rg: ((t(3, 4, rg=rg),), {})),
    Case(
        "dtypes",
        "cast",
        "",
        False,
        lambda rg: (
            (
                t(2, 3, rg=rg, dtype=torch.float32),
                D.CastCfg(dtype=torch.float64, device=torch.device("cpu")),
            ),
            {},
        ),
    ),
    Case("dtypes", "to_half", "", False, lambda rg: ((t(2, 3, rg=rg, dtype=torch.float32),), {})),
    Case(
        "dtypes",
        "to_half",
        "cfg",
        False,
        lambda rg: ((t(2, 3, rg=rg, dtype=torch.float32), D.CastCfg(dtype=torch.bfloat16)), {}),
    ),
    Case(
        "dtypes",
        "full",
        "",
        False,
        lambda rg: (
            (D.FillCfg(sizes=[2, 3], value=1.5, dtype=torch.float16),),
            dict(device=torch.device("cpu")),
        ),
    ),
    Case("compose", "axpy", "", True, lambda rg: ((t(3, 4, rg=rg), t(3, 4, rg=rg), 0.5), {})),
    Case("compose", "mul", "", True, lambda rg: ((t(3, 4, rg=rg), t(3, 4, rg=rg)), {})),
    Case(
        "compose",
        "residual_norm",
        "",
        False,
        lambda rg: ((t(2, 4, rg=rg), t(2, 4, rg=rg), t(4, rg=rg), 1e-5), {}),
    ),
    Case(
        "compose",
        "clamp_pair",
        "",
        False,
        lambda rg: ((t(3, rg=rg), -0.5, 0.5, t(2, 2, rg=rg)), {}),
    ),
    # A parameter named `from`, a Python keyword: `from_` in the schema too.
    Case(
        "dtypes",
        "cast_checked",
        "",
        False,
        lambda rg: ((t(2, 3, rg=rg, dtype=torch.float32), torch.float32, torch.float64), {}),
    ),
    Case(
        "compose",
        "lerp",
        "",
        True,
        lambda rg: ((), dict(from_=t(3, rg=rg), to=t(3, rg=rg), weight=0.25)),
    ),
    Case(
        "sampling",
        "process_logits",
        "",
        False,
        lambda rg: (
            (
                t(2, 6, rg=rg),
                _mask(2, 6),
                S.LogitsCfg(
                    temperature=2.0,
                    top_k=3,
                    bias=t(6, rg=rg),
                    suppress=[0],
                    output="probs",
                    greedy=False,
                ),
            ),
            {},
        ),
    ),
    Case(
        "sampling",
        "process_logits",
        "greedy",
        False,
        lambda rg: ((t(2, 6, rg=rg), None, S.LogitsCfg(output="log_probs", greedy=True)), {}),
    ),
    Case(
        "mlp",
        "linear",
        "",
        True,
        lambda rg: (
            (
                t(3, 4, rg=rg),
                P.Linear(t(5, 4, rg=rg), t(5, rg=rg), P.Lora(t(2, 4, rg=rg), t(5, 2, rg=rg), 0.5)),
            ),
            {},
        ),
    ),
    Case(
        "mlp",
        "mlp",
        "",
        True,
        lambda rg: (
            (
                t(3, 4, rg=rg),
                P.MlpCfg(
                    fc1=P.Linear(
                        t(6, 4, rg=rg), t(6, rg=rg), P.Lora(t(2, 4, rg=rg), t(6, 2, rg=rg), 0.25)
                    ),
                    fc2=P.Linear(t(4, 6, rg=rg)),
                    act=P.Activation.silu,
                    residual_scale=0.5,
                ),
            ),
            {},
        ),
    ),
    Case(
        "schedule",
        "denoise",
        "",
        True,
        lambda rg: (
            (t(3, 4, rg=rg), t(3, 4, rg=rg), Q.Noise(sigma=0.25, step=2, gain=1.5)),
            {},
        ),
    ),
    Case("schedule", "scale", "", True, lambda rg: ((t(3, 4, rg=rg), 0.75), {})),
]


def case_name(case):
    return "__".join(x for x in (case.stem, case.fn, case.label) if x)


def case_inputs(case, rg, seed=0):
    torch.manual_seed(seed)
    return case.make(rg)


def case_fn(case):
    return getattr(MODULES[case.stem], case.fn)


class Timed(unittest.TestCase):
    def setUp(self):
        self._start = time.perf_counter()

    def tearDown(self):
        print(
            f"  [{time.perf_counter() - self._start:6.2f} s] {self.id()}",
            file=sys.stderr,
            flush=True,
        )


# ---------------------------------------------------------------------------
# 1. opcheck
# ---------------------------------------------------------------------------


class OpCheck(Timed):
    """torch.library.opcheck on each op's OpOverload, with the flat arguments
    its record-form call lowers to."""

    def run_opcheck(self, case, rg):
        fn = case_fn(case)
        args, kwargs = case_inputs(case, rg)
        op, flat_args, flat_kwargs = flat_call(fn, *args, **kwargs)
        self.assertIsInstance(op, torch._ops.OpOverload)
        self.assertIn(torch.Tag.pt2_compliant_tag, op.tags)

        # The record call and the flat call agree (outputs and, for mutating
        # ops, the tensors they write to), on identical inputs.
        args2, kwargs2 = case_inputs(case, rg)
        _, flat_args2, flat_kwargs2 = flat_call(fn, *args2, **kwargs2)
        with torch.no_grad():
            got_record = fn(*args, **kwargs)
            got_flat = op(*flat_args2, **flat_kwargs2)
        record_leaves = returned_leaves(got_record)
        if record_leaves is not None:  # a returned record: one output per leaf
            got_record, got_flat = (
                record_leaves,
                got_flat if isinstance(got_flat, tuple) else (got_flat,),
            )
        assert_same_values(self, got_record, got_flat, "record call vs flat call")
        assert_same_values(
            self, (args, kwargs), (args2, kwargs2), "inputs after record call vs flat call"
        )

        args, kwargs = case_inputs(case, rg)
        op, flat_args, flat_kwargs = flat_call(fn, *args, **kwargs)
        # raise_exception=False: every check runs, and a failure names them all.
        result = torch.library.opcheck(op, flat_args, flat_kwargs, raise_exception=False)
        self.assertEqual(
            set(result),
            {
                "test_schema",
                "test_autograd_registration",
                "test_faketensor",
                "test_aot_dispatch_dynamic",
            },
        )
        failed = {k: f"{type(v).__name__}: {v}"[:3000] for k, v in result.items() if v != "SUCCESS"}
        self.assertEqual(
            failed,
            {},
            f"opcheck({op}) failed:\n" + "\n".join(f"{k}: {v}" for k, v in failed.items()),
        )
        self.assertTrue(all(v == "SUCCESS" for v in result.values()), result)


def _add_opcheck_tests():
    for case in CASES:
        name = case_name(case)
        setattr(OpCheck, f"test_{name}", lambda self, case=case: self.run_opcheck(case, rg=False))
        if case.backward:
            setattr(
                OpCheck,
                f"test_{name}__requires_grad",
                lambda self, case=case: self.run_opcheck(case, rg=True),
            )


_add_opcheck_tests()


# ---------------------------------------------------------------------------
# Programs: per example, a function calling all its ops (records built
# inside) and one taking records (passed in). tensors(n, rg): the inputs,
# with a size n that varies under dynamic=True (n is never another fixed
# size of the inputs, so duck sizing does not tie it to one); rg: the inputs
# of backward ops require grad (those of the others never do).
# ---------------------------------------------------------------------------

Program = collections.namedtuple("Program", "stem backward tensors records inside passed")


def _weights():
    def tensors(n, rg):
        return dict(x=t(n, 4, rg=rg), w=t(n, 4, rg=rg), b=t(n, 4, rg=rg))

    def records(ts):
        return dict(cfg=W.WeightCfg(W.Inner(ts["w"], ts["b"]), scale=2.0, mode=W.MaskType.full))

    def inside(ts):
        return [
            W.op(ts["x"], W.WeightCfg(W.Inner(w=ts["w"], b=ts["b"]), scale=0.5)),
            W.op(ts["x"], W.WeightCfg(W.Inner(ts["w"], ts["b"]), mode="sliding_window")),
            W.moments(ts["x"] * ts["w"]),
        ]  # a record return

    def passed(ts, recs):
        return [W.op(ts["x"], recs["cfg"])]

    return Program("weights", True, tensors, records, inside, passed)


def _attention():
    def tensors(n, rg):
        return dict(
            q=t(1, 2, n, 8, rg=rg),
            k=t(1, 2, n, 8, rg=rg),
            v=t(1, 2, n, 6, rg=rg),
            slopes=pos(2, rg=rg),
            bias=t(1, 2, n, n, rg=rg),
            rq=t(1, 2, n, 8),
            rk=t(1, 2, n, 8),
        )

    def records(ts):
        return dict(
            cfg=A.AttnCfg(
                scale=0.5,
                mask=A.MaskMode.sliding_window,
                window=3,
                softcap=5.0,
                alibi_slopes=ts["slopes"],
            ),
            rot=A.RotaryCfg(theta=500.0, offset=3),
        )

    def inside(ts):
        q, k, v = ts["q"], ts["k"], ts["v"]
        return [
            A.attention(
                q,
                k,
                v,
                cfg=A.AttnCfg(
                    mask="sliding_window", window=3, softcap=5.0, alibi_slopes=ts["slopes"]
                ),
                bias=ts["bias"],
            ),
            A.attention(q, k, v),
            A.rotary(ts["rq"], ts["rk"], A.RotaryCfg(offset=2)),
            A.rotary(ts["rq"], ts["rk"]),
        ]

    def passed(ts, recs):
        return [
            A.attention(ts["q"], ts["k"], ts["v"], cfg=recs["cfg"], bias=ts["bias"]),
            A.rotary(ts["rq"], ts["rk"], recs["rot"]),
        ]

    return Program("attention", True, tensors, records, inside, passed)


def _rms_norm():
    def tensors(n, rg):
        return dict(x=t(n, 8, rg=rg), w=t(8, rg=rg), gate=t(n, 8, rg=rg))

    def records(ts):
        return dict(cfg=N.RmsNormCfg(weight=ts["w"], eps=1e-5))

    def inside(ts):
        return [
            N.rms_norm(ts["x"], N.RmsNormCfg(weight=ts["w"])),
            N.rms_norm(ts["x"]),
            N.rms_norm_gated(ts["x"], N.RmsNormCfg(ts["w"], 1e-4), ts["gate"]),
            N.rms_norm_gated(ts["x"], N.RmsNormCfg(), ts["gate"]),
        ]

    def passed(ts, recs):
        return [
            N.rms_norm(ts["x"], recs["cfg"]),
            N.rms_norm_gated(ts["x"], recs["cfg"], ts["gate"]),
        ]

    return Program("rms_norm", True, tensors, records, inside, passed)


def _mutation():
    # Two sets of state: one for the records built inside, one for the records passed in.
    def tensors(n, rg):
        ts = dict(grad=t(n), value=t(n), x=t(5, n), w=t(3, n, rg=rg))
        for suffix in ("", "2"):
            ts.update(
                {
                    "param" + suffix: t(n),
                    "m" + suffix: t(n),
                    "v" + suffix: pos(n),
                    "avg" + suffix: t(n),
                    "mean" + suffix: t(n),
                    "var" + suffix: pos(n),
                }
            )
        return ts

    def records(ts):
        return dict(
            state=M.AdamState(ts["param2"], ts["m2"], ts["v2"]),
            hp=M.AdamHyper(lr=0.01, weight_decay=0.1),
            ema=M.Ema(ts["avg2"], decay=0.9),
            stats=M.BatchStats(ts["mean2"], ts["var2"], momentum=0.2),
            penalty=M.Penalty(lambda_=0.5),
        )

    def inside(ts):
        M.adam_step_(
            ts["grad"], M.AdamState(ts["param"], ts["m"], ts["v"]), M.AdamHyper(lr=0.01), 2
        )
        M.ema_update_(ts["value"], M.Ema(ts["avg"], 0.9))
        M.batch_stats_update_(ts["x"], M.BatchStats(mean=ts["mean"], var=ts["var"]))
        return [M.l2_penalty(ts["w"], M.Penalty(0.25)), M.l2_penalty(ts["w"])]

    def passed(ts, recs):
        M.adam_step_(ts["grad"], recs["state"], recs["hp"], 3)
        M.ema_update_(ts["value"], recs["ema"])
        M.batch_stats_update_(ts["x"], recs["stats"])
        return [M.l2_penalty(ts["w"], recs["penalty"])]

    return Program("mutation", True, tensors, records, inside, passed)


def _lists():
    def tensors(n, rg):
        return dict(x=t(n), a=t(n), b=t(n), off=t(n), c=t(2, n, rg=rg), p=t(3, n))

    def records(ts):
        return dict(
            mix=L.MixCfg(
                tensors=[ts["a"], ts["b"]],
                weights=[2.0, 0.5],
                enabled=[True, True],
                offsets=[ts["off"], None],
            ),
            chunk=L.ChunkCfg(sizes=[1, 1], dim=0),
            pad=L.PadCfg(pad=[1, 2, 0, 1], value=0.5),
            center=L.CenterCfg(steps=[L.Reduce.sum, L.Reduce.max], dims=[0, -1]),
        )

    def inside(ts):
        c = ts["c"]
        return [
            L.mix(ts["x"], L.MixCfg([ts["a"], ts["b"]])),
            L.mix(
                ts["x"],
                L.MixCfg(
                    tensors=[ts["a"], ts["b"]],
                    weights=[1.5, -1.0],
                    enabled=[False, True],
                    offsets=[None, ts["off"]],
                ),
            ),
            L.chunk(c, L.ChunkCfg(sizes=[c.shape[-1] - 2, 2])),  # sizes symbolic under dynamic=True
            L.pad(ts["p"]),
            L.pad(ts["p"], L.PadCfg(pad=[0, c.shape[-1]], value=1.0)),
            L.center(ts["p"], L.CenterCfg([L.Reduce.max, "mean"], [1, 0]), then=["sum"]),
        ]

    def passed(ts, recs):
        return [
            L.mix(ts["x"], recs["mix"]),
            L.chunk(ts["c"], recs["chunk"]),
            L.pad(ts["p"], recs["pad"]),
            L.center(ts["p"], recs["center"]),
        ]

    return Program("lists", True, tensors, records, inside, passed)


def _dtypes():
    def tensors(n, rg):
        return dict(x=t(n, 3, dtype=torch.float32), y=t(n, 2, dtype=torch.float32))

    def records(ts):
        return dict(
            cast=D.CastCfg(dtype=torch.float64, device=torch.device("cpu")),
            fill=D.FillCfg(sizes=[2, 3], value=1.5, dtype=torch.float16),
        )

    def inside(ts):
        x = ts["x"]
        return [
            D.cast(x),
            D.cast(x, D.CastCfg(dtype=torch.float64, device="cpu")),
            D.full(D.FillCfg(sizes=[x.shape[0], 3], value=2.5, dtype=torch.float64)),
            D.full(D.FillCfg(sizes=[2], value=1.0), device="cpu"),
            D.to_half(x),
            D.cast_checked(x, torch.float32, torch.float64),
            D.cast_checked(x, from_=torch.float32, to=torch.float16),
        ]

    def passed(ts, recs):
        return [
            D.cast(ts["x"], recs["cast"]),
            D.full(recs["fill"]),
            D.to_half(ts["x"], recs["cast"]),
            D.cast_checked(ts["y"], torch.float32, recs["cast"].dtype),
        ]

    return Program("dtypes", False, tensors, records, inside, passed)


def _compose():
    def tensors(n, rg):
        return dict(
            x=t(n, 4, rg=rg),
            y=t(n, 4, rg=rg),
            a=t(n, 4, rg=rg),
            b=t(n, 4, rg=rg),
            rx=t(n, 4),
            rr=t(n, 4),
            rw=t(4),
            ca=t(n),
            cb=t(2, n),
        )

    def records(ts):
        return {}

    def inside(ts):
        return [
            C.axpy(ts["x"], ts["y"]),
            C.axpy(ts["x"], ts["y"], alpha=0.5),
            C.mul(ts["a"], ts["b"]),
            C.residual_norm(ts["rx"], ts["rr"], ts["rw"]),
            C.residual_norm(ts["rx"], ts["rr"], ts["rw"], eps=1e-3),
            C.clamp_pair(ts["ca"], -0.5, 0.5, ts["cb"]),
            C.lerp(ts["a"], ts["b"]),
            C.lerp(from_=ts["x"], to=ts["a"], weight=0.25),
        ]

    def passed(ts, recs):
        return [
            C.axpy(ts["x"], ts["y"], 2.0),
            C.mul(ts["b"], ts["a"]),
            C.lerp(ts["b"], ts["y"], 0.75),
        ]

    return Program("compose", True, tensors, records, inside, passed)


def _sampling():
    def tensors(n, rg):
        return dict(logits=t(3, n), bias=t(n), mask=_mask(3, n))

    def records(ts):
        return dict(
            cfg=S.LogitsCfg(
                temperature=2.0,
                top_k=2,
                bias=ts["bias"],
                suppress=[0],
                output="probs",
                greedy=False,
            )
        )

    def inside(ts):
        return [
            S.process_logits(
                ts["logits"],
                ts["mask"],
                S.LogitsCfg(
                    temperature=0.5, top_k=3, bias=ts["bias"], suppress=[0, 1], output="log_probs"
                ),
            ),
            S.process_logits(ts["logits"], None),
            S.process_logits(ts["logits"], ts["mask"], S.LogitsCfg(greedy=True)),
        ]

    def passed(ts, recs):
        return [S.process_logits(ts["logits"], ts["mask"], recs["cfg"])]

    return Program("sampling", False, tensors, records, inside, passed)


def _mlp():
    def tensors(n, rg):
        return dict(
            x=t(n, 4, rg=rg),
            w1=t(6, 4, rg=rg),
            b1=t(6, rg=rg),
            a1=t(2, 4, rg=rg),
            bb1=t(6, 2, rg=rg),
            w2=t(4, 6, rg=rg),
            b2=t(4, rg=rg),
            lw=t(5, 4, rg=rg),
            lb=t(5, 2, rg=rg),
        )

    def records(ts):
        return dict(
            cfg=P.MlpCfg(
                fc1=P.Linear(ts["w1"], ts["b1"], P.Lora(ts["a1"], ts["bb1"], 0.5)),
                fc2=P.Linear(ts["w2"], ts["b2"]),
                act=P.Activation.silu,
                residual_scale=0.5,
            ),
            layer=P.Linear(ts["lw"]),
        )

    def inside(ts):
        return [
            P.linear(
                ts["x"], P.Linear(weight=ts["lw"], lora=P.Lora(a=ts["a1"], b=ts["lb"], scale=0.25))
            ),
            P.linear(ts["x"], P.Linear(ts["w1"], ts["b1"])),
            P.mlp(ts["x"], P.MlpCfg(fc1=P.Linear(ts["w1"], ts["b1"]), fc2=P.Linear(ts["w2"]))),
        ]

    def passed(ts, recs):
        return [P.linear(ts["x"], recs["layer"]), P.mlp(ts["x"], recs["cfg"])]

    return Program("mlp", True, tensors, records, inside, passed)


def _schedule():
    def tensors(n, rg):
        return dict(x=t(n, 4, rg=rg), eps=t(n, 4, rg=rg))

    def records(ts):
        return dict(noise=Q.Noise(sigma=0.5, step=3))

    def inside(ts):
        return [
            Q.denoise(ts["x"], ts["eps"], Q.Noise(sigma=0.25, step=1, gain=2.0)),
            Q.scale(ts["x"], 1.5),
        ]

    def passed(ts, recs):
        return [Q.denoise(ts["x"], ts["eps"], recs["noise"])]

    return Program("schedule", True, tensors, records, inside, passed)


PROGRAMS = {
    p.__name__[1:]: p
    for p in (
        _weights,
        _attention,
        _rms_norm,
        _mutation,
        _lists,
        _dtypes,
        _compose,
        _sampling,
        _mlp,
        _schedule,
    )
}


def program_inputs(program, n, rg, seed=0):
    """Fresh (tensors, records) for a run; the same seed gives equal inputs."""
    torch.manual_seed(seed)
    ts = program.tensors(n, rg)
    return ts, program.records(ts)


def program_fn(program):
    def fn(ts, recs):
        return program.inside(ts), program.passed(ts, recs)

    return fn


# ---------------------------------------------------------------------------
# 2. torch.compile
# ---------------------------------------------------------------------------


class Compile(Timed):
    """One compiled function per example and backend (fullgraph=True), calling
    every op with records built inside and records passed in."""

    def setUp(self):
        super().setUp()
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()

    def compare_runs(self, program, compiled, n, rg, seed=0):
        fn = program_fn(program)
        ts, recs = program_inputs(program, n, rg, seed)
        want = fn(ts, recs)
        want_grads = grads_of(want, ts)
        ts_c, recs_c = program_inputs(program, n, rg, seed)
        got = compiled(ts_c, recs_c)
        assert_same_values(self, got, want, f"{program.stem} n={n}: outputs")
        # The caller's tensors (written to by the mutation example) after the call.
        assert_same_values(
            self, (ts_c, recs_c), (ts, recs), f"{program.stem} n={n}: inputs after the call"
        )
        if rg:
            got_grads = grads_of(got, ts_c)
            self.assertGreater(len(want_grads), 0)
            assert_same_values(self, got_grads, want_grads, f"{program.stem} n={n}: gradients")

    def graphs(self):
        return torch._dynamo.utils.counters["stats"]["unique_graphs"]

    def run_static(self, stem, backend):
        program = PROGRAMS[stem]()
        compiled = torch.compile(program_fn(program), backend=backend, fullgraph=True)
        self.compare_runs(program, compiled, 7, rg=program.backward)
        self.assertEqual(self.graphs(), 1)

    def run_dynamic(self, stem):
        program = PROGRAMS[stem]()
        compiled = torch.compile(
            program_fn(program), backend="inductor", fullgraph=True, dynamic=True
        )
        for seed, n in enumerate((7, 9, 11)):
            self.compare_runs(program, compiled, n, rg=program.backward, seed=seed)
        self.assertEqual(self.graphs(), 1, "compiled more than once for three sizes")


def _add_compile_tests():
    for stem in STEMS:
        setattr(
            Compile, f"test_{stem}__eager", lambda self, stem=stem: self.run_static(stem, "eager")
        )
        setattr(
            Compile,
            f"test_{stem}__inductor",
            lambda self, stem=stem: self.run_static(stem, "inductor"),
        )
        setattr(
            Compile,
            f"test_{stem}__inductor_dynamic",
            lambda self, stem=stem: self.run_dynamic(stem),
        )


_add_compile_tests()


# ---------------------------------------------------------------------------
# 3. torch.export
# ---------------------------------------------------------------------------


class _Inside(torch.nn.Module):
    def __init__(self, program):
        super().__init__()
        self.program = program

    def forward(self, ts):
        return self.program.inside(ts)


class _Call(torch.nn.Module):
    """forward(*args) = fn(*args): records among the module's inputs."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _save_load(ep):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "program.pt2")
        torch.export.save(ep, path)
        return torch.export.load(path)


class Export(Timed):
    def setUp(self):
        super().setUp()
        torch._dynamo.reset()

    def run_inside(self, stem):
        """A module whose forward builds the records and calls every op."""
        program = PROGRAMS[stem]()
        module = _Inside(program)
        ts, _ = program_inputs(program, 7, rg=False)
        ep = torch.export.export(module, (ts,))
        # The ops are nodes of the graph (not traced through).
        ops = {str(node.target) for node in ep.graph.nodes if node.op == "call_function"}
        self.assertTrue(any(op.startswith(MODULES[stem].NAMESPACE + ".") for op in ops), ops)
        for label, program_ in (("exported", ep), ("saved and loaded", None)):
            if program_ is None:
                program_ = _save_load(ep)
            want_ts, _ = program_inputs(program, 7, rg=False, seed=1)
            want = program.inside(want_ts)
            got_ts, _ = program_inputs(program, 7, rg=False, seed=1)
            got = program_.module()(got_ts)
            assert_same_values(self, got, want, f"{stem} {label}: outputs")
            assert_same_values(self, got_ts, want_ts, f"{stem} {label}: inputs after the call")

    def run_record_input(self, fn, make, serialized_names):
        """A module taking records as inputs: exported, run with other records
        of the same static fields, saved and loaded."""
        torch.manual_seed(0)
        ep = torch.export.export(_Call(fn), make())
        spec = _pytree.treespec_dumps(ep.call_spec.in_spec)
        for name in serialized_names:
            self.assertIn(f'"{name}"', spec)
        loaded = _save_load(ep)
        # Equal (an enum in the context comes back as its string, which equals it).
        self.assertEqual(loaded.call_spec.in_spec, ep.call_spec.in_spec)
        for label, program in (("exported", ep), ("saved and loaded", loaded)):
            torch.manual_seed(1)
            want_args = make()
            want = fn(*want_args)
            torch.manual_seed(1)
            got_args = make()
            got = program.module()(*got_args)
            assert_same_values(self, got, want, label)
            assert_same_values(self, got_args, want_args, f"{label}: inputs after the call")

    def test_record_input_weights(self):
        self.run_record_input(
            lambda x, cfg: W.op(x, cfg),
            lambda: (
                t(3, 4),
                W.WeightCfg(W.Inner(t(3, 4), t(3, 4)), scale=3.0, mode=W.MaskType.full),
            ),
            ["structop.weights.weights.WeightCfg", "structop.weights.weights.Inner"],
        )

    def test_record_input_attention(self):
        self.run_record_input(
            lambda q, k, v, cfg, rot: (A.attention(q, k, v, cfg=cfg), A.rotary(q, k, rot)),
            lambda: (
                t(1, 2, 4, 8),
                t(1, 2, 4, 8),
                t(1, 2, 4, 8),
                A.AttnCfg(
                    mask=A.MaskMode.sliding_window, window=2, softcap=3.0, alibi_slopes=pos(2)
                ),
                A.RotaryCfg(offset=5),
            ),
            ["structop.attention.attention.AttnCfg", "structop.attention.attention.RotaryCfg"],
        )

    def test_record_input_rms_norm(self):
        self.run_record_input(
            lambda x, cfg, gate: (N.rms_norm(x, cfg), N.rms_norm_gated(x, cfg, gate)),
            lambda: (t(3, 8), N.RmsNormCfg(weight=t(8), eps=1e-3), t(3, 8)),
            ["structop.nn.rms_norm.RmsNormCfg"],
        )

    def test_record_input_mutation(self):
        def fn(grad, state, hp, value, ema):
            M.adam_step_(grad, state, hp, 2)
            M.ema_update_(value, ema)
            return M.l2_penalty(state.param, M.Penalty(0.1))

        self.run_record_input(
            fn,
            lambda: (
                t(5),
                M.AdamState(t(5), t(5), pos(5)),
                M.AdamHyper(lr=0.1),
                t(5),
                M.Ema(t(5), 0.5),
            ),
            [
                "structop.optim.mutation.AdamState",
                "structop.optim.mutation.AdamHyper",
                "structop.optim.mutation.Ema",
            ],
        )

    def test_record_input_lists(self):
        self.run_record_input(
            lambda x, mix, chunk, pad, center: (
                L.mix(x, mix),
                L.chunk(x, chunk),
                L.pad(x, pad),
                L.center(x, center, then=[L.Reduce.max]),
            ),
            lambda: (
                t(2, 6),
                L.MixCfg(
                    tensors=[t(2, 6), t(2, 6)],
                    weights=[0.5, 2.0],
                    enabled=[True, False],
                    offsets=[None, t(2, 6)],
                ),
                L.ChunkCfg(sizes=[2, 4]),
                L.PadCfg(pad=[2, 1], value=-1.0),
                L.CenterCfg(steps=[L.Reduce.mean, L.Reduce.max], dims=[1, 0]),
            ),
            [
                "structop.multi.lists.MixCfg",
                "structop.multi.lists.ChunkCfg",
                "structop.multi.lists.PadCfg",
                "structop.multi.lists.CenterCfg",
            ],
        )

    def test_record_input_dtypes(self):
        self.run_record_input(
            lambda x, cfg: D.cast(x, cfg),
            lambda: (
                t(2, 3, dtype=torch.float32),
                D.CastCfg(dtype=torch.float64, device=torch.device("cpu")),
            ),
            ["structop.dtypes.dtypes.CastCfg"],
        )

    def test_record_input_dtypes_full(self):
        self.run_record_input(
            lambda x, cfg: (D.full(cfg), x + 1),
            lambda: (t(2), D.FillCfg(sizes=[2, 3], value=0.5, dtype=torch.float16)),
            ["structop.dtypes.dtypes.FillCfg"],
        )

    def test_record_input_sampling(self):
        self.run_record_input(
            lambda logits, mask, cfg: S.process_logits(logits, mask, cfg),
            lambda: (
                t(2, 6),
                _mask(2, 6),
                S.LogitsCfg(top_k=2, bias=t(6), suppress=[1, 2], output="log_probs"),
            ),
            ["structop.sampling.sampling.LogitsCfg"],
        )

    def test_record_input_mlp(self):
        self.run_record_input(
            lambda x, cfg: P.mlp(x, cfg),
            lambda: (
                t(3, 4),
                P.MlpCfg(
                    fc1=P.Linear(t(6, 4), t(6), P.Lora(t(2, 4), t(6, 2), 0.5)),
                    fc2=P.Linear(t(4, 6)),
                    act=P.Activation.relu,
                    residual_scale=2.0,
                ),
            ),
            ["structop.nn.mlp.MlpCfg", "structop.nn.common.Linear", "structop.nn.common.Lora"],
        )


def _add_export_tests():
    for stem in STEMS:
        setattr(Export, f"test_{stem}", lambda self, stem=stem: self.run_inside(stem))


_add_export_tests()


# ---------------------------------------------------------------------------
# 4. No backward: a backward through the op raises an error naming it
# ---------------------------------------------------------------------------


def _qualified(case):
    return overload_of(case_fn(case)).name().split(".")[0]  # "multi::mix"


def _backward_through(outputs, inputs):
    """Backward from every output, and every written non-leaf input, that requires grad."""
    tensors = [
        x for x in tensors_of((outputs, inputs)) if x.requires_grad and x.grad_fn is not None
    ]
    sum(x.sum() for x in tensors).backward()


def _grad_fns(outputs, inputs):
    return [
        type(x.grad_fn).__name__ for x in tensors_of((outputs, inputs)) if x.grad_fn is not None
    ]


class NoBackward(Timed):
    """Ops without `backward: true`, called with inputs that require grad."""

    def setUp(self):
        super().setUp()
        torch._dynamo.reset()

    def check_eager(self, case):
        fn = case_fn(case)
        args, kwargs = case_inputs(case, rg=True)
        out = fn(*args, **kwargs)  # the forward runs
        try:
            _backward_through(out, (args, kwargs))
        except RuntimeError as error:
            self.assertRegex(str(error), re.escape(_qualified(case)) + ".*not implemented")
        else:
            self.fail(
                f"a backward through {_qualified(case)} (no `backward: true`) did not raise; "
                f"grad_fn of its outputs and written inputs: {_grad_fns(out, (args, kwargs))}"
            )

    def check_compiled(self, case, fn, inputs):
        compiled = torch.compile(fn, backend="aot_eager", fullgraph=True)
        try:
            out = compiled(*inputs)
            _backward_through(out, inputs)
        except Exception as error:  # noqa: BLE001 (torch.compile may wrap it)
            self.assertIn(_qualified(case), str(error))
            self.assertIn("not implemented", str(error))
        else:
            self.fail(
                f"a backward through {_qualified(case)} (no `backward: true`) under torch.compile "
                f"(aot_eager) did not raise; grad_fn of the results: {_grad_fns(out, ())}"
            )


NO_BACKWARD = [c for c in CASES if not c.backward and c.fn != "full"]  # full: no tensor input


def _compiled_no_backward(self, case):
    fn = case_fn(case)
    if case.stem != "mutation":
        args, kwargs = case_inputs(case, rg=True)
        self.check_compiled(case, lambda args, kwargs: fn(*args, **kwargs), (args, kwargs))
        return
    # Mutating ops: the tensors they write are non-leaf tensors made inside the
    # compiled function from leaves that require grad.
    torch.manual_seed(0)
    if case.fn == "adam_step_":

        def call(grad, p, m, v):
            state = M.AdamState(p * 1, m * 1, v * 1)
            M.adam_step_(grad, state, M.AdamHyper(lr=0.01), 3)
            return state.param, state.exp_avg, state.exp_avg_sq

        inputs = (t(5, rg=True), t(5, rg=True), t(5, rg=True), pos(5, rg=True))
    elif case.fn == "ema_update_":

        def call(value, average):
            ema = M.Ema(average * 1, 0.9)
            M.ema_update_(value, ema)
            return ema.average

        inputs = (t(5, rg=True), t(5, rg=True))
    else:

        def call(x, mean, var):
            stats = M.BatchStats(mean * 1, var * 1)
            M.batch_stats_update_(x, stats)
            return stats.mean, stats.var

        inputs = (t(6, 4, rg=True), t(4, rg=True), pos(4, rg=True))
    self.check_compiled(case, call, inputs)


def _add_no_backward_tests():
    for case in NO_BACKWARD:
        name = case_name(case)
        setattr(NoBackward, f"test_{name}__eager", lambda self, case=case: self.check_eager(case))
        setattr(
            NoBackward,
            f"test_{name}__compiled",
            lambda self, case=case: _compiled_no_backward(self, case),
        )


_add_no_backward_tests()


# ---------------------------------------------------------------------------
# 5. FakeTensorMode
# ---------------------------------------------------------------------------


class Fake(Timed):
    """Every op through the record API on fake tensors: shapes and dtypes of
    the outputs (and of the tensors mutating ops write) match eager."""

    def run_fake(self, case):
        from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

        fn = case_fn(case)
        args, kwargs = case_inputs(case, rg=False)
        want = fn(*args, **kwargs)
        mode = FakeTensorMode()
        fargs, fkwargs = _pytree.tree_map_only(
            torch.Tensor, mode.from_tensor, case_inputs(case, rg=False)
        )
        with mode:
            got = fn(*fargs, **fkwargs)
        got_leaves, got_spec = _pytree.tree_flatten((got, fargs, fkwargs))
        want_leaves, want_spec = _pytree.tree_flatten((want, args, kwargs))
        self.assertEqual(str(got_spec), str(want_spec))
        for g, w in zip(got_leaves, want_leaves):
            if isinstance(w, torch.Tensor):
                self.assertIsInstance(g, FakeTensor)
                self.assertEqual((g.shape, g.dtype, g.device), (w.shape, w.dtype, w.device))


def _add_fake_tests():
    for case in CASES:
        setattr(Fake, f"test_{case_name(case)}", lambda self, case=case: self.run_fake(case))


_add_fake_tests()


# ---------------------------------------------------------------------------
# 6. Compiled autograd
# ---------------------------------------------------------------------------

# From torch 2.7 on, compiled autograd calls a C++ backward that is not
# traceable (the runtime's graph node) as an opaque function; torch 2.6
# refuses it with an error naming the node.
OPAQUE_CPP_BACKWARD = torch.__version__ >= (2, 7)


class CompiledAutograd(Timed):
    """The backward of each op with `backward: true` under compiled autograd
    (the eager backend): the same gradients as eagerly. With the C++ kernels on
    torch 2.6, the error torch gives, naming the op's backward."""

    def setUp(self):
        super().setUp()
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()

    def grads(self, case, compiled):
        """The leaves' .grad after a backward through one call of the op."""
        args, kwargs = case_inputs(case, rg=True)
        out = case_fn(case)(*args, **kwargs)
        leaves = [x for x in tensors_of((args, kwargs)) if x.requires_grad and x.is_leaf]
        with (
            compiled_autograd._enable(torch.compile(backend="eager")) if compiled else nullcontext()
        ):
            _backward_through(out, (args, kwargs))
        return [x.grad for x in leaves]

    def check(self, case):
        want = self.grads(case, compiled=False)
        self.assertTrue(any(g is not None for g in want), case_name(case))
        if KERNELS_DIR or OPAQUE_CPP_BACKWARD:
            got = self.grads(case, compiled=True)
            assert_same_values(self, got, want, case_name(case))
            self.assertGreater(
                torch._dynamo.utils.counters["compiled_autograd"]["captures"],
                0,
                "compiled autograd did not capture the backward",
            )
        else:
            unsafe = r"potentially unsafe C\+\+ autograd function: " + re.escape(_qualified(case))
            with self.assertRaisesRegex(RuntimeError, unsafe):
                self.grads(case, compiled=True)


for _case in CASES:
    if _case.backward:
        setattr(
            CompiledAutograd, f"test_{case_name(_case)}", lambda self, case=_case: self.check(case)
        )


# ---------------------------------------------------------------------------
# 7. Importing a generated module twice
# ---------------------------------------------------------------------------


def _reimport_child():
    """Runs in a fresh interpreter: imports every module, then each again under
    another name from the same file; records of both copies flatten,
    unflatten and call the op."""
    load_modules()
    copies = {}
    for stem in STEMS:
        path = os.path.join(MODULE_DIR, stem + "_ops.py")
        spec = importlib.util.spec_from_file_location(f"{stem}_ops_second_copy", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # must not raise
        copies[stem] = module

    def convert(value, module):
        """A value of the first copy as the same value of the second copy's types."""
        if dataclasses.is_dataclass(value):
            cls = getattr(module, type(value).__name__)
            # A record of an included IDL file comes from that file's module,
            # which is imported once: both copies share its class.
            assert cls is not type(value) or cls.__module__ != module.__name__
            return cls(
                **{
                    f.name: convert(getattr(value, f.name), module)
                    for f in dataclasses.fields(value)
                }
            )
        if isinstance(value, enum.Enum):
            return getattr(module, type(value).__name__)(value.value)
        if isinstance(value, list):
            return [convert(v, module) for v in value]
        return value

    checked = 0
    for case in CASES:
        args, kwargs = case_inputs(case, rg=False)
        for value in list(args) + list(kwargs.values()):
            if not dataclasses.is_dataclass(value):
                continue
            other = convert(value, copies[case.stem])
            leaves, spec = _pytree.tree_flatten(value)
            other_leaves, other_spec = _pytree.tree_flatten(other)
            assert len(leaves) == len(other_leaves) and all(
                a is b for a, b in zip(leaves, other_leaves)
            ), case
            assert type(_pytree.tree_unflatten(other_leaves, other_spec)) is type(other)
            assert type(_pytree.tree_unflatten(leaves, spec)) is type(value)
            checked += 1
        # The op through the second copy, with its records.
        fn2 = getattr(copies[case.stem], case.fn)
        a1, k1 = case_inputs(case, rg=False, seed=3)
        a2, k2 = case_inputs(case, rg=False, seed=3)
        want = case_fn(case)(*a1, **k1)
        got = fn2(
            *convert(list(a2), copies[case.stem]),
            **{k: convert(v, copies[case.stem]) for k, v in k2.items()},
        )
        for g, w in zip(tensors_of(got), tensors_of(want)):
            torch.testing.assert_close(g, w)
    print(
        f"reimport: {len(STEMS)} modules imported twice, {checked} records of both copies flattened"
    )


# ---------------------------------------------------------------------------
# 8. Coverage, and parameters named like a Python keyword
# ---------------------------------------------------------------------------


class Coverage(Timed):
    def test_every_example_op_has_a_case(self):
        covered = {(c.stem, c.fn) for c in CASES}
        ops = {
            (stem, name)
            for stem, module in MODULES.items()
            for name, value in vars(module).items()
            if callable(value) and hasattr(value, "slot_map")
        }
        self.assertEqual(ops - covered, set(), "example ops without a PT2 case")
        self.assertEqual(len(ops), 31)


class KeywordParameter(Timed):
    """A parameter named `from` (a Python keyword) is `from_` in the schema:
    torch.fx binds a custom op's arguments by name (inductor's lowering,
    opcheck's schema check) and cannot bind `from`. The flat OpOverload,
    called with `from_=` as torch users would, compiles with inductor and
    exports; the ops are pt2_compliant_tag."""

    def setUp(self):
        super().setUp()
        torch._dynamo.reset()

    def test_schema_names_and_tags(self):
        for fn, names in (
            (D.cast_checked, ["x", "from_", "to"]),
            (C.lerp, ["from_", "to", "weight"]),
        ):
            op = overload_of(fn)
            self.assertEqual([a.name for a in op._schema.arguments], names)
            self.assertIn(torch.Tag.pt2_compliant_tag, op.tags)
            self.assertEqual(fn.slot_map["from"], "from_")

    def test_flat_call_by_name_compiles_and_exports(self):
        lerp = torch.ops.compose.lerp.default

        def call(a, b):
            return lerp(from_=a, to=b, weight=0.25), lerp(b, a)

        a, b = t(5), t(5)
        want = call(a, b)
        compiled = torch.compile(call, backend="inductor", fullgraph=True)
        assert_same_values(self, compiled(a, b), want, "inductor")
        ep = torch.export.export(_Call(call), (a, b))
        self.assertIn(
            "compose.lerp.default",
            {str(n.target) for n in ep.graph.nodes if n.op == "call_function"},
        )
        assert_same_values(self, _save_load(ep).module()(a, b), want, "exported, saved and loaded")


class Reimport(Timed):
    def test_import_twice_under_another_name(self):
        source = ["--python-kernels", KERNELS_DIR] if KERNELS_DIR else [LIBRARY]
        out = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--reimport", *source, MODULE_DIR],
            capture_output=True,
            text=True,
            timeout=600,
        )
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("modules imported twice", out.stdout)


if __name__ == "__main__":
    reimport = sys.argv[1:2] == ["--reimport"]
    if reimport:
        del sys.argv[1]
    if sys.argv[1] == "--python-kernels":
        KERNELS_DIR = sys.argv.pop(2)
    else:
        LIBRARY = sys.argv[1]
    MODULE_DIR = sys.argv[2]
    if reimport:
        _reimport_child()
        sys.exit(0)
    unittest_main.main(argv=sys.argv[:1] + sys.argv[3:])
