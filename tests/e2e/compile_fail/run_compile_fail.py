#!/usr/bin/env python3
"""Compile-fail tests against generated headers (SCENARIOS row 21).

usage: run_compile_fail.py --cxx COMPILER... --flags FLAGS... --sources FILE...

Each source file holds numbered cases selected with -DSTRUCTOP_CASE=N:

    #if STRUCTOP_CASE == 0            // must compile (proves the flags are right)
    #elif STRUCTOP_CASE == 1  // expect: a gradient slot was left out; InnerGrad::b | field 'b'

A case with an `expect:` comment must fail to compile, and the compiler's
stderr must contain every `;`-separated text of at least one `|`-separated
alternative (e.g. GCC's and Clang's wordings). A case without one must
compile. Each case is compiled with -fsyntax-only.
"""

import re
import subprocess
import sys

CASE = re.compile(r"^#(?:el)?if STRUCTOP_CASE == (\d+)(?:\s*//\s*expect:\s*(.*))?$")


def parse_args(argv):
    try:
        cxx = argv[argv.index("--cxx") + 1 : argv.index("--flags")]
        flags = argv[argv.index("--flags") + 1 : argv.index("--sources")]
        sources = argv[argv.index("--sources") + 1 :]
    except ValueError:
        sys.exit(__doc__)
    if not cxx or not sources:
        sys.exit(__doc__)
    return cxx, flags, sources


def cases_of(source):
    """[(number, description, expected alternatives or None)]"""
    cases = []
    with open(source, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        m = CASE.match(line.strip())
        if not m:
            continue
        expect = None
        if m.group(2):
            expect = [
                [s.strip() for s in alt.split(";") if s.strip()] for alt in m.group(2).split("|")
            ]
        # The description is the comment line that follows the #if.
        what = lines[i + 1].strip().lstrip("/ ") if i + 1 < len(lines) else ""
        cases.append((int(m.group(1)), what, expect))
    return cases


def main():
    cxx, flags, sources = parse_args(sys.argv[1:])
    failures = total = 0
    for source in sources:
        cases = cases_of(source)
        if not cases:
            print(f"FAIL {source}: no STRUCTOP_CASE blocks")
            failures += 1
            continue
        for number, what, expect in cases:
            total += 1
            cmd = cxx + flags + ["-fsyntax-only", f"-DSTRUCTOP_CASE={number}", source]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if expect is None:
                ok = proc.returncode == 0
                reason = "" if ok else "did not compile"
            else:
                named = any(all(text in proc.stderr for text in alt) for alt in expect)
                ok = proc.returncode != 0 and named
                reason = (
                    "compiled, but must not"
                    if proc.returncode == 0
                    else ""
                    if named
                    else f"the message mentions none of {expect}"
                )
            name = source.rsplit("/", 1)[-1]
            print(
                f"{'ok  ' if ok else 'FAIL'} {name} case {number}: {what}"
                + (f": {reason}" if reason else "")
            )
            if not ok:
                failures += 1
                print("  command: " + " ".join(cmd))
                print("  " + proc.stderr.replace("\n", "\n  "))
    print(f"{total - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
