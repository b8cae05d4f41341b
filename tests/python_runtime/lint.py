#!/usr/bin/env python3
"""Lint of structop's Python: the runtime, the generated X_ops.py, the project's own.

Lints FILES (the Python runtime's modules, the approved golden X_ops.py, ...)
and the X_ops.py that structopc generates for every *.ops.yaml under each
IDL_DIR (searched recursively; generated into a scratch folder).

--tool pyflakes (test python-lint): any pyflakes message fails: an unused
import, an undefined name, a name redefined, ...

--tool ruff (test python-ruff), with the project's ruff.toml (--config):
`ruff check` and `ruff format --check` on FILES, the generated modules and
every Python file under each SOURCE_DIR (--own); structopc lays a generated
module out as ruff format would, so a generated module that ruff would
reformat is a bug of the printer. A generated module must also keep every
line within 100 columns but for what a string literal (a schema, a doc)
adds. The ruff version is the one tools/requirements/tests.txt pins (its
layout changes between versions); without it (or with another version) the test
is skipped, and fails where the environment variable CI is set.

Usage: lint.py STRUCTOPC [--tool pyflakes|ruff] [--ruff RUFF] [--config RUFF_TOML] --files FILE...
               --idl-dirs IDL_DIR... [--own SOURCE_DIR...]
"""

import argparse
import glob
import io
import os
import re
import subprocess
import sys
import tempfile
import tokenize

COLUMNS = 100
SKIP = 77  # meson: the test was skipped


def generate(structopc, idl, out_dir):
    """structopc --emit py for one IDL; its folder and its parent are the -I folders."""
    here = os.path.dirname(idl)
    run = subprocess.run(
        [structopc, "--emit", "py", "-I", here, "-I", os.path.dirname(here), "-o", out_dir, idl],
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        sys.exit(f"FAIL structopc on {idl} (exit {run.returncode}):\n{run.stderr}")
    stem = os.path.basename(idl)[: -len(".ops.yaml")]
    return os.path.join(out_dir, stem + "_ops.py")


def pinned_ruff():
    """The ruff version tools/requirements/tests.txt pins."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "tools", "requirements", "tests.txt")) as f:
        found = re.search(r"^ruff==(\S+)", f.read(), re.MULTILINE)
    return found.group(1) if found else None


def long_lines(path):
    """Lines over COLUMNS whose code (what is not in a string literal) passes it."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    in_string = [0] * len(lines)  # per line: its characters inside string literals
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type != tokenize.STRING:
            continue
        (row, col), (end_row, end_col) = token.start, token.end
        for r in range(row, end_row + 1):
            start = col if r == row else 0
            end = end_col if r == end_row else len(lines[r - 1])
            in_string[r - 1] += end - start
    return [
        f"{path}:{i + 1}: {len(line)} columns: {line[:80]}..."
        for i, line in enumerate(lines)
        if len(line) > COLUMNS and len(line) - in_string[i] + 2 > COLUMNS
    ]


def run_pyflakes(files):
    if subprocess.run(
        [sys.executable, "-m", "pyflakes", "--version"], capture_output=True
    ).returncode:
        sys.exit(
            f"FAIL {sys.executable} has no pyflakes (Debian: apt install python3-pyflakes; "
            "scripts/setup.sh installs it)"
        )
    run = subprocess.run([sys.executable, "-m", "pyflakes"] + files, capture_output=True, text=True)
    # pyflakes exits 0 only when it has nothing to say.
    if run.returncode != 0 or run.stdout.strip() or run.stderr.strip():
        print(run.stdout + run.stderr)
        print(f"FAIL pyflakes (exit {run.returncode}) on {len(files)} files")
        return 1
    print(f"ok   pyflakes: {len(files)} files clean")
    return 0


def missing(reason):
    """A missing or other ruff: skipped, but a failure in CI (CI installs the pin)."""
    if os.environ.get("CI"):
        print(f"FAIL {reason} (CI is set: scripts/pip-torch.sh --tests installs the pin)")
        return 1
    print(f"SKIP {reason}")
    return SKIP


def run_ruff(ruff, config, files, generated, own):
    want = pinned_ruff()
    if not ruff:
        return missing(f"no ruff on PATH (pip install ruff=={want})")
    version = subprocess.run([ruff, "--version"], capture_output=True, text=True)
    if version.returncode != 0 or version.stdout.split()[-1] != want:
        return missing(
            f"{ruff} is {version.stdout.strip()!r}, not ruff {want}: its layout may differ"
        )
    targets = files + generated + own
    failed = 0
    for what, command in (
        ("ruff check", ["check", "--config", config, "--no-cache"]),
        ("ruff format --check", ["format", "--config", config, "--no-cache", "--check"]),
    ):
        # From the folder of ruff.toml, whose paths (exclusions) are relative
        # to the folder ruff runs in when --config names the file.
        run = subprocess.run(
            [ruff] + command + targets,
            capture_output=True,
            text=True,
            cwd=os.path.dirname(os.path.abspath(config)),
        )
        if run.returncode != 0:
            print(run.stdout + run.stderr)
            print(f"FAIL {what} (exit {run.returncode})")
            failed = 1
        else:
            print(f"ok   {what}: {run.stdout.strip().splitlines()[-1]}")
    too_long = [
        line for path in generated + files for line in long_lines(path) if path.endswith("_ops.py")
    ]
    if too_long:
        print("\n".join(too_long))
        print(f"FAIL {len(too_long)} generated lines over {COLUMNS} columns")
        failed = 1
    else:
        print(f"ok   generated modules: no code line over {COLUMNS} columns")
    return failed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("structopc")
    parser.add_argument("--tool", choices=["pyflakes", "ruff"], default="pyflakes")
    parser.add_argument("--config", help="ruff.toml (--tool ruff)")
    parser.add_argument(
        "--ruff", default="", help="the ruff program (--tool ruff; empty: none found)"
    )
    parser.add_argument("--files", nargs="+", default=[])
    parser.add_argument("--idl-dirs", nargs="+", default=[])
    parser.add_argument("--own", nargs="+", default=[], help="source folders (--tool ruff)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        files, generated, labels = [], [], []
        for pattern in args.files:
            found = sorted(glob.glob(pattern))
            if not found:
                sys.exit(f"FAIL nothing to lint at {pattern}")
            files += found
            labels += found
        for i, idl_dir in enumerate(args.idl_dirs):
            idls = sorted(glob.glob(os.path.join(idl_dir, "**", "*.ops.yaml"), recursive=True))
            if not idls:
                sys.exit(f"FAIL no *.ops.yaml under {idl_dir}")
            for j, idl in enumerate(idls):
                out_dir = os.path.join(scratch, f"{i}-{j}")
                os.makedirs(out_dir)
                generated.append(generate(args.structopc, idl, out_dir))
                labels.append(f"{os.path.basename(generated[-1])}, generated from {idl}")
        if args.tool == "pyflakes":
            status = run_pyflakes(files + generated)
        else:
            status = run_ruff(args.ruff, args.config, files, generated, args.own)
        if status == 0:
            for label in labels:
                print(f"  {label}")
    return status


if __name__ == "__main__":
    sys.exit(main())
