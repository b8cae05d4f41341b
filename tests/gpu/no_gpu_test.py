#!/usr/bin/env python3
"""scripts/gpu-check.sh where torch sees no GPU: it says so and fails (exit
1, not 0 nor 77) before it installs or builds anything. Skipped (77) where
torch sees a GPU.

usage: no_gpu_test.py GPU_CHECK_SH

The script is run from a copy in an empty folder (it works in the folder
above its own), with this interpreter's torch as $STRUCTOP_GPU_PYTHON: the
folder must hold nothing new afterwards (no wheel wanted, nothing installed).
"""

import os
import shutil
import subprocess
import sys
import tempfile

import torch

SKIPPED = 77


def run(tree, *args):
    env = dict(os.environ, STRUCTOP_GPU_PYTHON=sys.executable)
    return subprocess.run(
        ["bash", os.path.join(tree, "scripts", "gpu-check.sh"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def main():
    if torch.cuda.is_available():
        print("skipped: torch sees a GPU (scripts/gpu-check.sh runs the GPU check there)")
        return SKIPPED
    failures = []
    with tempfile.TemporaryDirectory(prefix="structop-no-gpu-") as tree:
        os.mkdir(os.path.join(tree, "scripts"))
        shutil.copy(sys.argv[1], os.path.join(tree, "scripts", "gpu-check.sh"))

        result = run(tree)
        print(f"exit {result.returncode}\nstdout:\n{result.stdout}stderr:\n{result.stderr}")
        want = f"no GPU visible to torch (torch {torch.__version__}, CUDA build: no, CUDA available: False)"
        if result.returncode != 1:
            failures.append(f"exit status {result.returncode}, not 1")
        if want not in result.stderr:
            failures.append(f"stderr does not say: {want}")
        if result.stdout.splitlines()[-1:] != ["0 passed, 1 failed"]:
            failures.append("the last line of stdout is not `0 passed, 1 failed`")
        left = sorted(os.listdir(tree))
        if left != ["scripts"]:
            failures.append(f"the script made files before failing: {left}")

        usage = run(tree, "--no-such-option")
        if usage.returncode != 2 or "usage:" not in usage.stderr:
            failures.append(f"an unknown option: exit {usage.returncode}, {usage.stderr!r}")
    for failure in failures:
        print(f"FAIL: {failure}")
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
