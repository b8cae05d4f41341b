#!/usr/bin/env python3
"""structop.load with a .cu source: nvcc compiles it, the library links and
registers the op for CPU and CUDA; the CPU kernel is called (and the CUDA one
too when torch has a GPU). Usage: run_cuda.py FOLDER_WITH_THE_FILES."""

import os
import sys

import torch

import structop

folder = sys.argv[1]
ops = structop.load(
    "jit_cuda",
    os.path.join(folder, "cuda_scale.ops.yaml"),
    sources=[
        os.path.join(folder, "cuda_scale_kernels.cpp"),
        os.path.join(folder, "cuda_scale_kernels.cu"),
    ],
    verbose=True,
)
x = torch.arange(5.0)
torch.testing.assert_close(ops.scale(x, ops.ScaleCfg()), x * 3)
# Both kernels are registered (the CUDA one by the nvcc-compiled object).
for key in ("CPU", "CUDA"):
    if not torch._C._dispatch_has_kernel_for_dispatch_key("jit_cuda::scale", key):
        sys.exit(f"FAIL: jit_cuda::scale has no {key} kernel")
if torch.cuda.is_available():
    torch.testing.assert_close(ops.scale(x.cuda(), ops.ScaleCfg(factor=0.5)).cpu(), x * 0.5)
    print("ok (CPU and CUDA kernels called)")
else:
    print("ok (CPU kernel called; CUDA kernel compiled by nvcc and registered, no GPU to call it)")
