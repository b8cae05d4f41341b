#!/usr/bin/env python3
"""Calls the ops of both IDLs through their generated Python modules, with one
record of the shared IDL file (filters_ops.Kernel1d) passed to both.

Usage: test_consumer.py BUILD_DIR (the folder with the generated modules and
libconsumer_ops.so), with a Python whose torch the extension was built
against.
"""
import os
import sys

import torch


def main():
    build = os.path.abspath(sys.argv[1])
    sys.path.insert(0, build)
    import consumer_ops
    import filters_ops
    import sharpen_ops

    consumer_ops.load_library(os.path.join(build, "libconsumer_ops.so"))
    # One class for the shared record, whichever module names it.
    assert consumer_ops.Kernel1d is filters_ops.Kernel1d is sharpen_ops.Kernel1d
    kernel = filters_ops.Kernel1d(weights=torch.ones(3), gain=2.0)
    x = torch.arange(4.0)
    torch.testing.assert_close(consumer_ops.smooth(x, consumer_ops.SmoothCfg(kernel=kernel)), x * 6)
    torch.testing.assert_close(consumer_ops.smooth(x, consumer_ops.SmoothCfg(kernel, clamp=7.0)),
                               (x * 6).clamp(-7, 7))
    torch.testing.assert_close(sharpen_ops.sharpen(x, kernel, amount=0.5), x * 4)
    torch.testing.assert_close(sharpen_ops.sharpen(x, kernel), x * 7)
    print("consumer_ops.smooth and sharpen_ops.sharpen ok from Python")


if __name__ == "__main__":
    main()
