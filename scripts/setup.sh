#!/usr/bin/env bash
# Installs what mulligan needs to build and test on a fresh Debian 12 machine:
# the system packages from Debian (as root, or through sudo); the Python tools
# come from PyPI through pip. Safe to run again: it only installs what is
# missing. chromium is for the dashboard's browser test (headless, driven by
# Playwright's Python package pointed at /usr/bin/chromium). clang-14 and its
# compiler-rt (libclang-rt-14-dev: libFuzzer and the sanitizer runtimes) build
# the fuzz harnesses of tests/fuzz/.
set -euo pipefail

DEBIAN_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libcurl4-openssl-dev libboost-json1.81-dev libgtest-dev libgmock-dev
  nginx-light libnginx-mod-http-echo libnginx-mod-http-js
  chromium
  clang-14 libclang-rt-14-dev
)

missing=()
for pkg in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
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
