#!/usr/bin/env python3
"""Calls the ops of both IDLs through their generated Python modules, with one
record of the shared IDL file (filters_ops.Kernel1d) passed to both. The
modules import structop's Python runtime (structop_runtime); both are found
through PYTHONPATH, which meson.build sets for this test.

Usage: test_consumer.py LIBCONSUMER_OPS.so, with a Python whose torch the
extension was built against.
"""

import sys

import structop_runtime
import torch

import consumer_ops
import filters_ops
import sharpen_ops

print("structop_runtime:", structop_runtime.__file__)

consumer_ops.load_library(sys.argv[1])
# One class for the shared record, whichever module names it.
assert consumer_ops.Kernel1d is filters_ops.Kernel1d is sharpen_ops.Kernel1d
kernel = filters_ops.Kernel1d(weights=torch.ones(3), gain=2.0)
x = torch.arange(4.0)
torch.testing.assert_close(consumer_ops.smooth(x, consumer_ops.SmoothCfg(kernel=kernel)), x * 6)
torch.testing.assert_close(
    consumer_ops.smooth(x, consumer_ops.SmoothCfg(kernel, clamp=7.0)), (x * 6).clamp(-7, 7)
)
torch.testing.assert_close(sharpen_ops.sharpen(x, kernel, amount=0.5), x * 4)
torch.testing.assert_close(sharpen_ops.sharpen(x, kernel), x * 7)
try:
    consumer_ops.smooth(x, consumer_ops.SmoothCfg(kernel=consumer_ops.Kernel1d(weights=3)))
    sys.exit("a Kernel1d with an int for weights was accepted")
except TypeError as e:  # explained by structop_runtime
    if "`cfg.kernel.weights` must be Tensor, got int" not in str(e):
        raise
print("consumer_ops.smooth and sharpen_ops.sharpen ok from Python")
