#!/usr/bin/env python3
"""Compile-fail test for generated code (SCENARIOS row 21, runtime version check).

usage: run_compile_fail.py --source FILE --cxx COMPILER... -- FLAGS...

Compiles FILE with -fsyntax-only once per case (-DSTRUCTOP_CASE=N): case 0
must compile, every other case must fail with a message that names the
offending field. Prints each compiler's stderr when a case goes wrong.
"""

import subprocess
import sys

# case -> (what it checks, substrings of which at least one set must all appear)
CASES = {
    0: ("correct backward compiles", None),
    1: ("left-out grad slot cfg.inner.b",
        [["a gradient slot was left out", "InnerGrad::b"],       # GCC -Wextra
         ["a gradient slot was left out", "field 'b'"]]),        # Clang -Wextra
    2: ("misspelled field in a designated initializer",
        [["bias"]]),
    3: ("misspelled field of the grads record",
        [["weight", "did you mean"], ["weight", "no member named"]]),
    4: ("misspelled field of the input record",
        [["weight", "did you mean"], ["weight", "no member named"]]),
    5: ("generated for another runtime version",
        [["generated for structop runtime version 2", "runtime.h is version 1"]]),
}


def parse_args(argv):
    if "--source" not in argv or "--cxx" not in argv or "--" not in argv:
        sys.exit(__doc__)
    source = argv[argv.index("--source") + 1]
    sep = argv.index("--")
    cxx = argv[argv.index("--cxx") + 1:sep]
    return source, cxx, argv[sep + 1:]


def main():
    source, cxx, flags = parse_args(sys.argv[1:])
    failures = 0
    for case, (what, expected) in CASES.items():
        cmd = cxx + flags + ["-fsyntax-only", f"-DSTRUCTOP_CASE={case}", source]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if expected is None:
            ok = proc.returncode == 0
            reason = "" if ok else "did not compile"
        else:
            named = any(all(s in proc.stderr for s in group) for group in expected)
            ok = proc.returncode != 0 and named
            reason = ("compiled, but must not" if proc.returncode == 0 else
                      "" if named else f"message does not mention any of {expected}")
        print(f"{'ok  ' if ok else 'FAIL'} case {case}: {what}" + (f": {reason}" if reason else ""))
        if not ok:
            failures += 1
            print("  command: " + " ".join(cmd))
            print("  " + proc.stderr.replace("\n", "\n  "))
    passed = len(CASES) - failures
    print(f"{passed} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
