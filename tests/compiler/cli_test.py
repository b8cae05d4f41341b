#!/usr/bin/env python3
"""End-to-end checks of the structopc binary: determinism, write-if-changed,
--check, --depfile, --explain, exit codes, and hostile files and folders
(FIFOs and devices as input, symlinks planted in the output folder, a full
disk, paths a depfile cannot hold, an IDL that would generate gigabytes).

Only `--emit json` is used: the other emitters are still being written.
Usage: cli_test.py STRUCTOPC [--valgrind VALGRIND] [--sanitized]

No clock or memory reading decides a check (these tests run on busy cores and
under sanitizers): hangs are caught by timeouts, and the pathological IDL's
cost is bounded by structopc's instruction count under callgrind (--valgrind;
without it the bound is not checked, and the test says so) and by an address-
space limit on its process (not under sanitizers, --sanitized, which reserve
terabytes of address space).
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

MAIN = """\
namespace: demo
include: [local.ops.yaml, common.ops.yaml]
records:
  WeightCfg:
    fields:
      inner: Inner
      scale: float = 1.0
      mode: {type: Mode, default: causal}
ops:
  - func: op(Tensor x, WeightCfg cfg) -> Tensor
    backward: true
  - func: scale_(Tensor x, WeightCfg cfg) -> ()
    mutates: [cfg]
"""
LOCAL = "namespace: local\nenums:\n  Mode: [full, causal]\n"
COMMON = "namespace: common\nrecords:\n  Inner: {fields: {w: Tensor, b: Tensor}}\n"
BAD = "namespace: demo\nops:\n  - func: op(Tensor x, flaot s) -> Tensor\n"

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print(f"FAIL: {what}")


def run(*args, cwd, preexec_fn=None):
    return subprocess.run(
        [STRUCTOPC, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=preexec_fn,
    )


def listing(path):
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


def read(path):
    with open(path, "rb") as f:
        return f.read()


def age(paths):
    """Moves mtimes one hour back, so any rewrite shows even with coarse clocks."""
    old = time.time() - 3600
    for p in paths:
        os.utime(p, (old, old))
    return {p: os.stat(p).st_mtime_ns for p in paths}


def main(work):
    os.makedirs(os.path.join(work, "idl"))
    os.makedirs(os.path.join(work, "inc"))
    for rel, body in [
        ("idl/main.ops.yaml", MAIN),
        ("idl/local.ops.yaml", LOCAL),
        ("inc/common.ops.yaml", COMMON),
        ("idl/bad.ops.yaml", BAD),
    ]:
        with open(os.path.join(work, rel), "w", encoding="utf-8") as f:
            f.write(body)

    # Two runs into two folders: identical bytes. (`--emit json FILE`: the
    # input after --emit must not be taken as a second --emit value.)
    a = run(
        "--emit",
        "json",
        "idl/main.ops.yaml",
        "-I",
        "inc",
        "-o",
        "outA",
        "--depfile",
        "outA.d",
        cwd=work,
    )
    check(a.returncode == 0, f"first run exits 0 (got {a.returncode}: {a.stderr})")
    check(
        a.stdout == "" and a.stderr == "",
        f"a clean run prints nothing (got {a.stdout!r} {a.stderr!r})",
    )
    b = run("-I", "inc", "-o", "outB", "--emit", "json", "idl/main.ops.yaml", cwd=work)
    check(b.returncode == 0, f"second run exits 0 (got {b.returncode}: {b.stderr})")
    check(
        listing(os.path.join(work, "outA")) == ["main.ops.json"], "outA holds exactly main.ops.json"
    )
    json_a, json_b = (
        os.path.join(work, "outA/main.ops.json"),
        os.path.join(work, "outB/main.ops.json"),
    )
    check(
        os.path.exists(json_b) and read(json_a) == read(json_b), "two runs give byte-identical json"
    )
    check(
        b'"schema": "op(Tensor x, Tensor cfg__inner__w, Tensor cfg__inner__b, float cfg__scale=1.0, '
        b'str cfg__mode=\\"causal\\") -> Tensor"' in read(json_a),
        "json holds the lowered schema",
    )

    # The depfile lists the output and every IDL file read, main file first.
    depfile = os.path.join(work, "outA.d")
    check(
        read(depfile).decode()
        == "outA/main.ops.json: idl/main.ops.yaml idl/local.ops.yaml inc/common.ops.yaml\n",
        f"depfile content (got {read(depfile)!r})",
    )

    # A second run into the same folder rewrites nothing.
    stamps = age([json_a, depfile])
    again = run(
        "--emit",
        "json",
        "-I",
        "inc",
        "-o",
        "outA",
        "--depfile",
        "outA.d",
        "idl/main.ops.yaml",
        cwd=work,
    )
    check(again.returncode == 0, "rerun exits 0")
    for p, t in stamps.items():
        check(os.stat(p).st_mtime_ns == t, f"rerun leaves {os.path.relpath(p, work)} untouched")

    # A changed input does rewrite (so the check above can fail).
    with open(os.path.join(work, "idl/main.ops.yaml"), "w", encoding="utf-8") as f:
        f.write(MAIN.replace("scale: float = 1.0", "scale: float = 2.0"))
    changed = run("--emit", "json", "-I", "inc", "-o", "outA", "idl/main.ops.yaml", cwd=work)
    check(changed.returncode == 0, "run after an edit exits 0")
    check(os.stat(json_a).st_mtime_ns != stamps[json_a], "an edited input rewrites the json")
    check(b"cfg__scale=2.0" in read(json_a), "the rewritten json has the new default")

    # --check validates and writes nothing, not even the depfile.
    chk = run(
        "--check",
        "--emit",
        "json",
        "-I",
        "inc",
        "-o",
        "outC",
        "--depfile",
        "outC.d",
        "idl/main.ops.yaml",
        cwd=work,
    )
    check(
        chk.returncode == 0 and chk.stdout == "" and chk.stderr == "",
        "--check of a good file: exit 0, silent",
    )
    check(
        not os.path.exists(os.path.join(work, "outC"))
        and not os.path.exists(os.path.join(work, "outC.d")),
        "--check writes nothing",
    )
    bad_chk = run("--check", "idl/bad.ops.yaml", cwd=work)
    check(bad_chk.returncode == 1, f"--check of a bad file exits 1 (got {bad_chk.returncode})")
    check(
        "idl/bad.ops.yaml:3:24: error: parameter `s` of op `op`: unknown type `flaot`"
        in bad_chk.stderr,
        f"--check reports the error (got {bad_chk.stderr!r})",
    )

    # Errors: exit 1, GCC-style message, and nothing written or touched.
    stamps = age([json_a])
    bad = run("--emit", "json", "-o", "outA", "--depfile", "outA.d", "idl/bad.ops.yaml", cwd=work)
    check(bad.returncode == 1, f"an IDL error exits 1 (got {bad.returncode})")
    check(bad.stdout == "", "errors go to stderr only")
    check(
        bad.stderr.startswith("idl/bad.ops.yaml:3:24: error: ")
        and "hint: did you mean `float`?" in bad.stderr,
        f"GCC-style diagnostic with a hint (got {bad.stderr!r})",
    )
    check(
        listing(os.path.join(work, "outA")) == ["main.ops.json"]
        and os.stat(json_a).st_mtime_ns == stamps[json_a],
        "a failed run writes nothing and touches nothing",
    )
    check(not os.path.exists(os.path.join(work, "outA/bad.ops.json")), "no json for a bad file")

    # --explain prints the slot map to stdout and writes nothing.
    ex = run("--explain", "scale_", "-I", "inc", "-o", "outE", "idl/main.ops.yaml", cwd=work)
    check(ex.returncode == 0, f"--explain exits 0 (got {ex.returncode}: {ex.stderr})")
    check(
        "lowered: scale_(Tensor x, Tensor(a!) cfg__inner__w, Tensor(b!) cfg__inner__b" in ex.stdout,
        f"--explain shows the lowered schema (got {ex.stdout!r})",
    )
    check(
        "cfg.inner.w    cfg__inner__w  Tensor -> Tensor(a!)" in ex.stdout,
        "--explain shows the slot rows",
    )
    check(not os.path.exists(os.path.join(work, "outE")), "--explain writes nothing")
    unknown = run("--explain", "nope", "-I", "inc", "idl/main.ops.yaml", cwd=work)
    check(
        unknown.returncode == 2,
        f"--explain of an unknown op is a usage error (got {unknown.returncode})",
    )
    check(
        "no op `nope`" in unknown.stderr and "`op` and `scale_`" in unknown.stderr,
        f"--explain lists the ops (got {unknown.stderr!r})",
    )

    # User text never reaches the terminal raw: escape sequences in a string
    # default (--explain) and in a quoted type name (a diagnostic) are shown
    # as `\x1b`, a bidi override as `<U+202E>`.
    write(
        os.path.join(work, "idl/esc.ops.yaml"),
        'namespace: esc\nops:\n  - func: "op(Tensor x, str s=\\"\\e[2J\\u202e\\") -> Tensor"\n'
        '  - func: "bad(Tensor x, \\e[31mflaot y) -> Tensor"\n',
    )
    esc = run("--check", "idl/esc.ops.yaml", cwd=work)
    check(
        esc.returncode == 1 and "\x1b" not in esc.stderr and "found `\\x1b`" in esc.stderr,
        f"a diagnostic shows control characters escaped (got {esc.stderr!r})",
    )
    write(
        os.path.join(work, "idl/esc.ops.yaml"),
        'namespace: esc\nops:\n  - func: "op(Tensor x, str s=\\"\\e[2J\\u202e\\") -> Tensor"\n',
    )
    esc = run("--explain", "op", "idl/esc.ops.yaml", cwd=work)
    check(
        esc.returncode == 0
        and "\x1b" not in esc.stdout
        and "\u202e" not in esc.stdout
        and "\\x1b[2J<U+202E>" in esc.stdout
        and "\n" in esc.stdout,
        f"--explain shows control characters escaped, its own line breaks kept (got {esc.returncode}: {esc.stdout!r} {esc.stderr!r})",
    )

    # Usage errors exit 2; --version and --help exit 0.
    for args, what in [
        ([], "no input"),
        (["--emit", "xml", "idl/main.ops.yaml"], "unknown --emit kind"),
        (["--frobnicate", "idl/main.ops.yaml"], "unknown option"),
        (["idl/main.ops.yaml", "idl/bad.ops.yaml"], "two inputs"),
    ]:
        r = run(*args, cwd=work)
        check(r.returncode == 2, f"{what}: exit 2 (got {r.returncode}: {r.stderr})")
        check(r.stderr != "", f"{what}: says why")
    missing = run("--check", "idl/absent.ops.yaml", cwd=work)
    check(
        missing.returncode == 1
        and "idl/absent.ops.yaml: error: cannot read file" in missing.stderr,
        f"a missing input is an error (got {missing.returncode}: {missing.stderr!r})",
    )
    version = run("--version", cwd=work)
    check(
        version.returncode == 0 and version.stdout.startswith("structopc "),
        f"--version (got {version.stdout!r})",
    )
    helptext = run("--help", cwd=work)
    check(
        helptext.returncode == 0 and "--emit" in helptext.stdout and "--depfile" in helptext.stdout,
        "--help",
    )


def write(path, body):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(body)


def hostile(work):
    # Inputs that are not regular files are refused at once: a FIFO would
    # block, /dev/zero would fill the memory before the size limit applied.
    os.mkfifo(os.path.join(work, "pipe.ops.yaml"))
    os.symlink("/dev/zero", os.path.join(work, "zero.ops.yaml"))
    for name, kind in [
        ("pipe.ops.yaml", "is a FIFO, not a regular file"),
        ("zero.ops.yaml", "is a device, not a regular file"),
    ]:
        r = run("--emit", "json", "-o", "outX", name, cwd=work)  # a hang: its timeout
        check(
            r.returncode == 1 and r.stderr == f"{name}: error: cannot read file: {kind}\n",
            f"{name}: exit 1 and says why (got {r.returncode}: {r.stderr!r})",
        )
    check(not os.path.exists(os.path.join(work, "outX")), "nothing written for unreadable inputs")

    # Symlinks planted in the output folder at the names a temporary file
    # used to have (`NAME.tmp.PID`, for the next few hundred process ids) and
    # at an output's own name: the file they point to is never written.
    out = os.path.join(work, "outH")
    os.makedirs(out)
    victim = os.path.join(work, "victim.txt")
    write(victim, "precious\n")
    try:
        with open("/proc/sys/kernel/ns_last_pid") as f:
            last_pid = int(f.read())
    except OSError:
        last_pid = os.getpid()
    for pid in range(last_pid + 1, last_pid + 300):
        os.symlink(victim, os.path.join(out, f"local.ops.json.tmp.{pid}"))
        os.symlink(victim, os.path.join(work, f"outH.d.tmp.{pid}"))
    os.symlink(victim, os.path.join(out, "local.ops.json"))
    r = run("--emit", "json", "-o", "outH", "--depfile", "outH.d", "idl/local.ops.yaml", cwd=work)
    check(
        r.returncode == 0, f"a run among planted symlinks succeeds (got {r.returncode}: {r.stderr})"
    )
    check(read(victim) == b"precious\n", "no planted symlink is followed")
    json_h = os.path.join(out, "local.ops.json")
    check(
        not os.path.islink(json_h) and b'"namespace": "local"' in read(json_h),
        "the output replaces a symlink at its name",
    )
    check(len(os.listdir(out)) == 1 + 299, "no temporary file is left beside the planted links")

    # A full disk (here: a file size limit, which fails writes with EFBIG as
    # ENOSPC would, once structopc ignores SIGXFSZ) while outputs are staged:
    # exit 1, and every output and the depfile keep their old content.
    out = os.path.join(work, "outF")
    fill = (
        "--emit",
        "h,json",
        "-I",
        "inc",
        "-o",
        "outF",
        "--depfile",
        "outF.d",
        "idl/main.ops.yaml",
    )
    a = run(*fill, cwd=work)
    check(a.returncode == 0, f"a run to fill later exits 0 (got {a.returncode}: {a.stderr})")
    before = {name: read(os.path.join(out, name)) for name in listing(out)}
    before_dep = read(os.path.join(work, "outF.d"))
    write(
        os.path.join(work, "idl/full.ops.yaml"),
        MAIN.replace("scale: float = 1.0", "scale: float = 3.0"),
    )
    os.replace(os.path.join(work, "idl/full.ops.yaml"), os.path.join(work, "idl/main.ops.yaml"))

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, resource.RLIM_INFINITY))

    full = run(*fill, cwd=work, preexec_fn=small_disk)
    check(
        full.returncode == 1
        and "structopc: error: cannot write outF/main.ops." in full.stderr
        and "File too large" in full.stderr,
        f"a full disk: exit 1 and a message (got {full.returncode}: {full.stderr!r})",
    )
    check(
        {name: read(os.path.join(out, name)) for name in listing(out)} == before,
        "a full disk: every output keeps its old content, no temporary file is left",
    )
    check(
        read(os.path.join(work, "outF.d")) == before_dep,
        "a full disk: the depfile keeps its old content",
    )
    write(os.path.join(work, "idl/main.ops.yaml"), MAIN)

    # A path that a depfile cannot hold: nothing is written, exit 1.
    write(os.path.join(work, "new\nline/local.ops.yaml"), LOCAL)
    nl = run(
        "--emit", "json", "-o", "outN", "--depfile", "outN.d", "new\nline/local.ops.yaml", cwd=work
    )
    check(
        nl.returncode == 1
        and nl.stderr.startswith(
            "structopc: error: cannot write depfile outN.d: the path `new\\nline/local.ops.yaml` contains a newline, "
            "which a depfile cannot express\n"
        ),
        f"a newline in a depfile path (got {nl.returncode}: {nl.stderr!r})",
    )
    check(
        listing(os.path.join(work, "outN")) == []
        and not os.path.exists(os.path.join(work, "outN.d")),
        "a depfile that cannot be written: no output either",
    )
    spaced = run(
        "--emit", "json", "-o", "out S", "--depfile", "outS.d", "idl/local.ops.yaml", cwd=work
    )
    check(
        spaced.returncode == 0
        and read(os.path.join(work, "outS.d")) == b"out\\ S/local.ops.json: idl/local.ops.yaml\n",
        "a space in a depfile path is escaped",
    )

    # An IDL that would generate gigabytes (200-deep records with 1,000-byte
    # field names, 150 ops: 215 KB; it once took 30 s and 1.4 GB to write
    # 850 MB) is refused at once, with little memory.
    lines = ["namespace: big", "records:"]
    for i in range(200):
        field = f"f{i}_" + "x" * (1000 - len(str(i)) - 2)
        lines.append(f"  R{i}: {{fields: {{{field}: {'Tensor' if i == 0 else f'R{i - 1}'}}}}}")
    lines += ["ops:"] + [f"  - func: op{k}(Tensor x, R199 cfg) -> Tensor" for k in range(150)]
    write(os.path.join(work, "big.ops.yaml"), "\n".join(lines) + "\n")
    big = os.path.getsize(os.path.join(work, "big.ops.yaml"))
    command = [STRUCTOPC, "--emit", "h,cpp,stubs,py,json", "-o", "outBig", "big.ops.yaml"]
    limit = None if SANITIZED else ADDRESS_SPACE_MB << 20
    r = subprocess.run(
        command,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=(lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
        if limit
        else None,
    )
    check(
        r.returncode == 1
        and "big.ops.yaml:3:17: error: field name `f0_" in r.stderr
        and "names are limited to 256 bytes" in r.stderr,
        f"a pathological IDL is an error within {ADDRESS_SPACE_MB} MB of address space "
        f"(got {r.returncode}: {r.stderr[:300]!r})",
    )
    if VALGRIND is None:
        print("no valgrind: the instruction bound of the pathological IDL is not checked")
    else:
        # 361 M instructions when this was written (1,700 per byte of input);
        # before the limits it took 30 s. The bound is 10,000 per byte.
        out = os.path.join(work, "big.callgrind")
        r = subprocess.run(
            [VALGRIND, "--tool=callgrind", f"--callgrind-out-file={out}"] + command,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=600,
        )
        collected = [
            int(line.split("Collected :")[1])
            for line in r.stderr.splitlines()
            if "Collected :" in line
        ]
        check(
            len(collected) == 1, f"callgrind counted structopc's instructions ({r.stderr[-500:]!r})"
        )
        if collected:
            per_byte = collected[0] / big
            print(
                f"pathological IDL: {collected[0]:,} instructions ({per_byte:,.0f} per byte of input)"
            )
            check(
                per_byte < 10_000,
                f"a pathological IDL is refused at once (took {collected[0]:,} "
                f"instructions, {per_byte:,.0f} per byte of its {big:,} bytes; the bound is 10,000)",
            )
    check(
        not os.path.exists(os.path.join(work, "outBig")), "nothing written for a pathological IDL"
    )


ADDRESS_SPACE_MB = 512

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("structopc")
    parser.add_argument("--valgrind")
    parser.add_argument("--sanitized", action="store_true")
    args = parser.parse_args()
    STRUCTOPC = os.path.abspath(args.structopc)
    VALGRIND, SANITIZED = args.valgrind, args.sanitized
    with tempfile.TemporaryDirectory() as work:
        main(work)
    with tempfile.TemporaryDirectory() as work:
        os.makedirs(os.path.join(work, "idl"))
        os.makedirs(os.path.join(work, "inc"))
        for rel, body in [
            ("idl/main.ops.yaml", MAIN),
            ("idl/local.ops.yaml", LOCAL),
            ("inc/common.ops.yaml", COMMON),
        ]:
            write(os.path.join(work, rel), body)
        hostile(work)
    print(f"{len(failures)} failed checks" if failures else "all CLI checks passed")
    sys.exit(1 if failures else 0)
