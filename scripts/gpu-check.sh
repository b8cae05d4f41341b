#!/usr/bin/env bash
# The CUDA part of the tests alone, for a machine with a GPU: builds the
# examples with nvcc (rms_norm_kernels.cu) against a CUDA build of torch and
# runs the test `cuda-gpu` (tests/e2e/cuda_gpu.py: the CUDA examples against
# their CPU results, gradients, opcheck on CUDA tensors).
#
#   bash scripts/gpu-check.sh
#
# The interpreter is $STRUCTOP_GPU_PYTHON, a Python whose torch is a CUDA
# build (e.g. a virtual environment where `pip install torch==2.13.0` took
# PyPI's default, CUDA, wheel); default .venv-torch (scripts/pip-torch.sh).
# Fails, saying why, when torch sees no GPU: on such a machine scripts/test.sh
# reports the test as skipped instead.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh --tests
. scripts/common.sh
if [ -z "${STRUCTOP_GPU_PYTHON:-}" ]; then
  bash scripts/pip-torch.sh --tests
fi
python=${STRUCTOP_GPU_PYTHON:-$PWD/$venv/bin/python}
if ! "$python" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())'; then
  "$python" -c 'import torch; print("structop: torch", torch.__version__,
                "(CUDA build: %s) sees no GPU" % (torch.version.cuda or "no"))' >&2 || true
  echo "structop: the GPU check needs a GPU and a CUDA build of torch (STRUCTOP_GPU_PYTHON)" >&2
  exit 1
fi
configure build-gpu -Dpython="$python" -Dtorch=enabled -Dcuda=enabled -Dtests=true
ninja -C build-gpu idl_examples/libstructop_examples.so
"${meson_cmd[@]}" test -C build-gpu --suite cuda --print-errorlogs
