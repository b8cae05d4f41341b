#!/usr/bin/env bash
# Installs the Debian 12 packages structop needs, only those that are missing.
# Idempotent and quick when everything is there. Run as root (or with sudo).
set -euo pipefail

packages=(
  g++ meson ninja-build pkg-config       # build
  libyaml-cpp-dev libfmt-dev libcli11-dev # the compiler
  catch2 libbenchmark-dev                 # tests and benchmarks
  libtorch-dev python3-torch              # runtime, examples, end-to-end tests
)

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
