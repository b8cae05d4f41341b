"""Instruction counts of the steps of a program, from callgrind.

A program marks its steps with callgrind's client requests: it zeroes the
counters where a step starts (CALLGRIND_ZERO_STATS) and dumps them under the
step's name where it ends (CALLGRIND_DUMP_STATS_AT("name"), which zeroes them
again). steps() runs it under `valgrind --tool=callgrind` and returns the
instructions of each named step. Unlike times, the counts repeat exactly for
a given binary and input, whatever else the machine runs, so a test may
compare them.
"""

import glob
import os
import re
import subprocess
import tempfile


def steps(command, valgrind="valgrind", env=None, extra=()):
    """{step name: instructions} of `command` (a list) run under callgrind.
    Raises RuntimeError with the program's output when it fails.
    MALLOC_PERTURB_ (which meson test sets to a random value) is left out
    of the environment: glibc then fills every allocation, which costs
    instructions in proportion to the bytes allocated."""
    env = dict(os.environ if env is None else env)
    env.pop("MALLOC_PERTURB_", None)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        run = subprocess.run(
            [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", *extra, *command],
            capture_output=True,
            text=True,
            env=env,
        )
        if run.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} failed under callgrind (exit "
                f"{run.returncode}):\n{run.stdout}{run.stderr}"
            )
        counts = {}
        for path in sorted(glob.glob(out + ".*")):  # one file per dump
            text = open(path).read()
            trigger = re.search(r"^desc: Trigger: Client Request: (.*)$", text, re.M)
            # `totals:` (the dump's cost); `summary:` can be 0 when the
            # program turned instrumentation on itself.
            totals = re.search(r"^totals: (\d+)", text, re.M) or re.search(
                r"^summary: (\d+)", text, re.M
            )
            if trigger and totals:
                counts[trigger.group(1).strip()] = int(totals.group(1))
        return counts, run.stdout


def count_calls(calls, toggle, n):
    """Inside a program under callgrind (--instr-atstart=no): each of
    `calls` ({name: callable}) called n and 2n times between the client
    requests of `toggle` (libcallgrind_toggle), as steps "NAME n" and
    "NAME 2n"."""
    import ctypes

    lib = ctypes.CDLL(toggle)
    for name, call in calls.items():
        for calls_in_step in (n, 2 * n):
            lib.structop_callgrind_start()
            for _ in range(calls_in_step):
                call()
            lib.structop_callgrind_stop(f"{name} {calls_in_step}".encode())


def per_call(counts, n, names=None):
    """{name: instructions of one call} from the steps "NAME n" and "NAME 2n"
    of `counts` (steps()' result): (I(2n) - I(n)) / n, the loop's start-up
    cancelled. Raises KeyError naming a missing step when `names` (default:
    every name in counts) lacks one."""
    if names is None:
        names = sorted({key.rsplit(" ", 1)[0] for key in counts})
    result = {}
    for name in names:
        one, two = counts.get(f"{name} {n}"), counts.get(f"{name} {2 * n}")
        if one is None or two is None:
            raise KeyError(f"no step {name!r} in callgrind's dumps: {sorted(counts)}")
        result[name] = (two - one) / n
    return result


def counted(command, n, valgrind="valgrind", names=None, env=None):
    """{name: instructions of one call} of a program that count_calls() its
    cases n and 2n times: `command` run under callgrind with
    --instr-atstart=no (its start-up and imports uncounted), then per_call."""
    counts, out = steps(command, valgrind, env=env, extra=["--instr-atstart=no"])
    try:
        return per_call(counts, n, names)
    except KeyError as missing:  # the program's output says why
        raise KeyError(f"{missing.args[0]}\n{out}") from None


def counted_seeds(command, seeds, n, valgrind="valgrind", names=None):
    """[counted()'s {name: instructions of one call}] of one process per
    hash seed of `seeds` (PYTHONHASHSEED), in order."""
    return [
        counted(command, n, valgrind, names, dict(os.environ, PYTHONHASHSEED=str(seed)))
        for seed in seeds
    ]


def add_seeds_argument(parser):
    """--seeds: the PYTHONHASHSEED of each counted process. Python seeds its
    string hashing per process, and the dicts the calls look names up in lay
    out differently with it: one process's count is one sample of that."""
    parser.add_argument(
        "--seeds",
        default="0,1,2",
        help="the PYTHONHASHSEED of each counted process (comma-separated)",
    )


def parse_seeds(text):
    """--seeds' text as a list of ints: "0,1,2" -> [0, 1, 2]."""
    return [int(seed) for seed in text.split(",")]
