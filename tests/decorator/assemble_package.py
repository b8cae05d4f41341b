#!/usr/bin/env python3
"""Copies the `structop` package into PKG_DIR/structop, as an installed
package holds it, so that tests import `structop` from the build tree: its
modules (python/structop/*.py and the configured _version.py) and, after
`--into SUBDIR`, the files that go to structop/SUBDIR (the runtime's headers
to include/structop, its sources to runtime_src: structop.load compiles
them); writes STAMP.

Usage: assemble_package.py PKG_DIR STAMP FILE... [--into SUBDIR FILE...]..."""

import os
import shutil
import sys

pkg_dir, stamp, args = sys.argv[1], sys.argv[2], sys.argv[3:]
target = os.path.join(pkg_dir, "structop")
copied = []
into = ""
i = 0
while i < len(args):
    if args[i] == "--into":
        into, i = args[i + 1], i + 2
        continue
    folder = os.path.join(target, into)
    os.makedirs(folder, exist_ok=True)
    shutil.copyfile(args[i], os.path.join(folder, os.path.basename(args[i])))
    copied.append(os.path.join(into, os.path.basename(args[i])))
    i += 1
with open(stamp, "w") as f:
    f.write("\n".join(copied) + "\n")
