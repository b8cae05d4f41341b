#!/usr/bin/env python3
"""The GPU check (scripts/gpu-check.sh): structop, installed from its wheel,
builds the CUDA examples with structop.load (nvcc for the .cu files) and runs
them on the GPU. Each check is counted; the last line is `N passed, N failed`
and the exit status is 1 when a check failed (or none ran).

usage: gpu_check.py --work DIR [--cpu-selftest] [--step-timeout S]

The examples: idl_examples/rms_norm.ops.yaml (`nn::rms_norm`, dispatch
[CPU, CUDA], its CUDA kernel rms_norm_kernels.cu; `nn::rms_norm.gated`, one
kernel for every device) and tests/package/cuda/cuda_scale.ops.yaml
(`jit_cuda::scale`, a CUDA kernel of its own). The checks: each op on CUDA
tensors against its CPU result; the gradients of the ops with a backward
against the CPU's, and gradcheck; torch.library.opcheck on CUDA tensors;
torch.compile(fullgraph=True, inductor) of a small model of record calls
against eager, forward and backward; CUDA graph capture and replay of record
calls; and two measurements, printed with the GPU's name: a record call
against the flat torch.ops call of the same op (small tensors: the host
cost), and rms_norm's CUDA kernel against torch.nn.functional.rms_norm at two
sizes.

Without a GPU visible to torch it says so and exits 1 before building
anything, unless --cpu-selftest: then every check runs on CPU tensors (the
"CUDA" side is the CPU too, the .cu files are still compiled when nvcc is
found, the CUDA graph check is not run), which tests this file on a machine
without a GPU. DIR holds structop's cache (STRUCTOP_CACHE_DIR, the compiled
runtime library and builds) unless that is set already.
"""

import argparse
import os
import platform
import signal
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "idl_examples")
SCALE_DIR = os.path.join(ROOT, "tests", "package", "cuda")
EPS = 1e-6


class StepTimeout(BaseException):
    """A check ran past its time (a BaseException: torch's own handlers of
    Exception do not swallow it)."""


def _on_alarm(signum, frame):
    raise StepTimeout()


class Checks:
    """Runs each check with a time limit, prints a line per check, counts them."""

    def __init__(self, step_timeout, counts_path):
        self.step_timeout, self.counts_path = step_timeout, counts_path
        self.passed, self.failed, self.not_run = [], [], []
        signal.signal(signal.SIGALRM, _on_alarm)

    def run(self, name, fn, timeout=None):
        limit = timeout or self.step_timeout
        start = time.monotonic()
        print(f"--- {name}", flush=True)
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            fn()
        except StepTimeout:
            self.failed.append(name)
            print(f"FAIL {name}: ran past its limit of {limit:.0f} s", flush=True)
        except Exception:  # noqa: BLE001  (a check fails on anything it raises)
            self.failed.append(name)
            traceback.print_exc(file=sys.stdout)
            print(f"FAIL {name} ({time.monotonic() - start:.1f} s)", flush=True)
        else:
            self.passed.append(name)
            print(f"ok   {name} ({time.monotonic() - start:.1f} s)", flush=True)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            # For scripts/gpu-check.sh, should the whole run be cut short.
            with open(self.counts_path, "w", encoding="utf-8") as f:
                f.write(f"{len(self.passed)} {len(self.failed)}\n")

    def skip(self, name, why):
        self.not_run.append(name)
        print(f"not run: {name}: {why}", flush=True)


class Context:
    """What the checks share: the device, the built modules, the tensors' maker."""

    def __init__(self, torch, device, nvcc_home):
        self.torch, self.device, self.nvcc_home = torch, torch.device(device), nvcc_home
        self.modules = {}

    def module(self, name):
        if name not in self.modules:
            raise RuntimeError(f"needs the build of {name}, which failed")
        return self.modules[name]

    def sync(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()

    def randn(self, *shape, dtype=None, seed=0):
        g = self.torch.Generator().manual_seed(seed)
        return self.torch.randn(*shape, generator=g, dtype=dtype or self.torch.float32)

    def dev(self, t, grad=False):
        return None if t is None else t.detach().to(self.device).requires_grad_(grad)

    def cpu(self, t, grad=False):
        return None if t is None else t.detach().cpu().clone().requires_grad_(grad)


# --- the builds -------------------------------------------------------------


def cuda_arch_flags(ctx):
    """nvcc flags for the visible GPU (SASS for it, and PTX), none on CPU."""
    if ctx.device.type != "cuda":
        return []
    major, minor = ctx.torch.cuda.get_device_capability()
    arch = f"{major}{minor}"
    return [f"-gencode=arch=compute_{arch},code=[sm_{arch},compute_{arch}]"]


def build_rms_norm(ctx, work):
    import structop

    sources = [os.path.join(EXAMPLES, "rms_norm_kernels.cpp")]
    cflags = []
    if ctx.nvcc_home:
        sources.append(os.path.join(EXAMPLES, "rms_norm_kernels.cu"))
        # rms_norm_kernels.cpp's ATen stand-in for the CUDA kernel is left out.
        cflags.append("-DSTRUCTOP_EXAMPLES_CUDA_KERNELS=1")
    else:
        print("no nvcc (CPU self-test): rms_norm's CUDA key gets the ATen version")
    ctx.modules["rms_norm"] = structop.load(
        "gpu_check_rms_norm",
        os.path.join(EXAMPLES, "rms_norm.ops.yaml"),
        sources,
        extra_cflags=cflags,
        extra_cuda_cflags=cuda_arch_flags(ctx),
    )
    check_registered(ctx, "nn::rms_norm")


def build_scale(ctx, work):
    import structop

    sources = [os.path.join(SCALE_DIR, "cuda_scale_kernels.cpp")]
    if ctx.nvcc_home:
        sources.append(os.path.join(SCALE_DIR, "cuda_scale_kernels.cu"))
    else:  # CPU self-test without nvcc: a stand-in for the CUDA kernel
        stand_in = os.path.join(work, "cuda_scale_stand_in.cpp")
        with open(stand_in, "w", encoding="utf-8") as f:
            f.write(
                '#include "cuda_scale.ops.h"\n#include <ATen/core/Tensor.h>\n'
                "at::Tensor jit_cuda::kernels::scale_cuda(const at::Tensor& x, "
                "const ScaleCfg& cfg) { return x.mul(cfg.factor); }\n"
            )
        sources.append(stand_in)
    ctx.modules["scale"] = structop.load(
        "gpu_check_scale",
        os.path.join(SCALE_DIR, "cuda_scale.ops.yaml"),
        sources,
        extra_cuda_cflags=cuda_arch_flags(ctx),
    )
    check_registered(ctx, "jit_cuda::scale")


def check_registered(ctx, op):
    for key in ("CPU", "CUDA"):
        if not ctx.torch._C._dispatch_has_kernel_for_dispatch_key(op, key):
            raise AssertionError(f"{op} has no {key} kernel")


# --- forward, gradients, opcheck --------------------------------------------


def forward_rms_norm(ctx):
    torch, N = ctx.torch, ctx.module("rms_norm")
    close = torch.testing.assert_close
    for dtype, tol in [
        (torch.float32, {"atol": 1e-5, "rtol": 1e-5}),
        (torch.float64, {}),
        (torch.float16, {"atol": 1e-2, "rtol": 1e-2}),
        (torch.bfloat16, {"atol": 2e-2, "rtol": 2e-2}),
    ]:
        for weight in (True, False):
            x = ctx.randn(4, 33, 64, dtype=dtype)
            w = ctx.randn(64, dtype=dtype, seed=1) if weight else None
            # Reduced precision: the CPU result in float32, of the same inputs.
            ref = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
            want = torch.ops.nn.rms_norm(x.to(ref), None if w is None else w.to(ref), EPS)
            got = torch.ops.nn.rms_norm(ctx.dev(x), ctx.dev(w), EPS)
            assert got.device.type == ctx.device.type and got.dtype == dtype, (
                got.device,
                got.dtype,
            )
            close(got.cpu().to(ref), want, **tol, msg=f"flat op, {dtype}, weight={weight}")
            api = N.rms_norm(ctx.dev(x), N.RmsNormCfg(weight=ctx.dev(w)))
            close(api.cpu().to(ref), want, **tol, msg=f"record call, {dtype}, weight={weight}")
    # A non-contiguous input and a row count over one block per row's grid.
    x = ctx.randn(64, 3000).t()
    close(N.rms_norm(ctx.dev(x)).cpu(), torch.ops.nn.rms_norm(x, None, EPS), atol=1e-5, rtol=1e-5)
    x = ctx.randn(70000, 8)
    close(N.rms_norm(ctx.dev(x)).cpu(), torch.ops.nn.rms_norm(x, None, EPS), atol=1e-5, rtol=1e-5)


def forward_gated(ctx):
    torch, N = ctx.torch, ctx.module("rms_norm")
    x, w, g = ctx.randn(4, 33, 64), ctx.randn(64, seed=1), ctx.randn(4, 33, 64, seed=2)
    want = torch.ops.nn.rms_norm.gated(x, w, EPS, g)
    got = N.rms_norm_gated(ctx.dev(x), N.RmsNormCfg(weight=ctx.dev(w)), ctx.dev(g))
    assert got.device.type == ctx.device.type
    torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-5)


def forward_scale(ctx):
    torch, S = ctx.torch, ctx.module("scale")
    x = ctx.randn(1000)
    for factor in (3.0, 0.5):
        got = S.scale(ctx.dev(x), S.ScaleCfg(factor=factor))
        assert got.device.type == ctx.device.type
        torch.testing.assert_close(got.cpu(), torch.ops.jit_cuda.scale(x, factor))


def gradients(ctx):
    torch = ctx.torch
    x, w = ctx.randn(4, 33, 64, dtype=torch.float64), ctx.randn(64, dtype=torch.float64, seed=1)
    g = ctx.randn(4, 33, 64, dtype=torch.float64, seed=2)
    for name, call in [
        ("rms_norm", lambda x, w, g: torch.ops.nn.rms_norm(x, w, EPS)),
        ("rms_norm.gated", lambda x, w, g: torch.ops.nn.rms_norm.gated(x, w, EPS, g)),
    ]:
        on_cpu = [ctx.cpu(x, True), ctx.cpu(w, True), ctx.cpu(g, True)]
        on_dev = [ctx.dev(x, True), ctx.dev(w, True), ctx.dev(g, True)]
        call(*on_cpu).sum().backward()
        call(*on_dev).sum().backward()
        for what, a, b in zip(("x", "weight", "gate"), on_cpu, on_dev):
            if a.grad is None:
                assert b.grad is None, f"{name}: a gradient for {what} on the device only"
            else:
                assert b.grad is not None, f"{name}: no gradient for {what} on the device"
                torch.testing.assert_close(b.grad.cpu(), a.grad, msg=f"{name}, grad of {what}")
    small_x, small_w = ctx.dev(x[:2, :3, :8], True), ctx.dev(w[:8], True)
    assert torch.autograd.gradcheck(
        lambda x, w: torch.ops.nn.rms_norm(x, w, EPS), (small_x, small_w)
    ), "gradcheck"


def opcheck(ctx):
    torch = ctx.torch
    x, w, g = ctx.randn(4, 33, 64), ctx.randn(64, seed=1), ctx.randn(4, 33, 64, seed=2)
    for op, args in [
        (torch.ops.nn.rms_norm.default, (ctx.dev(x, True), ctx.dev(w, True), EPS)),
        (torch.ops.nn.rms_norm.default, (ctx.dev(x), None, EPS)),
        (torch.ops.nn.rms_norm.gated, (ctx.dev(x, True), ctx.dev(w), EPS, ctx.dev(g, True))),
        (torch.ops.jit_cuda.scale.default, (ctx.dev(x.flatten()), 0.5)),
    ]:
        torch.library.opcheck(op, args)


# --- torch.compile, CUDA graphs ---------------------------------------------


def small_model(N):
    """Record calls, as a user's model makes them: the record built in the model."""

    def model(x, w, gate):
        y = N.rms_norm(x * 2.0 + 1.0, N.RmsNormCfg(weight=w, eps=1e-5))
        return N.rms_norm_gated(y, N.RmsNormCfg(weight=w), gate).relu() + x

    return model


def compiled_forward(ctx):
    torch, N = ctx.torch, ctx.module("rms_norm")
    torch._dynamo.reset()
    model = small_model(N)
    compiled = torch.compile(model, backend="inductor", fullgraph=True)
    for seed in range(3):
        x, w, g = ctx.randn(8, 256, seed=seed), ctx.randn(256, seed=9), ctx.randn(8, 256, seed=7)
        args = (ctx.dev(x), ctx.dev(w), ctx.dev(g))
        torch.testing.assert_close(compiled(*args), model(*args), atol=1e-5, rtol=1e-5)


def compiled_backward(ctx):
    torch, N = ctx.torch, ctx.module("rms_norm")
    torch._dynamo.reset()
    model = small_model(N)
    compiled = torch.compile(model, backend="inductor", fullgraph=True)
    x, w, g = ctx.randn(8, 256), ctx.randn(256, seed=9), ctx.randn(8, 256, seed=7)
    eager = [ctx.dev(x, True), ctx.dev(w, True), ctx.dev(g, True)]
    comp = [ctx.dev(x, True), ctx.dev(w, True), ctx.dev(g, True)]
    model(*eager).square().sum().backward()
    compiled(*comp).square().sum().backward()
    for what, a, b in zip(("x", "weight", "gate"), eager, comp):
        torch.testing.assert_close(b.grad, a.grad, atol=1e-4, rtol=1e-4, msg=f"grad of {what}")


def cuda_graph(ctx):
    torch, N = ctx.torch, ctx.module("rms_norm")
    x, w = ctx.dev(ctx.randn(64, 1024)), ctx.dev(ctx.randn(1024, seed=1))
    g = ctx.dev(ctx.randn(64, 1024, seed=2))
    cfg = N.RmsNormCfg(weight=w)

    def step():
        return N.rms_norm_gated(N.rms_norm(x, cfg), cfg, g)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture, as torch asks
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step()
    for seed in range(3):
        x.copy_(ctx.dev(ctx.randn(64, 1024, seed=10 + seed)))
        graph.replay()
        torch.cuda.synchronize()
        want = torch.ops.nn.rms_norm.gated(torch.ops.nn.rms_norm(x, w, EPS), w, EPS, g)
        torch.testing.assert_close(out, want, atol=1e-5, rtol=1e-5, msg=f"replay {seed}")


# --- measurements -------------------------------------------------------------


def host_per_call(ctx, fn, calls=2000, repeats=5):
    """Seconds per call of fn, the best of `repeats` runs of `calls` calls,
    the device synchronized at the ends (small tensors: the host's cost)."""
    for _ in range(100):
        fn()
    ctx.sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        ctx.sync()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def record_vs_flat(ctx):
    torch, N, S = ctx.torch, ctx.module("rms_norm"), ctx.module("scale")
    x, w = ctx.dev(ctx.randn(8, 64)), ctx.dev(ctx.randn(64, seed=1))
    v = ctx.dev(ctx.randn(8))
    norm_cfg, scale_cfg = N.RmsNormCfg(weight=w), S.ScaleCfg(factor=0.5)
    torch.testing.assert_close(N.rms_norm(x, norm_cfg), torch.ops.nn.rms_norm(x, w, EPS))
    torch.testing.assert_close(S.scale(v, scale_cfg), torch.ops.jit_cuda.scale(v, 0.5))
    rows = [
        (
            "jit_cuda::scale [8]",
            lambda: S.scale(v, scale_cfg),
            lambda: torch.ops.jit_cuda.scale(v, 0.5),
        ),
        (
            "nn::rms_norm [8, 64]",
            lambda: N.rms_norm(x, norm_cfg),
            lambda: torch.ops.nn.rms_norm(x, w, EPS),
        ),
    ]
    print(f"host cost per call on {ctx.device_name} ({ctx.device.type} tensors), best of 5 x 2000:")
    for name, record, flat in rows:
        r, f = host_per_call(ctx, record), host_per_call(ctx, flat)
        print(
            f"  {name:22} record call {r * 1e6:7.2f} us   flat torch.ops call {f * 1e6:7.2f} us"
            f"   record - flat {(r - f) * 1e6:+6.2f} us"
        )


def device_time(ctx, fn, iters, repeats=5):
    """Seconds per call of fn on the device: CUDA events around `iters` calls
    (perf_counter on CPU), the best of `repeats`."""
    torch = ctx.torch
    for _ in range(10):
        fn()
    ctx.sync()
    best = float("inf")
    for _ in range(repeats):
        if ctx.device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                fn()
            end.record()
            end.synchronize()
            best = min(best, start.elapsed_time(end) / 1e3 / iters)
        else:
            t = time.perf_counter()
            for _ in range(iters):
                fn()
            best = min(best, (time.perf_counter() - t) / iters)
    return best


def rms_norm_vs_torch(ctx, sizes):
    torch, N = ctx.torch, ctx.module("rms_norm")
    F = torch.nn.functional
    print(f"rms_norm on {ctx.device_name}: structop's kernel vs F.rms_norm (best of 5):")
    for rows, d in sizes:
        for dtype in (torch.float32, torch.bfloat16):
            x, w = (
                ctx.dev(ctx.randn(rows, d, dtype=dtype)),
                ctx.dev(ctx.randn(d, dtype=dtype, seed=1)),
            )
            cfg = N.RmsNormCfg(weight=w)
            ours = N.rms_norm(x, cfg)
            theirs = F.rms_norm(x, (d,), w, EPS)
            tol = (
                {"atol": 1e-4, "rtol": 1e-4}
                if dtype == torch.float32
                else {"atol": 3e-2, "rtol": 3e-2}
            )
            torch.testing.assert_close(ours.float(), theirs.float(), **tol)
            iters = 20 if ctx.device.type == "cuda" else 3
            t_ours = device_time(ctx, lambda: N.rms_norm(x, cfg), iters)
            t_theirs = device_time(ctx, lambda: F.rms_norm(x, (d,), w, EPS), iters)
            moved = 2 * x.numel() * x.element_size()  # read x, write y

            def rate(t):
                return f"{t * 1e6:9.1f} us {moved / t / 1e9:7.1f} GB/s"

            print(
                f"  {f'[{rows}, {d}]':13} {str(dtype).replace('torch.', ''):8}  structop {rate(t_ours)}"
                f"   F.rms_norm {rate(t_theirs)}   ratio {t_ours / t_theirs:.2f}"
            )


# --- main ---------------------------------------------------------------------


def describe(torch, ctx):
    import structop

    print(
        f"python {platform.python_version()}, torch {torch.__version__} (CUDA build: {torch.version.cuda})"
    )
    print(f"structop {structop.__version__} from {os.path.dirname(structop.__file__)}")
    print(f"structopc {structop.get_structopc()}")
    if ctx.nvcc_home:
        nvcc = os.path.join(ctx.nvcc_home, "bin", "nvcc")
        version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
        print(f"nvcc {nvcc}: {version.strip().splitlines()[-1] if version.strip() else '?'}")
    else:
        print("nvcc: none found")
    if ctx.device.type == "cuda":
        cap = torch.cuda.get_device_capability()
        print(f"GPU: {ctx.device_name} (sm_{cap[0]}{cap[1]}), {torch.cuda.device_count()} visible")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="a folder for the cache and scratch files")
    parser.add_argument("--cpu-selftest", action="store_true", help="run the checks on CPU tensors")
    parser.add_argument(
        "--step-timeout",
        type=float,
        default=float(os.environ.get("STRUCTOP_GPU_STEP_TIMEOUT", 120)),
        help="seconds per check (builds: at least 300, torch.compile: 240); $STRUCTOP_GPU_STEP_TIMEOUT",
    )
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available() and not args.cpu_selftest:
        print(
            f"no GPU visible to torch (torch {torch.__version__}, CUDA build: "
            f"{torch.version.cuda or 'no'}, CUDA available: False)"
        )
        print("0 passed, 1 failed")
        return 1
    os.makedirs(args.work, exist_ok=True)
    os.environ.setdefault("STRUCTOP_CACHE_DIR", os.path.join(args.work, "cache"))
    from structop import _build

    ctx = Context(torch, "cpu" if args.cpu_selftest else "cuda", _build.find_cuda_home())
    ctx.device_name = (
        torch.cuda.get_device_name() if ctx.device.type == "cuda" else f"CPU ({platform.machine()})"
    )
    if ctx.device.type == "cuda" and not ctx.nvcc_home:
        print("no nvcc: set CUDA_HOME, or put nvcc on PATH")
        print("0 passed, 1 failed")
        return 1
    describe(torch, ctx)
    checks = Checks(args.step_timeout, os.path.join(args.work, "counts"))
    build_limit = max(args.step_timeout, 300)
    scratch = os.path.join(args.work, "scratch")
    os.makedirs(scratch, exist_ok=True)
    checks.run(
        "build nn::rms_norm (structop.load, nvcc)",
        lambda: build_rms_norm(ctx, scratch),
        build_limit,
    )
    checks.run(
        "build jit_cuda::scale (structop.load, nvcc)",
        lambda: build_scale(ctx, scratch),
        build_limit,
    )
    on = ctx.device.type
    checks.run(f"rms_norm on {on} == CPU (4 dtypes, weight or not)", lambda: forward_rms_norm(ctx))
    checks.run(f"rms_norm.gated on {on} == CPU", lambda: forward_gated(ctx))
    checks.run(f"jit_cuda::scale on {on} == CPU", lambda: forward_scale(ctx))
    checks.run(f"gradients on {on} == CPU, gradcheck", lambda: gradients(ctx))
    checks.run(f"torch.library.opcheck on {on} tensors", lambda: opcheck(ctx))
    compile_limit = max(args.step_timeout, 240)
    checks.run(
        f"torch.compile(fullgraph, inductor) forward on {on} == eager",
        lambda: compiled_forward(ctx),
        compile_limit,
    )
    checks.run(
        f"torch.compile(fullgraph, inductor) backward on {on} == eager",
        lambda: compiled_backward(ctx),
        compile_limit,
    )
    if on == "cuda":
        checks.run("CUDA graph capture and replay of record calls", lambda: cuda_graph(ctx))
    else:
        checks.skip("CUDA graph capture and replay of record calls", "no GPU (CPU self-test)")
    checks.run("measure: record call vs flat torch.ops call", lambda: record_vs_flat(ctx))
    sizes = [(4096, 1024), (16384, 4096)] if on == "cuda" else [(64, 256), (256, 1024)]
    checks.run("measure: rms_norm vs F.rms_norm", lambda: rms_norm_vs_torch(ctx, sizes))

    for name in checks.failed:
        print(f"failed: {name}")
    if checks.not_run:
        print(f"CPU self-test: {len(checks.not_run)} check(s) need a GPU and did not run")
    print(f"{len(checks.passed)} passed, {len(checks.failed)} failed")
    return 1 if checks.failed or not checks.passed else 0


if __name__ == "__main__":
    sys.exit(main())
