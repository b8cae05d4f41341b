#!/usr/bin/env python3
"""Prints "N passed, N failed, N skipped" over the meson test logs of the given build dirs.

Each build dir's counts go to stderr first, with the name of every test that
did not pass and, for a skipped test, the reason it printed last, and where
the time went (the tests' durations summed per suite, the slowest tests); the
last line on stdout is the total.

A test passes when Meson says OK (or EXPECTEDFAIL); a skipped test (exit status
77, e.g. the GPU tests on a machine without a GPU, or a Python test with a
skipped case: tests/support/unittest_main.py) is counted as skipped, never as
passed; anything else (FAIL, TIMEOUT, ERROR, UNEXPECTEDPASS) is a failure.
Exits 1 when anything failed, when no test passed, or when a build dir has no
test log (the harness removes the logs before each run, so a missing one means
that the build failed before its tests ran).

Usage: test_summary.py BUILD_DIR...
"""

import json
import os
import sys

PASSED = {"OK", "EXPECTEDFAIL"}
SKIPPED = {"SKIP"}


def last_line(text):
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


def main(build_dirs):
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    missing = []
    for d in build_dirs:
        log = os.path.join(d, "meson-logs", "testlog.json")
        if not os.path.exists(log):
            missing.append(log)
            continue
        here = {"passed": 0, "failed": 0, "skipped": 0}
        notes = []
        suites, durations = {}, []
        with open(log, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                entry = json.loads(line)
                result = entry.get("result")
                duration = float(entry.get("duration") or 0)
                durations.append((duration, entry.get("name")))
                # "project:suite1+suite2 / test" (Meson 1.0 writes no "suite" key)
                for suite in entry.get("name", "").split(" / ")[0].split(":")[-1].split("+"):
                    suites[suite] = suites.get(suite, 0.0) + duration
                if result in PASSED:
                    here["passed"] += 1
                elif result in SKIPPED:
                    here["skipped"] += 1
                    notes.append(
                        f"  skipped: {entry.get('name')}: {last_line(entry.get('stdout'))}"
                    )
                else:
                    here["failed"] += 1
                    notes.append(f"  {result}: {entry.get('name')}")
        print(
            f"{d}: {here['passed']} passed, {here['failed']} failed, {here['skipped']} skipped",
            file=sys.stderr,
        )
        for note in notes:
            print(note, file=sys.stderr)
        print(
            "  seconds per suite (a test in two suites counts in both): "
            + ", ".join(f"{k} {v:.0f}" for k, v in sorted(suites.items())),
            file=sys.stderr,
        )
        print(
            "  slowest: "
            + ", ".join(
                f"{name.split(' / ')[-1]} {d:.0f} s"
                for d, name in sorted(durations, reverse=True)[:6]
            ),
            file=sys.stderr,
        )
        for key in totals:
            totals[key] += here[key]
    for log in missing:
        print(f"no test log (its build failed before the tests ran?): {log}", file=sys.stderr)
    print(f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped")
    return 1 if totals["failed"] or missing or totals["passed"] == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
