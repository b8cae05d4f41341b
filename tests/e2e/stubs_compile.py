#!/usr/bin/env python3
"""The stubs structopc emits for every example compile without warnings.

usage: stubs_compile.py STRUCTOPC EXAMPLES_DIR --cxx COMPILER... -- FLAGS...

Generates X.ops.h and X.ops.stubs.cpp for each EXAMPLES_DIR/*.ops.yaml into a
fresh folder (stubs are never written over an existing file, so the build
folder's would go stale), then compiles all the stubs as one translation unit
with FLAGS -fsyntax-only. A stub file is what a user starts from: it must
compile as it is, with -Wall -Wextra quiet.
"""

import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from syntax_check import compile_together  # noqa: E402


def main(argv):
    if len(argv) < 4 or "--cxx" not in argv or "--" not in argv:
        sys.exit(__doc__)
    structopc, examples = argv[0], argv[1]
    sep = argv.index("--")
    cxx, flags = argv[argv.index("--cxx") + 1 : sep], argv[sep + 1 :]
    with tempfile.TemporaryDirectory() as out:
        stubs = []
        for idl in sorted(glob.glob(os.path.join(examples, "*.ops.yaml"))):
            run = subprocess.run(
                [structopc, "--emit", "h,stubs", "-o", out, idl], capture_output=True, text=True
            )
            if run.returncode != 0:
                print(f"FAIL structopc {idl}:\n{run.stderr}")
                return 1
            stubs.append(os.path.basename(idl)[: -len(".yaml")] + ".stubs.cpp")
        ok, report = compile_together(cxx, flags, [os.path.join(out, s) for s in stubs], out)
    if not ok:
        print(f"FAIL:\n{report}")
        return 1
    print(f"ok   {len(stubs)} stub files compile without warnings: {', '.join(stubs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
