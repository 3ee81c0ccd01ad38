"""The per-attempt breaker switch of the HTTP clients: ``breaker_per_attempt=True``
is its one name; ``breaker={"per_attempt": True}``, the 0.1 spelling, still
works and warns (DeprecationWarning, pointing at the caller's line).

Either way the origin's breaker records every attempt, not one result per
call: with failure_threshold 2, one call of 5 attempts against nginx's /down
(always 503) opens the breaker with its second failed attempt, and its
retry is refused, so exactly 2 requests reach nginx and the call ends with
CircuitOpenError after 2 attempts. Waits are on a FakeClock.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest

import mulligan
from mulligan.testing import FakeClock

CALL = {"attempts": 5, "base_delay": 0.5, "max_delay": 0.5}


def make_client(kind: str, **options: Any) -> Any:
    if kind == "sync":
        return mulligan.Client(**CALL, **options)  # the line the warning must name
    return mulligan.AsyncClient(**CALL, **options)  # the line the warning must name


def one_call(kind: str, client: Any, url: str) -> mulligan.CircuitOpenError:
    """Sends one GET that the breaker must end; returns the CircuitOpenError."""
    if kind == "sync":
        with client:
            with pytest.raises(mulligan.CircuitOpenError) as info:
                client.get(url)
        return info.value

    async def main() -> mulligan.CircuitOpenError:
        async with client:
            with pytest.raises(mulligan.CircuitOpenError) as info:
                await client.get(url)
        return info.value

    return asyncio.run(main())


def expect_every_attempt_recorded(server: Any, kind: str, client: Any) -> None:
    with FakeClock() as clock:
        refused = one_call(kind, client, server.url("/down"))
    assert refused.attempts == 2
    assert refused.key == server.base_url
    # Two retries were decided (after attempt 1, and after attempt 2, whose
    # failure opened the breaker); full jitter may make a wait 0 (not slept).
    assert len(clock.sleeps) <= 2
    assert len(server.wait_for_requests("/down", 2)) == 2


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_the_old_spelling_warns_and_still_records_every_attempt(server: Any, kind: str) -> None:
    with pytest.warns(DeprecationWarning, match="breaker_per_attempt") as record:
        client = make_client(kind, breaker={"failure_threshold": 2, "per_attempt": True})
    assert len(record) == 1
    assert record[0].filename == __file__  # stacklevel: the caller's line, not mulligan's
    expect_every_attempt_recorded(server, kind, client)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_breaker_per_attempt_records_every_attempt_without_a_warning(server: Any, kind: str) -> None:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        client = make_client(kind, breaker={"failure_threshold": 2}, breaker_per_attempt=True)
    assert record == []
    expect_every_attempt_recorded(server, kind, client)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_without_the_switch_one_call_records_one_result(server: Any, kind: str) -> None:
    # The default, for contrast: the same call runs its 5 attempts, and the
    # breaker (threshold 2) stays closed after this one failed call.
    client = make_client(kind, breaker={"failure_threshold": 2})
    with FakeClock():
        if kind == "sync":
            with client:
                r = client.get(server.url("/down"))
        else:
            async def main() -> mulligan.Response:
                async with client:
                    return await client.get(server.url("/down"))

            r = asyncio.run(main())
    assert (r.status_code, r.attempts, r.stop_reason) == (503, 5, "attempts_exhausted")
    assert len(server.wait_for_requests("/down", 5)) == 5
