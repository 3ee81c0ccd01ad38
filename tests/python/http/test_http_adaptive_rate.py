"""Client/AsyncClient(adaptive_rate=) against nginx's scripted 429s (issue
14). Worked out by hand from the AWS adaptive-mode pseudo-code
(core/include/mulligan/limits/adaptive_rate.h) on a fake clock at 1000.0:

- attempt 1 at 1000 goes at once (no throttle seen yet); its 429 comes in the
  rate's first 0.5 s bucket: measured 0, W_max 0 -> fill rate 0.5/s
  (the floor), capacity 0;
- attempt 2 waits (1 - 0) / 0.5 = 2 s; its 429 at 1002: 2 answers over 2 s,
  measured 0.8; W_max = min(0.8, 0.5) = 0.5, K = cbrt(0.5 * 0.3 / 0.4);
  0.35 floored at 0.5; capacity back to 0;
- attempt 3 waits 2 s more; its 200 at 1004: 1 answer over 2 s, measured
  0.8 * 0.5 + 0.2 * 0.8 = 0.56; CUBIC 0.4 * (2 - K)^3 + 0.5 = 1.3366...,
  capped at 2 * 0.56 = 1.12/s.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

import mulligan
from mulligan.testing import FakeClock

CALL = {"attempts": 3, "base_delay": 0.0, "max_delay": 0.0}


def fetch(kind: str, rate: mulligan.AdaptiveRate, url: str) -> int:
    if kind == "sync":
        with mulligan.Client(adaptive_rate=rate, **CALL) as client:
            return client.get(url).status_code

    async def main() -> int:
        async with mulligan.AsyncClient(adaptive_rate=rate, **CALL) as client:
            return (await client.get(url)).status_code

    return asyncio.run(main())


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_the_rate_drops_after_429s(server: Any, kind: str) -> None:
    with FakeClock(start=1000.0) as clock:
        rate = mulligan.AdaptiveRate(name=f"nginx-429-{kind}")
        url = server.url(f"/script?id=adaptive-{kind}&steps=429:0,429:0,200")
        assert fetch(kind, rate, url) == 200
        # The engine's reading of the fake clock (the sync client waits on
        # it inside the engine; the rate's times are the engine's).
        now = clock._native.now()
        assert now == pytest.approx(1004.0, abs=1e-9)
        state = dict(rate._core.state(now))
    assert len(server.wait_for_requests("/script", 3)) == 3
    assert rate.throttles == 2
    k = math.cbrt(0.5 * 0.3 / 0.4)
    assert state["time_window"] == pytest.approx(k, rel=1e-12)
    assert state["last_max_rate"] == pytest.approx(0.5, rel=1e-12)
    assert state["measured_rate"] == pytest.approx(0.56, rel=1e-12)
    assert state["calculated_rate"] == pytest.approx(0.4 * (2 - k) ** 3 + 0.5, rel=1e-12)
    assert state["fill_rate"] == pytest.approx(1.12, rel=1e-12)
    assert state["capacity"] == pytest.approx(0.0, abs=1e-9)


def test_a_wait_past_max_wait_is_refused(server: Any) -> None:
    with FakeClock(start=1000.0):
        rate = mulligan.AdaptiveRate(name="nginx-429-refuse", max_wait=1.0)
        url = server.url("/script?id=adaptive-refuse&steps=429:0,200")
        with mulligan.Client(adaptive_rate=rate, **CALL) as client:
            with pytest.raises(mulligan.RateLimitedError) as info:
                client.get(url)
    assert info.value.retry_in == pytest.approx(2.0, abs=1e-9)
    assert len(server.wait_for_requests("/script", 1)) == 1


def test_a_wrong_type_names_the_option() -> None:
    with pytest.raises(TypeError, match="adaptive_rate"):
        mulligan.Client(adaptive_rate=object())
