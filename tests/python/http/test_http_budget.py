"""mulligan.Client / AsyncClient retry budgets, limits and the sync
connection cap against the real nginx (issues 14 and 15).

Attempt counts are worked out by hand from gRPC A6's arithmetic
(A6-client-retries.md): tokens start at max_tokens, a failed attempt takes 1,
a success adds token_ratio, a retry is allowed only while tokens > max / 2.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

import mulligan

FAST = {"base_delay": 0.001, "max_delay": 0.001, "jitter": "none", "backoff": "constant"}


def _other_origin(url: str) -> str:
    return url.replace("127.0.0.1", "localhost", 1)


def test_default_budget_is_per_origin_and_can_be_turned_off(server: Any) -> None:
    # The default (100 tokens, 0.5): each failed attempt takes 1; at 3
    # attempts a call takes 3 while tokens stay > 50. Calls 1-16 leave
    # 100 - 48 = 52; call 17: 52 -> 51 (retry) -> 50 (50 > 50 is false).
    with mulligan.Client(attempts=3, **FAST) as client:
        counts = [client.get(server.url("/down")).attempts for _ in range(18)]
    assert counts == [3] * 16 + [2, 1]
    with mulligan.Client(attempts=3, budget=None, **FAST) as client:
        assert [client.get(server.url("/down")).attempts for _ in range(18)] == [3] * 18


def test_a_scripted_outage_follows_the_a6_arithmetic(server: Any) -> None:
    budget = mulligan.RetryBudget.token_bucket(max_tokens=10, token_ratio=0.5)
    with mulligan.Client(attempts=3, budget=budget, **FAST) as client:
        # 10 -> 7 (3 attempts); 7 -> 5 (refused at 5); then 1 attempt each.
        down = [client.get(server.url("/down")) for _ in range(5)]
        assert [r.attempts for r in down] == [3, 2, 1, 1, 1]
        assert [r.stop_reason for r in down] == ["attempts_exhausted"] + ["budget"] * 4
        assert all(r.status_code == 503 for r in down)  # the last failure is kept
        # The budget is shared: another origin finds 2 tokens, refused at once.
        assert client.get(_other_origin(server.url("/down"))).attempts == 1
        # 9 successes: 1 + 4.5 = 5.5; the next failure 5.5 -> 4.5: refused.
        for _ in range(9):
            assert client.get(server.url("/ok")).attempts == 1
        assert client.get(server.url("/down")).attempts == 1
    assert budget.tokens() == pytest.approx(4.5)


def test_each_origin_has_its_own_default_budget(server: Any) -> None:
    with mulligan.Client(attempts=3, **FAST) as client:
        for _ in range(17):
            client.get(server.url("/down"))
        assert client.get(server.url("/down")).attempts == 1
        assert client.get(_other_origin(server.url("/down"))).attempts == 3


def test_a_budget_refusal_is_a_give_up(server: Any) -> None:
    budget = mulligan.RetryBudget.token_bucket(max_tokens=2, token_ratio=0.5)
    with mulligan.Client(attempts=3, budget=budget, **FAST) as client:
        with pytest.raises(mulligan.RetriesExhausted) as info:
            client.get(server.url("/down"), raise_on_give_up=True)
    assert info.value.stop_reason == "budget"
    assert info.value.attempts == 1


def test_async_client_has_the_same_budget(server: Any) -> None:
    async def main() -> list[int]:
        budget = mulligan.RetryBudget.token_bucket(max_tokens=10, token_ratio=0.5)
        async with mulligan.AsyncClient(attempts=3, budget=budget, **FAST) as client:
            return [(await client.get(server.url("/down"))).attempts for _ in range(5)]

    assert asyncio.run(main()) == [3, 2, 1, 1, 1]


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"budget": "global"}, ValueError, "budget"),
        ({"budget": 3}, TypeError, "budget"),
        ({"throttle": "x"}, TypeError, "throttle"),
        ({"bulkhead": 2}, TypeError, "bulkhead"),
        ({"rate_limiter": 5.0}, TypeError, "rate_limiter"),
        ({"max_connections": 0}, ValueError, "max_connections"),
    ],
)
def test_bad_options_name_the_option(kwargs: dict[str, Any], error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        mulligan.Client(**kwargs)
    if "max_connections" not in kwargs:
        with pytest.raises(error, match=words):
            mulligan.AsyncClient(**kwargs)


def test_refusals_raise_their_own_errors(server: Any) -> None:
    limiter = mulligan.RateLimiter(rate=0.001, max_wait=0, name="api")
    with mulligan.Client(rate_limiter=limiter) as client:
        assert client.get(server.url("/ok")).status_code == 200
        with pytest.raises(mulligan.RateLimitedError) as info:
            client.get(server.url("/ok"))
    # GCRA at 0.001/s: the next slot is 1000 s after the first call.
    assert info.value.retry_in == pytest.approx(1000.0, abs=1.0)

    bulkhead = mulligan.Bulkhead(max_concurrent=1, name="api")
    with bulkhead:  # holds the only slot
        with mulligan.Client(bulkhead=bulkhead) as client:
            with pytest.raises(mulligan.BulkheadFullError):
                client.get(server.url("/ok"))


def test_a_rate_limiter_spaces_calls(server: Any) -> None:
    # 20 per second, no burst: GCRA reserves the k-th call's slot k * 50 ms
    # after the first call's, so the k-th returns no earlier than that (a
    # lower bound, measured on the client: a loaded machine only adds).
    limiter = mulligan.RateLimiter(rate=20.0, max_wait=10.0)
    with mulligan.Client(rate_limiter=limiter) as client:
        start = time.monotonic()
        done = []
        for _ in range(3):
            assert client.get(server.url("/ok")).status_code == 200
            done.append(time.monotonic() - start)
    assert [d >= k * 0.05 for k, d in enumerate(done)] == [True, True, True], done


def _max_overlap(entries: list[dict[str, Any]], margin: float = 0.12) -> int:
    """The most requests nginx served at once, each shrunk by `margin` at
    both ends: nginx stamps its log with the time cached once per event-loop
    pass, which lags on a loaded machine."""
    spans = [(float(e["start"]), float(e["msec"])) for e in entries]
    best = 0
    for start, _ in spans:
        at = start + margin
        best = max(best, sum(1 for s, end in spans if s + margin <= at < end - margin))
    return best


@pytest.mark.parametrize("cap, want", [(3, 3), (None, 8)])
def test_max_connections_caps_transfers_across_threads(server: Any, cap: Any, want: int) -> None:
    with mulligan.Client(max_connections=cap) as client:
        def run() -> None:
            assert client.get(server.url("/slow?s=0.5")).status_code == 200

        threads = [threading.Thread(target=run) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    entries = server.wait_for_access_log(8)
    assert len(entries) == 8
    assert _max_overlap(entries) == want, [(e["start"], e["msec"]) for e in entries]


def test_a_client_bulkhead_queues_threads_fifo(server: Any) -> None:
    # 8 threads, 2 slots, a queue of 8: every call waits its turn (the
    # client's thread blocks in the engine) and nginx never serves more than
    # 2 at once.
    bulkhead = mulligan.Bulkhead(2, max_queue=8, name="api")
    with mulligan.Client(bulkhead=bulkhead) as client:
        def run() -> None:
            assert client.get(server.url("/slow?s=0.5&bulkhead=1")).status_code == 200

        threads = [threading.Thread(target=run) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    entries = server.wait_for_access_log(8)
    assert len(entries) == 8
    assert _max_overlap(entries) == 2, [(e["start"], e["msec"]) for e in entries]
    assert bulkhead.in_flight == 0 and bulkhead.queued == 0


def test_a_cancelled_async_waiter_frees_its_place(server: Any) -> None:
    async def main() -> tuple[int, int, int]:
        bulkhead = mulligan.Bulkhead(1, max_queue=1, name="api")
        async with mulligan.AsyncClient(bulkhead=bulkhead) as client:
            await bulkhead.acquire_async()  # holds the only slot
            task = asyncio.ensure_future(client.get(server.url("/ok")))
            while bulkhead.queued == 0:  # the request joins the queue
                await asyncio.sleep(0.001)
            queued = bulkhead.queued
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            after = bulkhead.queued
            bulkhead.release()
            # The slot is free again and nobody waits: the next call goes.
            status = (await client.get(server.url("/ok"))).status_code
        return queued, after, status

    assert asyncio.run(main()) == (1, 0, 200)


def test_a_throttled_retry_keeps_the_last_response(server: Any) -> None:
    # As the C++ HttpLimitsTest: the first attempt finds an empty window
    # (p = 0); its 503 is an overload answer, so the retry is drawn at
    # p = (1 - 2 * 0) / (1 + 1) = 0.5, and seed 7's draw rejects it. The
    # 503 stays the answer (since 0.5), as with a refused budget.
    throttle = mulligan.AdaptiveThrottle(seed=7)
    with mulligan.Client(attempts=2, throttle=throttle, **FAST) as client:
        response = client.get(server.url("/script?id=py-throttled-retry&steps=503,200"))
    assert (response.status_code, response.attempts, response.stop_reason) == (503, 1, "throttled")


@pytest.mark.parametrize("function", ["get", "head", "post", "delete"])
def test_module_functions_name_the_client_options(function: str) -> None:
    # No request is sent: the option is refused before the default client runs.
    with pytest.raises(TypeError, match=r"budget is an option of mulligan\.Client.*"
                       r"mulligan\.Client\(budget=\.\.\.\)\." + function):
        getattr(mulligan, function)("http://127.0.0.1:9/", budget=None)
    with pytest.raises(TypeError, match=r"breaker, bulkhead are options of mulligan\.Client"):
        getattr(mulligan, function)("http://127.0.0.1:9/", bulkhead=None, breaker=True)
