#!/usr/bin/env bash
# scripts/install_capi.sh [build-dir] [prefix] — builds libmulligan (the C ABI)
# in build-dir (default build/) and installs it, its headers and mulligan.pc
# into prefix (default .tools/prefix), for the Go, Rust and Node bindings,
# which find it with pkg-config. Then prints the two variables a shell needs:
#   eval "$(scripts/install_capi.sh)"   # sets PKG_CONFIG_PATH and LD_LIBRARY_PATH
# Idempotent: a second run rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
PREFIX=${2:-$PWD/.tools/prefix}
case "$PREFIX" in /*) ;; *) PREFIX="$PWD/$PREFIX" ;; esac
JOBS=${JOBS:-2}
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
fi
cmake --build "$BUILD" -j "$JOBS" --target mulligan >&2
cmake --install "$BUILD" --prefix "$PREFIX" --component development >&2
cmake --install "$BUILD" --prefix "$PREFIX" --component runtime >&2
LIBDIR=$(dirname "$(find "$PREFIX" -name mulligan.pc -path '*pkgconfig*' | head -1)")
LIBDIR=$(dirname "$LIBDIR")
echo "export PKG_CONFIG_PATH=\"$LIBDIR/pkgconfig\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}\""
echo "export LD_LIBRARY_PATH=\"$LIBDIR\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
