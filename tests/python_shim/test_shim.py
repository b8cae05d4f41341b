#!/usr/bin/env python3
"""The generated Python API (X_ops.py) of every example, end to end.

Calls go through the generated dataclasses and wrappers into the compiled
examples library: forward values, positional and keyword calls, defaults
(including a whole omitted record), nested records, optionals, lists, enums,
dtype and device fields, gradcheck through record tensor leaves, in-place
mutation, ops calling ops, and the errors the wrappers raise. Also: every
generated module compiles and imports nothing but torch, the standard
library, structop's Python runtime (structop_runtime, on PYTHONPATH) and
the modules generated from the IDL files it includes.

With --python-kernels, the ops are the examples' Python kernels
(idl_examples/<stem>_kernels.py, KERNELS_DIR) instead of the compiled
library: the same tests, the same expected values and messages.

Usage: test_shim.py (LIBSTRUCTOP_EXAMPLES.so | --python-kernels KERNELS_DIR) GENERATED_MODULE_DIR
"""

import ast
import copy
import dataclasses
import glob
import importlib
import inspect
import math
import os
import pickle
import py_compile
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import unittest_main  # noqa: E402  (tests/support: a skipped case is not a pass)

import torch

LIBRARY = None
KERNELS_DIR = None  # --python-kernels: the Python kernels instead of LIBRARY
MODULE_DIR = None
STEMS = [
    "weights",
    "attention",
    "rms_norm",
    "mlp",
    "lists",
    "dtypes",
    "compose",
    "mutation",
    "sampling",
]


def setUpModule():
    global weights, attention, nn_norm, mlp, multi, dtypes, compose, optim, sampling
    sys.path.insert(0, MODULE_DIR)
    import weights_ops as weights
    import attention_ops as attention
    import rms_norm_ops as nn_norm
    import mlp_ops as mlp
    import lists_ops as multi
    import dtypes_ops as dtypes
    import compose_ops as compose
    import mutation_ops as optim
    import sampling_ops as sampling

    if KERNELS_DIR:
        sys.path.insert(0, KERNELS_DIR)
        for stem in STEMS:  # each registers its ops' Python kernels
            importlib.import_module(stem + "_kernels")
    else:
        weights.load_library(
            LIBRARY
        )  # loads the library once; every module then binds on first use


def t64(*shape, requires_grad=False):
    return torch.randn(*shape, dtype=torch.float64, requires_grad=requires_grad)


class GeneratedModules(unittest.TestCase):
    ALLOWED = {"dataclasses", "enum", "typing", "torch", "structop_runtime"}

    def modules(self):
        found = sorted(glob.glob(os.path.join(MODULE_DIR, "*_ops.py")))
        self.assertGreaterEqual(len(found), 9, found)
        return found

    def test_compile(self):
        for path in self.modules():
            with tempfile.TemporaryDirectory() as tmp:
                py_compile.compile(path, doraise=True, cfile=os.path.join(tmp, "module.pyc"))

    def test_imports_only_torch_the_standard_library_the_runtime_and_included_modules(self):
        for path in self.modules():
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top.endswith(
                        "_ops"
                    ):  # the module of an included IDL file, generated beside it
                        self.assertTrue(
                            os.path.exists(os.path.join(MODULE_DIR, top + ".py")),
                            f"{path} imports {name}",
                        )
                        continue
                    self.assertIn(top, self.ALLOWED, f"{path} imports {name}")

    def test_not_loaded_says_so(self):
        # A fresh interpreter that imports a module without loading the library.
        code = (
            "import sys; sys.path.insert(0, sys.argv[1]); import weights_ops as w, torch\n"
            "cfg = w.WeightCfg(w.Inner(torch.ones(2), torch.ones(2)))\n"
            "try:\n    w.op(torch.ones(2), cfg)\nexcept RuntimeError as e:\n    print(e)\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, MODULE_DIR], capture_output=True, text=True
        )
        self.assertIn(
            "weights::op is not registered: call load_library(path)", out.stdout, out.stderr
        )


class Forward(unittest.TestCase):
    def test_values_positional_and_keyword(self):
        x, w, b = t64(3), t64(3), t64(3)
        cfg = weights.WeightCfg(weights.Inner(w, b), 2.0)
        expected = (x * w + b) * 2.0
        torch.testing.assert_close(weights.op(x, cfg), expected)
        torch.testing.assert_close(weights.op(x=x, cfg=cfg), expected)
        torch.testing.assert_close(weights.op(x, cfg=cfg), expected)

    def test_record_defaults_are_applied(self):
        x, w, b = t64(3), t64(3), t64(3)
        cfg = weights.WeightCfg(inner=weights.Inner(w=w, b=b))  # scale=1.0, mode=causal
        self.assertEqual((cfg.scale, cfg.mode), (1.0, weights.MaskType.causal))
        torch.testing.assert_close(weights.op(x, cfg), x * w + b)

    def test_enum_member_or_string(self):
        x, w, b = t64(3), t64(3), t64(3)
        for mode in (weights.MaskType.full, "full", "sliding_window"):
            cfg = weights.WeightCfg(weights.Inner(w, b), mode=mode)
            torch.testing.assert_close(weights.op(x, cfg), x * w + b)
        self.assertEqual(str(weights.MaskType.sliding_window), "sliding_window")

    def test_invalid_enum_string_lists_the_values(self):
        x, w, b = t64(3), t64(3), t64(3)
        with self.assertRaises(ValueError) as cm:  # the kernel adapter's c10::ValueError
            weights.op(x, weights.WeightCfg(weights.Inner(w, b), mode="diagonal"))
        message = str(cm.exception)
        self.assertIn("cfg.mode", message)
        self.assertIn("full, causal, sliding_window", message)

    def test_whole_record_omitted(self):
        q, k, v = t64(1, 2, 4, 8), t64(1, 2, 4, 8), t64(1, 2, 4, 8)
        out, lse = attention.attention(q, k, v)  # cfg (kwarg-only, all defaults) omitted
        out2, lse2 = attention.attention(q, k, v, cfg=attention.AttnCfg())
        torch.testing.assert_close(out, out2)
        torch.testing.assert_close(lse, lse2)
        x = t64(2, 8)
        expected = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        torch.testing.assert_close(nn_norm.rms_norm(x), expected)

    def test_kwarg_only_record(self):
        q = t64(1, 1, 2, 4)
        with self.assertRaises(TypeError):
            attention.attention(q, q, q, attention.AttnCfg())  # cfg is keyword-only

    def test_records_of_an_included_idl_come_from_its_module(self):
        # mlp.ops.yaml includes common.ops.yaml: mlp_ops imports its records
        # and enums from common_ops, so there is one class per record.
        import common_ops

        self.assertIs(mlp.Linear, common_ops.Linear)
        self.assertIs(mlp.Lora, common_ops.Lora)
        self.assertIs(mlp.Activation, common_ops.Activation)
        x, w = t64(3, 4), t64(5, 4)
        torch.testing.assert_close(mlp.linear(x, common_ops.Linear(w)), x @ w.T)

    def test_nested_records_and_an_omitted_nested_record(self):
        x = t64(3, 4)
        w1, b1, w2 = t64(5, 4), t64(5), t64(4, 5)
        cfg = mlp.MlpCfg(
            fc1=mlp.Linear(w1, b1),
            fc2=mlp.Linear(weight=w2),
            act=mlp.Activation.relu,
            residual_scale=0.5,
        )
        self.assertEqual(cfg.fc2.lora, mlp.Lora())  # the all-default nested record
        expected = 0.5 * x + torch.relu(x @ w1.T + b1) @ w2.T
        torch.testing.assert_close(mlp.mlp(x, cfg), expected)
        a, bb = t64(2, 4), t64(5, 2)
        with_lora = mlp.Linear(w1, b1, mlp.Lora(a=a, b=bb, scale=0.25))
        torch.testing.assert_close(
            mlp.linear(x, with_lora), x @ w1.T + b1 + 0.25 * (x @ a.T) @ bb.T
        )

    def test_optionals_all_none_and_all_set(self):
        logits = t64(2, 6)
        torch.testing.assert_close(sampling.process_logits(logits, None), logits)
        mask = torch.tensor([True, True, True, False, True, True])
        bias = t64(6)
        cfg = sampling.LogitsCfg(
            temperature=2.0, top_k=3, bias=bias, suppress=[0], output="probs", greedy=False
        )
        x = (logits + bias) / 2.0
        x = x.masked_fill(~mask, -math.inf).index_fill(-1, torch.tensor([0]), -math.inf)
        kth = x.topk(3, -1).values[..., -1:]
        expected = torch.softmax(x.masked_fill(x < kth, -math.inf), -1)
        torch.testing.assert_close(sampling.process_logits(logits, mask, cfg), expected)

    def test_lists(self):
        x, a, b = t64(3), t64(3), t64(3)
        torch.testing.assert_close(
            multi.mix(x, multi.MixCfg(tensors=[a, b])), x + a + b
        )  # empty-list defaults
        cfg = multi.MixCfg(
            tensors=[a, b], weights=[2.0, 3.0], enabled=[True, False], offsets=[b, None]
        )
        torch.testing.assert_close(multi.mix(x, cfg), x + 2.0 * (a + b))
        pieces = multi.chunk(t64(2, 6), multi.ChunkCfg(sizes=[1, 2, 3]))
        self.assertEqual([p.shape[-1] for p in pieces], [1, 2, 3])
        self.assertEqual(multi.pad(t64(2)).shape, torch.Size([4]))  # list default [1, 1]

    def test_enum_lists(self):
        x = t64(3, 4)

        def expected(steps, dims, then=()):
            out = x.clone()
            for how, dim in zip(steps, dims):
                out = out - getattr(out, {"max": "amax"}.get(how, how))(dim, keepdim=True)
            for how in then:
                out = out - getattr(out, {"max": "amax"}.get(how, how))()
            return out

        self.assertEqual(multi.CenterCfg().steps, [multi.Reduce.mean])  # list default [mean]
        torch.testing.assert_close(multi.center(x), expected(["mean"], [-1]))
        cfg = multi.CenterCfg(steps=[multi.Reduce.max, "sum"], dims=[0, 1])  # members or strings
        torch.testing.assert_close(multi.center(x, cfg), expected(["max", "sum"], [0, 1]))
        torch.testing.assert_close(
            multi.center(x, cfg, then=("mean", multi.Reduce.max)),
            expected(["max", "sum"], [0, 1], ["mean", "max"]),
        )
        torch.testing.assert_close(multi.center(x, multi.CenterCfg([], []), then=[]), x)

    def test_invalid_enum_in_a_list_names_the_item(self):
        x = t64(3, 4)
        with self.assertRaises(ValueError) as cm:
            multi.center(x, multi.CenterCfg(steps=["sum", "median"], dims=[0, 1]))
        self.assertIn(
            'multi::center: cfg.steps[1]: invalid value "median" for Reduce; '
            "expected one of: sum, max, mean",
            str(cm.exception),
        )
        with self.assertRaises(ValueError) as cm:
            multi.center(x, then=["min"])
        self.assertIn('multi::center: then[0]: invalid value "min" for Reduce', str(cm.exception))

    def test_dtype_and_device(self):
        x = torch.ones(2, 3)
        self.assertEqual(dtypes.cast(x).dtype, torch.float32)
        y = dtypes.cast(x, dtypes.CastCfg(dtype=torch.float64, device="cpu"))
        self.assertEqual((y.dtype, y.device.type), (torch.float64, "cpu"))
        # A record default that sets one field: the Python API, the flat op
        # (the schema's leaf defaults) and the signature.
        self.assertEqual(dtypes.to_half(x).dtype, torch.float16)
        self.assertEqual(
            dtypes.to_half(x, dtypes.CastCfg(dtype=torch.float64)).dtype, torch.float64
        )
        self.assertEqual(torch.ops.dtypes.to_half(x).dtype, torch.float16)
        self.assertEqual(
            inspect.signature(dtypes.to_half).parameters["cfg"].default,
            dtypes.CastCfg(dtype=torch.float16, device=torch.device("cpu")),
        )
        f = dtypes.full(
            dtypes.FillCfg(sizes=[2, 3], value=1.5, dtype=torch.float16), device=torch.device("cpu")
        )
        self.assertEqual((f.shape, f.dtype), (torch.Size([2, 3]), torch.float16))
        torch.testing.assert_close(f, torch.full((2, 3), 1.5, dtype=torch.float16))

    def test_keyword_named_parameter(self):
        a, b = t64(3), t64(3)
        torch.testing.assert_close(compose.lerp(from_=a, to=b, weight=0.25), a + 0.25 * (b - a))

    def test_ops_calling_ops(self):
        x, r, w = t64(2, 4), t64(2, 4), t64(4)
        h = x + r
        expected = h / torch.sqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * w
        torch.testing.assert_close(compose.residual_norm(x, r, w), expected)

    def test_mutation_is_visible(self):
        ema = optim.Ema(average=torch.zeros(3), decay=0.5)
        optim.ema_update_(torch.ones(3), ema)
        torch.testing.assert_close(ema.average, torch.full((3,), 0.5))
        state = optim.AdamState(
            param=torch.ones(3), exp_avg=torch.zeros(3), exp_avg_sq=torch.zeros(3)
        )
        before = state.param.clone()
        optim.adam_step_(torch.ones(3), state, optim.AdamHyper(), 1)
        self.assertFalse(torch.equal(state.param, before))
        self.assertTrue(torch.all(state.exp_avg != 0))


class Autograd(unittest.TestCase):
    def test_gradcheck_through_record_leaves(self):
        x, w, b = (t64(4, requires_grad=True) for _ in range(3))
        self.assertTrue(
            torch.autograd.gradcheck(
                lambda x, w, b: weights.op(x, weights.WeightCfg(weights.Inner(w, b), scale=1.5)),
                (x, w, b),
            )
        )
        xi, wi, bi = (
            t64(2, 3, requires_grad=True),
            t64(4, 3, requires_grad=True),
            t64(4, requires_grad=True),
        )
        self.assertTrue(
            torch.autograd.gradcheck(lambda x, w, b: mlp.linear(x, mlp.Linear(w, b)), (xi, wi, bi))
        )

    def test_gradcheck_through_tensor_lists(self):
        # One gradient per tensor of cfg.tensors (Tensor[]) and cfg.offsets
        # (Tensor?[]): b broadcasts against x, the second offset is None, the
        # third tensor is disabled (its gradient is None).
        def mix(x, a, b, c, oa):
            return multi.mix(
                x,
                multi.MixCfg(
                    tensors=[a, b, c],
                    weights=[2.0, -0.5, 3.0],
                    enabled=[True, True, False],
                    offsets=[oa, None, None],
                ),
            )

        inputs = (
            t64(2, 3, requires_grad=True),
            t64(2, 3, requires_grad=True),
            t64(3, requires_grad=True),
            t64(2, 3, requires_grad=True),
            t64(1, 3, requires_grad=True),
        )
        self.assertTrue(torch.autograd.gradcheck(mix, inputs))
        x, a, b, c, oa = inputs
        mix(*inputs).sum().backward()
        torch.testing.assert_close(b.grad, torch.full((3,), -1.0, dtype=torch.float64))
        torch.testing.assert_close(oa.grad, torch.full((1, 3), 4.0, dtype=torch.float64))
        self.assertIsNone(c.grad)

    def test_gradcheck_through_a_list_of_records(self):
        # Term[]: one list per leaf (terms__w, terms__b, terms__scale); the
        # second term's w broadcasts against x and it has no b.
        def blend(x, w1, b1, w2):
            return multi.blend(x, [multi.Term(w1, b1, 2.0), multi.Term(w=w2, scale=-0.5)])

        inputs = (
            t64(2, 3, requires_grad=True),
            t64(2, 3, requires_grad=True),
            t64(1, 3, requires_grad=True),
            t64(3, requires_grad=True),
        )
        self.assertTrue(torch.autograd.gradcheck(blend, inputs))
        x, w1, b1, w2 = inputs
        blend(*inputs).sum().backward()
        torch.testing.assert_close(b1.grad, torch.full((1, 3), 4.0, dtype=torch.float64))
        torch.testing.assert_close(w2.grad, torch.full((3,), -1.0, dtype=torch.float64))
        # An empty list, and leaves' lists of different lengths in a flat call.
        torch.testing.assert_close(multi.blend(x.detach(), []), x.detach())
        with self.assertRaises(ValueError) as cm:
            torch.ops.multi.blend(x, [w1, w1], [None], [1.0, 2.0])
        self.assertIn(
            "multi::blend: terms: its leaves' lists have different lengths (w: 2, b: 1, "
            "scale: 2); each holds one entry per record",
            str(cm.exception),
        )

    def test_optional_records_absent_present_and_gradcheck(self):
        # affine(x, post: Inner? = None, gate: Gate? = None), Gate.bias: Inner? = None.
        x, w, b, g, w2, b2 = (t64(2, 3, requires_grad=True) for _ in range(6))
        xd = x.detach()
        torch.testing.assert_close(weights.affine(xd), xd)
        torch.testing.assert_close(
            weights.affine(xd, weights.Inner(w, b)).detach(), xd * w.detach() + b.detach()
        )
        torch.testing.assert_close(
            weights.affine(xd, gate=weights.Gate(g)).detach(), xd * g.detach()
        )

        def affine(x, w, b, g, w2, b2):
            return weights.affine(
                x, weights.Inner(w, b), weights.Gate(g, bias=weights.Inner(w2, b2))
            )

        self.assertTrue(torch.autograd.gradcheck(affine, (x, w, b, g, w2, b2)))
        self.assertTrue(
            torch.autograd.gradcheck(lambda x, g: weights.affine(x, None, weights.Gate(g)), (x, g))
        )
        # Only the present records' tensors get gradients.
        weights.affine(x, None, weights.Gate(g)).sum().backward()
        torch.testing.assert_close(g.grad, xd)
        self.assertIsNone(w.grad)

    def test_optional_record_leaves_that_disagree_in_a_flat_call(self):
        x, w = t64(3), t64(3)
        with self.assertRaises(ValueError) as cm:
            torch.ops.weights.affine(x, None, w)  # post__w None but post__b given
        self.assertIn(
            "weights::affine: post.b is given but post.w is None, which means post is "
            "None; give all of post's leaves or none",
            str(cm.exception),
        )
        with self.assertRaises(ValueError) as cm:
            torch.ops.weights.affine(x, w, None)  # post__w given, post__b (required) None
        self.assertIn(
            "weights::affine: post.b is None but post is given (post.w is not None); "
            "a given post needs every field that is not optional",
            str(cm.exception),
        )
        with self.assertRaises(ValueError) as cm:  # the nested gate.bias alone
            torch.ops.weights.affine(x, gate__g=w, gate__bias__b=w)
        self.assertIn("gate.bias.b is given but gate.bias.w is None", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            weights.affine(x, weights.Gate(w))
        self.assertEqual(str(cm.exception), "weights::affine: `post` must be Inner, got Gate")

    def test_record_returns_values_flat_call_and_gradcheck(self):
        # moments(x) -> (Tensor centered, Moments stats); extent(x) -> Extent (an int leaf).
        x = t64(3, 4, requires_grad=True)
        xd = x.detach()
        centered, stats = weights.moments(xd)
        self.assertIsInstance(stats, weights.Moments)
        torch.testing.assert_close(stats.mean, xd.mean(-1, keepdim=True))
        torch.testing.assert_close(stats.var, xd.var(-1, unbiased=False, keepdim=True))
        torch.testing.assert_close(centered, xd - stats.mean)
        self.assertEqual(
            weights.moments.schema,
            "weights::moments(Tensor x) -> (Tensor centered, Tensor stats__mean, Tensor stats__var)",
        )
        flat = torch.ops.weights.moments(xd)  # the flat op: the leaves in field order
        self.assertEqual(len(flat), 3)
        torch.testing.assert_close(flat[2], stats.var)
        extent = weights.extent(-2.0 * torch.ones(2, 3, dtype=torch.float64))
        self.assertEqual((extent.dims, extent.peak.item()), (2, 2.0))
        # The backward receives the output gradients in record form.
        self.assertTrue(torch.autograd.gradcheck(lambda x: weights.moments(x)[0], (x,)))
        self.assertTrue(
            torch.autograd.gradcheck(
                lambda x: (lambda c, s: (s.mean, s.var))(*weights.moments(x)), (x,)
            )
        )
        _, s = weights.moments(x)
        s.var.sum().backward()
        torch.testing.assert_close(x.grad, 2.0 * (xd - xd.mean(-1, keepdim=True)) / 4)

    def test_gradients_land_on_record_fields(self):
        x, w, b = (t64(3, requires_grad=True) for _ in range(3))
        weights.op(x, weights.WeightCfg(weights.Inner(w, b), scale=2.0)).sum().backward()
        torch.testing.assert_close(w.grad, 2.0 * x.detach())
        torch.testing.assert_close(b.grad, torch.full((3,), 2.0, dtype=torch.float64))


class Seen(torch.Tensor):
    """A tensor subclass whose __torch_function__ records what it sees."""

    funcs = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.funcs.append(func)
        return super().__torch_function__(func, types, args, kwargs or {})


class TorchFunction(unittest.TestCase):
    """An eager record call goes straight to the op's dispatcher entry
    (Op.boxed, no __torch_function__ check) only when nothing needs the
    check: a tensor subclass with __torch_function__ anywhere (an argument,
    a record's field, a Tensor[] or Tensor?[] field, a list of records) or an
    active TorchFunctionMode still sees the op, through its OpOverload."""

    def calls(self, op, call):
        """(funcs Seen saw, calls of op's Op.boxed) while running call()."""
        boxed, count = op.boxed, []

        def counted(*args):
            count.append(1)
            return boxed(*args)

        Seen.funcs, op.boxed = [], counted
        try:
            call()
        finally:
            op.boxed = boxed
        return Seen.funcs, len(count)

    def test_plain_tensors_take_the_boxed_call(self):
        x, w, b = t64(3), t64(3), t64(3)
        cfg = weights.WeightCfg(inner=weights.Inner(w=w, b=b), scale=2.0)
        weights.op(x, cfg)  # binds the op (Python kernels: defines it)
        self.assertEqual(self.calls(weights._op_op, lambda: weights.op(x, cfg)), ([], 1))
        terms = [multi.Term(w=w), multi.Term(w=b, b=x)]
        multi.blend(x, terms)
        self.assertEqual(self.calls(multi._blend_op, lambda: multi.blend(x, terms)), ([], 1))

    def test_a_subclass_anywhere_sees_the_op(self):
        # Each record call against the flat call of the same values: the
        # subclass sees the same funcs (torch looks into Tensor[] arguments,
        # not into Tensor?[] ones), and the record call never takes the
        # unchecked path with a subclass in its arguments.
        x, w, b = t64(3), t64(3), t64(3)
        s = t64(3).as_subclass(Seen)
        ns = torch.ops
        op, mix, blend = ns.weights.op.default, ns.multi.mix.default, ns.multi.blend.default
        cfg = weights.WeightCfg  # inner, scale=1.0, mode=causal
        cases = [  # (where, Op, record call, flat call, whether torch sees it)
            (
                "argument",
                weights._op_op,
                lambda: weights.op(s, cfg(weights.Inner(w, b))),
                lambda: op(s, w, b, 1.0, "causal"),
                True,
            ),
            (
                "record field",
                weights._op_op,
                lambda: weights.op(x, cfg(weights.Inner(w, s))),
                lambda: op(x, w, s, 1.0, "causal"),
                True,
            ),
            (
                "Tensor[] field",
                multi._mix_op,
                lambda: multi.mix(x, multi.MixCfg(tensors=[w, s])),
                lambda: mix(x, [w, s], [], [], []),
                True,
            ),
            (
                "list of records",
                multi._blend_op,
                lambda: multi.blend(x, [multi.Term(w=w), multi.Term(w=s)]),
                lambda: blend(x, [w, s], [None, None], [1.0, 1.0]),
                True,
            ),
            (
                "Tensor?[] field",
                multi._mix_op,
                lambda: multi.mix(x, multi.MixCfg(tensors=[w, b], offsets=[None, s])),
                lambda: mix(x, [w, b], [], [], [None, s]),
                False,
            ),
        ]
        for where, handle, record_call, flat_call, sees in cases:
            with self.subTest(where):
                funcs, boxed = self.calls(handle, record_call)
                self.assertEqual(boxed, 0)
                self.assertEqual(funcs, self.calls(handle, flat_call)[0])
                self.assertEqual(handle.overload in funcs, sees)

    def test_a_torch_function_mode_sees_the_op(self):
        from torch.overrides import TorchFunctionMode

        seen = []

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                seen.append(func)
                return func(*args, **(kwargs or {}))

        x, w, b = t64(3), t64(3), t64(3)
        cfg = weights.WeightCfg(inner=weights.Inner(w=w, b=b), scale=2.0)
        expected = weights.op(x, cfg)
        with Mode():
            funcs, boxed = self.calls(weights._op_op, lambda: weights.op(x, cfg))
            torch.testing.assert_close(weights.op(x, cfg), expected)
        self.assertIn(torch.ops.weights.op.default, seen)
        self.assertEqual(boxed, 0)


class Errors(unittest.TestCase):
    def test_wrong_field_type_names_op_parameter_and_path(self):
        x, b = t64(3), t64(3)
        with self.assertRaises(TypeError) as cm:
            weights.op(x, weights.WeightCfg(weights.Inner(w=1, b=b)))
        self.assertEqual(str(cm.exception), "weights::op: `cfg.inner.w` must be Tensor, got int")

    def test_not_a_record(self):
        with self.assertRaises(TypeError) as cm:
            weights.op(t64(3), {"inner": None})
        self.assertEqual(str(cm.exception), "weights::op: `cfg` must be WeightCfg, got dict")

    def test_missing_nested_record(self):
        with self.assertRaises(TypeError) as cm:
            weights.op(t64(3), weights.WeightCfg(inner=None))
        self.assertEqual(str(cm.exception), "weights::op: `cfg.inner` must be Inner, got NoneType")

    def test_missing_field_at_construction(self):
        with self.assertRaises(TypeError) as cm:
            weights.Inner(w=t64(3))
        self.assertIn("b", str(cm.exception))

    def test_records_are_frozen(self):
        cfg = weights.WeightCfg(weights.Inner(t64(1), t64(1)))
        with self.assertRaises(dataclasses.FrozenInstanceError):
            cfg.scale = 2.0

    def test_kernel_errors_pass_through(self):
        with self.assertRaises(ValueError) as cm:  # a TORCH_CHECK_VALUE inside the kernel
            sampling.process_logits(t64(2, 3), None, sampling.LogitsCfg(temperature=-1.0))
        self.assertIn("temperature must be > 0", str(cm.exception))


class FlatValues(unittest.TestCase):
    """Each record without a list of records holds its leaves' flat values in
    slot order (`_structop_flat`, set by its generated __init__), which the
    op functions pass instead of reading each leaf."""

    def leaf(self, record, path):
        value = record
        for name in path.split("."):
            value = getattr(value, name)
        return getattr(value, "_value_", value)  # an enum member passes its str

    def test_flat_values_are_the_leaves_in_slot_order(self):
        cfg = weights.WeightCfg(weights.Inner(t64(3), t64(3)), 2.0, weights.MaskType.full)
        paths = [p[len("cfg.") :] for p in weights.op.slot_map if p.startswith("cfg.")]
        self.assertEqual(len(paths), 4)
        expected = tuple(self.leaf(cfg, p) for p in paths)
        self.assertEqual(len(cfg._structop_flat), len(expected))
        for got, want in zip(cfg._structop_flat, expected):
            self.assertIs(got, want)
        self.assertIs(type(cfg._structop_flat[-1]), str)  # the enum's value, not the member
        lora = mlp.Lora()  # optional tensors absent: None in the flat values
        linear = mlp.Linear(t64(5, 4), lora=lora)
        paths = [p[len("layer.") :] for p in mlp.linear.slot_map if p.startswith("layer.")]
        self.assertEqual(len(paths), 5)
        self.assertEqual(linear._structop_flat, tuple(self.leaf(linear, p) for p in paths))

    def test_copies_replace_and_pickle_call_like_the_original(self):
        x, w, b = t64(3), t64(3), t64(3)
        cfg = weights.WeightCfg(weights.Inner(w, b), 2.0)
        expected = (x * w + b) * 2.0
        for made in (
            copy.copy(cfg),
            copy.deepcopy(cfg),
            pickle.loads(pickle.dumps(cfg)),
        ):
            # The copy's flat values are its own fields (deepcopy copies both once).
            self.assertIs(made._structop_flat[0], made.inner.w)
            torch.testing.assert_close(weights.op(x, made), expected)
        replaced = dataclasses.replace(cfg, scale=3.0)
        torch.testing.assert_close(weights.op(x, replaced), (x * w + b) * 3.0)
        inner = dataclasses.replace(cfg, inner=weights.Inner(w, 2 * b))
        torch.testing.assert_close(weights.op(x, inner), (x * w + 2 * b) * 2.0)

    def test_a_record_made_without_its_init_is_explained(self):
        cfg = object.__new__(weights.WeightCfg)
        valid = weights.WeightCfg(weights.Inner(t64(3), t64(3)))
        for field in dataclasses.fields(valid):
            object.__setattr__(cfg, field.name, getattr(valid, field.name))
        with self.assertRaises(TypeError) as cm:
            weights.op(t64(3), cfg)
        self.assertIn(
            "weights::op: this WeightCfg was made without its __init__", str(cm.exception)
        )


def record_classes():
    """Every record class the examples' generated modules define (not their grad records)."""
    found = []
    for module in (weights, attention, nn_norm, mlp, multi, dtypes, compose, optim, sampling):
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and dataclasses.is_dataclass(value)
                and value.__module__ == module.__name__
                and hasattr(value, "_structop_fields")
                and value not in found
            ):
                found.append(value)
    return found


class RecordInit(unittest.TestCase):
    """A record with flat values gets a generated __init__ in place of the
    dataclass's: it must take what the dataclass's would (the fields in
    order, keyword-only where the class is, the same defaults, a factory's
    default built afresh), and store the same fields."""

    def test_signature_is_the_dataclass_fields(self):
        checked = 0
        for cls in record_classes():
            with self.subTest(cls.__name__):
                fields = dataclasses.fields(cls)
                params = list(inspect.signature(cls).parameters.values())
                self.assertEqual([p.name for p in params], [f.name for f in fields])
                for p, f in zip(params, fields):
                    kind = (
                        inspect.Parameter.KEYWORD_ONLY
                        if f.kw_only
                        else inspect.Parameter.POSITIONAL_OR_KEYWORD
                    )
                    self.assertEqual(p.kind, kind, f.name)
                    if f.default is not dataclasses.MISSING:  # the same literal, made again
                        self.assertEqual(p.default, f.default, f.name)
                        self.assertIs(type(p.default), type(f.default), f.name)
                    elif f.default_factory is not dataclasses.MISSING:
                        self.assertEqual(repr(p.default), "<factory>", f.name)
                    else:
                        self.assertIs(p.default, inspect.Parameter.empty, f.name)
                # The dataclass's own __init__ is compiled from a string.
                checked += cls.__init__.__code__.co_filename != "<string>"
        self.assertGreater(checked, 10)  # records with flat values have the generated one

    def test_factory_defaults_are_fresh_and_equal(self):
        a, b = multi.PadCfg(), multi.PadCfg()
        self.assertEqual(a.pad, b.pad)
        self.assertIsNot(a.pad, b.pad)
        self.assertIs(a._structop_flat[0], a.pad)
        lora_a, lora_b = mlp.Linear(t64(2, 2)).lora, mlp.Linear(t64(2, 2)).lora
        self.assertEqual(type(lora_a).__name__, "Lora")
        self.assertIsNot(lora_a, lora_b)

    def test_positional_keyword_and_replace_store_the_same_fields(self):
        w, b = t64(3), t64(3)
        inner = weights.Inner(w, b)
        made = [
            weights.WeightCfg(inner, 2.0, weights.MaskType.full),
            weights.WeightCfg(inner=inner, mode=weights.MaskType.full, scale=2.0),
            dataclasses.replace(weights.WeightCfg(inner), scale=2.0, mode=weights.MaskType.full),
        ]
        for cfg in made:
            self.assertEqual((cfg.inner, cfg.scale, cfg.mode), (inner, 2.0, weights.MaskType.full))
            self.assertEqual(cfg._structop_flat, (w, b, 2.0, "full"))
        self.assertEqual(made[0], made[1])
        self.assertEqual(repr(made[0]), repr(made[2]))
        with self.assertRaises(TypeError):
            weights.WeightCfg(inner, 2.0, weights.MaskType.full, 5)
        with self.assertRaises(TypeError):
            weights.WeightCfg(inner, scal=2.0)


class GuardKeys(unittest.TestCase):
    """A record with value leaves (int, float, bool, str, enum; optional or
    not) also holds them as one frozenset, `_structop_key`, which the call
    that torch.compile traces reads them from: Dynamo then guards one value
    per record, not each leaf. A key only exists where every such value has
    its field's type (an int will do for a float) and no float is a nan;
    otherwise the traced call reads the tuple, as it would without keys."""

    def setUp(self):
        from structop_runtime import _loading

        self.native, self.python = _loading.value_key, _loading._value_key

    def test_this_build_has_the_c_version(self):
        from structop_runtime import _loading

        self.assertEqual(self.native.__module__, "structop_runtime._native")
        self.assertEqual(_loading.set_record.__module__, "structop_runtime._native")

    def test_set_record_c_and_python_agree(self):
        """set_record stores what the generated __init__ stores, past the
        frozen dataclass's __setattr__, in C and in Python alike."""
        from structop_runtime import _loading

        w, b = t64(3), t64(3)
        names, values = ("inner", "scale", "mode"), (weights.Inner(w, b), 2.0, "full")
        flat = (w, b, 2.0, "full")
        cases = {
            "with a key": (names, values, flat, (2, 3), "fs"),
            "no key": (names, values, flat),
            "a nan": (names, values, (w, b, math.nan, "full"), (2, 3), "fs"),
            "names and values differ in length": (names, values[:2], flat),
            "not tuples": (list(names), values, flat),
            "five arguments": (names, values, flat, (2, 3)),
        }
        for name, args in cases.items():
            with self.subTest(name):
                results = []
                for function in (_loading.set_record, _loading._set_record):
                    record = object.__new__(weights.WeightCfg)
                    try:
                        function(record, *args)
                        results.append(
                            {
                                k: getattr(record, k, "-")
                                for k in (*names, "_structop_flat", "_structop_key")
                            }
                        )
                    except Exception as e:  # noqa: BLE001 (compared below)
                        results.append(type(e))
                if name in ("with a key", "no key", "a nan"):
                    self.assertEqual(results[0], results[1])
                    self.assertEqual(results[0]["scale"], args[1][1])
                else:  # the C version refuses them (the generated code never passes such)
                    self.assertIs(results[0], TypeError)
        record = object.__new__(weights.WeightCfg)
        _loading.set_record(record, *cases["with a key"])
        self.assertEqual(record._structop_key, frozenset({(2.0, "full")}))
        torch.testing.assert_close(weights.op(w, record), (w * w + b) * 2.0)

    def test_the_key_is_the_value_leaves(self):
        cfg = weights.WeightCfg(weights.Inner(t64(3), t64(3)), 2.0, weights.MaskType.full)
        self.assertEqual(cfg._structop_key, frozenset({(2.0, "full")}))
        self.assertEqual(weights.WeightCfg(cfg.inner, 2, "full")._structop_key, cfg._structop_key)
        # No key: a nan, a bool for a float, a float for an int (eager calls reject it),
        # an enum field given something that is no str.
        w = t64(3)
        for made in (
            weights.WeightCfg(cfg.inner, math.nan),
            weights.WeightCfg(cfg.inner, True),
            weights.WeightCfg(cfg.inner, 2.0, 5),
            multi.Term(w=w, scale=[1.0]),
        ):
            self.assertIsNone(made._structop_key)
        # A record without value leaves has no key.
        self.assertFalse(hasattr(cfg.inner, "_structop_key"))

    def test_c_and_python_agree(self):
        nan, big = float("nan"), 2**70
        cases = {
            "floats and ints": ((1.0, 2, big, -0.0), (0, 1, 2, 3), "ffff"),
            "a nan": ((1.0, nan), (0, 1), "ff"),
            "bool for a float": ((True,), (0,), "f"),
            "float for an int": ((1.0,), (0,), "i"),
            "bool for an int": ((False,), (0,), "i"),
            "bools and strs": ((True, "a", "b"), (0, 1, 2), "bss"),
            "str subclass": ((weights.MaskType.full,), (0,), "s"),
            "optional absent and given": ((None, None, 1.5, "x"), (0, 1, 2, 3), "FIFS"),
            "None where not optional": ((None,), (0,), "f"),
            "a tensor": ((t64(1),), (0,), "f"),
            "unhashable": (([1],), (0,), "i"),
            "some indices": ((t64(1), 1.0, t64(1), 2), (1, 3), "fi"),
            "none": ((t64(1),), (), ""),
            "index out of range": ((1.0,), (3,), "f"),
            "kinds and indices disagree": ((1.0,), (0,), "ff"),
        }
        for name, args in cases.items():
            with self.subTest(name):
                results = []
                for function in (self.native, self.python):
                    try:
                        results.append(function(*args))
                    except Exception as e:  # noqa: BLE001 (compared below)
                        results.append(type(e))
                self.assertEqual(results[0], results[1])
        self.assertEqual(
            self.native((1.0, 2, big, -0.0), (0, 1, 2, 3), "ffff"),
            frozenset({(1.0, 2, big, -0.0)}),
        )
        self.assertEqual(self.native((t64(1), 1.0, t64(1), 2), (1, 3), "fi"), frozenset({(1.0, 2)}))
        for name in ("a nan", "bool for a float", "float for an int", "None where not optional"):
            self.assertIsNone(self.native(*cases[name]), name)
        with self.assertRaises(IndexError):
            self.native(*cases["index out of range"])

    def test_compiled_calls_guard_the_values(self):
        """Calls with new records of the same values reuse the compiled code;
        other values compile again; records without a key (a nan) still
        compute what the eager call computes."""
        import structop_runtime
        from torch._dynamo.utils import counters

        x, w, b = t64(3), t64(3), t64(3)
        inner = weights.Inner(w, b)

        def call(cfg):
            return weights.op(x, cfg)

        torch._dynamo.reset()
        compiled = torch.compile(call, backend="eager", fullgraph=True)
        before = counters["stats"]["unique_graphs"]
        for cfg, graphs in (
            (weights.WeightCfg(inner, 2.0), 1),
            (weights.WeightCfg(inner, 2.0), 1),  # a new record, the same values
            (weights.WeightCfg(inner, 3.0), 2),
            (weights.WeightCfg(inner, 3.0, weights.MaskType.full), 3),
            (weights.WeightCfg(inner, 3.0, "full"), 3),  # the enum's str is the same value
            (weights.WeightCfg(inner, math.nan), 4),
            (weights.WeightCfg(inner, float("nan")), 4),  # another nan: no key, the same guards
        ):
            with self.subTest(scale=cfg.scale, mode=cfg.mode):
                torch.testing.assert_close(compiled(cfg), call(cfg), equal_nan=True)
                # Older Dynamo (torch 2.6) guards each field itself, the traced call
                # reads the fields (FLAT_IN_GRAPH false), and an enum member and its
                # str are not the same value there: only the results are compared.
                if structop_runtime.FLAT_IN_GRAPH:
                    self.assertEqual(counters["stats"]["unique_graphs"] - before, graphs)

    def test_a_record_without_its_own_key_passes_its_tuple(self):
        """A record pickled by a runtime before keys holds no `_structop_key`;
        its class's (None) makes the traced call pass its tuple."""
        x, w, b = t64(3), t64(3), t64(3)
        made = weights.WeightCfg(weights.Inner(w, b), 2.0)
        old = object.__new__(weights.WeightCfg)
        for name in ("inner", "scale", "mode", "_structop_flat"):
            object.__setattr__(old, name, getattr(made, name))
        self.assertIsNone(old._structop_key)
        torch._dynamo.reset()
        compiled = torch.compile(lambda c: weights.op(x, c), backend="eager", fullgraph=True)
        torch.testing.assert_close(compiled(old), (x * w + b) * 2.0)
        torch.testing.assert_close(compiled(made), (x * w + b) * 2.0)

    def test_the_traced_call_reads_the_key(self):
        """The traced call reads a value leaf from the key (FLAT_IN_GRAPH: torch
        2.13 and later) or from the field (older torch), never from the flat
        values, which the eager call passes: a record whose flat values were
        altered behind its back shows which."""
        x, w, b = t64(3), t64(3), t64(3)
        cfg = weights.WeightCfg(weights.Inner(w, b), 2.0)
        object.__setattr__(cfg, "_structop_flat", (w, b, 5.0, "causal"))
        torch._dynamo.reset()
        compiled = torch.compile(lambda c: weights.op(x, c), backend="eager", fullgraph=True)
        torch.testing.assert_close(compiled(cfg), (x * w + b) * 2.0)
        torch.testing.assert_close(weights.op(x, cfg), (x * w + b) * 5.0)


class RecordColumns(unittest.TestCase):
    """A list of records reaches the op as one tuple per leaf, which
    structop_runtime.record_columns builds from the records' flat values: in
    C (_native.c) where it was built, as in this build; the same in Python
    (_loading._record_columns) otherwise. Both are checked against each
    other and against the flat call."""

    def setUp(self):
        from structop_runtime import _loading

        self.native, self.python = _loading.record_columns, _loading._record_columns

    def test_this_build_has_the_c_module(self):
        self.assertEqual(self.native.__module__, "structop_runtime._native")
        self.assertIsNot(self.native, self.python)

    def both(self, *args):
        """Each version's result, or its exception as (type, message, name); a
        generator is given to each as a fresh copy."""
        items = [list(a) if inspect.isgenerator(a) else None for a in args]
        results = []
        for function in (self.native, self.python):
            given = [a if i is None else (v for v in i) for a, i in zip(args, items)]
            try:
                results.append(function(*given))
            except Exception as e:  # noqa: BLE001 (compared below)
                results.append((type(e), str(e), getattr(e, "name", None)))
        return results

    def test_c_and_python_agree(self):
        w, b = t64(3), t64(3)
        sub = t64(3).as_subclass(Seen)
        terms = [multi.Term(w=w), multi.Term(w=b, b=w, scale=2.0)]
        blank = object.__new__(multi.Term)
        odd = multi.Term(w=w)
        object.__setattr__(odd, "_structop_flat", (w, None))
        cases = {
            "list": (terms, multi.Term, 3),
            "tuple": (tuple(terms), multi.Term, 3),
            "generator": ((t for t in terms), multi.Term, 3),
            "empty": ([], multi.Term, 3),
            "override given": (terms, multi.Term, 3, True),
            "override not given": (terms, multi.Term, 3, 0),
            "subclass value": ([multi.Term(w=sub)], multi.Term, 3),
            "parameter value": ([multi.Term(w=torch.nn.Parameter(w))], multi.Term, 3),
            "int and bool values": (
                [multi.Term(w=w, scale=2), multi.Term(w=w, scale=True)],
                multi.Term,
                3,
            ),
            "other value": ([multi.Term(w=w, scale=[1.0])], multi.Term, 3),
            "wrong item": ([terms[0], 5], multi.Term, 3),
            "wrong record": ([weights.Inner(w, b)], multi.Term, 3),
            "made without __init__": ([blank], multi.Term, 3),
            "wrong count": ([odd], multi.Term, 3),
            "not a list": (5, multi.Term, 3),
        }
        for name, args in cases.items():
            with self.subTest(name):
                native, python = self.both(*args)
                self.assertEqual(native, python)
        native, _ = self.both(terms, multi.Term, 3)
        self.assertEqual(native, ((w, b), (None, w), (1.0, 2.0), False))
        self.assertIs(native[0][0], w)
        self.assertTrue(self.both([multi.Term(w=sub)], multi.Term, 3)[0][-1])
        self.assertFalse(self.both([multi.Term(w=torch.nn.Parameter(w))], multi.Term, 3)[0][-1])
        self.assertTrue(self.both([multi.Term(w=w, scale=[1.0])], multi.Term, 3)[0][-1])
        self.assertEqual(
            self.both([terms[0], 5], multi.Term, 3)[0],
            (TypeError, "item 1: expected Term, got int", None),
        )
        self.assertEqual(
            self.both([blank], multi.Term, 3)[0][::2], (AttributeError, "_structop_flat")
        )

    def test_no_reference_is_lost_or_kept(self):
        w, b = t64(3), t64(3)
        terms = [multi.Term(w=w, b=b) for _ in range(4)]
        bad = terms + [5]
        before = sys.getrefcount(w), sys.getrefcount(b), sys.getrefcount(terms[0])
        for _ in range(1000):
            self.native(terms, multi.Term, 3)
            with self.assertRaises(TypeError):
                self.native(bad, multi.Term, 3)
        self.assertEqual(
            (sys.getrefcount(w), sys.getrefcount(b), sys.getrefcount(terms[0])), before
        )

    def test_op_calls_with_any_sequence_of_records(self):
        x, w, b = t64(3), t64(3), t64(3)
        terms = [multi.Term(w=w), multi.Term(w=b, b=w, scale=2.0)]
        expected = x + (w + 0) + 2.0 * (b + w)
        for made in (terms, tuple(terms), iter(terms)):
            torch.testing.assert_close(multi.blend(x, made), expected)
        torch.testing.assert_close(multi.blend(x, []), x)

    def test_a_wrong_item_is_explained(self):
        x, w = t64(3), t64(3)
        for items, message in (
            ([multi.Term(w=w), 5], "`terms[1]` must be Term, got int"),
            ([weights.Inner(w, w)], "`terms[0]` must be Term, got Inner"),
        ):
            with self.subTest(message), self.assertRaises(TypeError) as cm:
                multi.blend(x, items)
            self.assertIn(message, str(cm.exception))


class Introspection(unittest.TestCase):
    def test_slot_map(self):
        self.assertEqual(
            weights.op.slot_map,
            {
                "x": "x",
                "cfg.inner.w": "cfg__inner__w",
                "cfg.inner.b": "cfg__inner__b",
                "cfg.scale": "cfg__scale",
                "cfg.mode": "cfg__mode",
            },
        )
        self.assertIn("cfg.fc1.lora.a", mlp.mlp.slot_map)
        self.assertEqual(mlp.mlp.slot_map["cfg.fc1.lora.a"], "cfg__fc1__lora__a")

    def test_pytree_round_trip(self):
        from torch.utils import _pytree

        cfg = mlp.MlpCfg(fc1=mlp.Linear(t64(2, 2)), fc2=mlp.Linear(t64(2, 2), t64(2)))
        leaves, spec = _pytree.tree_flatten(cfg)
        self.assertEqual(sum(isinstance(leaf, torch.Tensor) for leaf in leaves), 3)
        rebuilt = _pytree.tree_unflatten(leaves, spec)
        # Field by field: `==` on records compares tensors elementwise (and
        # Python 3.13's dataclass __eq__ no longer short-cuts on identity).
        self.assert_same_record(rebuilt, cfg)

    def assert_same_record(self, got, want):
        self.assertIs(type(got), type(want))
        for f in dataclasses.fields(want):
            a, b = getattr(got, f.name), getattr(want, f.name)
            if dataclasses.is_dataclass(b):
                self.assert_same_record(a, b)
            elif isinstance(b, torch.Tensor):
                self.assertIs(a, b, f.name)
            else:
                self.assertEqual(a, b, f.name)

    def test_docstrings_from_the_idl(self):
        self.assertIn("Weights and a scale.", weights.WeightCfg.__doc__)
        self.assertIn("out = (x * cfg.inner.w + cfg.inner.b) * cfg.scale", weights.op.__doc__)


if __name__ == "__main__":
    if sys.argv[1] == "--python-kernels":
        KERNELS_DIR = sys.argv.pop(2)
    else:
        LIBRARY = sys.argv[1]
    MODULE_DIR = sys.argv[2]
    unittest_main.main(argv=sys.argv[:1] + sys.argv[3:])
