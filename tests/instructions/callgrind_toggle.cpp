// callgrind's client requests for Python (ctypes): python_call_instructions.py
// marks the steps it counts with them. Outside valgrind they do nothing.
#include <valgrind/callgrind.h>

extern "C" {

/// Zeroes the counters and starts counting (valgrind runs with --instr-atstart=no).
void structop_callgrind_start() {
  CALLGRIND_ZERO_STATS;
  CALLGRIND_START_INSTRUMENTATION;
}

/// Stops counting and dumps the counters under `name`.
void structop_callgrind_stop(const char* name) {
  CALLGRIND_STOP_INSTRUMENTATION;
  CALLGRIND_DUMP_STATS_AT(name);
}
}
