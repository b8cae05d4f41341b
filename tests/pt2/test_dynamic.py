#!/usr/bin/env python3
"""Dynamic numbers (`dynamic: true`) under torch.compile, torch.export and
AOTInductor, with idl_examples/schedule.ops.yaml: `Noise.sigma` (float) and
`Noise.step` (int) are dynamic fields, `Noise.gain` is not, and op `scale`
takes a dynamic parameter `factor`.

  - eagerly: values and gradients from numbers and from 0-dim tensors, and
    a tensor that is not 0-dim on the CPU refused naming its path;
  - torch.compile(fullgraph=True) over 10 distinct values (records built in
    the compiled function and records passed in, the aot_eager and inductor
    backends): at most as many graphs as the same math in ATen ops (counted
    in the same test: 2), each call's outputs and gradients right (the
    backward follows the value, not the one it was traced with);
  - the non-dynamic field `gain` as before: specialized, one graph per
    value until the recompile limit, which fullgraph=True makes an error;
  - torch.export with the dynamic field given as a 0-dim tensor: one program
    for every value, also after a save and a load; with the compiled
    kernels, an AOTInductor package run with several values.

With --python-kernels the ops are idl_examples/schedule_kernels.py instead
of the compiled library (no AOTInductor: a package runs C++ kernels).

Usage: test_dynamic.py (LIBSTRUCTOP_EXAMPLES.so | --python-kernels KERNELS_DIR) GENERATED_MODULE_DIR
"""

import importlib
import os
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import unittest_main  # noqa: E402  (tests/support: a skipped case is not a pass)

import torch
from torch._dynamo.testing import CompileCounterWithBackend

LIBRARY = None
KERNELS_DIR = None
Q = None
VALUES = [0.125 * (i + 1) for i in range(10)]


def setUpModule():
    global Q
    Q = importlib.import_module("schedule_ops")
    if KERNELS_DIR:
        sys.path.insert(0, KERNELS_DIR)
        importlib.import_module("schedule_kernels")
    else:
        Q.load_library(LIBRARY)


def inputs(rg=True):
    torch.manual_seed(0)
    return (
        torch.randn(3, 4, dtype=torch.float64, requires_grad=rg),
        torch.randn(3, 4, dtype=torch.float64, requires_grad=rg),
    )


def want_denoise(x, eps, sigma, step, gain=1.0):
    return gain * (x - sigma * eps) / (step + 1)


class Timed(unittest.TestCase):
    def setUp(self):
        self._start = time.perf_counter()
        torch._dynamo.reset()

    def tearDown(self):
        print(
            f"  [{time.perf_counter() - self._start:6.2f} s] {self.id()}",
            file=sys.stderr,
            flush=True,
        )


class Eager(Timed):
    def test_numbers_and_tensors(self):
        x, eps = inputs()
        for sigma, step in ((0.5, 3), (torch.tensor(0.5, dtype=torch.float64), torch.tensor(3))):
            y = Q.denoise(x, eps, Q.Noise(sigma=sigma, step=step, gain=2.0))
            torch.testing.assert_close(y, want_denoise(x, eps, 0.5, 3, 2.0))
            gx, ge = torch.autograd.grad(y.sum(), (x, eps))
            torch.testing.assert_close(gx, torch.full_like(x, 0.5))
            torch.testing.assert_close(ge, torch.full_like(x, -0.25))
        torch.testing.assert_close(Q.scale(x, 3), x * 3)
        # The flat op takes the tensors: the schema's type.
        flat = torch.ops.schedule.scale(x, torch.tensor(2.0, dtype=torch.float64))
        torch.testing.assert_close(flat, x * 2)
        self.assertIn("Tensor noise__sigma, Tensor noise__step", Q.denoise.schema)
        self.assertIn("float noise__gain=1.0", Q.denoise.schema)

    def test_a_record_keeps_the_number(self):
        noise = Q.Noise(sigma=0.5, step=3)
        self.assertEqual((noise.sigma, noise.step), (0.5, 3))
        self.assertIs(type(noise.sigma), float)

    def test_wrong_values_name_the_path(self):
        x, _ = inputs(rg=False)
        with self.assertRaisesRegex(ValueError, r"schedule::scale: factor: .*0-dim CPU tensor"):
            torch.ops.schedule.scale(x, torch.ones(2, dtype=torch.float64))
        with self.assertRaisesRegex(TypeError, r"`factor` must be float or a 0-dim tensor"):
            Q.scale(x, "fast")
        with self.assertRaisesRegex(TypeError, r"`noise.step` must be int or a 0-dim tensor"):
            Q.denoise(x, x, Q.Noise(sigma=0.5, step=1.5))

    def test_the_kernel_reads_a_number(self):
        seen = []

        def spy(x, factor):
            seen.append(type(factor))
            return x * factor

        from schedule_kernels import scale

        Q.scale.register_kernel(None)(spy)
        try:
            Q.scale(inputs(rg=False)[0], 0.5)
        finally:
            Q.scale.register_kernel(None)(scale)
        self.assertEqual(seen, [float])


class Compile(Timed):
    def count(self, fn, backend, calls):
        counter = CompileCounterWithBackend(backend)
        compiled = torch.compile(fn, backend=counter, fullgraph=True)
        for args in calls:
            compiled(*args)
        return counter.frame_count

    def check_dynamic(self, backend):
        x, eps = inputs()

        def inside(x, eps, sigma, step):
            return Q.denoise(x, eps, Q.Noise(sigma=sigma, step=step)), Q.scale(x, sigma)

        def passed(x, eps, noise):
            return Q.denoise(x, eps, noise)

        def aten(x, eps, sigma, step):
            return (x - sigma * eps) / (step + 1), x * sigma

        results = []

        def run_inside(x, eps, sigma, step):
            y, z = compiled_inside(x, eps, sigma, step)
            torch.testing.assert_close(y, want_denoise(x, eps, sigma, step))
            torch.testing.assert_close(z, x * sigma)
            gx, ge = torch.autograd.grad(y.sum() + z.sum(), (x, eps))
            torch.testing.assert_close(gx, torch.full_like(x, 1 / (step + 1) + sigma))
            torch.testing.assert_close(ge, torch.full_like(x, -sigma / (step + 1)))
            results.append(sigma)

        counter = CompileCounterWithBackend(backend)
        compiled_inside = torch.compile(inside, backend=counter, fullgraph=True)
        for i, sigma in enumerate(VALUES):
            run_inside(x, eps, sigma, i)
        graphs_inside = counter.frame_count

        torch._dynamo.reset()
        counter = CompileCounterWithBackend(backend)
        compiled_passed = torch.compile(passed, backend=counter, fullgraph=True)
        for i, sigma in enumerate(VALUES):
            y = compiled_passed(x, eps, Q.Noise(sigma=sigma, step=i))
            torch.testing.assert_close(y, want_denoise(x, eps, sigma, i))
            gx, ge = torch.autograd.grad(y.sum(), (x, eps))
            torch.testing.assert_close(ge, torch.full_like(x, -sigma / (i + 1)))
        graphs_passed = counter.frame_count

        torch._dynamo.reset()
        graphs_aten = self.count(aten, backend, [(x, eps, s, i) for i, s in enumerate(VALUES)])
        print(
            f"  {backend}: graphs for 10 values: records made inside {graphs_inside}, "
            f"passed in {graphs_passed}, the same math in ATen ops {graphs_aten}",
            file=sys.stderr,
        )
        self.assertEqual(len(results), 10)
        self.assertLessEqual(graphs_inside, max(graphs_aten, 2))
        self.assertLessEqual(graphs_passed, max(graphs_aten, 2))

    def test_dynamic_aot_eager(self):
        self.check_dynamic("aot_eager")

    def test_dynamic_inductor(self):
        self.check_dynamic("inductor")

    def test_a_field_not_dynamic_is_specialized(self):
        x, eps = inputs(rg=False)

        def fn(x, eps, gain):
            return Q.denoise(x, eps, Q.Noise(sigma=0.5, gain=gain))

        counter = CompileCounterWithBackend("aot_eager")
        compiled = torch.compile(fn, backend=counter, fullgraph=True)
        config = torch._dynamo.config  # (torch 2.6 calls the limit cache_size_limit)
        limit = getattr(config, "recompile_limit", None) or config.cache_size_limit
        with self.assertRaises(Exception) as raised:
            for gain in VALUES:
                torch.testing.assert_close(
                    compiled(x, eps, gain), want_denoise(x, eps, 0.5, 0, gain)
                )
        self.assertRegex(type(raised.exception).__name__, r"LimitHit|LimitExceeded")
        self.assertGreaterEqual(counter.frame_count, limit)


class Export(Timed):
    class Model(torch.nn.Module):
        def forward(self, x, eps, noise):
            return Q.denoise(x, eps, noise) + Q.scale(x, noise.sigma)

    def example(self, sigma, step):
        return Q.Noise(sigma=torch.tensor(sigma, dtype=torch.float64), step=torch.tensor(step))

    def check(self, run):
        x, eps = inputs(rg=False)
        for i, sigma in enumerate(VALUES[:4]):
            got = run(x, eps, self.example(sigma, i))
            torch.testing.assert_close(got, want_denoise(x, eps, sigma, i) + x * sigma)

    def test_one_program_for_every_value(self):
        x, eps = inputs(rg=False)
        program = torch.export.export(self.Model(), (x, eps, self.example(0.5, 1)))
        self.check(program.module())
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "schedule.pt2")
            torch.export.save(program, path)
            self.check(torch.export.load(path).module())

    def test_aoti_package(self):
        x, eps = inputs(rg=False)
        program = torch.export.export(self.Model(), (x, eps, self.example(0.5, 1)))
        with tempfile.TemporaryDirectory() as work:
            path = torch._inductor.aoti_compile_and_package(
                program, package_path=os.path.join(work, "schedule.pt2")
            )
            runner = torch._inductor.aoti_load_package(path)
            self.check(lambda x, eps, noise: runner(x, eps, noise))


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[0] == "--python-kernels":
        KERNELS_DIR = args[1]
        args = args[2:]
    else:
        LIBRARY = args[0]
        args = args[1:]
    # Each run has the cases of its kernels (a skipped case would not pass).
    if KERNELS_DIR:
        del Export.test_aoti_package
    else:
        del Eager.test_the_kernel_reads_a_number
    sys.path.insert(0, args[0])
    unittest_main.main(argv=[sys.argv[0]] + args[1:])
