#!/usr/bin/env bash
# Runs every test of mulligan on this machine, setting it up first:
#   1. installs missing Debian packages and toxiproxy (scripts/setup.sh)
#   2. builds the engine, the C ABI and the C/C++ tests (CMake + Ninja, build/)
#   3. runs ctest: GoogleTest suites, C99 ABI programs, install checks, and the
#      end-to-end tests against a real nginx started on a free loopback port
#      (some through a real toxiproxy in front of it)
#   4. builds the C++ and C suites again under AddressSanitizer + UBSan
#      (build-asan/, findings fatal) and runs all of ctest there, nginx included
#   5. builds the engine's GoogleTest suite again under ThreadSanitizer and runs it
#   6. builds the libFuzzer harnesses (clang, build-fuzz/) and runs each for
#      FUZZ_SECONDS (default 30) as a smoke test (scripts/fuzz.sh)
#   7. builds the repaired wheel (scripts/build_wheel.sh) and the minimal Debian
#      root it is tested in (scripts/make_wheel_root.sh), installs the wheel
#      with the test extra, checks `pip install .` from source, runs pytest
#   8. the instruction-count gate: callgrind counts of the hot paths against
#      bench/budgets.json (bench/instructions.py)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
JOBS=${JOBS:-2}
FUZZ_SECONDS=${FUZZ_SECONDS:-30}

scripts/setup.sh
# The toxiproxy tests skip when toxiproxy is missing, except when this names
# it: here setup.sh has just installed it, so a failure to start it fails.
export MULLIGAN_TOXIPROXY="$PWD/.tools/toxiproxy/server"
# Likewise redis-server (Debian's, from setup.sh) for the shared-state tests
# of issue 16: named here, a missing or broken server fails them.
export MULLIGAN_REDIS_SERVER=/usr/bin/redis-server

cmake -S . -B build -G Ninja -DBUILD_TESTING=ON -DMULLIGAN_WARNINGS_AS_ERRORS=ON
cmake --build build -j "$JOBS"
ctest --test-dir build --output-on-failure -j "$JOBS"

# Everything ctest runs (GoogleTest, the C99 programs, the install check, the
# end-to-end tests against nginx) once more under ASan + UBSan. Findings are
# fatal: UBSan is built with -fno-sanitize-recover=all (MULLIGAN_SANITIZE adds
# it), ASan halts at its first report and LeakSanitizer fails a test that leaks.
cmake -S . -B build-asan -G Ninja -DBUILD_TESTING=ON -DMULLIGAN_WARNINGS_AS_ERRORS=ON \
  -DMULLIGAN_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build-asan -j "$JOBS"
ASAN_OPTIONS="detect_leaks=1:halt_on_error=1" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
  ctest --test-dir build-asan --output-on-failure -j "$JOBS"

# The concurrency tests (breakers, registry, pools) once more under TSan.
cmake -S . -B build-tsan -G Ninja -DBUILD_TESTING=ON -DMULLIGAN_BUILD_CAPI=OFF \
  -DMULLIGAN_SANITIZE=thread -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build-tsan -j "$JOBS" --target mulligan_core_tests
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/core/mulligan_core_tests --gtest_brief=1

# Every fuzz harness for a short time: the seeds, the crash regressions and
# what the fuzzer reaches in FUZZ_SECONDS must keep every post-condition.
scripts/fuzz.sh "$FUZZ_SECONDS"

# Python (issue 20). The extension is compiled once, by scripts/build_wheel.sh:
# `pip wheel .` (the PEP 517 build of `pip install .`, in build-wheel/), then
# auditwheel repair (libcurl and its libraries vendored, a manylinux tag).
# pytest runs on that repaired wheel, installed here with the test extra;
# tests/python/test_wheel.py installs it again in a minimal Debian root without
# libcurl, Boost or a compiler (scripts/make_wheel_root.sh, cached in .tools/)
# and runs a retried GET there against nginx. `pip install .` from source is
# run too, into the build tool's virtualenv from the same build directory (so
# nothing is compiled twice), and test_wheel.py runs the same GET with it.
WHEEL=$(PYTHON="$PYTHON" JOBS="$JOBS" scripts/build_wheel.sh)
WHEEL_ROOT=$(scripts/make_wheel_root.sh)
.tools/wheel-venv/bin/python -m pip install --quiet --disable-pip-version-check \
  --no-build-isolation --config-settings=build-dir="$PWD/build-wheel/cmake" .
"$PYTHON" -m pip install --quiet --disable-pip-version-check "$WHEEL[test]"
"$PYTHON" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$WHEEL"
MULLIGAN_WHEEL="$WHEEL" MULLIGAN_WHEEL_ROOT="$WHEEL_ROOT" \
  MULLIGAN_SOURCE_PYTHON="$PWD/.tools/wheel-venv/bin/python" "$PYTHON" -m pytest -q

# Instruction-count gate (issue 19): bench/instructions.py counts, under
# valgrind's callgrind, the instructions per iteration of each hot path (the
# installed wheel's @retry success and failure paths, the breaker guard, a
# sequential GET against nginx; the C++ RetryCall and breaker Acquire+Record
# from build/'s bench programs) and fails when one is more than 5% over its
# budget in bench/budgets.json. Counts, not time: it cannot flake. The
# budgets are measured with these builds (the wheel and build/, RelWithDebInfo).
cmake -S . -B build -DMULLIGAN_BUILD_BENCH=ON >/dev/null
cmake --build build -j "$JOBS" --target core_retry_bench core_breaker_bench
"$PYTHON" bench/instructions.py --cxx-build build

# Go binding (issue 17): libmulligan installed with mulligan.pc into
# .tools/prefix (reusing build/), then go vet and the race-checked tests,
# which run the shared vectors through cgo.
# Go comes from setup.sh (the machine's /usr/local/go, else Debian's golang-go).
eval "$(scripts/install_capi.sh)"
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="$PATH:/usr/local/go/bin"
fi
(cd bindings/go && go vet ./... && go test -race -count=1 ./...)

# Rust binding (issue 17): libmulligan installed with mulligan.pc (reusing
# build/), then the cargo workspace in bindings/rust: mulligan-sys, the safe
# mulligan crate (shared vectors included) and the ABI check of the committed
# declarations against the installed headers; clippy with warnings as errors.
eval "$(scripts/install_capi.sh)"
(cd bindings/rust && cargo test && cargo clippy --all-targets -- -D warnings)

# Node binding (issue 17): libmulligan installed with mulligan.pc (reusing
# build/), then bindings/node from its committed package-lock.json (npm ci
# runs node-gyp against the installed Node headers, --nodedir=/usr: no
# download), the TypeScript declarations type-checked, and node --test
# (shared vectors, withRetry, breakers, the ResilientClient against nginx).
eval "$(scripts/install_capi.sh)"
(cd bindings/node && npm ci --no-audit --no-fund && npm run typecheck && npm test)
