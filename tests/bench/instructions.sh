#!/usr/bin/env bash
# Instructions per iteration of bench_overhead's benchmarks, counted by
# callgrind: (I(2N) - I(N)) / N for each benchmark, so start-up (loading
# torch) cancels out. Unlike times, the counts repeat exactly for the same
# binary whatever else the machine runs; use them for A/B comparisons of two
# builds on a noisy machine. Needs valgrind (apt-get install -y valgrind).
#
#   bash tests/bench/instructions.sh EXE N BENCHMARK...
#   e.g. bash tests/bench/instructions.sh build/tests/bench/bench_overhead 1000 \
#          fwd_bwd/generated_bridge fwd_bwd/autograd_function
set -euo pipefail
if (($# < 3)); then
  echo "usage: bash tests/bench/instructions.sh EXE N BENCHMARK..." >&2
  exit 2
fi
exe=$1 n=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

count() {  # count BENCHMARK ITERATIONS: total instructions of one run
  valgrind --tool=callgrind --callgrind-out-file="$tmp/out" "$exe" \
    --benchmark_filter="^$1\$" --benchmark_min_time="${2}x" --benchmark_repetitions=1 \
    >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$tmp/err"
}

for bench in "$@"; do
  one=$(count "$bench" "$n")
  two=$(count "$bench" $((2 * n)))
  printf '%-32s %10d instructions per iteration\n' "$bench" $(((two - one) / n))
done
