#!/usr/bin/env python3
"""Calls cmake_demo::blend through the generated Python module, blend_ops.py.

Usage: test_blend.py LIBBLEND_OPS.so GENERATED_DIR (run by ctest with the
interpreter structop's CMake config found, structop_PYTHON). The generated
module is imported from GENERATED_DIR; structop_runtime, which it imports,
comes from that interpreter's environment: no PYTHONPATH.
"""

import sys

sys.path.insert(0, sys.argv[2])

import structop_runtime  # noqa: E402
import torch  # noqa: E402

import blend_ops  # noqa: E402

print("structop_runtime:", structop_runtime.__file__)
blend_ops.load_library(sys.argv[1])
a, b = torch.full((3,), 4.0), torch.full((3,), 8.0)
torch.testing.assert_close(blend_ops.blend(a, b, blend_ops.Mix()), torch.full((3,), 5.0))
torch.testing.assert_close(blend_ops.blend(a, b, blend_ops.Mix(weight=0.5)), torch.full((3,), 6.0))
print("blend_ops.blend ok from Python")
