#!/usr/bin/env python3
"""Prints "N passed, N failed" over the meson test logs of the given build dirs.

The counts of each build dir go to stderr first; the last line on stdout is the
total.

A skipped, timed-out or errored test counts as failed: CI must not pass a
run in which a test did not really run. Exits 1 if anything failed, if no
test ran, or if a build dir has no test log.
Usage: test_summary.py BUILD_DIR...
"""
import json
import os
import sys

PASSED = {"OK", "EXPECTEDFAIL"}


def main(build_dirs):
    passed = failed = 0
    missing = []
    for d in build_dirs:
        log = os.path.join(d, "meson-logs", "testlog.json")
        if not os.path.exists(log):
            missing.append(log)
            continue
        here_passed = here_failed = 0
        with open(log, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                result = json.loads(line).get("result")
                if result in PASSED:
                    here_passed += 1
                else:
                    here_failed += 1
        print(f"{d}: {here_passed} passed, {here_failed} failed", file=sys.stderr)
        passed += here_passed
        failed += here_failed
    for log in missing:
        print(f"no test log: {log}", file=sys.stderr)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or missing or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
