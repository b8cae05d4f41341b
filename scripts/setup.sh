#!/usr/bin/env bash
# Installs the system packages structop needs on this machine (any Debian or
# Ubuntu with apt), only those that are missing; idempotent and quick when
# everything is there. apt needs root: run as root or as a user with sudo.
#
#   bash scripts/setup.sh          what the main job needs: a C++ compiler,
#                                  Meson >= 1.0, ninja, pkg-config, yaml-cpp,
#                                  fmt, CLI11, Python's venv and headers
#   bash scripts/setup.sh --tests  also what the test suite needs: Catch2,
#                                  Google Benchmark, clang + libFuzzer,
#                                  valgrind, debootstrap (the distro leg)
#
# A distribution whose Meson is older than 1.0 gets Meson from PyPI instead,
# in .venv-torch (scripts/pip-torch.sh; scripts/common.sh finds it there).
# Inside the Debian 13 chroot of scripts/debian13.sh, `--distro` installs that
# leg's packages: Debian's torch 2.6 and the compilers and libraries it is
# tested with.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=main
case "${1:-}" in
  "") ;;
  --tests) mode=tests ;;
  --distro) mode=distro ;;
  *) echo "usage: bash scripts/setup.sh [--tests | --distro]" >&2; exit 2 ;;
esac

if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
  echo "structop: scripts/setup.sh needs apt (Debian or Ubuntu); install by hand:" >&2
  echo "          a C++17 compiler, Meson >= 1.0, ninja, pkg-config, yaml-cpp, fmt, CLI11" >&2
  exit 1
fi

packages=(g++ ninja-build pkgconf ccache libyaml-cpp-dev libfmt-dev libcli11-dev)

# Meson >= 1.0 from the distribution when it has one (Debian 12 and 13 do),
# else from PyPI (scripts/pip-torch.sh reads this file's verdict).
meson_candidate=$(apt-cache policy meson 2>/dev/null | sed -n 's/^ *Candidate: *//p')
if [ -n "$meson_candidate" ] && [ "$meson_candidate" != "(none)" ] &&
   dpkg --compare-versions "$meson_candidate" ge 1.0.0; then
  packages+=(meson)
fi

case $mode in
  main | tests)
    # The Python that makes .venv-torch needs venv (ensurepip) and, for
    # torch.compile's C++ code and structop_runtime._native, its headers:
    # Debian splits both off a system Python; a Python built elsewhere
    # (pyenv, conda) has them.
    python=${STRUCTOP_PIP_PYTHON:-python3}
    if command -v "$python" >/dev/null; then
      base=$("$python" -c 'import sys; print(sys.base_prefix)')
      if [ "$base" = /usr ]; then
        packages+=(python3-venv python3-dev)
      fi
    fi
    ;;
esac

case $mode in
  tests)
    packages+=(catch2 libbenchmark-dev valgrind cmake)  # cmake: the CMake consumer of the pip package
    # clang and its compiler-rt (libFuzzer, sanitizers) for the compiler's
    # fuzz test, in the distribution's default version.
    clang_version=$(apt-cache depends clang 2>/dev/null | sed -n 's/.*Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1)
    packages+=(clang)
    if [ -n "$clang_version" ]; then
      packages+=("libclang-rt-$clang_version-dev")
    fi
    ;;
  distro)
    packages+=(
      catch2                                    # Catch2 3 on Debian 13
      libtorch-dev python3-torch python3-dev    # torch 2.6; python3-dev: inductor and structop_runtime._native compile C
      python3-pyflakes
      python3-venv                              # the package test of the host's wheel: python3 -m venv --system-site-packages
      valgrind                                  # the instruction-count guards, on torch 2.6
      libbenchmark-dev                          # run_benchmarks.py --all on torch 2.6
    )
    ;;
esac

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
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "structop: missing packages (${missing[*]}); run as root or install sudo" >&2
    exit 1
  fi
  sudo="sudo"
fi
echo "structop: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
