"""mulligan.adapters.httpx: a seekable file body is rewound and replayed (0.6).

Against the suite's real nginx, which logs each request's length (head and
body): both attempts of a replayed body have the same length, and a body
that were not rewound would leave nginx waiting for the Content-Length it
announced (the attempt would time out instead of getting the 200).
"""

from __future__ import annotations

import io
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")

from mulligan.adapters.httpx import Transport  # noqa: E402

from adapter_helpers import FAST, clock, lines, script  # noqa: E402,F401


def put(url: str, content: Any, **options: Any) -> Any:
    with httpx.Client(transport=Transport(**options), trust_env=False, timeout=2) as client:
        return client.put(url, content=content)


def test_a_bytesio_body_is_rewound_for_the_retry(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,503,200")
    r = put(url, io.BytesIO(b"0123456789" * 100), attempts=3, **FAST)
    assert r.status_code == 200
    seen = lines(server, call_id, 3)
    assert len(seen) == 3
    assert len({line["request_length"] for line in seen}) == 1
    assert clock.sleeps == [0.5, 0.5]


def test_a_file_body_is_rewound_for_the_retry(server: Any, clock: Any, tmp_path: Any) -> None:
    path = tmp_path / "body"
    path.write_bytes(b"x" * 70_000)  # more than httpx's 64 KiB read
    url, call_id = script(server, "503,200")
    with open(path, "rb") as f:
        r = put(url, f, attempts=3, **FAST)
    assert r.status_code == 200
    seen = lines(server, call_id, 2)
    assert len(seen) == 2 and seen[0]["request_length"] == seen[1]["request_length"]
    assert int(seen[0]["request_length"]) > 70_000


class _Pipe(io.RawIOBase):
    """A readable stream that cannot seek (a pipe, a socket)."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def read(self, n: int = -1) -> bytes:
        return self._data.read(n)


def test_a_stream_that_cannot_seek_is_sent_once(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,200")
    r = put(url, _Pipe(b"abc"), attempts=3, **FAST)
    assert r.status_code == 503
    assert len(lines(server, call_id, 1)) == 1
    assert clock.sleeps == []
