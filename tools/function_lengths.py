#!/usr/bin/env python3
"""Lines per C++ function, longest first (a developer's measuring tool).

Universal Ctags finds each function's first and last line (`--fields=+e`:
the body's closing brace), so a function is counted from its signature to
its closing brace, comments and blank lines inside included; lambdas count
as part of the function around them. Files are read as clang-formatted
C++ (the repository's `.clang-format`).

Usage: function_lengths.py [--over N] [--allow FILE] [--top N] PATH...
  PATH        files or folders (folders: every .cpp and .h below them)
  --over N    only functions longer than N lines; exit status 1 if any
  --allow F   with --over: the functions (`LINES NAME PATH`, one a line, `#`
              comments) still allowed to be longer, each at most LINES long;
              a longer one fails; an entry that no longer matches (shorter,
              gone) is reported, to be lowered or removed
  --top N     print at most N rows (default: all)

Example (issue 29's bar: no function over 80 lines in the compiler):
  tools/function_lengths.py --over 80 compiler
"""

import argparse
import os
import shutil
import subprocess
import sys


def sources(paths):
    for path in paths:
        if os.path.isdir(path):
            for root, _, files in os.walk(path):
                for name in sorted(files):
                    if name.endswith((".cpp", ".h")):
                        yield os.path.join(root, name)
        else:
            yield path


def functions(files, ctags):
    """(lines, name, file, first line) of every function definition."""
    run = subprocess.run(
        [
            ctags,
            "-x",
            "--_xformat=%{line} %{end} %N %F",
            "--kinds-C++=f",
            "--fields=+e",
            "--language-force=C++",
            "-o",
            "-",
        ]
        + list(files),
        capture_output=True,
        text=True,
        check=True,
    )
    out = []
    for line in run.stdout.splitlines():
        first, end, name, path = line.split(" ", 3)
        if end.isdigit():  # a declaration without body has no end
            out.append((int(end) - int(first) + 1, name, path, int(first)))
    return sorted(out, key=lambda f: (-f[0], f[2], f[3]))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+")
    p.add_argument("--over", type=int, default=0)
    p.add_argument("--top", type=int, default=0)
    p.add_argument("--allow")
    a = p.parse_args()
    ctags = shutil.which("ctags") or shutil.which("universal-ctags")
    if not ctags:
        print(
            "function_lengths.py needs Universal Ctags (Debian: apt install universal-ctags)",
            file=sys.stderr,
        )
        return 2
    rows = [f for f in functions(sources(a.paths), ctags) if f[0] > a.over]
    if a.allow:
        return check_allowed(rows, a.allow, a.over)
    for lines, name, path, first in rows[: a.top or None]:
        print(f"{lines:5}  {name}  {path}:{first}")
    return 1 if a.over and rows else 0


def check_allowed(rows, allow_path, over):
    """Fails on a function over the limit beyond its allowance; reports an
    allowance that is stale (its function is shorter now, or gone)."""
    allowed = {}
    with open(allow_path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if line:
                allowed[(line[1], line[2])] = int(line[0])
    failed = False
    seen = set()
    for lines, name, path, first in rows:
        key = (name, os.path.relpath(path))
        seen.add(key)
        limit = allowed.get(key)
        if limit is None or lines > limit:
            failed = True
            print(
                f"{path}:{first}: {name} has {lines} lines (limit {over}"
                + (f", allowed {limit}" if limit else "")
                + "): split it"
            )
        elif lines < limit:
            print(
                f"{allow_path}: {name} ({key[1]}) has {lines} lines now, not {limit}: "
                f"lower its allowance (or remove it at {over} or fewer)"
            )
    for key in sorted(set(allowed) - seen):
        print(
            f"{allow_path}: {key[0]} ({key[1]}) is no longer over {over} lines (or gone): "
            f"remove its line"
        )
    if not failed:
        print(f"no function over {over} lines beyond the {len(allowed)} allowed in {allow_path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
