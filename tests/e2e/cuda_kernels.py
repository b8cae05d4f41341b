#!/usr/bin/env python3
"""The CUDA kernel of idl_examples/rms_norm.ops.yaml is in the extension.

usage: cuda_kernels.py EXAMPLES_LIB yes|no

`yes`: the build compiled rms_norm_kernels.cu with nvcc, so the library must
carry CUDA device code (an ELF `.nv_fatbin` section) and must not need
libcudart at load time (nvcc links the CUDA runtime statically); `no`: the
build found no nvcc and must carry no device code. Either way the op has a
CUDA kernel and a CPU kernel registered, and the CPU path computes RMSNorm.
No GPU is needed: nothing here runs the CUDA kernel.
"""

import os
import struct
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import unittest_main  # noqa: E402  (tests/support: a skipped case is not a pass)

import torch

EXAMPLES_LIB, EXPECT_CUDA = sys.argv[1], sys.argv[2] == "yes"


def elf_section_names(path):
    """Section names of a 64-bit little-endian ELF file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path} is not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def section(i):
        name, _type, _flags, _addr, offset, size = struct.unpack_from(
            "<IIQQQQ", data, shoff + i * shentsize
        )
        return name, offset, size

    _, strtab, _ = section(shstrndx)
    names = []
    for i in range(shnum):
        name, _, _ = section(i)
        end = data.index(b"\0", strtab + name)
        names.append(data[strtab + name : end].decode())
    return names


class CudaKernel(unittest.TestCase):
    def test_device_code_is_linked_in_exactly_when_nvcc_built_it(self):
        sections = elf_section_names(EXAMPLES_LIB)
        self.assertEqual(".nv_fatbin" in sections, EXPECT_CUDA, sorted(sections))

    def test_no_shared_cuda_runtime_needed(self):
        needed = subprocess.run(
            ["ldd", EXAMPLES_LIB], capture_output=True, text=True, check=True
        ).stdout
        self.assertNotIn("libcudart", needed)

    def test_one_kernel_per_key_and_the_cpu_path_runs(self):
        torch.ops.load_library(EXAMPLES_LIB)
        for key in ("CPU", "CUDA"):
            self.assertTrue(
                torch._C._dispatch_has_kernel_for_dispatch_key("nn::rms_norm", key), key
            )
        x = torch.randn(3, 8, dtype=torch.float64)
        w = torch.randn(8, dtype=torch.float64)
        want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
        torch.testing.assert_close(torch.ops.nn.rms_norm(x, w, 1e-6), want)


if __name__ == "__main__":
    unittest_main.main(argv=[sys.argv[0]])
