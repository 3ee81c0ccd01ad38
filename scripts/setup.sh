#!/usr/bin/env bash
# Installs what mulligan needs to build and test on a fresh Debian 12 machine:
# the system packages from Debian (as root, or through sudo); the Python tools
# come from PyPI through pip. Safe to run again: it only installs what is
# missing. chromium is for the dashboard's browser test (headless, driven by
# Playwright's Python package pointed at /usr/bin/chromium). clang-14 and its
# compiler-rt (libclang-rt-14-dev: libFuzzer and the sanitizer runtimes) build
# the fuzz harnesses of tests/fuzz/. debootstrap makes the minimal Debian root
# the wheel is tested in (scripts/make_wheel_root.sh); binutils' readelf checks
# the repaired wheel (scripts/build_wheel.sh), whose tools live in a virtualenv
# (python3-venv: Debian's python3 has no venv module without it). redis-server
# and hiredis (libhiredis-dev, 0.14) back the shared state of issue 16 and its
# tests; valgrind's callgrind counts the instructions bench/ gates on. Toxiproxy (the fault-injection proxy of
# tests/toxiproxy/) is a Go module: `go install`ed at a pinned version into
# .tools/toxiproxy/ of this work tree (ignored by git), with Go from PATH or
# /usr/local/go, else Debian's golang-go.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libcurl4-openssl-dev libboost-json1.81-dev libgtest-dev libgmock-dev
  nginx-light libnginx-mod-http-echo libnginx-mod-http-js
  chromium
  clang-14 libclang-rt-14-dev
  debootstrap binutils python3-venv
  redis-server libhiredis-dev valgrind
  libsqlite3-dev
)

# The newest release the Go module proxy serves (go list -m -versions).
TOXIPROXY_MODULE=github.com/Shopify/toxiproxy/v2
TOXIPROXY_VERSION=v2.5.0
TOXIPROXY_DIR=$PWD/.tools/toxiproxy

missing=()
for pkg in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
# Node.js >= 18 with its headers and npm, for bindings/node (node-gyp builds
# the addon against /usr/include/node). A machine with NodeSource's nodejs
# (headers and npm included) keeps it; Debian's own is split in three.
if ! command -v node >/dev/null || [[ ! -f /usr/include/node/node_api.h ]]; then
  missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
  [[ -f /usr/include/node/node_api.h ]] || missing+=(libnode-dev)
fi
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Debian's nginx package may start a system nginx on port 80; the tests and the
# demo ignore it and start their own nginx on a free loopback port.
echo "setup: system packages present"

# Toxiproxy: rebuilt only when the binary is missing or of another version.
toxiproxy_version() {
  go version -m "$TOXIPROXY_DIR/server" 2>/dev/null |
    awk -v m="$TOXIPROXY_MODULE" '$1 == "mod" && $2 == m { print $3 }'
}
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="$PATH:/usr/local/go/bin"
fi
if ! command -v go >/dev/null; then
  echo "setup: installing Debian's golang-go (for toxiproxy)"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends golang-go
fi
if [[ "$(toxiproxy_version)" != "$TOXIPROXY_VERSION" ]]; then
  echo "setup: go install $TOXIPROXY_MODULE/cmd/server@$TOXIPROXY_VERSION"
  mkdir -p "$TOXIPROXY_DIR"
  GOBIN="$TOXIPROXY_DIR" go install "$TOXIPROXY_MODULE/cmd/server@$TOXIPROXY_VERSION"
fi
echo "setup: toxiproxy $TOXIPROXY_VERSION at $TOXIPROXY_DIR/server"
