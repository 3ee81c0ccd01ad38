#!/usr/bin/env bash
# Makes (once) the root filesystem the wheel test installs the wheel in, and
# prints its path: a minimal Debian (debootstrap --variant=minbase) with only
# python3 and python3-venv added, so no libcurl, no Boost and no compiler.
#
#   scripts/make_wheel_root.sh        # -> .tools/wheel-root/<suite>
#
# The suite is this machine's (VERSION_CODENAME of /etc/os-release, bookworm
# on Debian 12), so its python3 is the version the wheel was built for; the
# mirror is the first Debian one of /etc/apt/sources.list* (MIRROR= overrides).
# The root is cached under .tools/ (ignored by git): a second run only checks
# the marker that a finished debootstrap leaves, and prints the path
# (WHEEL_ROOT_CACHE= puts the cache elsewhere, e.g. outside a fresh clone). Needs
# root (debootstrap) and the debootstrap package (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
SUITE=${SUITE:-$(. /etc/os-release && echo "$VERSION_CODENAME")}
ROOTFS=${WHEEL_ROOT_CACHE:-$PWD/.tools/wheel-root}/$SUITE
PACKAGES=python3,python3-venv
MARKER=$ROOTFS/.mulligan-wheel-root
log() { echo "make_wheel_root: $*" >&2; }

first_mirror() {
  # deb822 files (URIs: ...) first, then one-line "deb URL suite ..." entries.
  local files=(/etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list)
  local f
  for f in "${files[@]}"; do
    [[ -r $f ]] || continue
    awk '
      /^[[:space:]]*URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }
      /^[[:space:]]*deb[[:space:]]/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { if ($i !~ /security/) { print $i; exit } break } }
    ' "$f"
  done | head -n 1
}

if [[ -f $MARKER && "$(cat "$MARKER")" == "$SUITE $PACKAGES" ]]; then
  log "cached: $ROOTFS"
  echo "$ROOTFS"
  exit 0
fi
MIRROR=${MIRROR:-$(first_mirror)}
[[ -n $MIRROR ]] || { log "no Debian mirror in /etc/apt/sources.list*; set MIRROR="; exit 1; }
command -v debootstrap >/dev/null || { log "debootstrap is missing (scripts/setup.sh installs it)"; exit 1; }
log "debootstrap --variant=minbase --include=$PACKAGES $SUITE from $MIRROR"
rm -rf "$ROOTFS"
mkdir -p "$(dirname "$ROOTFS")"
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOTFS" "$MIRROR" >&2
# The downloaded .debs are not needed any more (45 MB).
rm -f "$ROOTFS"/var/cache/apt/archives/*.deb
echo "$SUITE $PACKAGES" >"$MARKER"
log "made $ROOTFS"
echo "$ROOTFS"
