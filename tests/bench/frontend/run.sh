#!/usr/bin/env bash
# Runs the front-end benchmark and prints the ratios it is judged by.
# Usage: tests/bench/frontend/run.sh [BUILD_DIR]   (default: build)
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../../.." && pwd)
nf=$(${PYTHON:-/usr/bin/python3} -c 'import os, torchgen; print(os.path.join(os.path.dirname(torchgen.__file__), "packaged/ATen/native/native_functions.yaml"))')
ninja -C "$build" tests/bench/frontend/frontend_bench compiler/structopc >/dev/null
json=$(mktemp)
"$build/tests/bench/frontend/frontend_bench" "$nf" "$build/compiler/structopc" \
  "$root/idl_examples/weights.ops.yaml" --benchmark_enable_random_interleaving=true \
  --benchmark_out="$json" --benchmark_out_format=json >&2
/usr/bin/python3 - "$json" "$root/tests/bench" <<'PY'
import json, statistics, sys
sys.path.insert(0, sys.argv[2])
from bench_stats import median_ratio, rounds
# Wall time in ns per repetition, by name without the "/repeats:10" suffix.
t = {name.split("/")[0]: ts for name, ts in rounds(json.load(open(sys.argv[1])), "real_time").items()}
yaml, ours = t["BM_YamlCppLoad"], t["BM_StructopcFrontEnd"]
true_ns, check_ns = t["BM_ProcessTrue"], t["BM_ProcessStructopcCheck"]
ms = lambda ts: statistics.median(ts) / 1e6
print(f"yaml-cpp load of the corpus IDL:          {ms(yaml):8.2f} ms (median of {len(yaml)})")
print(f"structopc load+check+lower of the same:   {ms(ours):8.2f} ms (median of {len(ours)})")
print(f"ratio structopc / yaml-cpp load:          {median_ratio(ours, yaml):8.2f}x  (median of per-round ratios; target <= 1.3x)")
print(f"spawn /bin/true:                          {ms(true_ns):8.2f} ms")
print(f"structopc --check weights.ops.yaml:       {ms(check_ns):8.2f} ms  (process start to exit; target < 5 ms)")
PY
rm -f "$json"
