#!/usr/bin/env python3
"""The JIT example: structop.load generates, compiles and loads jit_demo.ops.yaml
with its C++ kernels in one call, then the op is called, differentiated and
checked with torch.library.opcheck.

    pip install structop            # into an environment with torch
    python run_jit.py               # first run compiles (cached per user and torch)
    python run_jit.py               # later runs load the cached build

Options (for tests/package): --idl and --sources use other files, --scale
is the `scale` default the IDL declares (checked against the op's result),
--skip-checks only loads and calls once, --verbose prints what is built.
"""

import argparse
import os
import sys
import time

import torch

import structop

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--name", default="jit_demo")
    parser.add_argument("--idl", default=os.path.join(HERE, "jit_demo.ops.yaml"))
    parser.add_argument(
        "--sources", nargs="*", default=[os.path.join(HERE, "jit_demo_kernels.cpp")]
    )
    parser.add_argument("--scale", type=float, default=2.0)
    parser.add_argument("--skip-checks", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    start = time.perf_counter()
    ops = structop.load(args.name, args.idl, sources=args.sources, verbose=args.verbose)
    print(f"structop.load: {time.perf_counter() - start:.3f} s", flush=True)

    x = torch.randn(4, 3, dtype=torch.double, requires_grad=True)
    w = torch.randn(4, 3, dtype=torch.double, requires_grad=True)
    b = torch.randn(4, 3, dtype=torch.double, requires_grad=True)
    cfg = ops.Cfg(affine=ops.Affine(w=w, b=b))  # scale: the IDL's default
    y = ops.scale_shift(x, cfg)
    torch.testing.assert_close(y, (x * w + b) * args.scale)
    if args.skip_checks:
        print("ok (call)")
        return 0

    # Gradients flow into the record's tensor fields.
    y.sum().backward()
    torch.testing.assert_close(x.grad, w.detach() * args.scale)
    torch.testing.assert_close(w.grad, x.detach() * args.scale)
    torch.testing.assert_close(b.grad, torch.full_like(b, args.scale))
    assert torch.autograd.gradcheck(
        lambda x, w, b: ops.scale_shift(x, ops.Cfg(affine=ops.Affine(w=w, b=b), scale=0.5)),
        (x.detach().requires_grad_(), w.detach().requires_grad_(), b.detach().requires_grad_()),
    )

    # torch's own checks of the registration: schema, fake tensor, autograd.
    flat = (x.detach().requires_grad_(), w.detach().requires_grad_(), b.detach(), 1.5)
    torch.library.opcheck(torch.ops.jit_demo.scale_shift.default, flat)
    print("ok (call, gradients, gradcheck, opcheck)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
