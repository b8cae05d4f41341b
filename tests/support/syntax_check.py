"""Compiling generated C++ the way a user's build would, for the tests that
check it compiles warning-free (tests/golden, tests/e2e)."""

import os
import subprocess
import tempfile


def compile_together(cxx, flags, sources, include_dir):
    """Compiles `sources` as one translation unit with `-fsyntax-only`,
    `include_dir` first on the include path. Returns (ok, report): ok when
    the compiler succeeded and printed nothing (a warning fails)."""
    with tempfile.TemporaryDirectory() as scratch:
        unity = os.path.join(scratch, "unity.cpp")
        with open(unity, "w", encoding="utf-8") as f:
            f.writelines(f'#include "{os.path.abspath(s)}"\n' for s in sources)
        cmd = cxx + flags + ["-I", include_dir, "-fsyntax-only", unity]
        run = subprocess.run(cmd, capture_output=True, text=True)
    ok = run.returncode == 0 and not run.stderr.strip()
    return ok, f"  command: {' '.join(cmd)}\n{run.stderr}"
