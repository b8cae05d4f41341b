#!/usr/bin/env python3
"""End-to-end checks of the structopc binary: determinism, write-if-changed,
--check, --depfile, --explain, exit codes.

Only `--emit json` is used: the other emitters are still being written.
Usage: cli_test.py STRUCTOPC
"""
import os
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


def run(*args, cwd):
    return subprocess.run([STRUCTOPC, *args], cwd=cwd, capture_output=True, text=True, timeout=60)


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
    for rel, body in [("idl/main.ops.yaml", MAIN), ("idl/local.ops.yaml", LOCAL), ("inc/common.ops.yaml", COMMON),
                      ("idl/bad.ops.yaml", BAD)]:
        with open(os.path.join(work, rel), "w", encoding="utf-8") as f:
            f.write(body)

    # Two runs into two folders: identical bytes. (`--emit json FILE`: the
    # input after --emit must not be taken as a second --emit value.)
    a = run("--emit", "json", "idl/main.ops.yaml", "-I", "inc", "-o", "outA", "--depfile", "outA.d", cwd=work)
    check(a.returncode == 0, f"first run exits 0 (got {a.returncode}: {a.stderr})")
    check(a.stdout == "" and a.stderr == "", f"a clean run prints nothing (got {a.stdout!r} {a.stderr!r})")
    b = run("-I", "inc", "-o", "outB", "--emit", "json", "idl/main.ops.yaml", cwd=work)
    check(b.returncode == 0, f"second run exits 0 (got {b.returncode}: {b.stderr})")
    check(listing(os.path.join(work, "outA")) == ["main.ops.json"], "outA holds exactly main.ops.json")
    json_a, json_b = os.path.join(work, "outA/main.ops.json"), os.path.join(work, "outB/main.ops.json")
    check(os.path.exists(json_b) and read(json_a) == read(json_b), "two runs give byte-identical json")
    check(b'"schema": "op(Tensor x, Tensor cfg__inner__w, Tensor cfg__inner__b, float cfg__scale=1.0, '
          b'str cfg__mode=\\"causal\\") -> Tensor"' in read(json_a), "json holds the lowered schema")

    # The depfile lists the output and every IDL file read, main file first.
    depfile = os.path.join(work, "outA.d")
    check(read(depfile).decode() ==
          "outA/main.ops.json: idl/main.ops.yaml idl/local.ops.yaml inc/common.ops.yaml\n",
          f"depfile content (got {read(depfile)!r})")

    # A second run into the same folder rewrites nothing.
    stamps = age([json_a, depfile])
    again = run("--emit", "json", "-I", "inc", "-o", "outA", "--depfile", "outA.d", "idl/main.ops.yaml", cwd=work)
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
    chk = run("--check", "--emit", "json", "-I", "inc", "-o", "outC", "--depfile", "outC.d", "idl/main.ops.yaml",
              cwd=work)
    check(chk.returncode == 0 and chk.stdout == "" and chk.stderr == "", f"--check of a good file: exit 0, silent")
    check(not os.path.exists(os.path.join(work, "outC")) and not os.path.exists(os.path.join(work, "outC.d")),
          "--check writes nothing")
    bad_chk = run("--check", "idl/bad.ops.yaml", cwd=work)
    check(bad_chk.returncode == 1, f"--check of a bad file exits 1 (got {bad_chk.returncode})")
    check("idl/bad.ops.yaml:3:24: error: parameter `s` of op `op`: unknown type `flaot`" in bad_chk.stderr,
          f"--check reports the error (got {bad_chk.stderr!r})")

    # Errors: exit 1, GCC-style message, and nothing written or touched.
    stamps = age([json_a])
    bad = run("--emit", "json", "-o", "outA", "--depfile", "outA.d", "idl/bad.ops.yaml", cwd=work)
    check(bad.returncode == 1, f"an IDL error exits 1 (got {bad.returncode})")
    check(bad.stdout == "", "errors go to stderr only")
    check(bad.stderr.startswith("idl/bad.ops.yaml:3:24: error: ") and "hint: did you mean `float`?" in bad.stderr,
          f"GCC-style diagnostic with a hint (got {bad.stderr!r})")
    check(listing(os.path.join(work, "outA")) == ["main.ops.json"] and os.stat(json_a).st_mtime_ns == stamps[json_a],
          "a failed run writes nothing and touches nothing")
    check(not os.path.exists(os.path.join(work, "outA/bad.ops.json")), "no json for a bad file")

    # --explain prints the slot map to stdout and writes nothing.
    ex = run("--explain", "scale_", "-I", "inc", "-o", "outE", "idl/main.ops.yaml", cwd=work)
    check(ex.returncode == 0, f"--explain exits 0 (got {ex.returncode}: {ex.stderr})")
    check("lowered: scale_(Tensor x, Tensor(a!) cfg__inner__w, Tensor(b!) cfg__inner__b" in ex.stdout,
          f"--explain shows the lowered schema (got {ex.stdout!r})")
    check("cfg.inner.w    cfg__inner__w  Tensor -> Tensor(a!)" in ex.stdout, "--explain shows the slot rows")
    check(not os.path.exists(os.path.join(work, "outE")), "--explain writes nothing")
    unknown = run("--explain", "nope", "-I", "inc", "idl/main.ops.yaml", cwd=work)
    check(unknown.returncode == 2, f"--explain of an unknown op is a usage error (got {unknown.returncode})")
    check("no op `nope`" in unknown.stderr and "`op` and `scale_`" in unknown.stderr,
          f"--explain lists the ops (got {unknown.stderr!r})")

    # Usage errors exit 2; --version and --help exit 0.
    for args, what in [([], "no input"), (["--emit", "xml", "idl/main.ops.yaml"], "unknown --emit kind"),
                       (["--frobnicate", "idl/main.ops.yaml"], "unknown option"),
                       (["idl/main.ops.yaml", "idl/bad.ops.yaml"], "two inputs")]:
        r = run(*args, cwd=work)
        check(r.returncode == 2, f"{what}: exit 2 (got {r.returncode}: {r.stderr})")
        check(r.stderr != "", f"{what}: says why")
    missing = run("--check", "idl/absent.ops.yaml", cwd=work)
    check(missing.returncode == 1 and "idl/absent.ops.yaml: error: cannot read file" in missing.stderr,
          f"a missing input is an error (got {missing.returncode}: {missing.stderr!r})")
    version = run("--version", cwd=work)
    check(version.returncode == 0 and version.stdout.startswith("structopc "), f"--version (got {version.stdout!r})")
    helptext = run("--help", cwd=work)
    check(helptext.returncode == 0 and "--emit" in helptext.stdout and "--depfile" in helptext.stdout, "--help")


if __name__ == "__main__":
    STRUCTOPC = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as work:
        main(work)
    print(f"{len(failures)} failed checks" if failures else "all CLI checks passed")
    sys.exit(1 if failures else 0)
