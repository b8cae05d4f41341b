"""Statistics the benchmarks share.

The machines are shared and noisy: absolute times drift between rounds, but
within one round every case runs under the same conditions. So each
benchmark interleaves its cases round by round, and a ratio is the median
over rounds of the per-round ratio, which cancels the drift.
"""

import os
import random
import statistics
import sys
import timeit

# callgrind_steps (tests/instructions), for counting instructions.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "instructions"))
from callgrind_steps import (  # noqa: E402, F401  (re-exported for the benchmarks)
    add_seeds_argument,
    count_calls,
    counted,
    parse_seeds,
)


def median_ratio(times, baseline):
    """Median over rounds of times[i] / baseline[i] (lists in round order)."""
    return statistics.median(t / b for t, b in zip(times, baseline))


def interleaved_times(calls, rounds, number):
    """{name: seconds per call of calls[name] in each round}: every round
    times each callable over `number` calls, in a fresh random order."""
    times = {name: [] for name in calls}
    for _ in range(rounds):
        order = list(calls)
        random.shuffle(order)
        for name in order:
            times[name].append(timeit.timeit(calls[name], number=number) / number)
    return times


def rounds(report, field="cpu_time"):
    """A Google Benchmark JSON report -> {benchmark name: `field` in ns of
    each repetition, in round order}."""
    scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
    result = {}
    for b in report["benchmarks"]:
        if b.get("run_type") == "iteration":
            times = result.setdefault(b["run_name"], {})
            times[b.get("repetition_index", 0)] = b[field] * scale[b["time_unit"]]
    return {name: [t[i] for i in sorted(t)] for name, t in result.items()}


def counted_rerun(script, a, n, names=None, env=None):
    """{name: instructions of one call}: the benchmark `script` run again
    under callgrind with `--count TOGGLE_LIB` (its a.library, a.module_dir,
    a.instructions, a.valgrind), in which it count_calls() its cases n and
    2n times."""
    command = [sys.executable, os.path.abspath(script), a.library, a.module_dir]
    return counted(command + ["--count", a.instructions], n, a.valgrind, names, env)


def counted_per_seed(script, a, n, names=None):
    """(seeds, [counted_rerun's {name: instructions of one call} per seed]):
    one counted process per seed of a.seeds (add_seeds_argument)."""
    seeds = parse_seeds(a.seeds)
    runs = [
        counted_rerun(script, a, n, names, dict(os.environ, PYTHONHASHSEED=str(seed)))
        for seed in seeds
    ]
    return seeds, runs
