#!/usr/bin/env bash
# Runs the whole test suite: installs what is missing, builds, runs every
# test in the normal build (compiler, runtime, examples, Python) and the
# compiler's tests again under ASan + UBSan, then prints one summary line
# "N passed, N failed" (tools/test_summary.py). Exit status is non-zero on any
# failure or if no test ran.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

configure() {  # configure BUILD_DIR [meson options...]; re-uses an existing build dir
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson configure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
}

configure build -Dpython=/usr/bin/python3 -Dtorch=enabled
configure build-asan -Dtorch=disabled -Db_sanitize=address,undefined -Db_lundef=false

status=0
meson test -C build --print-errorlogs --num-processes 2 || status=1
meson test -C build-asan --suite compiler --print-errorlogs --num-processes 2 || status=1

/usr/bin/python3 tools/test_summary.py build build-asan || status=1
exit $status
