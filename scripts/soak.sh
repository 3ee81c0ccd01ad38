#!/usr/bin/env bash
# The chaos soak (not run by scripts/test.sh or CI): mixed sync and async
# traffic through a real toxiproxy whose toxics change at random, in front
# of the test nginx, for 10 minutes by default; then it checks that every
# call ended with a success, a documented error or its fallback, that RSS
# stayed flat and that the metrics add up (tests/soak/soak.py says how).
#
#   scripts/soak.sh [--seconds N] [--seed N] [--threads N] [--tasks N] [--json FILE]
#
# Exit status 0 when every check passed, 1 otherwise. Runs at nice 10 (the
# machine may be shared). Uses $PYTHON (default python3), which must be able
# to pip install (a virtualenv): the package is installed into it when it
# cannot import mulligan.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

scripts/setup.sh
export MULLIGAN_TOXIPROXY="$PWD/.tools/toxiproxy/server"
if ! "$PYTHON" -c "import mulligan" 2>/dev/null; then
  "$PYTHON" -m pip install --quiet --disable-pip-version-check .
fi
exec nice -n 10 "$PYTHON" tests/soak/soak.py "$@"
