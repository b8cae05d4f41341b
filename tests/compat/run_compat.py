#!/usr/bin/env python3
"""`structopc --compat` corpus: each case is a folder of cases/ holding
`old.ops.yaml` and `new.ops.yaml` (and the files they include), an optional
`args` file (extra arguments, one a line, e.g. `--allow` and an op), and the
approved golden `expected.txt`: the line `exit N`, then structopc's standard
error, byte for byte. structopc runs in the case's folder as
`structopc --compat old.ops.yaml new.ops.yaml ARGS...` and must print nothing
on standard output.

On a difference the actual result is written to `expected.txt.unapproved`
beside the case and the test fails; review it, and if it is right, run this
script with --approve to move it into place (never approve blindly).

Two more checks run every time:
- usage: misuses of --compat, --allow and --print-json-schema exit 2;
- self: every example, test and golden IDL compared with itself prints
  nothing and exits 0.
With --git, only this check runs (test compat-git; exit 77, skipped, without
git on PATH):
- git: a temporary repository with an IDL and its include committed, then
  changed: `--compat HEAD:x.ops.yaml x.ops.yaml` reads OLD (and its include)
  from git and names it `HEAD:...` in its diagnostics.

Usage: run_compat.py STRUCTOPC SOURCE_ROOT [--approve | --git]
"""

import difflib
import os
import shutil
import subprocess
import sys
import tempfile


def run(structopc, args, cwd):
    return subprocess.run([structopc, *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def corpus(structopc, root, approve):
    failures, count = [], 0
    for name in sorted(os.listdir(root)):
        case = os.path.join(root, name)
        if not os.path.isfile(os.path.join(case, "new.ops.yaml")):
            continue
        count += 1
        expected_path = os.path.join(case, "expected.txt")
        unapproved = expected_path + ".unapproved"
        if approve:
            if os.path.exists(unapproved):
                shutil.move(unapproved, expected_path)
                print(f"approved {name}")
            continue
        extra = []
        if os.path.exists(os.path.join(case, "args")):
            extra = open(os.path.join(case, "args"), encoding="utf-8").read().split("\n")
            extra = [a for a in extra if a]
        r = run(structopc, ["--compat", "old.ops.yaml", "new.ops.yaml", *extra], case)
        actual = f"exit {r.returncode}\n{r.stderr}"
        problems = []
        if r.stdout:
            problems.append(f"printed to stdout: {r.stdout!r}")
        expected = (
            open(expected_path, encoding="utf-8").read() if os.path.exists(expected_path) else None
        )
        if expected != actual:
            with open(unapproved, "w", encoding="utf-8") as f:
                f.write(actual)
            if expected is None:
                problems.append(f"no expected.txt yet; actual output is in {unapproved}")
            else:
                diff = difflib.unified_diff(
                    expected.splitlines(True), actual.splitlines(True), "expected", "actual"
                )
                problems.append("differs:\n" + "".join(diff))
        elif os.path.exists(unapproved):
            os.remove(unapproved)
        if problems:
            failures.append((name, problems))
    return count, failures


def git_case(structopc):
    """OLD from a git revision, its include too; NEW from the working tree."""
    problems = []
    git = shutil.which("git")
    with tempfile.TemporaryDirectory() as repo:
        env = dict(
            os.environ,
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_CONFIG_SYSTEM=os.devnull,
            GIT_AUTHOR_NAME="t",
            GIT_AUTHOR_EMAIL="t@t",
            GIT_COMMITTER_NAME="t",
            GIT_COMMITTER_EMAIL="t@t",
        )
        os.makedirs(os.path.join(repo, "idl"))

        def write(path, text):
            with open(os.path.join(repo, path), "w", encoding="utf-8") as f:
                f.write(text)

        write(
            "idl/common.ops.yaml",
            "namespace: c\nrecords:\n  Cfg:\n    fields:\n"
            "      w: Tensor\n      scale: float = 1.0\n",
        )
        write(
            "idl/x.ops.yaml",
            "namespace: x\ninclude: [common.ops.yaml]\nops:\n"
            "  - func: f(Tensor x, Cfg cfg) -> Tensor\n",
        )
        for cmd in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "v1"]):
            subprocess.run([git, *cmd], cwd=repo, env=env, check=True, capture_output=True)
        r = run(structopc, ["--compat", "HEAD:idl/x.ops.yaml", "idl/x.ops.yaml"], repo)
        if (r.returncode, r.stderr, r.stdout) != (0, "", ""):
            problems.append(f"unchanged: exit {r.returncode}, stderr {r.stderr!r}")
        write(
            "idl/common.ops.yaml",
            "namespace: c\nrecords:\n  Cfg:\n    fields:\n"
            "      w: Tensor\n      scale: float = 2.0\n",
        )
        # From a subfolder: REV:./path is relative to the current folder, as in git.
        r = run(structopc, ["--compat", "HEAD:x.ops.yaml", "x.ops.yaml"], os.path.join(repo, "idl"))
        want = (
            "common.ops.yaml:6:7: error: op `f`: the default of lowered argument `cfg.scale` "
            "(`cfg__scale`) changed from `1.0` to `2.0`"
        )
        if r.returncode != 1 or not r.stderr.startswith(want):
            problems.append(f"changed include: exit {r.returncode}, stderr {r.stderr!r}")
        r = run(structopc, ["--compat", "HEAD:idl/missing.ops.yaml", "idl/x.ops.yaml"], repo)
        if r.returncode != 1 or not r.stderr.startswith(
            "HEAD:idl/missing.ops.yaml: error: cannot read"
        ):
            problems.append(f"missing file: exit {r.returncode}, stderr {r.stderr!r}")
        r = run(structopc, ["--compat", "HEAD~5:idl/x.ops.yaml", "idl/x.ops.yaml"], repo)
        if r.returncode != 1 or "error: cannot read file: git:" not in r.stderr:
            problems.append(f"bad revision: exit {r.returncode}, stderr {r.stderr!r}")
    return problems


def usage_errors(structopc, cases_root):
    """Exit 2 with a message for each misuse of --compat and --allow."""
    case = os.path.join(cases_root, "identical")
    problems = []
    for args, message in [
        (["--compat", "old.ops.yaml"], "--compat"),
        (["extra.ops.yaml", "--compat", "old.ops.yaml", "new.ops.yaml"], "takes no other IDL file"),
        (["--compat", "old.ops.yaml", "new.ops.yaml", "extra.ops.yaml"], "--compat"),
        (["--compat", "old.ops.yaml", "new.ops.yaml", "--emit", "h"], "writes nothing"),
        (["--compat", "old.ops.yaml", "new.ops.yaml", "--explain", "affine"], "writes nothing"),
        (["--allow", "affine", "new.ops.yaml"], "--allow goes with --compat"),
        (["--print-json-schema", "new.ops.yaml"], "takes no IDL file"),
        ([], "no IDL file given"),
    ]:
        r = run(structopc, args, case)
        if r.returncode != 2 or message not in r.stderr or r.stdout:
            problems.append(
                f"{args}: exit {r.returncode}, stdout {r.stdout[:200]!r}, stderr {r.stderr[:300]!r}"
            )
    return problems


def self_compare(structopc, source_root):
    """Every example, test and golden IDL against itself: silent, exit 0."""
    skip = {
        os.path.join(source_root, "tests", "diagnostics"),  # bad IDLs by design
        os.path.join(source_root, "tests", "compat", "cases"),
    }
    files = []
    for folder, dirs, names in os.walk(source_root):
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith((".", "build", "subprojects"))
            and os.path.join(folder, d) not in skip
        )
        files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".ops.yaml")]
    problems = []
    for path in files:
        folder = os.path.dirname(path)
        # The examples include common.ops.yaml from their own folder.
        r = run(structopc, ["--compat", path, path, "-I", folder], folder)
        if (r.returncode, r.stdout, r.stderr) != (0, "", ""):
            problems.append(
                f"{os.path.relpath(path, source_root)}: exit {r.returncode}, "
                f"stderr {r.stderr[:2000]!r}"
            )
    return len(files), problems


def main():
    structopc = os.path.abspath(sys.argv[1])
    source_root = os.path.abspath(sys.argv[2])
    approve = "--approve" in sys.argv[3:]
    root = os.path.join(source_root, "tests", "compat", "cases")
    if "--git" in sys.argv[3:]:
        if shutil.which("git") is None:
            print("SKIP: git is not on PATH")
            return 77
        problems = git_case(structopc)
        for p in problems:
            print("FAIL git REV:path: " + p)
        print(f"git REV:path: {len(problems)} problems")
        return 1 if problems else 0
    count, failures = corpus(structopc, root, approve)
    if approve:
        return 0
    usage_problems = usage_errors(structopc, root)
    if usage_problems:
        failures.append(("usage errors", usage_problems))
    self_count, self_problems = self_compare(structopc, source_root)
    if self_problems:
        failures.append(("self-compare", self_problems))
    for name, problems in failures:
        print(f"FAIL {name}")
        for p in problems:
            print("  " + p.replace("\n", "\n  "))
    print(
        f"{count} compat cases, usage errors, {self_count} IDLs compared with "
        "themselves; "
        f"{len(failures)} failed"
    )
    if count < 30 or self_count < 10:
        print("too few cases found")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
