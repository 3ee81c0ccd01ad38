#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz/ (clang-14, AddressSanitizer +
# UBSan, in build-fuzz/) and runs each for a bounded time, one after the other
# (one process each: the machine's cores are shared).
#
#   scripts/fuzz.sh [seconds]       each harness for `seconds` (default 60)
#   FUZZERS="fuzz_url fuzz_config" scripts/fuzz.sh 30      only these
#   FUZZ_RUNS=10000000 scripts/fuzz.sh 7200   stop each at 10M executions
#                                             (or at 7200 s, whichever first)
#
# Each run reads the seed corpus tests/fuzz/corpus/<harness>/ (never written)
# and the working corpus build-fuzz/corpus/<harness>/ that earlier runs grew;
# new inputs go to the latter. A harness aborts when a documented
# post-condition fails (tests/fuzz/fuzz_check.h); that, a sanitizer report, a
# leak, an input slower than 10 s or more than 2 GiB of memory is a crash:
# the input is kept in build-fuzz/artifacts/, and the script ends with
# status 1 after running the other harnesses.
#
# The last lines are a Markdown table: executions, seconds, executions per
# second, coverage (libFuzzer's cov), corpus (inputs, bytes), crashes.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_EACH=${1:-60}
FUZZ_RUNS=${FUZZ_RUNS:--1}
JOBS=${JOBS:-2}
BUILD=build-fuzz
ALL_FUZZERS="fuzz_retry_after fuzz_http_date fuzz_idempotency_key fuzz_idempotency_store
  fuzz_config fuzz_grpc_config fuzz_url fuzz_header_callback"
FUZZERS=${FUZZERS:-$ALL_FUZZERS}

if ! [[ $SECONDS_EACH =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: seconds must be a positive integer, got \"$SECONDS_EACH\"" >&2
  exit 2
fi
if ! [[ $FUZZ_RUNS =~ ^(-1|[1-9][0-9]*)$ ]]; then
  echo "fuzz.sh: FUZZ_RUNS must be a positive integer, got \"$FUZZ_RUNS\"" >&2
  exit 2
fi
for f in $FUZZERS; do
  if ! [[ " $(echo $ALL_FUZZERS) " == *" $f "* ]]; then
    echo "fuzz.sh: unknown harness \"$f\"; the harnesses are: $(echo $ALL_FUZZERS)" >&2
    exit 2
  fi
done
CLANG=${CLANG:-clang-14}
CLANGXX=${CLANGXX:-clang++-14}
if ! command -v "$CLANGXX" > /dev/null; then
  echo "fuzz.sh: $CLANGXX not found; scripts/setup.sh installs clang-14 and libclang-rt-14-dev" >&2
  exit 2
fi

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$CLANG" -DCMAKE_CXX_COMPILER="$CLANGXX" \
  -DBUILD_TESTING=OFF -DMULLIGAN_BUILD_CAPI=OFF -DMULLIGAN_BUILD_FUZZERS=ON \
  -DMULLIGAN_SANITIZE=address,undefined > /dev/null
# shellcheck disable=SC2086
cmake --build "$BUILD" -j "$JOBS" --target $FUZZERS

mkdir -p "$BUILD/artifacts"
# Findings are fatal: ASan and UBSan stop at the first report (the build also
# passes -fno-sanitize-recover=all); leaks are checked after each input.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

rows=()
failed=()
for f in $FUZZERS; do
  seeds="tests/fuzz/corpus/$f"
  work="$BUILD/corpus/$f"
  log="$BUILD/$f.log"
  mkdir -p "$work"
  extra=()
  case $f in
    fuzz_config|fuzz_grpc_config) extra+=("-dict=tests/fuzz/config.dict") ;;
    fuzz_header_callback) extra+=("-dict=tests/fuzz/header.dict") ;;
    # The harness skips longer inputs (more operations add no new state).
    fuzz_idempotency_store) extra+=("-max_len=1024") ;;
  esac
  limit="at most ${SECONDS_EACH} s"
  if [[ $FUZZ_RUNS != -1 ]]; then limit+=" or $FUZZ_RUNS executions"; fi
  echo "fuzz.sh: $f, $limit"
  status=0
  "$BUILD/tests/fuzz/$f" "${extra[@]}" -max_total_time="$SECONDS_EACH" -runs="$FUZZ_RUNS" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$BUILD/artifacts/$f-" "$work" "$seeds" > "$log" 2>&1 || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\) .*/\1/p' <<< "$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\) .*/\1/p' <<< "$last")
  crashes=0
  if ((status != 0)); then
    crashes=1
    failed+=("$f")
    echo "fuzz.sh: $f FAILED (status $status); the input is in $BUILD/artifacts/, the log in $log:"
    grep -E 'post-condition|ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -20
  fi
  rate="?"
  if [[ -n $execs && -n $secs ]]; then rate=$(( secs > 0 ? execs / secs : execs )); fi
  rows+=("| $f | ${execs:-?} | ${secs:-?} | $rate | ${cov:-?} | ${corp:-?} | $crashes |")
done

echo
echo "| harness | executions | seconds | exec/s | coverage | corpus (inputs/bytes) | crashes |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${rows[@]}"
if ((${#failed[@]})); then
  echo "fuzz.sh: crashes in: ${failed[*]}" >&2
  exit 1
fi
