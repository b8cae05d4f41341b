#!/usr/bin/env python3
"""End-to-end tests of the generated code from Python, through the FLAT ops.

usage: test_examples.py EXAMPLES_LIB FIXTURES_LIB EXAMPLES_BUILD_DIR

Loads libstructop_examples.so (every op of idl_examples/) and the test
fixtures with torch.ops.load_library, then calls torch.ops.<ns>.<op> with the
lowered (flat) arguments: values against torch references, positional and
keyword calls, torch.autograd.gradcheck in float64 through record tensor
leaves, torch.jit.script, and errors (the process must survive each one).
Each test names the SCENARIOS.md row it covers. The typed X_ops.py shims are
tested elsewhere.
"""

import json
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import unittest_main  # noqa: E402  (tests/support: a skipped case is not a pass)

import torch
from torch.autograd import gradcheck, gradgradcheck

EXAMPLES_LIB, FIXTURES_LIB, EXAMPLES_DIR = sys.argv[1:4]
torch.ops.load_library(EXAMPLES_LIB)
torch.ops.load_library(FIXTURES_LIB)
ops = torch.ops

F64 = {"dtype": torch.float64}


def randn(*sizes, grad=False):
    return torch.randn(*sizes, dtype=torch.float64, requires_grad=grad)


def on_meta(*sizes):
    return torch.empty(*sizes, dtype=torch.float64, device="meta")


def called_ops(fn):
    """Names of the ops the dispatcher called while running fn()."""
    with torch.autograd.profiler.profile() as prof:
        fn()
    return [e.name for e in prof.function_events]


def reference_attention(
    q, k, v, scale, mask="causal", window=256, softcap=None, slopes=None, bias=None
):
    """Softmax attention from plain torch ops (masks from tril/triu)."""
    lq, lk = q.shape[-2], k.shape[-2]
    s = q @ k.transpose(-2, -1) * scale
    if softcap is not None:
        s = softcap * torch.tanh(s / softcap)
    if bias is not None:
        s = s + bias
    if slopes is not None:
        dist = (
            torch.arange(lq, **F64)[:, None] + (lk - lq) - torch.arange(lk, **F64)[None, :]
        ).abs()
        s = s - slopes.view(-1, 1, 1) * dist
    ones = torch.ones(lq, lk, dtype=torch.bool)
    visible = ones if mask == "none" else ones.tril(lk - lq)
    if mask == "sliding_window":
        visible = visible & ones.triu(lk - lq - window + 1)
    s = s.masked_fill(~visible, -math.inf)
    return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1)


def rms(x, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


class Forward(unittest.TestCase):
    def test_row01_forward_only_tuple_and_list_outputs(self):
        a, b = randn(2, 3), randn(4)
        ca, cb = ops.compose.clamp_pair(a, -0.5, 0.5, b)
        torch.testing.assert_close(ca, a.clamp(-0.5, 0.5))
        torch.testing.assert_close(cb, b.clamp(-0.5, 0.5))
        x = randn(2, 7)
        pieces = ops.multi.chunk(x, [3, 4])
        self.assertIsInstance(pieces, list)
        self.assertEqual([p.shape[1] for p in pieces], [3, 4])
        torch.testing.assert_close(torch.cat(pieces, 1), x)

    def test_row02_names_and_overloads(self):
        self.assertEqual(
            str(ops.weights.op.default._schema),
            "weights::op(Tensor x, Tensor cfg__inner__w, Tensor cfg__inner__b, "
            'float cfg__scale=1., str cfg__mode="causal") -> Tensor',
        )
        self.assertEqual(sorted(ops.nn.rms_norm.overloads()), ["default", "gated"])
        self.assertEqual(ops.nn.rms_norm.gated._schema.overload_name, "gated")
        x, gate = randn(2, 4), randn(2, 4)
        torch.testing.assert_close(
            ops.nn.rms_norm.gated(x, None, 1e-6, gate), rms(x) * torch.nn.functional.silu(gate)
        )
        # dispatch: [CPU, CUDA] registers one kernel per key, and no catch-all.
        self.assertTrue(torch._C._dispatch_has_kernel_for_dispatch_key("nn::rms_norm", "CPU"))
        self.assertTrue(torch._C._dispatch_has_kernel_for_dispatch_key("nn::rms_norm", "CUDA"))
        self.assertFalse(
            torch._C._dispatch_has_kernel_for_dispatch_key(
                "nn::rms_norm", "CompositeExplicitAutograd"
            )
        )
        # Two IDL files, one torch namespace.
        self.assertTrue(hasattr(ops.nn, "mlp") and hasattr(ops.nn, "linear"))

    def test_row03_meta(self):
        # identity
        x = on_meta(2, 3)
        out = ops.weights.op(x, x, x)
        self.assertEqual((out.device.type, out.shape), ("meta", x.shape))
        # identity with scalars between the tensors
        a, b = ops.compose.clamp_pair(on_meta(2, 3), 0.0, 1.0, torch.empty(5, device="meta"))
        self.assertEqual((a.shape, b.shape, b.dtype), ((2, 3), (5,), torch.float32))
        # listed: meta: [q, k]
        q_out, k_out = ops.attention.rotary(on_meta(1, 2, 5, 8), on_meta(1, 2, 9, 8))
        self.assertEqual((q_out.shape, k_out.shape), ((1, 2, 5, 8), (1, 2, 9, 8)))
        # custom, compared with the CPU kernel's shapes
        q, k, v = randn(1, 2, 5, 4), randn(1, 2, 7, 4), randn(1, 2, 7, 3)
        for got, want in zip(
            ops.attention.attention(q.to("meta"), k.to("meta"), v.to("meta")),
            ops.attention.attention(q, k, v),
        ):
            self.assertEqual(
                (got.device.type, got.shape, got.dtype), ("meta", want.shape, want.dtype)
            )
        self.assertEqual(
            [p.shape for p in ops.multi.chunk(on_meta(3, 6), [1, 5])], [(3, 1), (3, 5)]
        )
        self.assertEqual(ops.multi.pad(on_meta(3, 6)).shape, (3, 8))
        self.assertEqual(ops.dtypes.cast(on_meta(3), torch.float16).dtype, torch.float16)
        self.assertEqual(ops.optim.l2_penalty(on_meta(3)).shape, ())

    def test_row04_record_only_op_positional_and_keyword_calls(self):
        t = ops.dtypes.full([2, 3], 1.5)
        torch.testing.assert_close(t, torch.full((2, 3), 1.5))
        t = ops.dtypes.full(cfg__sizes=[2], cfg__value=7.0, cfg__dtype=torch.int64)
        self.assertEqual((t.dtype, t.tolist()), (torch.int64, [7, 7]))
        # A record mixed with tensors: positional, keyword, and mixed.
        x, w, b = randn(2, 3), randn(2, 3), randn(2, 3)
        want = (x * w + b) * 2.0
        torch.testing.assert_close(ops.weights.op(x, w, b, 2.0, "full"), want)
        torch.testing.assert_close(ops.weights.op(x, w, b, cfg__scale=2.0), want)
        torch.testing.assert_close(
            ops.weights.op(x=x, cfg__inner__b=b, cfg__inner__w=w, cfg__mode="full", cfg__scale=2.0),
            want,
        )

    def test_row05_nested_records_lowered_names(self):
        names = [a.name for a in ops.nn.mlp.default._schema.arguments]
        self.assertEqual(
            names[:6],
            [
                "x",
                "cfg__fc1__weight",
                "cfg__fc1__bias",
                "cfg__fc1__lora__a",
                "cfg__fc1__lora__b",
                "cfg__fc1__lora__scale",
            ],
        )
        self.assertEqual(names[-2:], ["cfg__act", "cfg__residual_scale"])
        with open(os.path.join(EXAMPLES_DIR, "mlp.ops.json"), encoding="utf-8") as f:
            model = json.load(f)
        mlp = next(op for op in model["ops"] if op["name"] == "mlp")
        slot_map = {s["path"]: s["name"] for s in mlp["slots"]}
        self.assertEqual(slot_map["cfg.fc1.lora.a"], "cfg__fc1__lora__a")
        self.assertEqual(slot_map["cfg.residual_scale"], "cfg__residual_scale")
        # Values: fc1 with bias and LoRA, fc2 plain; act relu.
        x, w1, b1, a1, bb1, w2 = (
            randn(3, 4),
            randn(5, 4),
            randn(5),
            randn(2, 4),
            randn(5, 2),
            randn(4, 5),
        )
        out = ops.nn.mlp(x, w1, b1, a1, bb1, 0.5, w2, cfg__act="relu", cfg__residual_scale=0.0)
        h = torch.relu(x @ w1.T + b1 + 0.5 * (x @ a1.T) @ bb1.T)
        torch.testing.assert_close(out, h @ w2.T)

    def test_row06_optional_fields_all_none_and_all_set(self):
        logits = randn(2, 6)
        same = ops.sampling.process_logits(logits, None)
        torch.testing.assert_close(same, logits)
        self.assertNotEqual(same.data_ptr(), logits.data_ptr())
        bias, mask = randn(6), torch.tensor([[True] * 5 + [False]])
        out = ops.sampling.process_logits(logits, mask, 0.5, 3, bias, [0], "probs", False)
        ref = ((logits + bias) / 0.5).masked_fill(~mask, -math.inf)
        ref[:, 0] = -math.inf
        ref = ref.masked_fill(ref < ref.topk(3, -1).values[:, -1:], -math.inf)
        torch.testing.assert_close(out, torch.softmax(ref, -1))
        greedy = ops.sampling.process_logits(logits, None, cfg__greedy=True)
        torch.testing.assert_close(greedy.argmax(-1), logits.argmax(-1))

    def test_row07_list_fields(self):
        x, t0, t1, off = randn(3), randn(3), randn(3), randn(3)
        # No schema defaults for mix's lists (Tensor?[] has none): pass them, empty.
        torch.testing.assert_close(ops.multi.mix(x, [t0, t1], [], [], []), x + t0 + t1)
        torch.testing.assert_close(
            ops.multi.mix(x, [t0, t1], [0.5, 2.0], [True, False], [off, None]), x + 0.5 * (t0 + off)
        )
        torch.testing.assert_close(ops.multi.mix(x, [], [], [], []), x)
        with self.assertRaisesRegex(RuntimeError, "cfg.enabled has 1 entries for 2 tensors"):
            ops.multi.mix(x, [t0, t1], [], [True], [])

    def test_row08_defaults(self):
        x, w, b = randn(2, 3), randn(2, 3), randn(2, 3)
        torch.testing.assert_close(ops.weights.op(x, w, b), x * w + b)  # cfg.scale = 1.0
        torch.testing.assert_close(ops.multi.pad(x), torch.nn.functional.pad(x, [1, 1]))  # [1, 1]
        torch.testing.assert_close(
            ops.multi.pad(x, [0, 0, 1, 0], 5.0), torch.nn.functional.pad(x, [0, 0, 1, 0], value=5.0)
        )
        torch.testing.assert_close(ops.nn.rms_norm(x), rms(x))  # all-defaulted record
        # An all-defaulted nested record (fc2.lora) left out: its leaves have schema defaults.
        y = ops.nn.linear(x, randn(4, 3))
        self.assertEqual(y.shape, (2, 4))

    def test_row09_dtype_and_device(self):
        x = randn(2, 2)
        y = ops.dtypes.cast(x)
        self.assertEqual((y.dtype, y.device.type), (torch.float32, "cpu"))
        y = ops.dtypes.cast(x, cfg__dtype=torch.bfloat16, cfg__device=torch.device("meta"))
        self.assertEqual((y.dtype, y.device.type), (torch.bfloat16, "meta"))
        y = ops.dtypes.cast(x, torch.int32, "cpu")
        self.assertEqual(y.dtype, torch.int32)
        # to_half: `CastCfg cfg={dtype: float16}` gives its leaves schema defaults.
        self.assertEqual(ops.dtypes.to_half(x).dtype, torch.float16)
        self.assertEqual(ops.dtypes.to_half(x, cfg__dtype=torch.float64).dtype, torch.float64)
        m = ops.dtypes.full([3], 0.0, torch.float16, device="meta")
        self.assertEqual((m.dtype, m.device.type), (torch.float16, "meta"))
        # `from`, a Python keyword, is `from_` in the schema (torch.fx cannot bind `from`).
        self.assertEqual(
            ops.dtypes.cast_checked(y, from_=torch.int32, to=torch.int64).dtype, torch.int64
        )
        self.assertEqual(
            [a.name for a in ops.dtypes.cast_checked.default._schema.arguments],
            ["x", "from_", "to"],
        )
        with self.assertRaisesRegex(ValueError, "Int cannot be cast to Bool safely"):
            ops.dtypes.cast_checked(y, torch.int32, torch.bool)
        with self.assertRaisesRegex(ValueError, "x has dtype Int but `from` is Float"):
            ops.dtypes.cast_checked(y, torch.float32, torch.float64)

    def test_row10_enums(self):
        q = randn(1, 1, 3, 2)
        out, _ = ops.attention.attention(q, q, q, cfg__mask="none")
        torch.testing.assert_close(out, reference_attention(q, q, q, 1 / math.sqrt(2), "none")[0])
        with self.assertRaises(ValueError) as caught:
            ops.attention.attention(q, q, q, cfg__mask="diagonal")
        self.assertIn(
            'attention::attention: cfg.mask: invalid value "diagonal" for MaskMode; '
            "expected one of: none, causal, sliding_window",
            str(caught.exception),
        )
        with self.assertRaisesRegex(ValueError, "expected one of: relu, gelu, silu"):
            ops.nn.mlp(
                randn(2, 2), randn(2, 2), None, None, None, 1.0, randn(2, 2), cfg__act="tanh"
            )

    def test_row10_enum_lists(self):
        x = randn(3, 4)
        want = x - x.amax(0, keepdim=True)
        want = want - want.sum(1, keepdim=True)
        torch.testing.assert_close(ops.multi.center(x, ["max", "sum"], [0, 1]), want)
        torch.testing.assert_close(
            ops.multi.center(x, ["max", "sum"], [0, 1], then=["mean"]), want - want.mean()
        )
        with self.assertRaises(ValueError) as caught:
            ops.multi.center(x, ["sum", "median"], [0, 1])
        self.assertIn(
            'multi::center: cfg.steps[1]: invalid value "median" for Reduce; '
            "expected one of: sum, max, mean",
            str(caught.exception),
        )

    def test_row11_top_level_optional_tensor(self):
        q, k, v, bias = randn(1, 2, 3, 4), randn(1, 2, 5, 4), randn(1, 2, 5, 4), randn(3, 5)
        for given in (None, bias):
            out, lse = ops.attention.attention(q, k, v, cfg__scale=0.5, bias=given)
            want = reference_attention(q, k, v, 0.5, bias=given)
            torch.testing.assert_close(out, want[0])
            torch.testing.assert_close(lse, want[1])
        # `Tensor? mask` has no default: it must be passed, None included.
        with self.assertRaises(RuntimeError):
            ops.sampling.process_logits(randn(2, 3))
        torch.testing.assert_close(ops.sampling.process_logits(q, None), q)

    def test_row12_kwarg_only_record(self):
        q = randn(1, 1, 3, 2)
        with self.assertRaises(RuntimeError):  # cfg's leaves come after `*`
            ops.attention.attention(q, q, q, 0.5)
        out, _ = ops.attention.attention(
            q, q, q, cfg__scale=0.5, cfg__mask="sliding_window", cfg__window=2
        )
        torch.testing.assert_close(out, reference_attention(q, q, q, 0.5, "sliding_window", 2)[0])

    def test_row13_ops_calling_ops(self):
        x, r, w = randn(2, 4), randn(2, 4), randn(4)
        names = called_ops(lambda: ops.compose.residual_norm(x, r, w))
        self.assertIn("compose::axpy", names)
        self.assertIn("nn::rms_norm", names)
        # One registration serves both callers (row 23): the C++ call inside
        # residual_norm and a Python call of the same op agree.
        torch.testing.assert_close(
            ops.compose.residual_norm(x, r, w), ops.nn.rms_norm(x + r, w, 1e-6)
        )
        names = called_ops(lambda: ops.nn.mlp(x, randn(3, 4), None, None, None, 1.0, randn(4, 3)))
        self.assertEqual(names.count("nn::linear"), 2)

    def test_row19_mutation_visible(self):
        p, g = randn(4), randn(4)
        param, m, v = p.clone(), torch.zeros(4, **F64), torch.zeros(4, **F64)
        ops.optim.adam_step_(g, param, m, v, 0.1, 0.9, 0.999, 1e-8, 0.0, 1)
        ref = torch.optim.Adam([p.clone().requires_grad_()], lr=0.1)
        ref.param_groups[0]["params"][0].grad = g.clone()
        ref.step()
        torch.testing.assert_close(param, ref.param_groups[0]["params"][0].detach())
        torch.testing.assert_close(m, 0.1 * g)
        avg = torch.ones(3, **F64)
        ops.optim.ema_update_(torch.full((3,), 5.0, **F64), avg, 0.75)
        torch.testing.assert_close(avg, torch.full((3,), 2.0, **F64))
        x, mean, var = randn(8, 3), torch.zeros(3, **F64), torch.ones(3, **F64)
        ops.optim.batch_stats_update_(x, mean, var, stats__momentum=0.5)
        torch.testing.assert_close(mean, 0.5 * x.mean(0))
        torch.testing.assert_close(var, 0.5 + 0.5 * x.var(0))
        written = [
            a.name
            for a in ops.optim.ema_update_.default._schema.arguments
            if a.alias_info is not None and a.alias_info.is_write
        ]
        self.assertEqual(written, ["ema__average"])

    def test_row23_torchscript(self):
        def weights_op(x, w, b, scale: float):
            return torch.ops.weights.op(x, w, b, scale, "full")

        def attention_out(q, k, v, bias: torch.Tensor):
            out, lse = torch.ops.attention.attention(
                q, k, v, cfg__scale=0.5, cfg__mask="none", bias=bias
            )
            return out + lse.unsqueeze(-1)

        def chunks(x):
            return torch.ops.multi.chunk(x, [1, 2], cfg__dim=0)

        x, w, b = randn(3, 2), randn(3, 2), randn(3, 2)
        scripted = torch.jit.script(weights_op)
        torch.testing.assert_close(scripted(x, w, b, 3.0), (x * w + b) * 3.0)
        q, bias = randn(1, 1, 3, 2), randn(3, 3)
        want_out, want_lse = reference_attention(q, q, q, 0.5, "none", bias=bias)
        torch.testing.assert_close(
            torch.jit.script(attention_out)(q, q, q, bias), want_out + want_lse.unsqueeze(-1)
        )
        self.assertEqual(len(torch.jit.script(chunks)(x)), 2)
        self.assertIn("weights::op", str(scripted.graph))


class Autograd(unittest.TestCase):
    """gradcheck in float64: the C++ backwards against finite differences (row 18)."""

    def check(self, fn, *inputs):
        self.assertTrue(gradcheck(fn, inputs, eps=1e-6, atol=1e-5))

    def test_row14_15_18_record_leaves(self):
        # x, cfg.inner.w, cfg.inner.b: two records deep.
        self.check(
            lambda x, w, b: ops.weights.op(x, w, b, 1.5, "causal"),
            randn(2, 3, grad=True),
            randn(2, 3, grad=True),
            randn(2, 3, grad=True),
        )
        y = ops.weights.op(randn(2, 3, grad=True), randn(2, 3), randn(2, 3))
        self.assertEqual(y.grad_fn.name(), "weights::op_backward")

    def test_row14_one_and_several_inputs(self):
        self.check(lambda w: ops.optim.l2_penalty(w, 0.3), randn(3, 2, grad=True))
        self.check(
            lambda a, b: ops.compose.lerp(a, b, 0.25), randn(4, grad=True), randn(4, grad=True)
        )
        self.check(
            lambda a, b: ops.compose.axpy(a, b, -2.0), randn(4, grad=True), randn(4, grad=True)
        )

    def test_row14_12_several_outputs_kwarg_only_record(self):
        def attention(q, k, v, slopes, bias):
            return ops.attention.attention(
                q, k, v, cfg__scale=0.4, cfg__softcap=2.0, cfg__alibi_slopes=slopes, bias=bias
            )

        self.check(
            attention,
            randn(1, 2, 3, 4, grad=True),
            randn(1, 2, 5, 4, grad=True),
            randn(1, 2, 5, 3, grad=True),
            randn(2, grad=True),
            randn(3, 5, grad=True),
        )
        # cfg.alibi_slopes None: no gradient slot is filled for it.
        self.check(
            lambda q, k, v: ops.attention.attention(
                q, k, v, cfg__mask="sliding_window", cfg__window=2
            ),
            randn(1, 1, 4, 2, grad=True),
            randn(1, 1, 4, 2, grad=True),
            randn(1, 1, 4, 2, grad=True),
        )

    def test_row15_nested_three_levels_some_without_grad(self):
        # fc1: weight, bias, lora.a, lora.b; fc2: weight only (bias and LoRA None).
        def mlp(x, w1, b1, a1, bb1, w2):
            return ops.nn.mlp(x, w1, b1, a1, bb1, 0.5, w2, cfg__act="gelu", cfg__residual_scale=2.0)

        self.check(
            mlp,
            randn(3, 4, grad=True),
            randn(5, 4, grad=True),
            randn(5, grad=True),
            randn(2, 4, grad=True),
            randn(5, 2, grad=True),
            randn(4, 5, grad=True),
        )
        # A tensor field that does not require grad gets none.
        w1 = randn(5, 4)
        x = randn(3, 4, grad=True)
        out = ops.nn.mlp(x, w1, None, None, None, 1.0, randn(4, 5, grad=True))
        out.sum().backward()
        self.assertIsNotNone(x.grad)
        self.assertIsNone(w1.grad)

    def test_row16_tensors_around_a_record(self):
        self.check(
            lambda x, w, gate: ops.nn.rms_norm.gated(x, w, 1e-3, gate),
            randn(3, 4, grad=True),
            randn(4, grad=True),
            randn(3, 4, grad=True),
        )
        self.check(lambda x: ops.nn.rms_norm(x), randn(3, 4, grad=True))

    def test_row17_backward_calls_another_op(self):
        a, b = randn(3, grad=True), randn(3, grad=True)
        y = ops.compose.mul(a, b).sum()
        names = called_ops(lambda: torch.autograd.grad(y, [a, b]))
        self.assertEqual(names.count("compose::mul"), 2)
        # The backward's own op calls are differentiable: second derivatives work.
        self.assertTrue(gradgradcheck(ops.compose.mul, (randn(3, grad=True), randn(3, grad=True))))

    def test_tensor_list_output(self):
        self.check(lambda x: ops.multi.chunk(x, [2, 3], 1), randn(2, 5, grad=True))
        x = randn(2, 5, grad=True)
        ops.multi.chunk(x, [2, 3], 1)[1].sum().backward()
        torch.testing.assert_close(
            x.grad, torch.cat([torch.zeros(2, 2, **F64), torch.ones(2, 3, **F64)], 1)
        )

    def test_no_grad_fn_without_grad(self):
        x, w = randn(2, 3), randn(2, 3, grad=True)
        with torch.no_grad():
            self.assertIsNone(ops.weights.op(x, w, x).grad_fn)
        self.assertIsNone(ops.weights.op(x, x, x).grad_fn)
        self.assertIsNotNone(ops.weights.op(x, w, x).grad_fn)


class Errors(unittest.TestCase):
    """Errors are Python exceptions; the process goes on (rows 10, 22)."""

    def test_row22_wrong_gradient_names_the_original_path(self):
        x, w = randn(2, 3, grad=True), randn(2, 3, grad=True)
        y = ops.e2e_fixtures.wrong_shape(x, w, w.detach())
        with self.assertRaisesRegex(
            RuntimeError,
            r"gradient for cfg\.inner\.w has shape \[3\] "
            r"but the input has shape \[2, 3\]",
        ):
            y.sum().backward()
        y = ops.e2e_fixtures.wrong_dtype(x, w, w.detach())
        with self.assertRaisesRegex(RuntimeError, "gradient for cfg.inner.w has dtype Float"):
            y.sum().backward()

    def test_wrong_gradient_under_compiled_autograd(self):
        # README: compiled autograd calls the C++ backward without the
        # bridge's checks (torch >= 2.7); torch's own checks apply. Torch 2.6
        # refuses the bridge's node.
        from torch._dynamo import compiled_autograd

        x, w = randn(2, 3, grad=True), randn(2, 3, grad=True)

        def backward(op):
            torch._dynamo.reset()
            with compiled_autograd._enable(torch.compile(backend="eager")):
                op(x, w, w.detach()).sum().backward()

        if torch.__version__ < (2, 7):
            with self.assertRaisesRegex(
                RuntimeError,
                "potentially unsafe C\\+\\+ autograd function: e2e_fixtures::wrong_shape",
            ):
                backward(ops.e2e_fixtures.wrong_shape)
            return
        with self.assertRaisesRegex(
            Exception,
            r"invalid gradient at index 1 - got \[3\] but "
            r"expected shape compatible with \[2, 3\]",
        ):
            backward(ops.e2e_fixtures.wrong_shape)
        w.grad = None
        backward(ops.e2e_fixtures.wrong_dtype)
        self.assertEqual(w.grad.dtype, torch.float64)

    def test_the_process_survives_every_error(self):
        x = randn(2, 3)
        bad_calls = [
            lambda: ops.weights.op(x, x, x, cfg__mode="sideways"),  # invalid enum
            lambda: ops.weights.op(x, x),  # missing argument
            lambda: ops.weights.op(x, "w", x),  # wrong type
            lambda: ops.weights.op(x, x, x, cfg__scale="big"),  # wrong scalar type
            lambda: ops.multi.chunk(x, [1, 1], 1),  # kernel's own check
            lambda: ops.sampling.process_logits(x, None, cfg__top_k=9),  # TORCH_CHECK_VALUE
            lambda: ops.attention.attention(x, x, x),  # wrong rank
        ]
        for call in bad_calls:
            with self.assertRaises((RuntimeError, ValueError, TypeError)):
                call()
        torch.testing.assert_close(ops.weights.op(x, x, x), x * x + x)


class GeneratedModule(unittest.TestCase):
    def test_ops_registered_before_the_import_are_bound_at_once(self):
        # The libraries were loaded with torch.ops.load_library above, before
        # this import: the module's ops are bound without an eager call, so
        # the first call under torch.compile(fullgraph=True) or torch.export
        # already calls the OpOverload (it was None until an eager call).
        sys.path.insert(0, EXAMPLES_DIR)
        try:
            import weights_ops
        finally:
            sys.path.remove(EXAMPLES_DIR)
        self.assertIs(weights_ops._op_op.overload, ops.weights.op.default)
        self.assertIsNotNone(weights_ops._op_op.eager)


if __name__ == "__main__":
    unittest_main.main(argv=[sys.argv[0]])
