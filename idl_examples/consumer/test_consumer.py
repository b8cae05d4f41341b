#!/usr/bin/env python3
"""Calls the op through the generated Python API (consumer_ops.py), which
imports structop's Python runtime (structop_runtime): both are found through
PYTHONPATH, which meson.build sets for this test.

Usage: test_consumer.py LIBCONSUMER_OPS.so
"""
import sys

import structop_runtime
import torch

import consumer_ops

print("structop_runtime:", structop_runtime.__file__)

consumer_ops.load_library(sys.argv[1])
x = torch.arange(4.0)
cfg = consumer_ops.SmoothCfg(kernel=consumer_ops.Kernel1d(weights=torch.ones(3), gain=2.0))
torch.testing.assert_close(consumer_ops.smooth(x, cfg), x * 6)
cfg = consumer_ops.SmoothCfg(kernel=cfg.kernel, clamp=7.0)
torch.testing.assert_close(consumer_ops.smooth(x, cfg), (x * 6).clamp(-7, 7))
try:
    consumer_ops.smooth(x, consumer_ops.SmoothCfg(kernel=consumer_ops.Kernel1d(weights=3)))
    sys.exit("a Kernel1d with an int for weights was accepted")
except TypeError as e:  # explained by structop_runtime
    if "`cfg.kernel.weights` must be Tensor, got int" not in str(e):
        raise
print("consumer_ops.smooth ok")
