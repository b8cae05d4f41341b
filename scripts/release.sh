#!/usr/bin/env bash
# Builds the release artifacts into OUT (default dist/): the sdist and, built
# from it, the manylinux wheel (tools/release.py says how; docs/install.md,
# "Release artifacts"). The tools (tools/requirements/release.txt) go into
# .venv-release, made once; the wheel's build folder is kept in
# build-release/, so a rerun compiles what changed.
#
#   bash scripts/release.sh [OUT]
#
# The sdist holds the files git tracks, as they are in the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-dist}
tools=.venv-release
want=$(cat tools/requirements/release.txt)
if ! [ -x "$tools/bin/python" ] || [ "$(cat "$tools/.structop-release" 2>/dev/null)" != "$want" ]; then
  echo "structop: installing tools/requirements/release.txt into $tools" >&2
  rm -rf "$tools"
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install -q --disable-pip-version-check -r tools/requirements/release.txt \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
  printf '%s\n' "$want" >"$tools/.structop-release"
fi
exec "$tools/bin/python" tools/release.py . "$out" --work build-release
