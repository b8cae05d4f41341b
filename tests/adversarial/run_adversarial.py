#!/usr/bin/env python3
"""Adversarial input: structopc must answer every hostile file with a diagnostic
(exit 1, nothing written) or a compile (exit 0), never a signal, a hang, a
flood of output or unbounded memory.

Each case's input is generated at run time into WORKDIR (nothing big is
committed). Each run gets a CPU-time limit (--timeout; CPU time rather than
wall time, so a busy machine does not make the test flaky), a wall-clock
limit of three times that (for hangs that do not burn CPU), and an
address-space limit (RLIMIT_AS); every case states what it expects, so a
case that stops being detected fails too. A table of times and peak memory
is printed.

Usage: run_adversarial.py STRUCTOPC WORKDIR [--timeout SECONDS] [--memory-mb MB]
       [--only NAME]...
`--memory-mb 0` disables the address-space limit (needed under ASan, which
reserves terabytes of virtual memory for its shadow).
"""

import argparse
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

MAX_STDERR = 64 * 1024  # diagnostics must stay readable, whatever the input


class Case:
    def __init__(self, name, files, expect, detail=None, check=None):
        self.name = name
        self.files = files  # {relative path: bytes}; the first one is compiled
        self.expect = expect  # "ok" or "error"
        self.detail = detail  # for "error": a substring stderr must contain
        self.check = check  # for "ok": a function(json_model) -> problem or None


def text(s):
    return s.encode("utf-8")


def chain(n, leaf="x: Tensor", field=lambda i: f"r: R{i - 1}"):
    """Records R0..R{n-1}, each holding the previous one."""
    lines = ["namespace: adv", "records:", f"  R0: {{fields: {{{leaf}}}}}"]
    lines += [f"  R{i}: {{fields: {{{field(i)}}}}}" for i in range(1, n)]
    return lines


def doubling(levels):
    """R_i holds two R_{i-1}: 2**levels leaves from a tiny file."""
    lines = ["namespace: adv", "records:", "  R0: {fields: {x: Tensor}}"]
    lines += [f"  R{i}: {{fields: {{a: R{i - 1}, b: R{i - 1}}}}}" for i in range(1, levels + 1)]
    return lines


def check_slot(op_name, slot_name):
    def check(model):
        for op in model["ops"]:
            if op["name"] == op_name:
                names = [s["name"] for s in op["slots"]]
                return (
                    None if slot_name in names else f"op {op_name} has no slot {slot_name[:60]}..."
                )
        return f"no op {op_name}"

    return check


def check_counts(records=None, ops=None, slots=None):
    def check(model):
        if records is not None and len(model["records"]) != records:
            return f"{len(model['records'])} records, expected {records}"
        if ops is not None and len(model["ops"]) != ops:
            return f"{len(model['ops'])} ops, expected {ops}"
        if slots is not None and len(model["ops"][0]["slots"]) != slots:
            return f"{len(model['ops'][0]['slots'])} slots, expected {slots}"
        return None

    return check


def cases():
    rng = random.Random(20261130)
    yield Case("empty", {"main.ops.yaml": b""}, "error", "file is empty")
    yield Case("whitespace_only", {"main.ops.yaml": b"  \n\t\n   \r\n"}, "error", "file is empty")
    yield Case(
        "binary_junk",
        {"main.ops.yaml": bytes(rng.randrange(256) for _ in range(1 << 16))},
        "error",
        "NUL byte",
    )
    junk = bytes(rng.randrange(1, 256) for _ in range(1 << 16))
    yield Case(
        "invalid_utf8",
        {"main.ops.yaml": b"namespace: adv\ndoc: " + junk},
        "error",
        "not valid UTF-8",
    )
    yield Case(
        "deep_flow_nesting", {"main.ops.yaml": b"[" * 100_000}, "error", "YAML nesting is too deep"
    )
    yield Case(
        "deep_block_nesting",
        {"main.ops.yaml": text("".join(" " * i + "a:\n" for i in range(1000)))},
        "error",
        "YAML nesting is too deep",
    )
    laughs = ["namespace: adv", "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    laughs += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    yield Case(
        "alias_bomb", {"main.ops.yaml": text("\n".join(laughs) + "\n")}, "error", "YAML aliases"
    )
    yield Case(
        "many_aliases",
        {"main.ops.yaml": text("namespace: adv\na: &a x\nb: [" + "*a, " * 300_000 + "]\n")},
        "error",
        "more errors not shown",
    )
    yield Case(
        "file_50mb",
        {"main.ops.yaml": b"namespace: adv\ndoc: |\n" + (b"  " + b"y" * 98 + b"\n") * 500_000},
        "error",
        "structop IDL files are limited to",
    )
    ops, size, i = ["namespace: adv", "ops:"], 0, 0
    while size < (4 << 20) - 100:
        line = f"  - func: op{i}(Tensor x, float s=1.0) -> Tensor"
        ops.append(line)
        size += len(line) + 1
        i += 1
    yield Case(
        "largest_valid_file",
        {"main.ops.yaml": text("\n".join(ops[:-1]) + "\n")},
        "ok",
        None,
        check_counts(ops=len(ops) - 3),
    )
    yield Case(
        "too_many_nodes",
        {"main.ops.yaml": text("namespace: adv\ndoc: [" + "a," * 600_000 + "]\n")},
        "error",
        "more than 500000 YAML nodes",
    )
    yield Case(
        "long_line_doc",
        {"main.ops.yaml": text("namespace: adv\ndoc: " + "x" * 3_000_000 + "\n")},
        "ok",
    )
    yield Case(
        "long_line_error",
        {
            "main.ops.yaml": text(
                "namespace: adv\nops:\n  - func: op("
                + "".join(f"Tensor a{k}, " for k in range(100_000))
                + "flaot z) -> Tensor\n"
            )
        },
        "error",
        "unknown type `flaot`",
    )
    params = ", ".join(f"Tensor p{k}" for k in range(10_000))
    yield Case(
        "func_10k_params",
        {"main.ops.yaml": text(f"namespace: adv\nops:\n  - func: op({params}) -> Tensor\n")},
        "ok",
        None,
        check_counts(slots=10_000),
    )
    deep = chain(100) + ["ops:", "  - func: op(Tensor x, R99 cfg) -> Tensor"]
    yield Case(
        "records_depth_100",
        {"main.ops.yaml": text("\n".join(deep) + "\n")},
        "ok",
        None,
        check_slot("op", "cfg" + "__r" * 99 + "__x"),
    )
    deepest = chain(100, field=lambda i: f"r: R{i - 1}, t: Tensor") + [
        "ops:",
        "  - func: op_(Tensor x, R99 cfg) -> ()",
        "    mutates: [cfg]",
        "    meta: custom",
    ]
    yield Case(
        "records_depth_100_mutated",
        {"main.ops.yaml": text("\n".join(deepest) + "\n")},
        "ok",
        None,
        check_counts(slots=101),
    )
    deeper = chain(10_000) + ["ops:", "  - func: op(Tensor x, R9999 cfg) -> Tensor"]
    yield Case(
        "records_depth_10k",
        {"main.ops.yaml": text("\n".join(deeper) + "\n")},
        "error",
        "records nest more than 100 levels deep",
    )
    backwards = ["namespace: adv", "records:"]
    backwards += [f"  R{k}: {{fields: {{r: R{k + 1}}}}}" for k in range(9_999)] + [
        "  R9999: {fields: {x: Tensor}}"
    ]
    yield Case(
        "records_depth_10k_reversed",
        {"main.ops.yaml": text("\n".join(backwards) + "\n")},
        "error",
        "records nest more than 100 levels deep",
    )

    # Names that multiply: 200-deep records with 1,000-byte field names taken
    # by 150 ops once made 850 MB of code (30 s, 1.4 GB); each limit on the
    # way is met before any of that work.
    def long_names(depth, length, ops):
        lines = ["namespace: adv", "records:"]
        lines += [
            f"  R{i}: {{fields: {{f{i}_{'x' * (length - len(str(i)) - 2)}: "
            f"{'Tensor' if i == 0 else f'R{i - 1}'}}}}}"
            for i in range(depth)
        ]
        return (
            lines
            + ["ops:"]
            + [f"  - func: op{k}(Tensor x, R{depth - 1} cfg) -> Tensor" for k in range(ops)]
        )

    yield Case(
        "long_names_deep_records",
        {"main.ops.yaml": text("\n".join(long_names(200, 1000, 150)) + "\n")},
        "error",
        "names are limited to 256 bytes",
    )
    yield Case(
        "long_lowered_names",
        {"main.ops.yaml": text("\n".join(long_names(100, 250, 150)) + "\n")},
        "error",
        "lowered names are limited to 1024 bytes",
    )
    wide = ["namespace: adv", "records:", "  B:", "    fields:"]
    wide += [f"      f{i}_{'x' * 200}: Tensor" for i in range(100)]
    wide += ["ops:"] + [f"  - func: op{k}(Tensor x, B b) -> Tensor" for k in range(1_000)]
    yield Case(
        "flattened_size",
        {"main.ops.yaml": text("\n".join(wide) + "\n")},
        "error",
        "flatten to more than 4 MiB",
    )
    many = ["namespace: adv", "records:"]
    many += [f"  R{k}: {{fields: {{x: Tensor, s: float = 1.0}}}}" for k in range(10_000)]
    many += ["ops:"] + [
        f"  - func: op{k}(Tensor x, R{k} cfg) -> Tensor" for k in range(0, 10_000, 10)
    ]
    yield Case(
        "records_10k",
        {"main.ops.yaml": text("\n".join(many) + "\n")},
        "ok",
        None,
        check_counts(records=10_000, ops=1_000),
    )
    bomb = doubling(60) + ["ops:", "  - func: op(Tensor x, R60 cfg) -> Tensor"]
    yield Case(
        "record_leaf_bomb",
        {"main.ops.yaml": text("\n".join(bomb) + "\n")},
        "error",
        "more than 100000 leaf fields",
    )
    total = (
        doubling(14)
        + ["ops:"]
        + [f"  - func: op{k}(Tensor x, R14 cfg) -> Tensor" for k in range(100)]
    )
    yield Case(
        "lowered_params_total",
        {"main.ops.yaml": text("\n".join(total) + "\n")},
        "error",
        "more than 200000 parameters in total",
    )
    yield Case(
        "deep_list_default",
        {
            "main.ops.yaml": text(
                "namespace: adv\nops:\n  - func: op(int[] x=" + "[" * 100_000 + ") -> ()\n"
            )
        },
        "error",
        "nested lists are not valid default values",
    )
    bad = ["namespace: adv", "records:", "  R:", "    fields:"] + [
        f"      f{k}: Unknown{k}" for k in range(100_000)
    ]
    yield Case(
        "many_errors",
        {"main.ops.yaml": text("\n".join(bad) + "\n")},
        "error",
        "more errors not shown",
    )
    files = {}
    for k in range(10_000):
        nxt = f"include: [f{k + 1}.ops.yaml]\n" if k + 1 < 10_000 else ""
        files["main.ops.yaml" if k == 0 else f"f{k}.ops.yaml"] = text(f"namespace: n{k}\n{nxt}")
    yield Case("include_chain_10k", files, "error", "includes nest more than 100 files deep")
    fan = {
        "main.ops.yaml": text(
            "namespace: adv\ninclude: ["
            + ", ".join(f"inc/f{k}.ops.yaml" for k in range(2_000))
            + "]\nops:\n  - func: op(Tensor x, R1999 cfg) -> Tensor\n"
        )
    }
    for k in range(2_000):
        fan[f"inc/f{k}.ops.yaml"] = text(
            f"namespace: n{k}\nrecords: {{R{k}: {{fields: {{w: Tensor}}}}}}\n"
        )
    yield Case("include_fanout_2k", fan, "ok", None, check_counts(records=2_000))


def run_case(structopc, workdir, case, timeout, memory_mb):
    """Returns (problems, wall_seconds, cpu_seconds, max_rss_mb, exit_code, input_bytes)."""
    root = os.path.join(workdir, case.name)
    shutil.rmtree(root, ignore_errors=True)
    out = os.path.join(root, "out")
    os.makedirs(out)
    size = 0
    for rel, data in case.files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        size += len(data)
    main = next(iter(case.files))

    def limits():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        cpu = int(timeout) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))  # SIGXCPU, then SIGKILL
        if memory_mb:
            resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))

    stderr_path = os.path.join(root, "stderr.txt")
    with open(stderr_path, "wb") as err, open(os.devnull, "wb") as devnull:
        start = time.monotonic()
        proc = subprocess.Popen(
            [structopc, "--emit", "json", "-o", out, main],
            cwd=root,
            stdout=devnull,
            stderr=err,
            preexec_fn=limits,
        )
        problems, status, usage = [], None, None
        while status is None:
            pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                status, usage = st, ru
                break
            if time.monotonic() - start > 3 * timeout:
                proc.kill()
                _, status, usage = os.wait4(proc.pid, 0)
                problems.append(f"hung: still running after {3 * timeout:g} s of wall time")
                break
            time.sleep(0.005)
        seconds = time.monotonic() - start
    rss_mb = usage.ru_maxrss / 1024 if usage else 0
    cpu = usage.ru_utime + usage.ru_stime if usage else 0
    if os.WIFSIGNALED(status):
        code = -os.WTERMSIG(status)
        if not problems:
            name = signal.Signals(-code).name
            problems.append(
                f"killed by signal {name}"
                + (f" (over {timeout:g} s of CPU time)" if name == "SIGXCPU" else "")
            )
    else:
        code = os.WEXITSTATUS(status)
        if cpu > timeout:  # finished, but within the grace second RLIMIT_CPU allows
            problems.append(f"took {cpu:.1f} s of CPU time (limit {timeout:g} s)")
    proc.returncode = code  # reaped by wait4; Popen must not wait again
    with open(stderr_path, "rb") as f:
        stderr = f.read()
    if len(stderr) > MAX_STDERR:
        problems.append(f"stderr is {len(stderr)} bytes (limit {MAX_STDERR})")
    written = sorted(os.listdir(out))
    stderr_text = stderr.decode("utf-8", "replace")
    if code >= 0 and not problems:
        if case.expect == "error":
            if code != 1:
                problems.append(f"exit {code}, expected 1 (a diagnostic)")
            if case.detail and case.detail not in stderr_text:
                problems.append(f"stderr lacks {case.detail!r}; it starts: {stderr_text[:300]!r}")
            if written:
                problems.append(f"wrote {written} despite errors")
        else:
            if code != 0:
                problems.append(f"exit {code}, expected 0; stderr starts: {stderr_text[:300]!r}")
            elif written != ["main.ops.json"]:
                problems.append(f"wrote {written}, expected main.ops.json")
            else:
                with open(os.path.join(out, "main.ops.json"), encoding="utf-8") as f:
                    model = json.load(f)
                if case.check:
                    problem = case.check(model)
                    if problem:
                        problems.append(problem)
    shutil.rmtree(root, ignore_errors=True)  # some inputs are big
    return problems, seconds, cpu, rss_mb, code, size


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("structopc")
    parser.add_argument("workdir")
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--memory-mb", type=int, default=2048)
    parser.add_argument("--only", action="append", default=[])
    args = parser.parse_args()
    structopc = os.path.abspath(args.structopc)
    os.makedirs(args.workdir, exist_ok=True)
    # A folder of its own: two test runs in one build dir must not collide.
    workdir = tempfile.mkdtemp(prefix="run-", dir=args.workdir)

    print(
        f"limits per case: {args.timeout:g} s CPU, {3 * args.timeout:g} s wall, address space "
        f"{str(args.memory_mb) + ' MiB' if args.memory_mb else 'unlimited'}"
    )
    print(
        f"{'case':<28} {'input':>10} {'exit':>5} {'wall s':>7} {'CPU s':>6} {'max RSS':>9}  result"
    )
    failures = 0
    count = 0
    for case in cases():
        if args.only and case.name not in args.only:
            continue
        count += 1
        problems, seconds, cpu, rss, code, size = run_case(
            structopc, workdir, case, args.timeout, args.memory_mb
        )
        size_text = f"{size / (1 << 20):.1f} MiB" if size >= (1 << 20) else f"{size / 1024:.0f} KiB"
        print(
            f"{case.name:<28} {size_text:>10} {code:>5} {seconds:>7.2f} {cpu:>6.2f} {rss:>6.0f} MB  "
            f"{'ok' if not problems else 'FAIL'}"
        )
        for p in problems:
            print(f"    {p}")
        failures += bool(problems)
        sys.stdout.flush()
    shutil.rmtree(workdir, ignore_errors=True)
    print(f"{count} adversarial cases, {count - failures} as expected, {failures} failed")
    if count == 0:
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
