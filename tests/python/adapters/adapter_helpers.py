"""Helpers of the adapter tests: unique /script ids and what nginx saw.

Every test talks to the suite's real nginx (tests/nginx): /script answers
the n-th request of an id with the n-th step (``503:2`` is a 503 with
``Retry-After: 2``) and echoes the request's Idempotency-Key back as
``Echo-Idempotency-Key``; the access log has one line per attempt.
"""

from __future__ import annotations

import itertools
import os
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mulligan.testing import FakeClock

_serial = itertools.count()


# The adapters' retry options for tests: constant 0.5 s waits, no jitter, so
# the fake clock records exact waits.
FAST = {"backoff": "constant", "base_delay": 0.5, "jitter": "none"}


def requests_session(**options: Any) -> Any:
    """A requests.Session (no proxies from the environment) with a
    mulligan.adapters.requests.Adapter(**options) mounted for http and https."""
    import requests

    from mulligan.adapters.requests import Adapter

    s = requests.Session()
    s.trust_env = False
    adapter = Adapter(**options)
    s.mount("http://", adapter)
    s.mount("https://", adapter)
    return s


def unique(label: str) -> str:
    """A /script id no other call of this process or earlier run used."""
    return f"ad-{label}-{os.getpid()}-{next(_serial)}"


def script(server: Any, steps: str, label: str = "s") -> tuple[str, str]:
    """(url, id) of a /script call answering ``steps`` (``"503,503,200"``)."""
    call_id = unique(label)
    return server.url(f"/script?id={call_id}&steps={steps}"), call_id


def lines(server: Any, call_id: str, count: int) -> list[dict[str, Any]]:
    """The access-log lines of ``call_id``, once ``count`` of them are there
    (nginx logs a request just after answering it)."""
    def matching() -> list[dict[str, Any]]:
        return [line for line in server.access_log() if f"id={call_id}&" in line["uri"]]

    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        found = matching()
        if len(found) >= count:
            time.sleep(0.05)  # a late extra line would show now
            return matching()
        time.sleep(0.01)
    return matching()


def closed_port() -> int:
    """A loopback port nothing listens on (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def clock() -> Iterator[FakeClock]:
    """mulligan.testing's FakeClock, installed: every wait is instant and
    recorded in ``clock.sleeps``."""
    with FakeClock() as c:
        yield c
