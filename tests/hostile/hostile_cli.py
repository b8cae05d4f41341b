#!/usr/bin/env python3
"""Hostile command lines (issue 47): no user file lost, no option injection.

- Outputs over inputs: `--depfile` (or an output) that names the IDL or an
  included file, directly, through a symlink, a `..` path or a hard link, or
  that names another output of the run (`-o . --depfile X.ops.h`), exits 1
  with `structopc: error: cannot write depfile PATH: that is ...`, and
  nothing is written: every file keeps its bytes, no folder or temporary
  file appears. A depfile beside them is still written (exit 0).
- Options into git: a `--compat` revision that starts with `-` or holds a
  character no revision has exits 1 with one line naming it, and git is not
  run at all; a legitimate `REV:PATH` reaches git with `--end-of-options`
  before the object, and git's error is cut to its first line. `git` here is
  a stand-in first on PATH that logs its arguments (and runs the real git,
  or prints a 40-line usage text and fails).

Usage: hostile_cli.py STRUCTOPC
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

MAIN = "namespace: w\ninclude: [common.ops.yaml]\nops:\n  - func: f(Tensor x, Cfg cfg) -> Tensor\n"
COMMON = "namespace: c\nrecords:\n  Cfg: {fields: {scale: float = 1.0}}\n"

FAKE_GIT = """\
import json, os, sys
with open(os.environ["FAKE_GIT_LOG"], "a", encoding="utf-8") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
if os.environ.get("FAKE_GIT_USAGE"):
    sys.stderr.write("usage: git cat-file <type> <object>\\n" + "   or: more usage\\n" * 40)
    sys.exit(129)
real = os.environ.get("REAL_GIT")
if not real:
    sys.stderr.write("fatal: no real git\\n")
    sys.exit(128)
os.execv(real, ["git", *sys.argv[1:]])
"""

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print(f"FAIL: {what}")


def run(args, cwd, env=None):
    return subprocess.run(
        [STRUCTOPC, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def snapshot(folder):
    """Every file and folder under `folder`, with the bytes of each file."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, folder)
            if os.path.islink(path):
                out[rel] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                out[rel] = ("folder",)
            else:
                with open(path, "rb") as f:
                    out[rel] = ("file", f.read())
    return out


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def fresh(work):
    """The clash cases' folder, made anew (a failing case may have replaced
    the IDL): the IDL and its include, a symlink, a hard link and a `..`
    path to it, a symlink to the folder, and a header generated before."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "sub"))
    write(os.path.join(work, "w.ops.yaml"), MAIN)
    write(os.path.join(work, "common.ops.yaml"), COMMON)
    os.symlink("w.ops.yaml", os.path.join(work, "link.ops.yaml"))
    os.link(os.path.join(work, "w.ops.yaml"), os.path.join(work, "hard.ops.yaml"))
    os.symlink(".", os.path.join(work, "here"))
    os.makedirs(os.path.join(work, "gen"))
    write(os.path.join(work, "gen", "w.ops.h"), "// an older header\n")


def clashes(scratch):
    work = os.path.join(scratch, "clash")
    # (arguments, the message's tail after `cannot write depfile PATH: `)
    reads = "that is `w.ops.yaml`, which this run reads"
    cases = [
        (["-o", "out", "--depfile", "w.ops.yaml"], reads),  # the reproduction
        (["-o", "out", "--depfile", "./w.ops.yaml"], reads),
        (["-o", "out", "--depfile", os.path.join(work, "w.ops.yaml")], reads),
        (["-o", "out", "--depfile", "sub/../w.ops.yaml"], reads),
        (["-o", "out", "--depfile", "link.ops.yaml"], reads),
        (["-o", "out", "--depfile", "hard.ops.yaml"], reads),
        (["-o", "out", "--depfile", "here/w.ops.yaml"], reads),
        (
            ["-o", "out", "--depfile", "common.ops.yaml"],
            "that is `common.ops.yaml`, which this run reads",
        ),
        (["-o", ".", "--depfile", "w.ops.h"], "that is `./w.ops.h`, another output of this run"),
        (
            ["-o", "out", "--depfile", "out/w.ops.cpp"],
            "that is `out/w.ops.cpp`, another output of this run",
        ),
        (
            ["-o", "gen", "--depfile", "gen/w.ops.h"],
            "that is `gen/w.ops.h`, another output of this run",
        ),
        (
            ["-o", "gen", "--emit", "h,stubs", "--depfile", "here/gen/w.ops.stubs.cpp"],
            "that is `gen/w.ops.stubs.cpp`, another output of this run",
        ),
    ]
    for args, message in cases:
        fresh(work)
        before = snapshot(work)
        r = run([*args, "w.ops.yaml"], work)
        depfile = args[args.index("--depfile") + 1]
        want = f"structopc: error: cannot write depfile {depfile}: {message}\n"
        check(
            r.returncode == 1 and r.stderr.startswith(want),
            f"{args}: exit 1 and {want!r} (got {r.returncode}: {r.stderr!r})",
        )
        after = snapshot(work)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        check(changed == [], f"{args}: nothing is written (changed: {changed})")

    # An output (not the depfile) that is a hard link of the IDL.
    fresh(work)
    os.makedirs(os.path.join(work, "linked"))
    os.link(os.path.join(work, "w.ops.yaml"), os.path.join(work, "linked", "w.ops.json"))
    before = snapshot(work)
    r = run(["--emit", "json", "-o", "linked", "w.ops.yaml"], work)
    want = (
        "structopc: error: cannot write linked/w.ops.json: that is `w.ops.yaml`, "
        "which this run reads\n"
    )
    check(
        r.returncode == 1 and r.stderr == want,
        f"an output hard-linked to the IDL: exit 1 and {want!r} (got {r.returncode}: {r.stderr!r})",
    )
    check(snapshot(work) == before, "an output hard-linked to the IDL: nothing is written")

    # Beside all that, a depfile of its own is written.
    fresh(work)
    r = run(["-o", "out", "--depfile", "w.d", "w.ops.yaml"], work)
    check(r.returncode == 0, f"a depfile of its own: exit 0 (got {r.returncode}: {r.stderr!r})")
    text = None
    if os.path.exists(os.path.join(work, "w.d")):
        with open(os.path.join(work, "w.d"), encoding="utf-8") as f:
            text = f.read()
    check(
        text == "out/w.ops.h out/w.ops.cpp: w.ops.yaml common.ops.yaml\n",
        f"a depfile of its own lists the outputs and inputs (got {text!r})",
    )
    with open(os.path.join(work, "w.ops.yaml"), encoding="utf-8") as f:
        check(f.read() == MAIN, "the IDL keeps its text")
    return len(cases) + 2


def git_calls(log):
    if not os.path.exists(log):
        return []
    with open(log, encoding="utf-8") as f:
        calls = [json.loads(line) for line in f]
    os.remove(log)
    return calls


def injections(scratch):
    work = os.path.join(scratch, "git")
    bin_dir = os.path.join(scratch, "bin")
    os.makedirs(work)
    os.makedirs(bin_dir)
    fake = os.path.join(bin_dir, "git")
    write(fake, f"#!{sys.executable}\n" + FAKE_GIT)
    os.chmod(fake, 0o755)
    write(os.path.join(work, "w.ops.yaml"), MAIN)
    write(os.path.join(work, "common.ops.yaml"), COMMON)
    real_git = shutil.which("git")
    log = os.path.join(scratch, "git.log")
    env = dict(
        os.environ,
        PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
        FAKE_GIT_LOG=log,
        REAL_GIT=real_git or "",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_SYSTEM=os.devnull,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
    )
    if real_git:
        for cmd in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "v1"]):
            subprocess.run([real_git, *cmd], cwd=work, env=env, check=True, capture_output=True)
    checked = 0
    for rev, why in [
        ("-p", "it starts with `-`, which git would read as an option"),
        ("--output=/some/path", "it starts with `-`, which git would read as an option"),
        ("--batch=%(objectname)", "it starts with `-`, which git would read as an option"),
        ("-", "it starts with `-`, which git would read as an option"),
        ("HEAD branch", "it contains a space"),
        ("HEAD\n--batch", "it contains a control character"),
        ("refs/*", "it contains `*`"),
        ("HEAD..main", "it contains `..` (a range is not one revision)"),
    ]:
        for old, new in [(f"{rev}:w.ops.yaml", "w.ops.yaml"), ("w.ops.yaml", f"{rev}:w.ops.yaml")]:
            checked += 1
            r = run(["--compat", old, new], work, env)
            shown = rev.replace("\n", "\\n")
            want = (
                f"structopc: error: --compat: `{shown}` in `{shown}:w.ops.yaml` "
                f"is not a git revision: {why}\n"
            )
            if new.startswith("-"):
                # As NEW, CLI11 takes it for an option of structopc's: a usage error.
                want = "--compat: At least 2 required but received 1\n"
            code = 2 if new.startswith("-") else 1
            check(
                r.returncode == code and r.stderr.startswith(want),
                f"--compat {old!r} {new!r}: exit {code} and {want!r} "
                f"(got {r.returncode}: {r.stderr!r})",
            )
            calls = git_calls(log)
            check(calls == [], f"--compat {old!r} {new!r}: git is not run (got {calls})")

    # git's own error, here a usage text: its first line only.
    checked += 1
    r = run(["--compat", "HEAD:w.ops.yaml", "w.ops.yaml"], work, dict(env, FAKE_GIT_USAGE="1"))
    check(
        r.returncode == 1
        and "git: usage: git cat-file <type> <object>" in r.stderr
        and "more usage" not in r.stderr
        and len(r.stderr.splitlines()) <= 2,
        f"git's error on one line (got {r.returncode}: {r.stderr!r})",
    )
    calls = git_calls(log)
    check(
        calls != [] and all(c[c.index("cat-file") + 2] == "--end-of-options" for c in calls),
        f"git cat-file gets --end-of-options before the object (got {calls})",
    )

    if not real_git:
        print("no git on PATH: a legitimate REV:PATH is not checked")
        return checked
    checked += 1
    r = run(["--compat", "HEAD:w.ops.yaml", "w.ops.yaml"], work, env)
    check(
        (r.returncode, r.stdout, r.stderr) == (0, "", ""),
        f"--compat HEAD:w.ops.yaml w.ops.yaml: exit 0 (got {r.returncode}: {r.stderr!r})",
    )
    calls = git_calls(log)
    # Each call: `-C FOLDER cat-file blob|-e --end-of-options OBJECT`.
    objects = {
        tuple(c[c.index("--end-of-options") + 1 :]) for c in calls if "--end-of-options" in c
    }
    check(
        len(objects) == 2
        and all("--end-of-options" in c for c in calls)
        and objects == {("HEAD:./common.ops.yaml",), ("HEAD:./w.ops.yaml",)},
        f"the IDL and its include read from git after --end-of-options (got {calls})",
    )
    return checked


if __name__ == "__main__":
    STRUCTOPC = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as scratch:
        count = clashes(scratch) + injections(scratch)
    print(f"hostile command lines: {count} cases, {len(failures)} failed checks")
    sys.exit(1 if failures else 0)
