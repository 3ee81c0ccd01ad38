"""What the hedging tests of both clients share (test_hedge_async.py,
test_hedge_sync.py): a fresh request id for nginx's /hedge and /script
locations, and the access log's lines of one id."""

from __future__ import annotations

import time
import uuid
from typing import Any

# What nginx logs as $request_time for a /hedge request held 400 ms (ms=400):
# nginx stamps times from its cached millisecond clock, so such a request
# logs 0.399 to 0.402 s (measured over many runs); 0.395 is "it waited its
# 400 ms" without counting on the rounding.
SLOW_LOGGED = 0.395

def new_id() -> str:
    return uuid.uuid4().hex[:16]


def seen(
    server: Any, hid: str, count: int, timeout: float = 2.0, settle: float = 0.1
) -> list[dict[str, Any]]:
    """The access log's lines of /hedge requests with id `hid`, once `count`
    are in (or `timeout` passed) and `settle` more seconds showed no more: a
    loser of an earlier test may log its line late, so lines are matched by id."""
    deadline = time.monotonic() + timeout

    def mine() -> list[dict[str, Any]]:
        return [e for e in server.access_log() if f"id={hid}&" in e["uri"]]

    while len(mine()) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(settle)
    return mine()
