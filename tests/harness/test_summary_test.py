#!/usr/bin/env python3
"""tools/test_summary.py, the line CI ends with, on made-up Meson test logs:
a skip is counted as a skip (not a pass), any failure or a missing log fails
the run, and a run in which nothing passed fails too.

usage: test_summary_test.py TEST_SUMMARY_PY
"""

import json
import os
import subprocess
import sys
import tempfile

SUMMARY = sys.argv[1]
failures = []


def log(folder, results):
    os.makedirs(os.path.join(folder, "meson-logs"))
    with open(os.path.join(folder, "meson-logs", "testlog.json"), "w", encoding="utf-8") as f:
        for i, result in enumerate(results):
            f.write(
                json.dumps(
                    {
                        "name": f"structop:torch / t{i}",
                        "result": result,
                        "duration": 1.5,
                        "stdout": f"why t{i}\n",
                    }
                )
                + "\n"
            )


def check(name, folders, want_line, want_status):
    r = subprocess.run([sys.executable, SUMMARY, *folders], capture_output=True, text=True)
    line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    if line != want_line or r.returncode != want_status:
        failures.append(
            f"{name}: got {line!r} (exit {r.returncode}), want {want_line!r} "
            f"(exit {want_status})\n{r.stderr}"
        )


with tempfile.TemporaryDirectory() as tmp:
    d = lambda name: os.path.join(tmp, name)  # noqa: E731
    log(d("ok"), ["OK", "OK", "EXPECTEDFAIL"])
    log(d("skips"), ["OK", "SKIP"])
    log(d("fails"), ["OK", "FAIL", "TIMEOUT", "ERROR", "UNEXPECTEDPASS"])
    log(d("only_skips"), ["SKIP"])
    log(d("empty"), [])
    check("all passed", [d("ok")], "3 passed, 0 failed, 0 skipped", 0)
    check("a skip is not a pass", [d("ok"), d("skips")], "4 passed, 0 failed, 1 skipped", 0)
    check("failures", [d("fails")], "1 passed, 4 failed, 0 skipped", 1)
    check("a missing log fails", [d("ok"), d("missing")], "3 passed, 0 failed, 0 skipped", 1)
    check("only skips: nothing passed", [d("only_skips")], "0 passed, 0 failed, 1 skipped", 1)
    check("no test ran", [d("empty")], "0 passed, 0 failed, 0 skipped", 1)
    r = subprocess.run([sys.executable, SUMMARY, d("skips")], capture_output=True, text=True)
    if "skipped: structop:torch / t1: why t1" not in r.stderr:
        failures.append(f"a skip is reported with its reason:\n{r.stderr}")

for failure in failures:
    print("FAIL " + failure)
print(f"test_summary: {len(failures)} failures")
sys.exit(1 if failures else 0)
