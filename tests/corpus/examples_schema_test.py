#!/usr/bin/env python3
"""Every idl_examples/*.ops.yaml lowers to schemas that torch accepts.

For each example: structopc --emit json, then torch._C.parse_schema on every
lowered schema, and a registration with torch.library (define), which must
not warn. Usage: examples_schema_test.py STRUCTOPC EXAMPLES_DIR WORKDIR
"""

import glob
import json
import os
import subprocess
import sys
import warnings

import torch


def main():
    structopc, examples, workdir = sys.argv[1:4]
    files = sorted(glob.glob(os.path.join(examples, "*.ops.yaml")))
    if not files:
        sys.exit(f"no examples in {examples}")
    failures = 0
    checked = 0
    for idl in files:
        run = subprocess.run(
            [structopc, "--emit", "json", "-I", examples, "-o", workdir, idl],
            capture_output=True,
            text=True,
        )
        if run.returncode != 0:
            print(f"FAIL {idl}: structopc exit {run.returncode}\n{run.stderr}")
            failures += 1
            continue
        stem = os.path.basename(idl)[: -len(".ops.yaml")]
        with open(os.path.join(workdir, stem + ".ops.json"), encoding="utf-8") as f:
            model = json.load(f)
        # A fresh namespace per file, so registering never clashes with a
        # library that defines the same names for real.
        lib = torch.library.Library(f"structop_schema_check_{stem}", "DEF")
        for op in model["ops"]:
            checked += 1
            try:
                torch._C.parse_schema(op["schema"])
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    lib.define(op["schema"])
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"FAIL {idl}: {op['name']}: {op['schema']}\n  {e}")
                failures += 1
    print(f"{len(files)} examples, {checked} schemas, {failures} rejected")
    sys.exit(1 if failures or checked == 0 else 0)


if __name__ == "__main__":
    main()
