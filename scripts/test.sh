#!/usr/bin/env bash
# Runs the whole test suite in two legs, then prints one summary line
# "N passed, N failed, N skipped" (tools/test_summary.py, from meson's
# meson-logs/testlog.json of this run). Exits non-zero on any failure, when a
# leg's configure or build fails, or when no test ran. Installs what is
# missing first; quick when everything is there.
#
#   bash scripts/test.sh              both legs
#   bash scripts/test.sh pip|distro   one leg
#
# pip leg, on this machine: torch 2.13.0 from pip (.venv-torch, activated),
# this machine's compiler and libraries. Every test:
#   build/        the compiler's tests, goldens, diagnostics, the examples, the
#                 C++ and Python end-to-end tests, PT2, Python kernels, the
#                 Meson consumer, hostile IDLs (all suites)
#   build-asan/   the compiler's tests again under ASan + UBSan, but for the
#                 checks that run no structop binary (lang-lists, clang-format)
#                 (-Dtorch=disabled;
#                 -O0: at -O2 the sanitized unity files alone took 13 CPU
#                 minutes to compile, at -O0 the whole build takes 2)
#   build-fuzz/   60 s of libFuzzer on the compiler (clang, -O1 as libFuzzer's
#                 docs build fuzz targets; suite fuzz)
# distro leg, in Debian 13 (scripts/debian13.sh: directly on a Debian 13
# machine, else in its chroot): Debian's torch 2.6, g++ 14, yaml-cpp 0.8,
# fmt 10, Catch2 3. Only what depends on those versions:
#   build-debian13/  everything built with -Werror, then suite `torch`: the
#                    end-to-end, PT2 and Python-kernel tests, the schema corpus
#                    of torch 2.6's native_functions.yaml, and the manylinux
#                    wheel built on the host installed and used (test
#                    package-host-wheel). (Not the Meson consumer test, suite
#                    integration: it builds the same sources again, which the
#                    -Werror build has already built with these versions.)
set -euo pipefail
cd "$(dirname "$0")/.."

legs=("$@")
((${#legs[@]})) || legs=(pip distro)
for leg in "${legs[@]}"; do
  case $leg in
    pip | distro | distro-inside) ;;
    *) echo "usage: bash scripts/test.sh [pip] [distro]" >&2; exit 2 ;;
  esac
done

. scripts/common.sh

times_file=$(mktemp)
trap 'rm -f "$times_file"' EXIT
cpu_seconds() {  # sets cpu: user + system CPU seconds of this shell's finished children
  local lines
  times >"$times_file"  # (in this shell: `times` in a subshell would count the subshell's)
  mapfile -t lines <"$times_file"
  cpu=$(awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] } printf "%d", t }' \
    <<<"${lines[1]}")
}

step() {  # step NAME COMMAND...: runs one command, prints its wall and CPU time
  local name=$1 start=$SECONDS before rc=0
  shift
  cpu_seconds
  before=$cpu
  "$@" || rc=$?
  cpu_seconds
  echo "   $name: $((SECONDS - start)) s wall, $((cpu - before)) s CPU$( ((rc == 0)) || echo " (failed: exit $rc)")" >&2
  return $rc
}

meson_test() {  # meson_test DIR [ARGS...]: the tests (Meson first builds what they depend on)
  "${meson_cmd[@]}" test -C "$@" --print-errorlogs --num-processes 2
}

leg_pip() {
  local failed=0
  rm -f build/meson-logs/testlog.json build-asan/meson-logs/testlog.json \
    build-fuzz/meson-logs/testlog.json
  step "configure build" configure build -Dpython="$PWD/$venv/bin/python" -Dtorch=enabled -Dtests=true
  step "build build" ninja -C build
  step "tests build" meson_test build || failed=1
  step "configure build-asan" configure build-asan -Dpython="$PWD/$venv/bin/python" \
    -Dtorch=disabled -Db_sanitize=address,undefined -Db_lundef=false -Doptimization=0
  step "build build-asan" ninja -C build-asan
  step "tests build-asan (suite compiler)" meson_test build-asan --suite compiler || failed=1
  CC=clang CXX=clang++ step "configure build-fuzz" configure build-fuzz \
    -Dpython="$PWD/$venv/bin/python" -Dtorch=disabled -Dfuzz=enabled -Doptimization=1
  # Only the fuzzer: the rest of build-fuzz is the compiler's tests again.
  step "build build-fuzz (fuzz_compile)" ninja -C build-fuzz tests/fuzz/fuzz_compile
  step "tests build-fuzz (suite fuzz)" meson_test build-fuzz --suite fuzz --no-rebuild || failed=1
  return $failed
}

leg_distro_inside() {
  local failed=0
  rm -f build-debian13/meson-logs/testlog.json
  step "packages" bash scripts/setup.sh --distro
  find_meson  # (a new chroot had none when common.sh was sourced)
  step "configure build-debian13" configure build-debian13 -Dpython=/usr/bin/python3 \
    -Dtorch=enabled -Dtests=true -Dwerror=true -Dbenchmarks=disabled
  step "build build-debian13 (-Werror)" ninja -C build-debian13
  step "tests build-debian13 (suite torch)" meson_test build-debian13 --suite torch || failed=1
  return $failed
}

status=0
run_leg() {  # run_leg NAME FUNCTION: a leg stops at its first failed step
  # (Called as a plain command, never after || or in an if: there bash would
  # ignore `set -e` inside the leg, and a failed step would go unnoticed.)
  local name=$1 start=$SECONDS before rc
  echo "== $name" >&2
  cpu_seconds
  before=$cpu
  set +e
  (set -e; "$2")
  rc=$?
  set -e
  cpu_seconds
  ((rc == 0)) || status=1
  echo "== $name: $((SECONDS - start)) s wall, $((cpu - before)) s CPU$( ((rc == 0)) || echo ", FAILED")" >&2
}

main() {  # (a function, so that bash has read the whole file before it runs)
  if [ "${legs[*]}" = distro-inside ]; then  # scripts/debian13.sh brought us here
    run_leg "distro leg: Debian 13, torch 2.6" leg_distro_inside
    exit $status
  fi

  dirs=()
  for leg in "${legs[@]}"; do
    case $leg in
      pip)
        step "packages" bash scripts/setup.sh --tests
        step ".venv-torch" bash scripts/pip-torch.sh --tests
        find_meson  # (a new machine had none when common.sh was sourced)
        export PATH="$PWD/$venv/bin:$PATH"  # as an activated virtual environment
        run_leg "pip leg: torch 2.13.0 (pip)" leg_pip
        dirs+=(build build-asan build-fuzz)
        ;;
      distro)
        start=$SECONDS
        # The distro leg installs the manylinux wheel built here (test
        # package-host-wheel): the pip leg's, made by this run; else one made
        # now from this checkout (scripts/release.sh).
        if [[ " ${legs[*]} " == *" pip "* ]]; then
          export STRUCTOP_HOST_WHEEL_DIR=$PWD/build/tests/package/work/dist
        else
          step "release artifacts (for the distro leg)" bash scripts/release.sh build-release/dist
          export STRUCTOP_HOST_WHEEL_DIR=$PWD/build-release/dist
        fi
        bash scripts/debian13.sh bash scripts/test.sh distro-inside || status=1
        echo "== distro leg, with the chroot's set-up: $((SECONDS - start)) s" >&2
        dirs+=(build-debian13)
        ;;
    esac
  done

  python3 tools/test_summary.py "${dirs[@]}" || status=1
  exit $status
}

main
