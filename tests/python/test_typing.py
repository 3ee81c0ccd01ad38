"""Static checks: _core.pyi matches the compiled module; the package and
tests/typing/api.py pass mypy --strict.

Skipped when mypy is not installed (pip install mypy).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("mypy")

HERE = os.path.dirname(os.path.abspath(__file__))


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, timeout=300, cwd=HERE
    )


def test_core_stub_matches_the_module() -> None:
    result = run(
        "mypy.stubtest",
        "mulligan._core",
        "--allowlist",
        os.path.join(HERE, "stubtest_allowlist.txt"),
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_package_passes_mypy_strict() -> None:
    # -p checks the package as installed (py.typed), wherever that is.
    result = run("mypy", "--strict", "--no-incremental", "-p", "mulligan")
    assert result.returncode == 0, result.stdout + result.stderr


def test_typed_usage_file_passes_mypy_strict() -> None:
    # tests/typing/api.py: the decorator keeps parameter and return types,
    # for functions, methods and coroutine functions (never run, only checked).
    api = os.path.join(os.path.dirname(HERE), "typing", "api.py")
    result = run("mypy", "--strict", "--no-incremental", api)
    assert result.returncode == 0, result.stdout + result.stderr
