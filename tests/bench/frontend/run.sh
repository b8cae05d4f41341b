#!/usr/bin/env bash
# Runs the front-end benchmark and prints the ratios it is judged by.
# Usage: tests/bench/frontend/run.sh [BUILD_DIR]   (default: build)
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../../.." && pwd)
nf=$(/usr/bin/python3 -c 'import os, torchgen; print(os.path.join(os.path.dirname(torchgen.__file__), "packaged/ATen/native/native_functions.yaml"))')
ninja -C "$build" tests/bench/frontend/frontend_bench compiler/structopc >/dev/null
json=$(mktemp)
"$build/tests/bench/frontend/frontend_bench" "$nf" "$build/compiler/structopc" \
  "$root/idl_examples/weights.ops.yaml" --benchmark_out="$json" --benchmark_out_format=json >&2
/usr/bin/python3 - "$json" <<'PY'
import json, sys
runs = {b["name"].split("/")[0]: b for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("aggregate_name") == "median"}
def t(name): return runs[name]["real_time"]
yaml, ours = t("BM_YamlCppLoad"), t("BM_StructopcFrontEnd")
true_us, check_us = t("BM_ProcessTrue"), t("BM_ProcessStructopcCheck")
print(f"yaml-cpp load of the corpus IDL:          {yaml:8.2f} ms (median of 10)")
print(f"structopc load+check+lower of the same:   {ours:8.2f} ms (median of 10)")
print(f"ratio structopc / yaml-cpp load:          {ours / yaml:8.2f}x  (target <= 1.3x)")
print(f"spawn /bin/true:                          {true_us / 1000:8.2f} ms")
print(f"structopc --check weights.ops.yaml:       {check_us / 1000:8.2f} ms  (target < 5 ms)")
PY
rm -f "$json"
