"""Hedged requests of mulligan.AsyncClient (``hedge=``, issue 18) against the
real nginx (tests/nginx): its /hedge location answers the n-th request of an
id slowly (after ``ms``) when n is listed in ``slow=``, at once otherwise, so
which copy is slow is fixed by the test, not by chance. What is asserted is
what nginx saw: its access log (one line per request, with its time, its
connection and the Idempotency-Key).

Timings are real but short: a slow copy waits 300-400 ms, a hedge starts
after 50 ms; nothing sleeps for seconds. The exact start times of copies on
a fake clock are the core's tests (tests/core/hedging_test.cc).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import mulligan
from hedge_helpers import SLOW_LOGGED, new_id as _id, seen as _seen


def test_a_slow_first_copy_loses_to_a_fast_hedge(server: Any) -> None:
    hid = _id()

    async def main() -> mulligan.Response:
        async with mulligan.AsyncClient(hedge=0.05) as client:
            return await client.get(server.url(f"/hedge?id={hid}&slow=0&ms=400"))

    response = asyncio.run(main())
    assert response.status_code == 200
    assert response.text == f"hedge 1 of {hid}\n"
    assert response.hedge_winner == 2
    assert response.attempts == 2
    assert response.stop_reason == "succeeded"
    assert response.elapsed < 0.35  # the hedge's time, not the slow copy's 0.4 s
    log = _seen(server, hid, 2)
    assert len(log) == 2
    # Two connections: the slow copy's (answered after 400 ms, to a client
    # that had gone) and the hedge's, started about 50 ms later.
    loser, winner = sorted(log, key=lambda e: e["request_time"], reverse=True)
    assert loser["request_time"] >= SLOW_LOGGED  # its 400 ms, as nginx logs them
    assert winner["request_time"] < 0.1
    assert loser["connection"] != winner["connection"]


def test_a_cancelled_losers_connection_is_closed_not_reused(server: Any) -> None:
    hid = _id()

    async def main() -> None:
        async with mulligan.AsyncClient(hedge=0.05) as client:
            await client.get(server.url(f"/hedge?id={hid}&slow=0&ms=300"))
            # Two more requests one after the other: both reuse the winner's
            # connection; the loser's was closed by the abort.
            await client.get(server.url("/ok"))
            await client.get(server.url("/ok"))

    asyncio.run(main())
    hedged = _seen(server, hid, 2)
    ok = server.wait_for_requests("/ok", 2)
    loser, winner = sorted(hedged, key=lambda e: e["request_time"], reverse=True)
    assert [e["connection"] for e in ok] == [winner["connection"]] * 2
    assert loser["connection"] not in {e["connection"] for e in ok}


def test_a_fast_first_copy_wins_alone(server: Any) -> None:
    hid = _id()

    async def main() -> mulligan.Response:
        async with mulligan.AsyncClient(hedge=0.5) as client:
            return await client.get(server.url(f"/hedge?id={hid}&slow="))

    response = asyncio.run(main())
    assert response.hedge_winner == 1
    assert response.attempts == 1
    log = _seen(server, hid, 1, settle=0.6)  # past the hedging delay
    assert len(log) == 1


def test_a_post_without_a_key_is_sent_once(server: Any) -> None:
    hid = _id()

    async def main() -> mulligan.Response:
        async with mulligan.AsyncClient(hedge={"delay": 0.05, "max_attempts": 3}) as client:
            return await client.post(server.url(f"/hedge?id={hid}&slow=0&ms=300"), data=b"x")

    response = asyncio.run(main())
    assert response.status_code == 200
    assert response.hedge_winner == 0  # not hedged
    assert response.attempts == 1
    assert len(_seen(server, hid, 1, settle=0.2)) == 1


def test_a_keyed_post_carries_the_same_key_on_every_copy(server: Any) -> None:
    hid = _id()

    async def main() -> mulligan.Response:
        async with mulligan.AsyncClient(hedge={"delay": 0.05, "max_attempts": 3}) as client:
            return await client.post(
                server.url(f"/hedge?id={hid}&slow=0,1&ms=300"), data=b"x", idempotency_key=True
            )

    response = asyncio.run(main())
    # Copies 1 and 2 are slow; copy 3 (after 100 ms) wins.
    assert response.hedge_winner == 3
    assert response.headers["echo-idempotency-key"] == response.idempotency_key
    log = _seen(server, hid, 3)
    assert [e["method"] for e in log] == ["POST"] * 3
    assert {e["idempotency_key"] for e in log} == {response.idempotency_key}
    assert len(response.idempotency_key or "") == 36


def test_an_empty_budget_refuses_the_extra_copy(server: Any) -> None:
    # gRPC A6 token bucket of 2: one failure leaves 1, and a retry (so a
    # hedge) needs more than 2 / 2 = 1.
    budget = mulligan.RetryBudget.token_bucket(max_tokens=2, token_ratio=0.5)

    async def main() -> mulligan.Response:
        async with mulligan.AsyncClient(hedge=0.05, budget=budget, attempts=1) as client:
            down = await client.get(server.url("/down"))
            assert down.status_code == 503
            return await client.get(server.url(f"/hedge?id={hid}&slow=0&ms=300"))

    hid = _id()
    response = asyncio.run(main())
    assert response.hedge_winner == 1  # the slow first copy, alone
    assert response.attempts == 1
    assert response.elapsed >= 0.3
    assert len(_seen(server, hid, 1, settle=0.2)) == 1


def test_a_retryable_failure_starts_the_next_copy_at_once(server: Any) -> None:
    # /script answers the first request 503 and the second 200: the 503 of
    # copy 1 lets copy 2 start at once, long before the 10 s hedging delay.
    async def main() -> mulligan.Response:
        async with mulligan.AsyncClient(hedge=10.0) as client:
            return await client.get(server.url(f"/script?id={_id()}&steps=503,200"))

    response = asyncio.run(main())
    assert response.status_code == 200
    assert response.hedge_winner == 2
    assert response.elapsed < 1.0
    assert [e["status"] for e in server.wait_for_requests("/script", 2)] == [503, 200]


def test_a_pushback_delays_the_next_copy_until_retry_after_has_passed(server: Any) -> None:
    # gRPC A6 "Pushback" (0.6): copy 1's 503 carries Retry-After: 1, so copy 2
    # starts 1 s later: not at once (as after a plain 503), and not after the
    # 10 s hedging delay. (Real time: under a FakeClock the hedging delay
    # would pass before copy 1's answer arrived; the exact times on a fake
    # clock are tests/core/hedging_test.cc's.)
    async def main() -> mulligan.Response:
        async with mulligan.AsyncClient(hedge=10.0) as client:
            return await client.get(server.url(f"/script?id={_id()}&steps=503:1,200"))

    response = asyncio.run(main())
    assert response.status_code == 200
    assert response.hedge_winner == 2
    assert 1.0 <= response.elapsed < 5.0
    assert [e["status"] for e in server.wait_for_requests("/script", 2)] == [503, 200]


def test_a_pushback_over_retry_after_max_stops_the_copies(server: Any) -> None:
    # A hint over retry_after_max (here 0.5 s) stops new copies as it stops
    # retries: nginx sees one request, and its 503 is the answer. The hedging
    # delay is 10 s, so only copy 1's answer can start copy 2 (at once, were
    # the hint not refused): with 50 ms, a 503 slower than that on a loaded
    # machine let the timer start copy 2 first, and its 200 won.
    async def main() -> mulligan.Response:
        async with mulligan.AsyncClient(hedge=10.0, retry_after_max=0.5) as client:
            return await client.get(server.url(f"/script?id={_id()}&steps=503:1,200"))

    response = asyncio.run(main())
    assert response.status_code == 503
    assert response.hedge_winner == 0
    assert response.stop_reason == "retry_after_too_long"
    assert [e["status"] for e in server.wait_for_requests("/script", 1)] == [503]


def test_a_terminal_status_ends_the_call_and_no_copy_wins(server: Any) -> None:
    async def main() -> mulligan.Response:
        async with mulligan.AsyncClient(hedge={"delay": 0.0, "max_attempts": 2}) as client:
            return await client.get(server.url(f"/script?id={_id()}&steps=404,404"))

    response = asyncio.run(main())
    assert response.status_code == 404
    assert response.stop_reason == "terminal"


def test_per_request_hedge_overrides_the_clients(server: Any) -> None:
    async def main() -> tuple[mulligan.Response, mulligan.Response]:
        async with mulligan.AsyncClient() as client:
            plain = await client.get(server.url("/ok"))
            hedged = await client.get(server.url(f"/hedge?id={_id()}&slow=0&ms=300"), hedge=0.05)
            return plain, hedged

    plain, hedged = asyncio.run(main())
    assert plain.hedge_winner == 0
    assert hedged.hedge_winner == 2


def test_an_open_breaker_refuses_the_copy_and_sends_nothing(server: Any) -> None:
    async def main() -> None:
        async with mulligan.AsyncClient(
            hedge=0.05, attempts=1, breaker={"failure_threshold": 1, "reset_timeout": 60}
        ) as client:
            # Copy 1's 503 opens the breaker; copy 2, started at once after
            # that retryable failure, is refused: the 503 is the answer.
            down = await client.get(server.url("/down"))
            assert (down.status_code, down.attempts, down.hedge_winner) == (503, 2, 0)
            assert down.stop_reason == "attempts_exhausted"
            with pytest.raises(mulligan.CircuitOpenError):
                await client.get(server.url(f"/hedge?id={hid}&slow="))

    hid = _id()
    asyncio.run(main())
    assert _seen(server, hid, 0, settle=0.1) == []
    assert len(server.wait_for_requests("/down", 1)) == 1


@pytest.mark.parametrize(
    "hedge, error, text",
    [
        ("50ms", TypeError, "hedge must be None, a delay in seconds or a mapping"),
        (-1, ValueError, "hedge"),
        ({"delay": 0.1, "copies": 2}, ValueError, "unknown hedge options: ['copies']"),
        ({"max_attempts": 1}, ValueError, 'hedge["max_attempts"]'),
        ({"quantile": 1.5}, ValueError, 'hedge["quantile"] must be in (0, 1], got 1.5'),
    ],
)
def test_bad_hedge_options_raise_at_construction_naming_the_field(
    hedge: Any, error: type[Exception], text: str
) -> None:
    with pytest.raises(error) as info:
        mulligan.AsyncClient(hedge=hedge)
    assert text in str(info.value)
    assert str(info.value).count("mulligan.AsyncClient:") == 1, str(info.value)  # named once
