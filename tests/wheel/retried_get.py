"""One retried GET with an installed mulligan, for tests/python/test_wheel.py.

Run by the interpreter under test (a virtualenv's python inside the Debian
root, or one with a source install) as ``python retried_get.py URL``: it
imports mulligan, GETs URL with up to 3 attempts and short waits (0.01 s base,
0.05 s cap), and prints one JSON object: status (int), text (the body),
attempts (int), core (the path of the loaded mulligan._core extension) and
version (mulligan.__version__). Standard library and mulligan only.
"""

from __future__ import annotations

import json
import sys

import mulligan
import mulligan._core


def main() -> int:
    response = mulligan.get(sys.argv[1], attempts=3, base_delay=0.01, max_delay=0.05, timeout=10.0)
    print(json.dumps({
        "status": response.status_code,
        "text": response.text,
        "attempts": response.attempts,
        "core": mulligan._core.__file__,
        "version": mulligan.__version__,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
