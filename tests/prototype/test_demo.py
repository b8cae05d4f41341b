"""Python tests of the prototype demo ops: the flat torch.ops.demo.* registration.

usage: python_with_torch test_demo.py PATH/TO/demo_ops.so
"""

import sys
import unittest

import torch

MODULE = None  # set from argv in main


def leaves(shape=(2, 3), dtype=torch.float64, requires_grad=False):
    return [torch.randn(*shape, dtype=dtype, requires_grad=requires_grad) for _ in range(3)]


class DemoOps(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.ops.load_library(MODULE)

    def test_flat_call_positional_keyword_and_defaults(self):
        x, w, b = leaves()
        expected = (x * w + b) * 2.0
        torch.testing.assert_close(torch.ops.demo.op(x, w, b, 2.0, "full"), expected)
        torch.testing.assert_close(
            torch.ops.demo.op(x, cfg__inner__w=w, cfg__inner__b=b, cfg__scale=2.0), expected)
        torch.testing.assert_close(torch.ops.demo.op(x, w, b), x * w + b)  # schema defaults

    def test_kwarg_only_record_leaves(self):
        a, b, w = leaves()
        s, p = torch.ops.demo.two(a, b, cfg__inner__w=w, cfg__inner__b=b)
        torch.testing.assert_close(s, a + b + w)
        torch.testing.assert_close(p, a * b * b)
        with self.assertRaises(RuntimeError):  # record leaves are keyword-only
            torch.ops.demo.two(a, b, w, b)

    def test_enum_reaches_kernel(self):
        x, w, b = leaves()
        base = x * w + b
        torch.testing.assert_close(torch.ops.demo.fwd_only(x, w, b, 1.0, "sliding_window"),
                                   base + 2)

    def test_gradcheck_through_record_leaves(self):
        x, w, b = leaves(requires_grad=True)
        self.assertTrue(torch.autograd.gradcheck(
            lambda x, w, b: torch.ops.demo.op(x, w, b, 1.5, "causal"), (x, w, b)))
        self.assertTrue(torch.autograd.gradcheck(
            lambda a, w, b: torch.ops.demo.two(a, w, cfg__inner__w=w, cfg__inner__b=b,
                                               cfg__scale=0.5),
            (x, w, b)))

    def test_grad_fn_only_when_needed(self):
        x, w, b = leaves()
        self.assertIsNone(torch.ops.demo.op(x, w, b).grad_fn)
        w.requires_grad_()
        y = torch.ops.demo.op(x, w, b)
        self.assertEqual(y.grad_fn.name(), "demo::op_backward")
        with torch.no_grad():
            self.assertIsNone(torch.ops.demo.op(x, w, b).grad_fn)

    def test_meta(self):
        x, w, b = (t.to("meta") for t in leaves(shape=(4, 5)))
        y = torch.ops.demo.op(x, w, b)
        self.assertEqual((y.device.type, y.shape), ("meta", torch.Size([4, 5])))

    def test_torchscript(self):
        @torch.jit.script
        def f(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.ops.demo.op(x, w, b, 2.0, "full")

        x, w, b = leaves()
        torch.testing.assert_close(f(x, w, b), (x * w + b) * 2.0)

    def test_invalid_enum_lists_values_and_process_survives(self):
        x, w, b = leaves()
        with self.assertRaises(ValueError) as cm:
            torch.ops.demo.op(x, w, b, 1.0, "diagonal")
        message = str(cm.exception)
        self.assertIn("demo::op: cfg.mode", message)
        self.assertIn("full, causal, sliding_window", message)
        torch.testing.assert_close(torch.ops.demo.op(x, w, b, 1.0, "full"), x * w + b)

    def test_wrong_grad_shape_names_path(self):
        x = torch.randn(2, 3, dtype=torch.float64)
        w = torch.randn(3, dtype=torch.float64, requires_grad=True)
        b = torch.randn(2, 3, dtype=torch.float64)
        with self.assertRaisesRegex(RuntimeError, r"gradient for cfg\.inner\.w has shape"):
            torch.ops.demo.op(x, w, b).sum().backward()

    def test_mutation_visible(self):
        x, w, b = leaves()
        w0, b0 = w.clone(), b.clone()
        self.assertIsNone(torch.ops.demo.scale_(x, w, b, 3.0))
        torch.testing.assert_close(w, w0 * 3.0)
        torch.testing.assert_close(b, b0 + x)
        schema = str(torch.ops.demo.scale_.default._schema)
        self.assertIn("Tensor(a!) cfg__inner__w, Tensor(b!) cfg__inner__b", schema)


def main():
    global MODULE
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    MODULE = sys.argv.pop(1)
    unittest.main(verbosity=2)


if __name__ == "__main__":
    main()
