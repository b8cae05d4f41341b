#!/usr/bin/env bash
# Installs the Debian 13 (trixie) packages structop needs, only those that are
# missing; idempotent and quick when everything is there. Run as root (or with
# sudo). On a machine that is not Debian 13 the packages go into the Debian 13
# chroot of scripts/debian13.sh (created on first use).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${STRUCTOP_IN_DEBIAN13:-}" ]; then
  exec bash scripts/debian13.sh bash scripts/setup.sh
fi

packages=(
  g++ meson ninja-build pkgconf ccache      # build
  libyaml-cpp-dev libfmt-dev libcli11-dev   # the compiler
  catch2 libbenchmark-dev                   # tests and benchmarks
  clang-format                              # formatting check of sources and generated code
  clang libclang-rt-19-dev                  # the fuzzer of the compiler (libFuzzer; tests/fuzz/)
  python3-pyflakes                          # lint of the Python runtime and generated X_ops.py
  libtorch-dev python3-torch python3-dev    # runtime, examples, end-to-end tests (torch 2.6);
                                            # python3-dev: torch.compile's inductor builds C++
)
# The pip-torch leg's Python (see scripts/pip-torch.sh) runs here too, from
# its own prefix; these are the shared libraries its standard modules load.
packages+=(libssl3t64 libffi8 libsqlite3-0 libbz2-1.0 liblzma5 libreadline8t64 libncursesw6
           zlib1g libuuid1)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "structop: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
