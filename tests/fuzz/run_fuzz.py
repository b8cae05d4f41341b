#!/usr/bin/env python3
"""Runs the libFuzzer target fuzz_compile from a seed corpus; fails on any finding.

The seed corpus is made in WORK/seeds from the IDL files of the --seeds
folders: every `*.ops.yaml` directly in a folder, and every sub-folder with a
`main.ops.yaml` (a diagnostics case of several files). A seed that includes
files is written in fuzz_compile's input format: the main file, then each
file it includes (transitively, when found beside it) after a line
`#@file NAME`. The sources are only read.

libFuzzer then runs over WORK/corpus (new inputs go there; with --keep it is
reused, otherwise made afresh) and the seeds, with the dictionary, until the
flags after `--` stop it (e.g. -max_total_time=60). Crash, leak and timeout
inputs are written to WORK/artifacts/. The exit status is libFuzzer's (non-zero
on any finding), and 1 if it printed a sanitizer or libFuzzer error anyway, or
if it executed no input (its final stats say how many it ran; printed last).

Usage: run_fuzz.py FUZZER --work DIR --dict FILE --seeds DIR... [--keep] [-- LIBFUZZER_FLAGS...]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

INCLUDE = re.compile(r"^include:\s*\[(.*)\]\s*$", re.MULTILINE)


def with_includes(path):
    """The text of `path` followed by the files it includes, as fuzz_compile reads them."""
    folder = os.path.dirname(path)
    parts, seen = [], set()

    def add(rel, name):
        full = os.path.normpath(os.path.join(folder, rel))
        if full in seen or not os.path.isfile(full):
            return
        seen.add(full)
        with open(full, "rb") as f:
            text = f.read()
        parts.append((name, text))
        for m in INCLUDE.finditer(text.decode("utf-8", "replace")):
            for inc in m.group(1).split(","):
                inc = inc.strip().strip("\"'")
                if inc:
                    child = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
                    add(child, child)

    add(os.path.basename(path), None)
    out = b""
    for name, text in parts:
        if name is not None:
            if not out.endswith(b"\n"):
                out += b"\n"
            out += b"#@file " + name.encode() + b"\n"
        out += text
    return out


def seed_files(folders):
    for folder in folders:
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name.endswith(".ops.yaml") and os.path.isfile(path):
                yield os.path.basename(folder) + "-" + name, path
            elif os.path.isfile(os.path.join(path, "main.ops.yaml")):
                yield (
                    os.path.basename(folder) + "-" + name + ".ops.yaml",
                    os.path.join(path, "main.ops.yaml"),
                )


def main():
    argv = sys.argv[1:]
    flags = []
    if "--" in argv:
        flags = argv[argv.index("--") + 1 :]
        argv = argv[: argv.index("--")]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fuzzer")
    ap.add_argument("--work", required=True)
    ap.add_argument("--dict", required=True)
    ap.add_argument("--seeds", nargs="+", required=True)
    ap.add_argument("--keep", action="store_true", help="reuse WORK/corpus from an earlier run")
    args = ap.parse_args(argv)

    seeds = os.path.join(args.work, "seeds")
    corpus = os.path.join(args.work, "corpus")
    artifacts = os.path.join(args.work, "artifacts")
    shutil.rmtree(seeds, ignore_errors=True)
    if not args.keep:
        shutil.rmtree(corpus, ignore_errors=True)
    for d in (seeds, corpus, artifacts):
        os.makedirs(d, exist_ok=True)
    count = 0
    for name, path in seed_files(args.seeds):
        with open(os.path.join(seeds, name), "wb") as f:
            f.write(with_includes(path))
        count += 1
    if count == 0:
        print("run_fuzz.py: no seed files found", file=sys.stderr)
        return 1
    print(f"run_fuzz.py: {count} seeds in {seeds}", file=sys.stderr)

    cmd = (
        [
            os.path.abspath(args.fuzzer),
            f"-dict={os.path.abspath(args.dict)}",
            f"-artifact_prefix={os.path.abspath(artifacts)}/",
            "-print_final_stats=1",
        ]
        + flags
        + [corpus, seeds]
    )
    print("run_fuzz.py: " + " ".join(cmd), file=sys.stderr)
    # Streamed (a long run prints for hours); the verdict is libFuzzer's exit
    # status, and any sanitizer report that somehow did not change it.
    reported, final, executed = False, "finished", None
    report = re.compile(r"^(==\d+==ERROR|SUMMARY: \w+Sanitizer|.*runtime error:)")
    # Symbolized stack traces: llvm-symbolizer if installed, else addr2line (binutils).
    env = dict(os.environ)
    symbolizer = shutil.which("llvm-symbolizer") or shutil.which("addr2line")
    extra = ["print_stacktrace=1"] + (
        [f"external_symbolizer_path={symbolizer}"] if symbolizer else []
    )
    for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        env[var] = ":".join(filter(None, [env.get(var)] + extra))
    with subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, errors="replace", env=env) as run:
        for line in run.stderr:
            sys.stderr.write(line)
            reported = reported or bool(report.match(line))
            if re.match(r"#\d+\s+DONE", line):
                final = line.strip()
            units = re.match(r"stat::number_of_executed_units:\s*(\d+)", line)
            if units:
                executed = int(units.group(1))
    if run.returncode != 0 or reported:
        print(
            f"run_fuzz.py: FAILED (exit status {run.returncode}); inputs in {artifacts}",
            file=sys.stderr,
        )
        return 1
    if not executed:
        print(
            f"run_fuzz.py: FAILED: libFuzzer executed no input (final stats: {executed})",
            file=sys.stderr,
        )
        return 1
    print("run_fuzz.py: " + final, file=sys.stderr)
    print(f"run_fuzz.py: {executed:,} inputs executed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
