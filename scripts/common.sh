# Sourced by the scripts in this folder: the tools they share.
#   venv            .venv-torch, the virtual environment with pip's torch
#   meson_cmd       Meson >= 1.0: the distribution's, else .venv-torch's (PyPI);
#                   find_meson sets it again (after scripts/setup.sh)
#   configure DIR [OPTIONS...]
#                   `meson setup` of a new build folder, `meson configure` of an
#                   existing one (which reconfigures at the next build only when
#                   an option changed); fails when Meson fails

venv=.venv-torch

meson_at_least_1() {
  "$@" --version 2>/dev/null |
    python3 -c 'import sys; v = sys.stdin.read().split(".")[0]; sys.exit(not (v.isdigit() and int(v) >= 1))'
}

find_meson() {  # sets meson_cmd; again after scripts/setup.sh may have installed Meson
  if command -v meson >/dev/null && meson_at_least_1 meson; then
    meson_cmd=(meson)
  else
    meson_cmd=("$PWD/$venv/bin/meson")
  fi
}
find_meson

configure() {
  local dir=$1
  shift
  if [ -f "$dir/build.ninja" ]; then
    "${meson_cmd[@]}" configure "$dir" "$@" >/dev/null
  else
    "${meson_cmd[@]}" setup "$dir" "$@" >/dev/null
  fi
}

# ccache (Meson uses it when installed) with paths relative to this checkout,
# so that a fresh clone elsewhere (CI) reuses what an earlier one compiled;
# without the compiling folder in the hash (builds are -g), so that the
# consumer and package tests' projects, set up in new folders on each run,
# hit too (their debug info then names the first run's folder).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
