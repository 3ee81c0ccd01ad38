"""Each adapter module imports only with its library, and says which extra
to install otherwise; mulligan and mulligan.adapters import none of them."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("module", "library", "extra"),
    [
        ("requests", "requests", "requests"),
        ("httpx", "httpx", "httpx"),
        ("aiohttp", "aiohttp", "aiohttp"),
        ("grpc", "grpc", "grpc"),
    ],
)
def test_missing_library_names_the_extra(module: str, library: str, extra: str) -> None:
    code = (
        "import sys\n"
        f"sys.modules[{library!r}] = None  # as if it were not installed\n"
        "try:\n"
        f"    import mulligan.adapters.{module}\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert f"pip install 'mulligan[{extra}]'" in out


def test_package_imports_no_library() -> None:
    code = (
        "import sys, mulligan, mulligan.adapters\n"
        "print(sorted(m for m in ('requests', 'httpx', 'aiohttp', 'grpc') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
