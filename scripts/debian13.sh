#!/usr/bin/env bash
# Runs a command in Debian 13 (trixie), where the distro leg of the tests runs
# (Debian's torch 2.6, g++ 14, yaml-cpp 0.8, fmt 10, Catch2 3): directly when
# this machine is Debian 13, otherwise inside a Debian 13 chroot that this
# script creates with debootstrap on first use. Using structop needs none of
# this (scripts/main-job.sh builds on the host); it is the second test leg.
#
#   bash scripts/debian13.sh COMMAND [ARGS...]
#
# The chroot (about 2.3 GB with the distro leg's packages) lives in
# $STRUCTOP_DEBIAN13_ROOT (default /srv/chroot/structop-trixie) and is reused.
# Its packages come from the Debian mirror this machine's apt uses (or
# $STRUCTOP_DEBIAN_MIRROR). Each call enters it in a private mount namespace,
# so nothing stays mounted afterwards and concurrent calls do not interfere.
# Inside, at the same paths as outside:
#   - this repository (read-write), the working directory;
#   - the CUDA toolkit of $CUDA_HOME (default /usr/local/cuda), if there is
#     one (read-only), as /usr/local/cuda with its bin/ on PATH: nvcc.
# The environment is reset to a plain root shell's, except CI, TERM and the
# STRUCTOP_* variables. Needs root (mount namespaces, chroot).
set -euo pipefail

if (($# == 0)); then
  echo "usage: bash scripts/debian13.sh COMMAND [ARGS...]" >&2
  exit 2
fi

is_debian13() {
  [ -r /etc/os-release ] && (. /etc/os-release && [ "${ID:-}" = debian ] && [ "${VERSION_ID:-}" = 13 ])
}

if [ -n "${STRUCTOP_IN_DEBIAN13:-}" ] || is_debian13; then
  export STRUCTOP_IN_DEBIAN13=1
  exec "$@"
fi

repo=$(cd "$(dirname "$0")/.." && pwd -P)
root=${STRUCTOP_DEBIAN13_ROOT:-/srv/chroot/structop-trixie}

# The Debian archive this machine's apt reads (its sources, not a host name
# written here), unless STRUCTOP_DEBIAN_MIRROR names one.
debian_mirror() {
  if [ -n "${STRUCTOP_DEBIAN_MIRROR:-}" ]; then
    echo "$STRUCTOP_DEBIAN_MIRROR"
    return
  fi
  command -v apt-get >/dev/null &&
    apt-get indextargets --format '$(ORIGIN)|$(LABEL)|$(REPO_URI)' 2>/dev/null |
    awk -F'|' '$1 == "Debian" && $2 == "Debian" { print $3; exit }'
}

if [ "$(id -u)" -ne 0 ]; then
  echo "structop: this machine is not Debian 13; entering the Debian 13 chroot needs root" >&2
  exit 1
fi

# --- create the chroot once ---------------------------------------------------
if [ ! -x "$root/usr/bin/apt-get" ] || [ ! -e "$root/.structop-ready" ]; then
  if ! command -v debootstrap >/dev/null; then
    echo "structop: installing debootstrap (to make a Debian 13 chroot)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      debootstrap >/dev/null
  fi
  mirror=$(debian_mirror)
  if [ -z "$mirror" ]; then
    echo "structop: no Debian archive among this machine's apt sources (not a Debian machine?);" >&2
    echo "          set STRUCTOP_DEBIAN_MIRROR to a Debian mirror's URL to create the chroot" >&2
    exit 1
  fi
  echo "structop: this machine is not Debian 13; creating a Debian 13 chroot in $root ($mirror)" >&2
  rm -rf "$root"
  mkdir -p "$root"
  # Interrupted runs leave an incomplete tree; the marker file says it is whole.
  debootstrap --variant=minbase trixie "$root" "$mirror" >"$root.debootstrap.log" 2>&1 || {
    tail -n 20 "$root.debootstrap.log" >&2
    echo "structop: debootstrap failed (log: $root.debootstrap.log)" >&2
    exit 1
  }
  rm -f "$root.debootstrap.log"
  touch "$root/.structop-ready"
fi
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

# --- what to bind inside --------------------------------------------------------
binds=("$repo")

cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [ -x "$cuda_home/bin/nvcc" ]; then
  cuda_real=$(readlink -f "$cuda_home")
  binds+=("ro:$cuda_real")
  [ "$cuda_real" = /usr/local/cuda ] || ln -sfn "$cuda_real" "$root/usr/local/cuda"
fi

mount_script='set -e
root=$1; shift
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /sys "$root/sys"
while [ "$1" != -- ]; do
  path=${1#ro:}
  mkdir -p "$root$path"
  if [ "$path" = "$1" ]; then mount --bind "$path" "$root$path"
  else mount --bind -o ro "$path" "$root$path"; fi
  shift
done
shift
exec chroot "$root" "$@"'

keep=(HOME=/root LANG=C.UTF-8
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/cuda/bin
      STRUCTOP_IN_DEBIAN13=1)
for var in CI TERM $(compgen -e | grep '^STRUCTOP_' || true); do
  [ -n "${!var+x}" ] && keep+=("$var=${!var}")
done

cwd=$(pwd -P)
case "$cwd" in "$repo"*) ;; *) cwd=$repo ;; esac

exec unshare --mount --propagation private -- bash -c "$mount_script" bash "$root" \
  "${binds[@]}" -- /usr/bin/env -i "${keep[@]}" /bin/sh -c 'cd "$1" && shift && exec "$@"' sh \
  "$cwd" "$@"
