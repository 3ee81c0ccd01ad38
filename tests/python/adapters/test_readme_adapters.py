"""The README's adapter quick starts run, against the suite's nginx in
place of https://api.example.com (where /orders is a 404: an answer)."""

from __future__ import annotations

import asyncio
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("requests")
pytest.importorskip("httpx")
pytest.importorskip("aiohttp", minversion="3.12")

README = Path(__file__).resolve().parents[3] / "README.md"


def snippets() -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Adapters: requests, httpx, aiohttp and gRPC")
    # The HTTP libraries' quick starts (tests/python/adapters/test_grpc_adapter.py runs gRPC's).
    section = text[start:text.index("\n### gRPC", start + 1)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.mark.parametrize("index", range(3))
def test_quick_start_runs(index: int, server: Any) -> None:
    code = snippets()[index].replace("https://api.example.com", server.base_url)
    namespace: dict[str, Any] = {"__name__": "readme"}
    exec(compile(code, f"README adapters snippet {index}", "exec"), namespace)
    main = namespace.get("main")
    if main is not None and inspect.iscoroutinefunction(main):
        asyncio.run(main())


def test_three_quick_starts() -> None:
    assert len(snippets()) == 3
