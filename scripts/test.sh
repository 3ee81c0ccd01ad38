#!/usr/bin/env bash
# Runs every test of mulligan on this machine, setting it up first:
#   1. installs missing Debian packages and Python tools (scripts/setup.sh)
#   2. builds the engine, the C ABI and the C/C++ tests (CMake + Ninja, build/)
#   3. runs ctest: GoogleTest suites, C99 ABI programs, install checks, and the
#      end-to-end tests against a real nginx started on a free loopback port
#   4. builds the engine's GoogleTest suite again under ThreadSanitizer and runs it
#   5. installs the Python package (pip install .) and runs pytest
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
JOBS=${JOBS:-2}

scripts/setup.sh

cmake -S . -B build -G Ninja -DBUILD_TESTING=ON -DMULLIGAN_WARNINGS_AS_ERRORS=ON
cmake --build build -j "$JOBS"
ctest --test-dir build --output-on-failure -j "$JOBS"

# The concurrency tests (breakers, registry, pools) once more under TSan.
cmake -S . -B build-tsan -G Ninja -DBUILD_TESTING=ON -DMULLIGAN_BUILD_CAPI=OFF \
  -DMULLIGAN_SANITIZE=thread -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build-tsan -j "$JOBS" --target mulligan_core_tests
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/core/mulligan_core_tests --gtest_brief=1

"$PYTHON" -m pip install --quiet --disable-pip-version-check ".[test]"
"$PYTHON" -m pytest -q
