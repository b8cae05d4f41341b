#!/usr/bin/env python3
"""pyflakes on structop's Python: the runtime module and generated X_ops.py.

Lints FILES (the configured structop_runtime.py, the approved golden
X_ops.py) and the X_ops.py that structopc generates for every *.ops.yaml
under each IDL_DIR (searched recursively; generated into a scratch folder).
Any pyflakes message fails the test: an unused import, an undefined name, a
name redefined, ...

Usage: lint.py STRUCTOPC --files FILE... --idl-dirs IDL_DIR...
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile


def generate(structopc, idl, out_dir):
    """structopc --emit py for one IDL; its folder and its parent are the -I folders."""
    here = os.path.dirname(idl)
    run = subprocess.run([structopc, "--emit", "py", "-I", here, "-I", os.path.dirname(here),
                          "-o", out_dir, idl], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"FAIL structopc on {idl} (exit {run.returncode}):\n{run.stderr}")
    stem = os.path.basename(idl)[: -len(".ops.yaml")]
    return os.path.join(out_dir, stem + "_ops.py")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("structopc")
    parser.add_argument("--files", nargs="+", default=[])
    parser.add_argument("--idl-dirs", nargs="+", default=[])
    args = parser.parse_args()

    if subprocess.run([sys.executable, "-m", "pyflakes", "--version"],
                      capture_output=True).returncode != 0:
        sys.exit(f"FAIL {sys.executable} has no pyflakes (Debian: apt install python3-pyflakes; "
                 "scripts/setup.sh installs it)")

    with tempfile.TemporaryDirectory() as scratch:
        files, labels = [], []
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
                files.append(generate(args.structopc, idl, out_dir))
                labels.append(f"{os.path.basename(files[-1])}, generated from {idl}")

        run = subprocess.run([sys.executable, "-m", "pyflakes"] + files, capture_output=True, text=True)
        # pyflakes exits 0 only when it has nothing to say.
        if run.returncode != 0 or run.stdout.strip() or run.stderr.strip():
            print(run.stdout + run.stderr)
            print(f"FAIL pyflakes (exit {run.returncode}) on {len(files)} files")
            return 1
    print(f"ok   pyflakes: {len(files)} files clean")
    for label in labels:
        print(f"  {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
