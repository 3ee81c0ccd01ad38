"""mulligan.AsyncClient against the real nginx: a request whose awaiting task
is cancelled mid-transfer is counted cancelled, never failed (DESIGN.md: a
caller's cancel is never a failure), and charges neither the breaker nor
the retry budget. Exact counts, as deltas of the origin's metrics (other
tests' calls share the origin's name)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import mulligan
from mulligan import _core

KEYS = ("calls", "attempts", "successes", "failures", "cancelled", "in_flight", "waiting_to_retry")


def snapshot(name: str) -> dict[str, int]:
    for snap in mulligan.metrics_snapshot():
        if snap["name"] == name:
            return {k: int(snap[k]) for k in KEYS}
    return dict.fromkeys(KEYS, 0)


def delta(before: dict[str, int], after: dict[str, int]) -> tuple[int, ...]:
    return tuple(after[k] - before[k] for k in KEYS)


def test_a_get_cancelled_mid_transfer_counts_cancelled_and_leaves_the_breaker_closed(
    server: Any,
) -> None:
    name = _core.http_origin(server.url("/ok"))

    async def main() -> None:
        async with mulligan.AsyncClient(
            attempts=3, breaker={"failure_threshold": 1, "reset_timeout": 60}
        ) as c:
            before = snapshot(name)
            task = asyncio.create_task(c.get(server.url("/slow?s=1&case=cancel_counts")))
            await asyncio.sleep(0.2)  # nginx holds the response for 1 s: mid-transfer
            assert mulligan.status().by_name.get(name, (0, 0))[0] >= 1
            task.cancel()
            t0 = time.monotonic()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert time.monotonic() - t0 < 0.5  # the transfer was removed, not waited for
            # 1 call, its 1 attempt (in flight when cancelled), 0 successes,
            # 0 failures, 1 cancelled, none left in flight or waiting.
            assert delta(before, snapshot(name)) == (1, 1, 0, 0, 1, 0, 0)
            # failure_threshold 1: one failure would have opened the breaker
            # for 60 s and refused this call; it goes through.
            before = snapshot(name)
            assert (await c.get(server.url("/ok"))).status_code == 200
            assert delta(before, snapshot(name)) == (1, 1, 1, 0, 0, 0, 0)

    asyncio.run(main())
    # nginx saw the cancelled request (it was sent) once: no retry.
    slow = server.wait_for_requests("/slow", 1, timeout=3.0)
    assert [e["uri"] for e in slow] == ["/slow?s=1&case=cancel_counts"]
