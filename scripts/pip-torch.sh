#!/usr/bin/env bash
# Makes .venv-torch: a virtual environment with the pip release of torch that
# structop is tested against (torch==2.13.0, CPU build), for the second torch
# leg of scripts/test.sh. Idempotent; quick when the environment is there.
#
# The interpreter is $STRUCTOP_PIP_PYTHON, default the `python3` first on PATH
# (a Python 3.11 with pip on these machines; the pinned version matters: an
# unpinned `torch` pulls a CUDA build of several GB). When the Debian 13
# chroot is used, the environment is made outside it, with this machine's pip
# configuration, and its base Python is mounted inside (scripts/debian13.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

torch_version=2.13.0
numpy_version=2.4.6  # torch warns at import without numpy
venv=.venv-torch
python=${STRUCTOP_PIP_PYTHON:-python3}

have_version() {
  [ -x "$venv/bin/python" ] &&
    "$venv/bin/python" -c "import sys, numpy, torch
sys.exit(torch.__version__.split('+')[0] != '$torch_version' or numpy.__version__ != '$numpy_version')" \
      2>/dev/null
}

if have_version; then
  exit 0
fi

# The real interpreter, not a shim (pyenv), so that the venv points at it.
real=$("$python" -c 'import sys; print(sys.executable)')
base=$("$real" -c 'import sys; print(sys.base_prefix)')
if [ -z "${STRUCTOP_IN_DEBIAN13:-}" ] && [ "$base" = /usr ] && ! (. /etc/os-release && [ "$VERSION_ID" = 13 ]); then
  echo "structop: $real is this machine's system Python, which the Debian 13 chroot cannot use;" >&2
  echo "          set STRUCTOP_PIP_PYTHON to a Python installed outside /usr (e.g. with pyenv)" >&2
  exit 1
fi

echo "structop: creating $venv with torch==$torch_version ($real)" >&2
rm -rf "$venv"
"$real" -m venv "$venv"
# (This machine's pip configuration names package folders that may not exist;
# pip warns about each, which says nothing about the install.)
"$venv/bin/python" -m pip install -q --disable-pip-version-check "torch==$torch_version" \
  "numpy==$numpy_version" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
have_version || {
  echo "structop: $venv does not import torch $torch_version and numpy $numpy_version" >&2
  exit 1
}
