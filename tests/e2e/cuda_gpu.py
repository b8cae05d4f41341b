#!/usr/bin/env python3
"""The CUDA examples on a GPU: run when torch sees one, skipped (exit 77) otherwise.

usage: cuda_gpu.py EXAMPLES_LIB EXAMPLES_BUILD_DIR

With `torch.cuda.is_available()`: idl_examples/rms_norm.ops.yaml's ops
(`nn::rms_norm`, `dispatch: [CPU, CUDA]`, whose CUDA kernel is
rms_norm_kernels.cu when nvcc built it; `nn::rms_norm.gated`, one kernel for
every device) on CUDA tensors against their CPU results, in float32 and
float64, with and without the record's optional weight; their gradients on
CUDA against the CPU gradients and by gradcheck in float64; and
torch.library.opcheck on CUDA tensors (schema, fake tensor, AOT dispatch,
autograd registration). Also through the generated Python API
(rms_norm_ops.py), records and all.

Without a GPU it prints one line saying why the CUDA tests were skipped and
exits 77, which Meson and tools/test_summary.py count as a skip.
scripts/gpu-check.sh runs the same checks and more (tests/gpu/gpu_check.py)
on a GPU machine from a wheel, with structop.load.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import unittest_main  # noqa: E402  (tests/support: a skipped case is not a pass)

import torch

if not torch.cuda.is_available():
    print(
        f"CUDA tests skipped: no GPU visible to torch {torch.__version__} "
        f"(torch.cuda.is_available() is False; CUDA build: {torch.version.cuda or 'no'})"
    )
    sys.exit(unittest_main.SKIPPED)

EXAMPLES_LIB, EXAMPLES_DIR = sys.argv[1:3]
torch.ops.load_library(EXAMPLES_LIB)
sys.path.insert(0, EXAMPLES_DIR)
import rms_norm_ops as N  # noqa: E402  (generated next to the library)

CUDA = torch.device("cuda")
TOLERANCE = {torch.float32: {"atol": 1e-5, "rtol": 1e-5}, torch.float64: {}}


def inputs(dtype, weight=True, gate=False):
    torch.manual_seed(0)
    x = torch.randn(4, 33, 64, dtype=dtype)
    w = torch.randn(64, dtype=dtype) if weight else None
    g = torch.randn(4, 33, 64, dtype=dtype) if gate else None
    return x, w, g


def cuda(t, grad=False):
    return None if t is None else t.detach().to(CUDA).requires_grad_(grad)


def cpu(t, grad=False):
    return None if t is None else t.detach().clone().requires_grad_(grad)


class CudaExamples(unittest.TestCase):
    def test_the_cuda_key_has_the_examples_kernel(self):
        self.assertTrue(torch._C._dispatch_has_kernel_for_dispatch_key("nn::rms_norm", "CUDA"))

    def test_forward_equals_cpu(self):
        for dtype in (torch.float32, torch.float64):
            for weight in (True, False):
                with self.subTest(dtype=dtype, weight=weight):
                    x, w, _ = inputs(dtype, weight)
                    want = torch.ops.nn.rms_norm(x, w, 1e-6)
                    got = torch.ops.nn.rms_norm(cuda(x), cuda(w), 1e-6)
                    self.assertEqual(got.device.type, "cuda")
                    torch.testing.assert_close(got.cpu(), want, **TOLERANCE[dtype])
                    api = N.rms_norm(cuda(x), N.RmsNormCfg(weight=cuda(w)))
                    torch.testing.assert_close(api.cpu(), want, **TOLERANCE[dtype])

    def test_gated_forward_equals_cpu(self):
        x, w, g = inputs(torch.float32, gate=True)
        want = torch.ops.nn.rms_norm.gated(x, w, 1e-6, g)
        got = torch.ops.nn.rms_norm.gated(cuda(x), cuda(w), 1e-6, cuda(g))
        torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-5)

    def test_gradients_equal_cpu(self):
        x, w, g = inputs(torch.float64, gate=True)
        for name, call in [
            ("rms_norm", lambda x, w, g: torch.ops.nn.rms_norm(x, w, 1e-6)),
            ("gated", lambda x, w, g: torch.ops.nn.rms_norm.gated(x, w, 1e-6, g)),
        ]:
            with self.subTest(op=name):
                on_cpu = [cpu(x, True), cpu(w, True), cpu(g, True)]
                on_gpu = [cuda(x, True), cuda(w, True), cuda(g, True)]
                call(*on_cpu).sum().backward()
                call(*on_gpu).sum().backward()
                for a, b in zip(on_cpu, on_gpu):
                    if a.grad is None:
                        self.assertIsNone(b.grad)
                    else:
                        torch.testing.assert_close(b.grad.cpu(), a.grad)

    def test_gradcheck(self):
        x, w, _ = inputs(torch.float64)
        x, w = cuda(x[:2, :3, :8], True), cuda(w[:8], True)
        self.assertTrue(
            torch.autograd.gradcheck(lambda x, w: torch.ops.nn.rms_norm(x, w, 1e-6), (x, w))
        )

    def test_opcheck(self):
        x, w, g = inputs(torch.float32, gate=True)
        for op, args in [
            (torch.ops.nn.rms_norm.default, (cuda(x, True), cuda(w, True), 1e-6)),
            (torch.ops.nn.rms_norm.default, (cuda(x), None, 1e-6)),
            (torch.ops.nn.rms_norm.gated, (cuda(x, True), cuda(w), 1e-6, cuda(g, True))),
        ]:
            with self.subTest(op=str(op), weight=args[1] is not None):
                torch.library.opcheck(op, args)


if __name__ == "__main__":
    unittest_main.main(argv=[sys.argv[0]])
