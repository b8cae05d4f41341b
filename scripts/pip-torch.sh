#!/usr/bin/env bash
# Makes .venv-torch: a virtual environment with the pip release of torch that
# structop is built and tested against (torch==2.13.0, CPU build) and the
# Python tools the tests use. Idempotent; quick when the environment is there.
#
#   bash scripts/pip-torch.sh          tools/requirements/main.txt (torch, numpy)
#   bash scripts/pip-torch.sh --tests  tools/requirements/tests.txt (and those)
#
# The interpreter is $STRUCTOP_PIP_PYTHON, default the `python3` first on PATH.
# Packages come from this machine's pip configuration (its index and mirrors).
# Where the distribution's Meson is older than 1.0 (or missing), Meson comes
# from PyPI into the same environment (scripts/common.sh uses it).
#
# The environment lives outside the checkout and .venv-torch is a symbolic
# link to it, so that every checkout of this machine with the same interpreter
# and pins shares one (a fresh clone links it in a moment instead of
# installing torch again): $STRUCTOP_VENVS/torch-<hash of interpreter and
# pins>, STRUCTOP_VENVS defaulting to ${XDG_CACHE_HOME:-~/.cache}/structop/venvs.
# A .venv-torch that is a folder (made so before, or by hand) is used in
# place; STRUCTOP_VENVS=none makes it a folder in the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh

set_name=main
case "${1:-}" in
  "") ;;
  --tests) set_name=tests ;;
  *) echo "usage: bash scripts/pip-torch.sh [--tests]" >&2; exit 2 ;;
esac
python=${STRUCTOP_PIP_PYTHON:-python3}

args=(-r "tools/requirements/$set_name.txt")
if ! { command -v meson >/dev/null && meson_at_least_1 meson; }; then
  args+=("meson>=1.0")
fi

# What was installed, as text, per requirements set (tests includes main);
# when it is the same, nothing to do.
want=$(printf '%s\n' "${args[*]:2}"; cat tools/requirements/*.txt)

# The real interpreter, not a shim (pyenv), so that the venv points at it.
real=$("$python" -c 'import sys; print(sys.executable)')
target=$venv
if [ "${STRUCTOP_VENVS:-}" != none ] && ! { [ -d "$venv" ] && [ ! -L "$venv" ]; }; then
  key=$(printf '%s\n' "$real" "$want" | sha256sum | cut -c1-16)
  target=${STRUCTOP_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/structop/venvs}/torch-$key
  mkdir -p "$(dirname "$target")"
  [ "$(readlink "$venv" 2>/dev/null)" = "$target" ] || ln -sfn "$target" "$venv"
  # One checkout at a time makes or completes it.
  exec 9>"$target.lock"
  flock 9
fi

stamp=$target/.structop-$set_name
if [ -x "$target/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

if [ ! -x "$target/bin/python" ]; then
  echo "structop: creating $target ($real)" >&2
  rm -rf "$target"
  "$real" -m venv "$target"
fi
echo "structop: installing ${args[*]} into $target" >&2
# (Through the real path: the scripts pip writes name their interpreter.)
# (A pip configuration can name package folders that do not exist here; pip
# warns about each, which says nothing about the install.)
"$target/bin/python" -m pip install -q --disable-pip-version-check "${args[@]}" \
  2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
"$target/bin/python" -c "import torch, numpy" || {
  echo "structop: $target does not import torch and numpy after the install" >&2
  exit 1
}
printf '%s\n' "$want" >"$stamp"
if [ "$set_name" = tests ]; then
  printf '%s\n' "$want" >"$target/.structop-main"
fi
