#!/usr/bin/env bash
# The GPU check, in two steps, for a GPU machine with no apt and no network
# (a CUDA build of torch, nvcc, a C++ compiler, ninja and pip are all it needs):
#
#   bash scripts/gpu-check.sh --prepare   # here: builds the wheel into gpu-wheel/
#   bash scripts/gpu-check.sh             # there, with gpu-wheel/ carried along
#
# (`bash scripts/gpu-check.sh --cpu-selftest` runs the second step without a
# GPU: every check on CPU tensors but the CUDA graph's; it tests the script.)
#
# --prepare builds structop's wheel from this checkout (`pip wheel`, which needs
# the build dependencies of pyproject.toml from pip's index) into gpu-wheel/
# (ignored by git; the build folder is build-gpu-wheel/, kept for reruns), and
# copies there any shared library structopc needs besides the C and C++ ones
# (none when it is linked statically, the default: static_structopc).
#
# The run installs the wheel with `pip install --no-deps --target` into a
# temporary folder (nothing of the system changes), puts it on PYTHONPATH and
# PATH, and runs tests/gpu/gpu_check.py: structop.load builds the CUDA examples
# (idl_examples/rms_norm, tests/package/cuda; nvcc for the .cu files, the
# runtime library compiled on first use) and each check is counted: the ops on
# CUDA against their CPU results, gradients, opcheck, torch.compile (inductor),
# CUDA graph capture and replay, and measurements printed with the GPU's name.
# The last line is `N passed, N failed`; the exit status is non-zero on any
# failure. Where torch sees no GPU it says so and exits 1 before installing or
# building anything.
#
# The interpreter is $STRUCTOP_GPU_PYTHON, a Python whose torch is a CUDA build
# (default: python3). $STRUCTOP_GPU_TIMEOUT (default 540) bounds the whole run
# in seconds; each check has a limit of its own (tests/gpu/gpu_check.py).
set -euo pipefail
cd "$(dirname "$0")/.."
wheel_dir=gpu-wheel

# The shared libraries a binary needs that a bare machine may lack: all but
# the C library's and the C++ runtime's.
extra_libraries() {
  ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' || true
}

if [ "${1:-}" = --prepare ]; then
  python=${STRUCTOP_PYTHON:-.venv-torch/bin/python}
  rm -rf "$wheel_dir"
  "$python" -m pip wheel --no-deps -w "$wheel_dir/" \
    --config-settings=build-dir="$PWD/build-gpu-wheel" .
  wheel=$(ls "$wheel_dir"/structop-*.whl)
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  "$python" -m zipfile -e "$wheel" "$scratch"
  structopc=$(ls "$scratch"/structop-*.data/scripts/structopc)
  libs=$(extra_libraries "$structopc")
  if [ -n "$libs" ]; then
    mkdir -p "$wheel_dir/lib"
    for lib in $libs; do cp -L "$lib" "$wheel_dir/lib/"; done
    echo "structopc needs $(echo "$libs" | xargs -n1 basename | xargs): copied to $wheel_dir/lib"
  else
    echo "structopc needs no shared library besides libc's and libstdc++'s (ldd: $(ldd "$structopc" 2>&1 | head -1 | sed "s/^[[:space:]]*//"))"
  fi
  echo "ready: $(du -sh "$wheel_dir" | cut -f1) in $wheel_dir/ ($(basename "$wheel"));" \
    "on the GPU machine: bash scripts/gpu-check.sh"
  exit 0
fi
selftest=()
if [ "${1:-}" = --cpu-selftest ]; then
  selftest=(--cpu-selftest)
elif [ $# -gt 0 ]; then
  echo "usage: bash scripts/gpu-check.sh [--prepare | --cpu-selftest]" >&2
  exit 2
fi

python=${STRUCTOP_GPU_PYTHON:-python3}
# First, cheaply: a GPU (importing torch is all it costs).
if [ ${#selftest[@]} -eq 0 ] && ! "$python" -c 'import sys, torch
if not torch.cuda.is_available():
    sys.exit("structop: no GPU visible to torch (torch %s, CUDA build: %s, CUDA available: False)"
             % (torch.__version__, torch.version.cuda or "no"))'; then
  echo "structop: the GPU check needs a GPU and a CUDA build of torch (\$STRUCTOP_GPU_PYTHON: $python)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
wheels=("$wheel_dir"/structop-*.whl)
if [ ! -f "${wheels[0]}" ]; then
  echo "structop: no wheel in $wheel_dir/: run \`bash scripts/gpu-check.sh --prepare\` first" \
    "(where pip can build it) and bring $wheel_dir/ along" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
# build-gpu-check/ (ignored): the installed wheel, anew each run, and
# structop's cache, kept, so that a rerun on the same machine builds nothing.
work=$PWD/build-gpu-check
rm -rf "$work/site" "$work/counts"
"$python" -m pip install --no-deps --no-index --no-compile --quiet --target "$work/site" "${wheels[0]}"
export PYTHONPATH="$work/site${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$work/site/bin:$PATH"
if [ -d "$wheel_dir/lib" ]; then
  export LD_LIBRARY_PATH="$PWD/$wheel_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export STRUCTOP_CACHE_DIR="$work/cache"
limit=${STRUCTOP_GPU_TIMEOUT:-540}
status=0
timeout --kill-after=10 "$limit" "$python" -u tests/gpu/gpu_check.py --work "$work" "${selftest[@]}" || status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  read -r passed failed <"$work/counts" 2>/dev/null || { passed=0; failed=0; }
  echo "structop: the GPU check ran past $limit s; the checks not reported above did not run"
  echo "$passed passed, $((failed + 1)) failed"
fi
exit "$status"
