#!/usr/bin/env python3
"""Copies the `structop` package's modules (python/structop/*.py and the
configured _version.py) into PKG_DIR/structop, as an installed package holds
them, so that tests import `structop` from the build tree; writes STAMP.

Usage: assemble_package.py PKG_DIR STAMP FILE..."""

import os
import shutil
import sys

pkg_dir, stamp, files = sys.argv[1], sys.argv[2], sys.argv[3:]
target = os.path.join(pkg_dir, "structop")
os.makedirs(target, exist_ok=True)
for path in files:
    shutil.copyfile(path, os.path.join(target, os.path.basename(path)))
with open(stamp, "w") as f:
    f.write("\n".join(os.path.basename(p) for p in files) + "\n")
