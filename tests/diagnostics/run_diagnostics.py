#!/usr/bin/env python3
"""Diagnostics corpus: every bad IDL here must fail with exactly the expected messages.

A case is either `NAME.ops.yaml` in this folder, or a folder `NAME/` holding
`main.ops.yaml` (for cases that need several files, e.g. include cycles). Its
expected standard error is `NAME.stderr`, compared byte for byte. structopc
must exit with status 1 and write nothing.

On a difference the actual output is written to `NAME.stderr.unapproved` beside
the case and the test fails; review it, and if it is right, run this script
with --approve to move it into place (never approve blindly).

Usage: run_diagnostics.py STRUCTOPC CASES_DIR [--approve]
"""

import difflib
import os
import shutil
import subprocess
import sys
import tempfile


def cases(root):
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if name.endswith(".ops.yaml") and os.path.isfile(path):
            yield name[: -len(".ops.yaml")], root, name
        elif os.path.isdir(path) and os.path.isfile(os.path.join(path, "main.ops.yaml")):
            yield name, path, "main.ops.yaml"


def main():
    structopc = os.path.abspath(sys.argv[1])
    root = os.path.abspath(sys.argv[2])
    approve = "--approve" in sys.argv[3:]
    failures, count = [], 0
    for name, cwd, idl in cases(root):
        count += 1
        expected_path = os.path.join(root, name + ".stderr")
        unapproved = expected_path + ".unapproved"
        if approve:
            if os.path.exists(unapproved):
                shutil.move(unapproved, expected_path)
                print(f"approved {name}")
            continue
        with tempfile.TemporaryDirectory() as out:
            run = subprocess.run(
                [
                    structopc,
                    "--emit",
                    "h,cpp,py,json,stubs",
                    "--depfile",
                    os.path.join(out, "d.dep"),
                    "-o",
                    out,
                    idl,
                ],
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=60,
            )
            written = os.listdir(out)
        # --check lowers without keeping the lowered ops (LowerOptions::keep_ops):
        # it must report the same problems, lowering's included.
        check = subprocess.run(
            [structopc, "--check", idl], cwd=cwd, capture_output=True, text=True, timeout=60
        )
        problems = []
        if (check.returncode, check.stderr) != (run.returncode, run.stderr):
            problems.append(
                f"--check differs from --emit: exit {check.returncode}, stderr {check.stderr!r}"
            )
        if run.returncode != 1:
            problems.append(f"exit status {run.returncode}, expected 1")
        if written:
            problems.append(f"wrote {written} despite errors")
        if run.stdout:
            problems.append(f"printed to stdout: {run.stdout!r}")
        expected = (
            open(expected_path, encoding="utf-8").read() if os.path.exists(expected_path) else None
        )
        if expected != run.stderr:
            with open(unapproved, "w", encoding="utf-8") as f:
                f.write(run.stderr)
            if expected is None:
                problems.append(f"no {name}.stderr yet; actual output is in {unapproved}")
            else:
                diff = difflib.unified_diff(
                    expected.splitlines(True), run.stderr.splitlines(True), "expected", "actual"
                )
                problems.append("stderr differs:\n" + "".join(diff))
        elif os.path.exists(unapproved):
            os.remove(unapproved)
        if problems:
            failures.append((name, problems))
    if approve:
        return 0
    for name, problems in failures:
        print(f"FAIL {name}")
        for p in problems:
            print("  " + p.replace("\n", "\n  "))
    print(f"{count} diagnostics cases, {count - len(failures)} as expected, {len(failures)} failed")
    if count == 0:
        print("no cases found")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
