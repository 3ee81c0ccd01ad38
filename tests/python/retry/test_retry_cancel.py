"""A call its caller cancels (asyncio.CancelledError, KeyboardInterrupt) is
counted cancelled, never failed (DESIGN.md: a stop exception is never
counted as a failure): exact metrics and breaker counts, against a hook's
error, which still ends the call as a failure."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

import mulligan
from mulligan._telemetry import metrics as _metrics
from mulligan.testing import FakeClock

_names = itertools.count()


@pytest.fixture(autouse=True)
def fresh_metrics() -> None:
    _metrics.reset_metrics()


def by_name(name: str) -> dict:
    for snap in mulligan.metrics_snapshot():
        if snap["name"] == name:
            return snap
    raise AssertionError(f"no metrics named {name!r}")


def counts(name: str) -> tuple[int, int, int, int, int, int, int]:
    s = by_name(name)
    return (s["calls"], s["attempts"], s["successes"], s["failures"], s["cancelled"],
            s["in_flight"], s["waiting_to_retry"])


def test_an_async_call_cancelled_while_waiting_to_retry_counts_cancelled() -> None:
    # Attempt 1 fails, then the call waits 30 s (no jitter) for attempt 2;
    # the task is cancelled in that wait. With failure_threshold 1 a single
    # failure recorded would open the breaker.
    b = mulligan.CircuitBreaker(f"cancel-{next(_names)}", failure_threshold=1)
    ran: list[int] = []

    @mulligan.retry(on=ConnectionError, attempts=5, base_delay=30.0, jitter="none", breaker=b)
    async def down() -> None:
        ran.append(1)
        raise ConnectionError("down")

    async def main() -> None:
        task = asyncio.create_task(down())
        while not ran:
            await asyncio.sleep(0)
        await asyncio.sleep(0.01)  # now in its 30 s wait
        assert mulligan.status().by_name[down.__qualname__] == (1, 1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    # 1 call, its 1 attempt, no success, no failure, 1 cancelled, none left.
    assert counts(down.__qualname__) == (1, 1, 0, 0, 1, 0, 0)
    assert (b.state, b.counts["failures"], b.counts["consecutive_failures"]) == ("closed", 0, 0)


def test_an_async_attempt_cancelled_mid_attempt_counts_cancelled() -> None:
    b = mulligan.CircuitBreaker(f"cancel-{next(_names)}", failure_threshold=1)

    @mulligan.retry(on=ConnectionError, attempts=3, breaker=b)
    async def slow() -> None:
        await asyncio.sleep(30)

    async def main() -> None:
        task = asyncio.create_task(slow())
        await asyncio.sleep(0.01)  # attempt 1 is running
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert counts(slow.__qualname__) == (1, 1, 0, 0, 1, 0, 0)
    assert (b.state, b.counts["failures"]) == ("closed", 0)


def test_ctrl_c_in_the_retry_wait_counts_cancelled() -> None:
    # The sync driver: KeyboardInterrupt raised by an on_retry hook (as
    # Ctrl-C would be) after attempt 1 failed.
    def interrupt(details: Any) -> None:
        raise KeyboardInterrupt

    @mulligan.retry(on=ConnectionError, attempts=3, base_delay=1.0, on_retry=interrupt)
    def down() -> None:
        raise ConnectionError

    with FakeClock(), pytest.raises(KeyboardInterrupt):
        down()
    assert counts(down.__qualname__) == (1, 1, 0, 0, 1, 0, 0)


def test_a_hook_error_still_ends_the_call_as_a_failure() -> None:
    # Not a cancel: a hook that raises ValueError abandons the call, which
    # counts as failed (Call::Abandon).
    def broken(details: Any) -> None:
        raise ValueError("hook")

    @mulligan.retry(on=ConnectionError, attempts=3, base_delay=1.0, on_retry=broken)
    def down() -> None:
        raise ConnectionError

    with FakeClock(), pytest.raises(ValueError):
        down()
    assert counts(down.__qualname__) == (1, 1, 0, 1, 0, 0, 0)


def test_a_retrying_block_cancelled_in_its_wait_counts_cancelled() -> None:
    name = f"cancel-block-{next(_names)}"
    ran: list[int] = []

    async def main() -> None:
        async def body() -> None:
            async for attempt in mulligan.retrying(on=ConnectionError, attempts=3, base_delay=30.0,
                                                   jitter="none", name=name):
                with attempt:
                    ran.append(1)
                    raise ConnectionError

        task = asyncio.create_task(body())
        while not ran:
            await asyncio.sleep(0)
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert counts(name) == (1, 1, 0, 0, 1, 0, 0)
