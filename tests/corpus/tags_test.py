#!/usr/bin/env python3
"""structopc's list of operator tags matches the torch this Python imports.

structopc keeps torch's tags (at::Tag / torch.Tag) in the compiler
(compiler/check/builtins.cpp), since it does not link torch. Checks, with
the torch of this interpreter:
  - every tag torch defines is accepted on an op (`structopc --check`);
  - the tags structopc knows are exactly torch's (read from the hint of an
    unknown tag), except those marked as newer than torch 2.6 when this
    torch is 2.6;
  - a misspelled tag is an error with a did-you-mean.

Usage: tags_test.py STRUCTOPC WORKDIR
"""

import os
import re
import subprocess
import sys

import torch

# The tags structopc marks as added after torch 2.6 (builtins.cpp, kTags).
NEWER_THAN_2_6 = {
    "cudagraph_unsafe",
    "inplace",
    "needs_contiguous_strides",
    "needs_exact_strides",
    "out",
    "out_variant",
    "reduction",
}


def check(structopc, workdir, name, tags):
    idl = os.path.join(workdir, name + ".ops.yaml")
    with open(idl, "w", encoding="utf-8") as f:
        f.write("namespace: tags_test\nops:\n  - func: op(Tensor x) -> Tensor\n")
        f.write(f"    tags: [{', '.join(tags)}]\n")
    return subprocess.run([structopc, "--check", idl], capture_output=True, text=True)


def main():
    structopc, workdir = sys.argv[1:3]
    os.makedirs(workdir, exist_ok=True)
    torch_tags = set(torch.Tag.__members__)
    version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    failures = []

    run = check(structopc, workdir, "all_tags", sorted(torch_tags))
    if run.returncode != 0:
        failures.append(f"torch {torch.__version__}'s tags are not all accepted:\n{run.stderr}")

    run = check(structopc, workdir, "unknown", ["zzzz_not_a_tag"])
    m = re.search(r"hint: torch's operator tags are (.*)", run.stderr)
    if run.returncode != 1 or not m:
        failures.append(f"an unknown tag did not list the valid ones:\n{run.stderr}")
    else:
        known = set(re.findall(r"`([a-z0-9_]+)`", m.group(1)))
        expected = torch_tags | (NEWER_THAN_2_6 if version == (2, 6) else set())
        if version == (2, 6) and torch_tags & NEWER_THAN_2_6:
            failures.append(
                f"tags marked newer than 2.6 are in torch 2.6: {torch_tags & NEWER_THAN_2_6}"
            )
        if known != expected:
            failures.append(
                f"structopc's tags differ from torch {torch.__version__}'s: "
                f"missing {sorted(expected - known)}, extra {sorted(known - expected)}"
            )

    run = check(structopc, workdir, "misspelled", ["pt2_compliant"])
    if run.returncode != 1 or "did you mean `pt2_compliant_tag`?" not in run.stderr:
        failures.append(f"a misspelled tag got no did-you-mean:\n{run.stderr}")

    for f in failures:
        print("FAIL:", f)
    print(f"torch {torch.__version__}: {len(torch_tags)} tags, {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
