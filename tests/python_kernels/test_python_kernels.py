#!/usr/bin/env python3
"""Ops implemented in Python through the generated X_ops.py (issue 13): the
registration API itself, on pk.ops.yaml (this folder) and the examples.

The scenarios of SCENARIOS.md with Python kernels are the examples' tests
run on idl_examples/<stem>_kernels.py (meson tests python-kernels-shim and
python-kernels-pt2: forward values, defaults, nested records, optionals,
lists, enums, dtype/device, mutation, fake kernels, gradcheck, ops calling
ops, opcheck, torch.compile, torch.export); python-kernels-same-results
compares them with the compiled kernels. This file checks what those do
not:

  Declaring    the first registration defines the op from Python (the
               lowered schema, the IDL's tags); an op registered by anything
               else (a compiled extension) refuses Python registrations with
               a clear error; loading an extension after Python definitions
               is refused before torch would abort the process; a module
               made from another version of the IDL cannot define the op
               again with another schema.
  Implementing register_kernel (every device / a device / a list; decorator
               and direct; replacing), kernels in record form with enum
               members and the APIs' defaults, the errors for a missing
               kernel, a kernel for `meta`, a device kernel for an op without
               tensor input, a value returned by an op returning nothing; a
               keyword-only parameter named `from`; fake kernels (the IDL's
               identity meta, `meta: custom` without one); register_autograd
               (needs `backward: true`; setup_context with
               keyword_only_inputs; gradients as the grads dataclass, a dict,
               None; ctx.needs_input_grad per parameter) and its errors
               (misspelled field, a field that takes no gradient, count,
               shape, dtype, a non-tensor); a backward through an op without
               `backward: true`; opcheck and torch.compile(fullgraph=True).
  annotations  the function attribute and X.ops.json.

Usage: test_python_kernels.py GENERATED_MODULE_DIR KERNELS_DIR [LIBSTRUCTOP_EXAMPLES.so]
(with the library, also: the compiled extension loaded first refuses Python
kernels; the examples' Python kernels refuse to let it load after them.)
"""

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import unittest_main  # noqa: E402  (tests/support: a skipped case is not a pass)

import torch

MODULE_DIR = KERNELS_DIR = LIBRARY = None
pk = None


def setUpModule():
    global pk
    sys.path.insert(0, MODULE_DIR)
    import pk_ops

    pk = pk_ops


def t(*shape, rg=False):
    return torch.randn(*shape, dtype=torch.float64, requires_grad=rg)


def run_child(code, *args):
    """Runs `code` in a fresh interpreter (a process has one definition per
    op), with the generated modules and the examples' kernels importable.
    Returns (exit status, stdout + stderr)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([MODULE_DIR, KERNELS_DIR, env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    return out.returncode, out.stdout + out.stderr


# ---------------------------------------------------------------------------
# Declaring
# ---------------------------------------------------------------------------


class Declaring(unittest.TestCase):
    def test_the_first_registration_defines_the_op(self):
        status, out = run_child("""
            import torch, structop_runtime as rt, pk_ops as pk
            assert rt.find_op(torch.ops.pk, "affine", "default") is None  # nothing defined at import
            try:
                pk.affine(torch.ones(2), pk.Cfg(pk.Inner(torch.ones(2))), pk.Plain())
            except RuntimeError as e:
                print("before:", e)
            pk.affine.register_kernel(None, lambda x, cfg, p, n: x * cfg.inner.w * cfg.scale)
            op = torch.ops.pk.affine.default
            print("schema:", op._schema == torch._C.parse_schema(pk.affine.schema))
            print("tags:", op.tags)
            print("others:", rt.find_op(torch.ops.pk, "pair", "default"))  # defined one by one
            print("call:", pk.affine(torch.ones(2), pk.Cfg(pk.Inner(torch.full((2,), 3.0)), 2.0), pk.Plain()))
        """)
        self.assertEqual(status, 0, out)
        self.assertIn(
            "before: pk::affine is not registered: call load_library(path) with the compiled "
            "extension first, or implement it in Python (register_kernel)",
            out,
        )
        self.assertIn("schema: True", out)
        self.assertIn("tags: [<Tag.pt2_compliant_tag: ", out)
        self.assertIn("others: None", out)
        self.assertIn("call: tensor([6., 6.])", out)

    def test_an_op_registered_elsewhere_refuses_python_registrations(self):
        # Another registration of pk::custom (a compiled extension does the same).
        status, out = run_child("""
            import torch, pk_ops as pk
            lib = torch.library.Library("pk", "FRAGMENT")
            lib.define("custom(Tensor x) -> Tensor")
            for register in (lambda: pk.custom.register_kernel(None, lambda x: x),
                             lambda: pk.custom.register_fake(lambda x: x),
                             lambda: pk.custom.register_kernel("cpu")(lambda x: x)):
                try:
                    register()
                except RuntimeError as e:
                    print(e)
        """)
        self.assertEqual(status, 0, out)
        message = (
            "pk::custom: {}: the op is already registered, by a compiled extension "
            "(load_library) or another torch.library definition, so its kernels come from there; "
            "an op has one registration, so structop does not define it again from Python. "
            "Implement the op either in the extension or in Python (in a process that does not "
            "load the extension)"
        )
        self.assertIn(message.format("register_kernel"), out)
        self.assertIn(message.format("register_fake"), out)
        self.assertEqual(out.count("the op is already registered"), 3, out)

    def test_the_compiled_extension_wins(self):
        if not LIBRARY:
            self.skipTest("needs the compiled examples (LIBSTRUCTOP_EXAMPLES.so)")
        status, out = run_child(
            """
            import sys, torch, weights_ops as W
            W.load_library(sys.argv[1])
            try:
                import weights_kernels  # registers Python kernels for the same ops
            except RuntimeError as e:
                print(e)
            x, w, b = torch.ones(3), torch.full((3,), 2.0), torch.ones(3)
            print("C++:", W.op(x, W.WeightCfg(W.Inner(w, b), scale=3.0)))
        """,
            LIBRARY,
        )
        self.assertEqual(status, 0, out)
        self.assertIn(
            "weights::op: register_kernel: the op is already registered, by a compiled "
            "extension (load_library)",
            out,
        )
        self.assertIn("C++: tensor([9., 9., 9.])", out)

    def test_loading_an_extension_after_python_definitions_is_refused(self):
        library = LIBRARY or "/nonexistent/libstructop_examples.so"  # refused before it is read
        status, out = run_child(
            """
            import sys, weights_ops as W
            import weights_kernels  # weights::op and weights::affine in Python
            try:
                W.load_library(sys.argv[1])
            except RuntimeError as e:
                print(e)
            print("still alive")
        """,
            library,
        )
        self.assertEqual(status, 0, out)
        self.assertIn(
            f"structop: cannot load {library}: weights::affine, weights::extent, weights::moments, weights::op are "
            "already defined from Python (Python "
            "kernels), and a compiled extension for torch namespace `weights` would register them a "
            "second time, which aborts the process; an op is implemented either by the compiled "
            "extension or in Python: load the extension in a process that registers no Python kernels "
            "for its ops",
            out,
        )
        self.assertIn("still alive", out)

    def test_another_version_of_the_idl_cannot_redefine_the_op(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(MODULE_DIR, "pk_ops.py"), encoding="utf-8") as f:
                text = f.read()
            # The same op with another schema (an IDL with another default).
            other = text.replace("int n=1) -> Tensor", "int n=2) -> Tensor").replace(
                "n=1):", "n=2):"
            )
            self.assertNotEqual(other, text)
            with open(os.path.join(tmp, "pk_other_ops.py"), "w", encoding="utf-8") as f:
                f.write(other)
            status, out = run_child(
                """
                import sys; sys.path.insert(0, sys.argv[1])
                import pk_ops, pk_other_ops
                pk_ops.affine.register_kernel(None, lambda *a: a[0])
                try:
                    pk_other_ops.affine.register_kernel(None, lambda *a: a[0])
                except RuntimeError as e:
                    print(e)
            """,
                tmp,
            )
        self.assertEqual(status, 0, out)
        self.assertIn(
            "pk::affine: register_kernel: the op is already defined from Python with another "
            "schema",
            out,
        )
        self.assertIn("(another version of pk.ops.yaml?)", out)


# ---------------------------------------------------------------------------
# Implementing: kernels and fake kernels
# ---------------------------------------------------------------------------


def affine_kernel(x, cfg, p, n):
    b = cfg.inner.b if cfg.inner.b is not None else 0
    y = x * cfg.inner.w + b if cfg.mode == pk.Mode.add else x * cfg.inner.w * (b + 1)
    return y * cfg.scale * p.k * n


class Kernels(unittest.TestCase):
    def test_kernels_take_records_with_the_apis_defaults(self):
        seen = []

        @pk.affine.register_kernel(None)
        def kernel(x, cfg, p, n):
            seen.append((cfg, p, n))
            return affine_kernel(x, cfg, p, n)

        x, w = t(3), t(3)
        y = pk.affine(x, pk.Cfg(pk.Inner(w)), pk.Plain())  # every default
        torch.testing.assert_close(y, x * w * 2)
        cfg, p, n = seen[-1]
        self.assertIs(type(cfg), pk.Cfg)
        self.assertIs(type(cfg.inner), pk.Inner)
        self.assertIs(cfg.inner.w, w)
        self.assertIsNone(cfg.inner.b)
        self.assertIs(cfg.mode, pk.Mode.add)  # the member, not its string
        self.assertEqual((cfg.scale, list(cfg.steps), p, n), (1.0, [1, 2], pk.Plain(k=2), 1))
        pk.affine(x, pk.Cfg(pk.Inner(w), 2.0, "mul", [3]), pk.Plain(5), n=4)
        cfg, p, n = seen[-1]
        self.assertEqual((cfg.scale, cfg.mode, cfg.steps, p.k, n), (2.0, pk.Mode.mul, [3], 5, 4))
        # The flat op too (the dispatcher passes an enum leaf as its string).
        torch.ops.pk.affine(x, w, None, 1.0, "mul", [1], 1, 1)
        self.assertIs(seen[-1][0].mode, pk.Mode.mul)

    def test_an_invalid_enum_string_lists_the_values(self):
        pk.affine.register_kernel(None, affine_kernel)
        with self.assertRaises(ValueError) as cm:
            torch.ops.pk.affine(t(2), t(2), None, 1.0, "div", [1], 2, 1)
        self.assertEqual(
            str(cm.exception),
            'pk::affine: cfg.mode: invalid value "div" for Mode; expected one of: add, mul',
        )

    def test_device_kernels_and_replacing(self):
        x, cfg = t(2), pk.Cfg(pk.Inner(t(2)))
        pk.nograd.register_kernel(None, lambda x, cfg: x + 1)
        torch.testing.assert_close(pk.nograd(x, cfg), x + 1)
        pk.nograd.register_kernel("cpu")(lambda x, cfg: x + 2)  # a device's own kernel wins
        torch.testing.assert_close(pk.nograd(x, cfg), x + 2)

        def plus3(x, cfg):
            return x + 3

        self.assertIs(pk.nograd.register_kernel(["cpu"], plus3), plus3)  # replaces
        torch.testing.assert_close(pk.nograd(x, cfg), x + 3)

        def plus4(x, cfg):
            return x + 4

        self.assertIs(pk.nograd.register_kernel(("cpu", None))(plus4), plus4)  # a decorator
        torch.testing.assert_close(pk.nograd(x, cfg), x + 4)
        torch.testing.assert_close(
            pk.nograd(x.to("meta"), pk.Cfg(pk.Inner(t(2).to("meta")))).shape, x.shape
        )

    def test_registration_errors(self):
        with self.assertRaises(ValueError) as cm:
            pk.nograd.register_kernel("meta", lambda x, cfg: x)
        self.assertEqual(
            str(cm.exception),
            'pk::nograd: a kernel for device type "meta" is a fake kernel: use register_fake',
        )
        with self.assertRaises(TypeError) as cm:
            pk.nograd.register_kernel(None, "not a function")
        self.assertEqual(str(cm.exception), "pk::nograd: register_kernel takes a function, got str")
        with self.assertRaises(TypeError) as cm:
            pk.nograd.register_kernel(3)
        self.assertEqual(
            str(cm.exception),
            'pk::nograd: register_kernel takes a device type ("cpu", '
            '"cuda", ...), a list of them or None, got 3',
        )
        with self.assertRaises(RuntimeError) as cm:
            pk.zeros.register_kernel("cpu", lambda n, device: torch.zeros(n, device=device))
        self.assertEqual(
            str(cm.exception),
            "pk::zeros takes no tensor, so torch cannot choose a kernel by device for it: "
            "register its kernel for every device (register_kernel(None)) and read the "
            "device from its arguments",
        )
        with self.assertRaises(RuntimeError) as cm:
            pk.nograd.register_autograd(lambda ctx, g: (g, None))
        self.assertEqual(
            str(cm.exception),
            "pk::nograd: register_autograd needs `backward: true` on the op in pk.ops.yaml "
            '(without it a backward through the op raises "not implemented", as with a '
            "compiled extension)",
        )

    def test_a_missing_kernel_says_which(self):
        pk.custom.register_fake(lambda x: torch.empty_like(x))  # defines the op, no kernel
        with self.assertRaises(NotImplementedError) as cm:
            pk.custom(t(2))
        self.assertEqual(
            str(cm.exception),
            "pk::custom has no Python kernel for device type cpu (kernels registered for: "
            'none): register one with register_kernel("<device>") or, for every device, '
            "register_kernel(None)",
        )

    def test_an_op_without_tensor_input(self):
        @pk.zeros.register_kernel(None)
        def zeros(n, *, device):
            return torch.zeros(n, device=device)

        @pk.zeros.register_fake
        def zeros_fake(n, *, device):
            return torch.empty(n, device=device)

        self.assertEqual(pk.zeros(3).shape, (3,))
        self.assertEqual(pk.zeros(2, device="meta").device.type, "meta")

    def test_a_keyword_only_parameter_named_from(self):
        got = []

        @pk.keyword.register_kernel(None)
        def keyword(x, *, from_, alpha):
            got.append(alpha)
            return x + alpha * from_

        x, f = t(3), t(3)
        torch.testing.assert_close(pk.keyword(x, from_=f), x + f)  # alpha left out by torch
        torch.testing.assert_close(pk.keyword(x, from_=f, alpha=2.0), x + 2 * f)
        self.assertEqual(got, [1.0, 2.0])

    def test_mutation_and_an_op_returning_nothing(self):
        @pk.scale_.register_kernel(None)
        def scale_(x, cfg):
            cfg.inner.w.mul_(cfg.scale)

        w = torch.ones(3)
        version = w._version
        self.assertIsNone(pk.scale_(t(3), pk.Cfg(pk.Inner(w), scale=3.0)))
        torch.testing.assert_close(w, torch.full((3,), 3.0))
        self.assertGreater(w._version, version)
        pk.scale_.register_kernel(None, lambda x, cfg: cfg.inner.w.mul_(cfg.scale))
        with self.assertRaises(TypeError) as cm:
            pk.scale_(t(3), pk.Cfg(pk.Inner(w)))
        self.assertEqual(
            str(cm.exception),
            "pk::scale_ returns nothing (`-> ()`), but its Python kernel returned a Tensor: "
            "return None",
        )

    def test_fake_kernels(self):
        from torch._subclasses.fake_tensor import FakeTensorMode

        pk.affine.register_kernel(None, affine_kernel)
        pk.custom.register_kernel(None, lambda x: x.sum(0))
        mode = FakeTensorMode()
        x, w = mode.from_tensor(t(4, 3)), mode.from_tensor(t(4, 3))
        with mode:
            # The IDL's identity meta: the output is like x.
            self.assertEqual(pk.affine(x, pk.Cfg(pk.Inner(w)), pk.Plain()).shape, (4, 3))
        fresh = run_child("""
            import torch, pk_ops as pk
            from torch._subclasses.fake_tensor import FakeTensorMode
            pk.custom.register_kernel(None, lambda x: x.sum(0))
            try:
                pk.custom(torch.ones(2, 3, device="meta"))
            except RuntimeError as e:
                print(e)
        """)
        self.assertIn(
            "pk::custom has no fake kernel: its IDL says `meta: custom` (register one with "
            "register_fake)",
            fresh[1],
        )
        pk.custom.register_fake(lambda x: x.new_empty(x.shape[1:]))
        with mode:
            self.assertEqual(pk.custom(x).shape, (3,))


# ---------------------------------------------------------------------------
# Implementing: autograd
# ---------------------------------------------------------------------------


def affine_setup_context(ctx, inputs, output):
    x, cfg, p, n = inputs
    ctx.save_for_backward(x, cfg.inner.w)
    ctx.factor = cfg.scale * p.k * n


class RecordListGradients(unittest.TestCase):
    """register_autograd with a list of records: one grad record per item,
    and an error inside an item names the item."""

    def setUp(self):
        def kernel(x, items):
            out = x.clone()
            for item in items:
                out = out + item.w + (item.b if item.b is not None else 0)
            return out

        pk.layers.register_kernel(None, kernel)

    def run_backward(self, grads):
        pk.layers.register_autograd(
            lambda ctx, grad: grads(grad), setup_context=lambda ctx, inputs, output: None
        )
        items = [pk.Inner(t(3, rg=True)), pk.Inner(t(3, rg=True), t(3, rg=True))]
        pk.layers(t(3, rg=True), items).sum().backward()
        return items

    def test_one_grad_record_per_item(self):
        items = self.run_backward(
            lambda grad: (grad, [pk.InnerGrad(w=grad), pk.InnerGrad(w=2 * grad, b=grad)])
        )
        torch.testing.assert_close(items[1].w.grad, torch.full((3,), 2.0, dtype=torch.float64))
        torch.testing.assert_close(items[1].b.grad, torch.ones(3, dtype=torch.float64))
        self.assertIsNone(items[0].b)

    def test_an_error_inside_an_item_names_it(self):
        with self.assertRaises(TypeError) as cm:
            self.run_backward(lambda grad: (grad, [pk.InnerGrad(w=grad), pk.InnerGrad(w=1.0)]))
        self.assertEqual(
            str(cm.exception),
            "pk::layers: the gradient for `items[1].w` must be a Tensor or None, got float",
        )
        with self.assertRaises(TypeError) as cm:
            self.run_backward(lambda grad: (grad, [None, {"ww": grad}]))
        self.assertIn(
            "pk::layers: backward returned a gradient for `items[1].ww`, but Inner has no "
            "field `ww`",
            str(cm.exception),
        )


class RecordReturns(unittest.TestCase):
    """A returned record (nested): the kernel returns it, setup_context gets
    it, the backward gets its gradients as the grad record; a kernel that
    returns something else is told which return is wrong."""

    def setUp(self):
        pk.parts.register_kernel(
            None, lambda x: (x.clone(), pk.Parts(x * 1, pk.Pair(x * 2, x * 3)))
        )
        self.seen = {}

        def setup_context(ctx, inputs, output):
            self.seen["output"] = output

        def backward(ctx, grad_whole, grad_parts):
            self.seen["grad"] = grad_parts
            return grad_whole + grad_parts.lo + 2 * grad_parts.pair.a + 3 * grad_parts.pair.b

        pk.parts.register_autograd(backward, setup_context=setup_context)

    def test_record_form_everywhere(self):
        x = t(3, rg=True)
        whole, parts = pk.parts(x)
        self.assertIsInstance(parts.pair, pk.Pair)
        torch.testing.assert_close(parts.pair.b, 3 * x.detach())
        self.assertEqual(len(torch.ops.pk.parts(x.detach())), 4)
        output = self.seen["output"]
        self.assertIsInstance(output[1], pk.Parts)
        (whole + parts.lo + parts.pair.a + parts.pair.b).sum().backward()
        self.assertIsInstance(self.seen["grad"], pk.PartsGrad)
        self.assertIsInstance(self.seen["grad"].pair, pk.PairGrad)
        torch.testing.assert_close(x.grad, torch.full((3,), 7.0, dtype=torch.float64))
        self.assertTrue(torch.autograd.gradcheck(lambda x: pk.parts(x)[1].pair.b, (t(3, rg=True),)))

    def test_a_kernel_returning_the_wrong_thing(self):
        pk.parts.register_kernel(None, lambda x: (x, (x, (x, x))))
        with self.assertRaises(TypeError) as cm:
            pk.parts(t(3))
        self.assertEqual(
            str(cm.exception), "pk::parts: a kernel must return a Parts as `parts`, got tuple"
        )
        pk.parts.register_kernel(None, lambda x: pk.Parts(x, pk.Pair(x, x)))
        with self.assertRaises(TypeError) as cm:
            pk.parts(t(3))
        self.assertEqual(
            str(cm.exception),
            "pk::parts: a kernel must return a tuple of 2 values (whole, parts), got Parts",
        )


class TensorListGradients(unittest.TestCase):
    """register_autograd with Tensor[] and Tensor?[] parameters: their
    gradient (and ctx.needs_input_grad entry) is a list with one entry per
    tensor of the input list."""

    def setUp(self):
        def kernel(x, xs, ys):
            out = x.clone()
            for v in xs:
                out = out + v
            for v in ys:
                if v is not None:
                    out = out + 2 * v
            return out

        pk.stack.register_kernel(None, kernel)

    def use_backward(self, grads):
        def setup_context(ctx, inputs, output):
            ctx.n = len(inputs[1])
            ctx.given = [v is not None for v in inputs[2]]

        def backward(ctx, grad):
            self.needs = ctx.needs_input_grad
            return grads(ctx, grad)

        pk.stack.register_autograd(backward, setup_context=setup_context)

    @staticmethod
    def right(ctx, grad):
        return grad, [grad] * ctx.n, [2 * grad if given else None for given in ctx.given]

    def test_gradcheck_and_needs_input_grad_per_tensor(self):
        self.use_backward(self.right)
        self.assertTrue(
            torch.autograd.gradcheck(
                lambda x, a, b, c: pk.stack(x, [a, b], [c, None]),
                tuple(t(3, rg=True) for _ in range(4)),
            )
        )
        x, a, b, c = t(3, rg=True), t(3), t(3, rg=True), t(3, rg=True)
        pk.stack(x, [a, b], [None, c]).sum().backward()
        self.assertEqual(self.needs, (True, [False, True], [False, True]))
        torch.testing.assert_close(c.grad, torch.full((3,), 2.0, dtype=torch.float64))
        self.assertIsNone(a.grad)
        # Empty lists: no gradient entries at all.
        x = t(3, rg=True)
        pk.stack(x, [], []).sum().backward()
        self.assertEqual(self.needs, (True, [], []))

    def backward_error(self, grads, error):
        self.use_backward(grads)
        with self.assertRaises(error) as cm:
            pk.stack(t(3, rg=True), [t(3, rg=True), t(3, rg=True)], []).sum().backward()
        return str(cm.exception)

    def test_a_wrong_count_or_kind_names_the_list(self):
        self.assertEqual(
            self.backward_error(lambda ctx, grad: (grad, [grad], None), RuntimeError),
            "pk::stack: backward returned 1 gradient for xs, but the input list has 2 tensors "
            '(give one per tensor; None for "no gradient")',
        )
        self.assertEqual(
            self.backward_error(lambda ctx, grad: (grad, grad, None), TypeError),
            "pk::stack: the gradient for `xs` must be a list (one Tensor or None per tensor of the "
            "input list) or None, got Tensor",
        )
        self.assertEqual(
            self.backward_error(lambda ctx, grad: (grad, [grad, 1.0], None), TypeError),
            "pk::stack: the gradient for `xs[1]` must be a Tensor or None, got float",
        )

    def test_a_wrong_shape_names_the_item(self):
        self.assertEqual(
            self.backward_error(lambda ctx, grad: (grad, [grad, grad.sum()], None), RuntimeError),
            "pk::stack: gradient for xs[1] has shape [] but the input has shape [3]",
        )


class Autograd(unittest.TestCase):
    def setUp(self):
        pk.affine.register_kernel(None, affine_kernel)

    def use_backward(self, cfg_grad):
        """affine's backward, returning cfg_grad(gw, gb) for cfg."""

        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            g = grad * ctx.factor
            self.needs = ctx.needs_input_grad
            return g * w, cfg_grad(g * x, g), None, None

        pk.affine.register_autograd(backward, setup_context=affine_setup_context)

    def grads(self, b_requires_grad=True):
        x, w, b = t(3, rg=True), t(3, rg=True), t(3, rg=b_requires_grad)
        pk.affine(x, pk.Cfg(pk.Inner(w, b), scale=2.0), pk.Plain(3), 1).sum().backward()
        return x, w, b

    def test_gradients_as_grads_dataclass_dict_or_none(self):
        for form in (
            lambda gw, gb: pk.CfgGrad(inner=pk.InnerGrad(w=gw, b=gb)),
            lambda gw, gb: {"inner": {"w": gw, "b": gb}},
            lambda gw, gb: pk.CfgGrad(inner={"w": gw, "b": gb}),
            lambda gw, gb: {"inner": pk.InnerGrad(w=gw, b=gb), "scale": None, "mode": None},
        ):
            self.use_backward(form)
            x, w, b = self.grads()
            torch.testing.assert_close(x.grad, 6 * w.detach())
            torch.testing.assert_close(w.grad, 6 * x.detach())
            torch.testing.assert_close(b.grad, torch.full((3,), 6.0, dtype=torch.float64))
        for form in (lambda gw, gb: None, lambda gw, gb: {"inner": None}, lambda gw, gb: {}):
            self.use_backward(form)
            x, w, b = self.grads()
            self.assertIsNotNone(x.grad)
            self.assertIsNone(w.grad)
            self.assertIsNone(b.grad)

    def test_needs_input_grad_per_parameter(self):
        self.use_backward(lambda gw, gb: {"inner": {"w": gw}})
        self.grads(b_requires_grad=False)
        self.assertEqual(
            self.needs, (True, pk.CfgGrad(inner=pk.InnerGrad(w=True, b=False)), False, False)
        )

    def test_gradcheck_through_record_leaves(self):
        self.use_backward(lambda gw, gb: pk.CfgGrad(inner=pk.InnerGrad(w=gw, b=gb)))
        self.assertTrue(
            torch.autograd.gradcheck(
                lambda x, w, b: pk.affine(x, pk.Cfg(pk.Inner(w, b), scale=1.5), pk.Plain(2), 3),
                (t(3, rg=True), t(3, rg=True), t(3, rg=True)),
            )
        )

    def backward_error(self, cfg_grad, error=TypeError):
        self.use_backward(cfg_grad)
        with self.assertRaises(error) as cm:
            self.grads()
        return str(cm.exception)

    def test_a_misspelled_field_names_op_and_path(self):
        self.assertEqual(
            self.backward_error(lambda gw, gb: {"inner": {"ww": gw}}),
            "pk::affine: backward returned a gradient for `cfg.inner.ww`, but Inner has no field `ww` "
            "(fields that take gradients: w, b)",
        )
        self.assertEqual(
            self.backward_error(lambda gw, gb: {"iner": {"w": gw}}),
            "pk::affine: backward returned a gradient for `cfg.iner`, but Cfg has no field `iner` "
            "(fields that take gradients: inner)",
        )

    def test_gradients_for_what_takes_none(self):
        self.assertEqual(
            self.backward_error(lambda gw, gb: {"scale": gw}),
            "pk::affine: backward returned a gradient for `cfg.scale`, which takes none (only Tensor, "
            "Tensor?, Tensor[] and Tensor?[] fields do; return None for it)",
        )

        def backward(ctx, grad):
            return grad, None, torch.ones(()), None

        pk.affine.register_autograd(backward)
        with self.assertRaises(TypeError) as cm:
            self.grads()
        self.assertEqual(
            str(cm.exception),
            "pk::affine: backward returned a gradient for `p`, which takes none (return "
            "None for it)",
        )

    def test_wrong_count_and_kind(self):
        pk.affine.register_autograd(lambda ctx, grad: (grad, None))
        with self.assertRaises(TypeError) as cm:
            self.grads()
        self.assertEqual(
            str(cm.exception),
            "pk::affine: backward must return 4 gradients (one per parameter: x, cfg, p, n), got 2",
        )
        self.assertEqual(
            self.backward_error(lambda gw, gb: {"inner": {"w": 1.0}}),
            "pk::affine: the gradient for `cfg.inner.w` must be a Tensor or None, got float",
        )
        self.assertEqual(
            self.backward_error(lambda gw, gb: [gw]),
            "pk::affine: the gradient for `cfg` must be a CfgGrad, a dict by field name, or None, got "
            "list",
        )

    def test_wrong_shape_and_dtype_name_the_path(self):
        self.assertEqual(
            self.backward_error(lambda gw, gb: {"inner": {"w": gw[:2]}}, RuntimeError),
            "pk::affine: gradient for cfg.inner.w has shape [2] but the input has shape [3]",
        )
        self.assertEqual(
            self.backward_error(lambda gw, gb: {"inner": {"b": gb.float()}}, RuntimeError),
            "pk::affine: gradient for cfg.inner.b has dtype torch.float32 but the input has dtype "
            "torch.float64",
        )

    def test_keyword_only_record_with_backward(self):
        @pk.pair.register_kernel(None)
        def pair(x, *, cfg):
            return x * cfg.inner.w, x + cfg.inner.w

        def setup_context(ctx, inputs, keyword_only_inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x, keyword_only_inputs["cfg"].inner.w)

        def backward(ctx, grad_lo, grad_hi):
            x, w = ctx.saved_tensors
            return grad_lo * w + grad_hi, pk.CfgGrad(inner=pk.InnerGrad(w=grad_lo * x + grad_hi))

        pk.pair.register_autograd(backward, setup_context=setup_context)
        x, w = t(3, rg=True), t(3, rg=True)
        self.assertTrue(
            torch.autograd.gradcheck(lambda x, w: pk.pair(x, cfg=pk.Cfg(pk.Inner(w))), (x, w))
        )

    def test_backward_true_without_a_registered_backward(self):
        status, out = run_child("""
            import torch, pk_ops as pk
            pk.pair.register_kernel(None, lambda x, *, cfg: (x * 2, x * 3))
            x = torch.ones(2, requires_grad=True)
            lo, hi = pk.pair(x, cfg=pk.Cfg(pk.Inner(torch.ones(2))))
            try:
                (lo + hi).sum().backward()
            except RuntimeError as e:
                print(e)
        """)
        self.assertEqual(status, 0, out)
        self.assertIn(
            "pk::pair: no backward registered: the op has `backward: true` in pk.ops.yaml; "
            "register one with register_autograd(backward, setup_context=...)",
            out,
        )

    def test_no_backward_true_raises_not_implemented(self):
        pk.nograd.register_kernel(None, lambda x, cfg: x * cfg.inner.w)
        x = t(3, rg=True)
        y = pk.nograd(x, pk.Cfg(pk.Inner(t(3))))
        self.assertTrue(y.requires_grad)
        with self.assertRaises(RuntimeError) as cm:
            y.sum().backward()
        self.assertEqual(
            str(cm.exception),
            "derivative for pk::nograd is not implemented: the op has no "
            "`backward: true` in pk.ops.yaml",
        )
        with torch.no_grad():  # no graph without grad mode
            self.assertFalse(pk.nograd(x, pk.Cfg(pk.Inner(t(3)))).requires_grad)

    def test_opcheck_and_compile(self):
        self.use_backward(lambda gw, gb: pk.CfgGrad(inner=pk.InnerGrad(w=gw, b=gb)))
        x, w, b = t(3, rg=True), t(3, rg=True), t(3, rg=True)
        result = torch.library.opcheck(
            torch.ops.pk.affine.default, (x, w, b, 2.0, "mul", [1], 3, 2)
        )
        self.assertTrue(all(v == "SUCCESS" for v in result.values()), result)
        torch._dynamo.reset()

        def fn(x, w, b):
            return pk.affine(x, pk.Cfg(pk.Inner(w, b), scale=2.0), pk.Plain(3))

        compiled = torch.compile(fn, backend="aot_eager", fullgraph=True)
        torch.testing.assert_close(compiled(x, w, b), fn(x, w, b))
        want = torch.autograd.grad(fn(x, w, b).sum(), (x, w, b))
        got = torch.autograd.grad(compiled(x, w, b).sum(), (x, w, b))
        for g, e in zip(got, want):
            torch.testing.assert_close(g, e)


# ---------------------------------------------------------------------------
# annotations
# ---------------------------------------------------------------------------


class Annotations(unittest.TestCase):
    def test_function_attribute_and_json(self):
        self.assertEqual(
            pk.affine.annotations, ("inductor.fallback=always", "cost: 2 flops/element")
        )
        self.assertEqual(pk.pair.annotations, ())
        with open(os.path.join(MODULE_DIR, "pk.ops.json"), encoding="utf-8") as f:
            ops = {op["name"]: op for op in json.load(f)["ops"]}
        self.assertEqual(
            ops["affine"]["annotations"], ["inductor.fallback=always", "cost: 2 flops/element"]
        )
        self.assertEqual(ops["pair"]["annotations"], [])


class Records(unittest.TestCase):
    def test_grads_dataclasses(self):
        self.assertEqual([f.name for f in dataclasses.fields(pk.CfgGrad)], ["inner"])
        self.assertEqual(pk.InnerGrad(), pk.InnerGrad(w=None, b=None))
        self.assertFalse(hasattr(pk, "PlainGrad"))  # no tensor field, no gradient
        self.assertIs(pk.Cfg._structop_grad, pk.CfgGrad)


if __name__ == "__main__":
    MODULE_DIR, KERNELS_DIR = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    if rest and not rest[0].startswith("-"):
        LIBRARY = rest.pop(0)
    unittest_main.main(argv=sys.argv[:1] + rest)
