#!/usr/bin/env python3
"""Checks C++ formatting against the repository's .clang-format.

Runs `clang-format --dry-run -Werror` over the project's own C++ sources
(compiler/, runtime/, tests/, idl_examples/, tools/; the approved golden
files included) and over any generated files given on the command line.
Exits non-zero, listing each file clang-format would change, when one does.

Usage: check_format.py --clang-format PATH --root SOURCE_ROOT [GENERATED...]
"""

import argparse
import os
import subprocess
import sys

SOURCE_DIRS = ("compiler", "runtime", "tests", "idl_examples", "tools")
EXTENSIONS = (".c", ".cpp", ".h", ".cu", ".cc", ".hpp")


def project_files(root):
    out = []
    for top in SOURCE_DIRS:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build", "__pycache__")))
            out += [os.path.join(folder, f) for f in sorted(files) if f.endswith(EXTENSIONS)]
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--clang-format", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("generated", nargs="*")
    a = p.parse_args()
    style = "--style=file:" + os.path.join(a.root, ".clang-format")
    files = project_files(a.root) + [f for f in a.generated if f.endswith(EXTENSIONS)]
    if not files:
        sys.exit("check_format.py: no C++ files found under " + a.root)
    bad = []
    for f in files:
        run = subprocess.run(
            [a.clang_format, style, "--dry-run", "-Werror", f], capture_output=True, text=True
        )
        if run.returncode != 0:
            bad.append(f)
            print(
                run.stderr.strip().splitlines()[0]
                if run.stderr.strip()
                else f"{f}: clang-format failed"
            )
    print(f"{len(files) - len(bad)} of {len(files)} files formatted as .clang-format says")
    if bad:
        print(
            "reformat with: clang-format -i "
            + " ".join(os.path.relpath(f, a.root) for f in bad[:20])
            + (" ..." if len(bad) > 20 else "")
        )
        sys.exit(1)


if __name__ == "__main__":
    main()
