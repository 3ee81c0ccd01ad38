#!/usr/bin/env bash
# The main job: sets this machine up, installs mulligan (pip install .), starts
# a real nginx on a free loopback port, and runs the demo scenarios through
# mulligan from Python (examples/python/demo.py), ending with one table.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

scripts/setup.sh
"$PYTHON" -m pip install --quiet --disable-pip-version-check .
exec "$PYTHON" examples/python/demo.py "$@"
