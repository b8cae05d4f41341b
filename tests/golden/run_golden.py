#!/usr/bin/env python3
"""Approval tests of structopc's generated files.

usage: run_golden.py STRUCTOPC GOLDEN_DIR [--approve]
       run_golden.py STRUCTOPC GOLDEN_DIR --compile CXX... -- FLAGS...

For each GOLDEN_DIR/NAME.ops.yaml (and GOLDEN_DIR/include/NAME.ops.yaml, the
files they include), runs `structopc --emit h,cpp,stubs,py,json`
into a scratch folder and compares every output byte for byte with the
approved copy in GOLDEN_DIR/approved/. On a difference it prints a diff and
writes the new text beside the approved file as FILE.unapproved; review it
like code, then approve (rewrites approved/, removes the .unapproved files):

    python3 tests/golden/run_golden.py build/compiler/structopc tests/golden --approve

With --compile, also compiles the APPROVED .ops.cpp and .ops.stubs.cpp of
every GOLDEN_DIR/NAME.ops.yaml with CXX FLAGS -fsyntax-only (one translation
unit), so an approved golden is also known to compile without warnings (a
header finds the approved headers of the files it includes beside it).
"""

import difflib
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from syntax_check import compile_together  # noqa: E402

OUTPUTS = [
    "{stem}.ops.h",
    "{stem}.ops.cpp",
    "{stem}.ops.stubs.cpp",
    "{stem}_ops.py",
    "{stem}.ops.json",
]


def generate(structopc, idl, out_dir):
    run = subprocess.run(
        [structopc, "--emit", "h,cpp,stubs,py,json", "-o", out_dir, idl],
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        sys.exit(f"structopc failed on {idl} (exit {run.returncode}):\n{run.stderr}")


def read(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def write(path, text):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def compare(structopc, golden_dir, approve):
    # Included files are goldens too: features.ops.h includes shared.ops.h.
    idls = sorted(glob.glob(os.path.join(golden_dir, "*.ops.yaml"))) + sorted(
        glob.glob(os.path.join(golden_dir, "include", "*.ops.yaml"))
    )
    if not idls:
        sys.exit(f"no *.ops.yaml in {golden_dir}")
    approved_dir = os.path.join(golden_dir, "approved")
    os.makedirs(approved_dir, exist_ok=True)
    failures = 0
    with tempfile.TemporaryDirectory() as scratch:
        for idl in idls:
            stem = os.path.basename(idl)[: -len(".ops.yaml")]
            generate(structopc, idl, scratch)
            for pattern in OUTPUTS:
                name = pattern.format(stem=stem)
                got = read(os.path.join(scratch, name))
                approved = os.path.join(approved_dir, name)
                unapproved = approved + ".unapproved"
                if approve:
                    write(approved, got)
                    if os.path.exists(unapproved):
                        os.remove(unapproved)
                    print(f"approved {name}")
                    continue
                want = read(approved) if os.path.exists(approved) else None
                if got == want:
                    if os.path.exists(unapproved):
                        os.remove(unapproved)
                    print(f"ok   {name}")
                    continue
                failures += 1
                write(unapproved, got)
                print(
                    f"FAIL {name}: differs from approved/{name}; new text in approved/{name}.unapproved"
                )
                diff = difflib.unified_diff(
                    (want or "").splitlines(True),
                    got.splitlines(True),
                    f"approved/{name}",
                    f"generated/{name}",
                )
                sys.stdout.writelines(list(diff)[:200])
    if failures:
        print(
            f"\n{failures} file(s) differ. Review the .unapproved files, then approve with:\n"
            f"  python3 tests/golden/run_golden.py build/compiler/structopc tests/golden --approve"
        )
    return 1 if failures else 0


def compile_approved(golden_dir, cxx, flags):
    approved_dir = os.path.join(golden_dir, "approved")
    # The goldens' own sources; those of included files (records only, no
    # ops) are not compiled, but their approved headers are included.
    stems = [
        os.path.basename(p)[: -len(".ops.yaml")]
        for p in glob.glob(os.path.join(golden_dir, "*.ops.yaml"))
    ]
    sources = sorted(
        os.path.join(approved_dir, f"{stem}{suffix}")
        for stem in stems
        for suffix in (".ops.cpp", ".ops.stubs.cpp")
    )
    ok, report = compile_together(cxx, flags, sources, approved_dir)
    names = ", ".join(os.path.basename(s) for s in sources)
    if not ok:
        print(f"FAIL compiling {names}:\n{report}")
        return 1
    print(f"ok   {names} compile without warnings")
    return 0


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    structopc, golden_dir = argv[0], argv[1]
    if "--compile" in argv:
        sep = argv.index("--")
        return compile_approved(
            golden_dir, argv[argv.index("--compile") + 1 : sep], argv[sep + 1 :]
        )
    return compare(structopc, golden_dir, approve="--approve" in argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
