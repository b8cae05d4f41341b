#!/usr/bin/env python3
"""Lines per op of generated Python modules (X_ops.py), as docs/benchmarks.md
reports them for the approved goldens:

    python3 tests/golden/lines_per_op.py tests/golden/approved/*_ops.py

Per file, the op part runs from the first line that starts an op's code (an
`_<op>_op = _rt.Op(` assignment or a top-level `def _<op>_results(`,
whichever comes first) to the last non-blank line before
`torch.serialization.add_safe_globals` (or the end of the file); what comes
before it (docstring, imports, enums, records) is the record/enum part.
Lines per op = the op parts' lines over the number of `_rt.Op(` calls."""

import re
import sys

OP = re.compile(r"_\w+_op = _rt\.Op\(")
START = re.compile(r"(_\w+_op = _rt\.Op\(|def _\w+_results\()")


def op_part(lines):
    """(lines of the op part, ops) of one module's lines."""
    start = next((i for i, line in enumerate(lines) if START.match(line)), None)
    if start is None:
        return 0, 0
    end = next(
        (i for i, line in enumerate(lines) if line.startswith("torch.serialization.")),
        len(lines),
    )
    while end > start and not lines[end - 1].strip():
        end -= 1
    return end - start, sum(1 for line in lines if OP.match(line))


def main(paths):
    total_lines = total_ops = 0
    for path in paths:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        n, ops = op_part(lines)
        total_lines += n
        total_ops += ops
        per_op = f", {n / ops:.1f} lines/op" if ops else ""
        print(f"{path}: {len(lines)} lines, op part {n} lines, {ops} ops{per_op}")
    if not total_ops:
        print("no ops")
        return 1
    print(
        f"total: op part {total_lines} lines, {total_ops} ops, "
        f"{total_lines / total_ops:.1f} lines/op"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
