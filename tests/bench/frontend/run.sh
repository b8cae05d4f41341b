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
  "$root/idl_examples/weights.ops.yaml" --benchmark_enable_random_interleaving=true \
  --benchmark_out="$json" --benchmark_out_format=json >&2
/usr/bin/python3 - "$json" <<'PY'
import json, statistics, sys
runs = [b for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("run_type") == "iteration"]
def times(name):  # per repetition, in repetition order
    rs = sorted((b for b in runs if b["name"].split("/")[0] == name), key=lambda b: b["repetition_index"])
    return [b["real_time"] for b in rs]
def ratio(a, b):  # median over repetitions of a/b (interleaved, so drift cancels)
    return statistics.median(x / y for x, y in zip(times(a), times(b)))
yaml, ours = times("BM_YamlCppLoad"), times("BM_StructopcFrontEnd")
true_us, check_us = times("BM_ProcessTrue"), times("BM_ProcessStructopcCheck")
n = len(yaml)
print(f"yaml-cpp load of the corpus IDL:          {statistics.median(yaml):8.2f} ms (median of {n})")
print(f"structopc load+check+lower of the same:   {statistics.median(ours):8.2f} ms (median of {n})")
print(f"ratio structopc / yaml-cpp load:          {ratio('BM_StructopcFrontEnd', 'BM_YamlCppLoad'):8.2f}x  (median of per-round ratios; target <= 1.3x)")
print(f"spawn /bin/true:                          {statistics.median(true_us) / 1000:8.2f} ms")
print(f"structopc --check weights.ops.yaml:       {statistics.median(check_us) / 1000:8.2f} ms  (process start to exit; target < 5 ms)")
PY
rm -f "$json"
