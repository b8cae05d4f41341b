#!/usr/bin/env bash
# Runs the whole test suite on Debian 13 with both torch versions structop
# supports, then prints one summary line "N passed, N failed"
# (tools/test_summary.py). Exit status is non-zero on any failure or if no
# test ran. Installs what is missing first (scripts/setup.sh,
# scripts/pip-torch.sh); on a machine that is not Debian 13 the builds and
# tests run in the Debian 13 chroot of scripts/debian13.sh.
#
#   leg a  build/       Debian's torch 2.6 (/usr/bin/python3): every test,
#          build-asan/  the compiler's tests again under ASan + UBSan,
#          build-fuzz/  and 60 s of libFuzzer on the compiler (clang; suite fuzz)
#   leg b  build-pip/   pip's torch 2.13.0 (.venv-torch): everything that
#                       uses torch (suite `torch`), built against the wheel
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${STRUCTOP_IN_DEBIAN13:-}" ]; then
  bash scripts/setup.sh
  bash scripts/pip-torch.sh
  exec bash scripts/debian13.sh bash scripts/test.sh "$@"
fi

configure() {  # configure BUILD_DIR [meson options...]; re-uses an existing build dir
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson configure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
}

status=0
leg() {  # leg NAME COMMAND...: runs one leg, records failure, reports its wall time
  local name=$1 start=$SECONDS; shift
  echo "== $name" >&2
  "$@" || status=1
  echo "== $name: $((SECONDS - start)) s" >&2
}

leg_a() {
  configure build -Dpython=/usr/bin/python3 -Dtorch=enabled
  configure build-asan -Dtorch=disabled -Db_sanitize=address,undefined -Db_lundef=false
  CC=clang CXX=clang++ configure build-fuzz -Dtorch=disabled -Dfuzz=enabled
  local ok=0
  meson test -C build --print-errorlogs --num-processes 2 || ok=1
  meson test -C build-asan --suite compiler --print-errorlogs --num-processes 2 || ok=1
  # Only the fuzzer: `meson test --suite` would first build all of build-fuzz.
  rm -f build-fuzz/meson-logs/testlog.json
  { ninja -C build-fuzz tests/fuzz/fuzz_compile &&
    meson test -C build-fuzz --suite fuzz --no-rebuild --print-errorlogs; } || ok=1
  return $ok
}

leg_b() {
  configure build-pip -Dpython="$PWD/.venv-torch/bin/python" -Dtorch=enabled
  meson test -C build-pip --suite torch --suite integration --print-errorlogs --num-processes 2
}

leg "leg a: Debian torch 2.6" leg_a
leg "leg b: pip torch 2.13.0" leg_b

python3 tools/test_summary.py build build-asan build-fuzz build-pip || status=1
exit $status
