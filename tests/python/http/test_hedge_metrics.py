"""What the origin's metrics count for a hedged request whose losing copy is
cancelled (issue 18: "a cancelled loser counts neither as a failure nor
against the breaker"), against the real nginx (tests/nginx): its /hedge
location holds the first request of an id 400 ms and answers the second at
once, so copy 2 (started after 50 ms) wins and copy 1 is cancelled.

Expected, computed from the rules and not from the code: each copy is one
single-attempt call of the client's pipeline for the origin (hedged.py), so
the origin sees 2 calls: the winner's (1 success, 1 attempt) and the
loser's, cancelled in flight (1 cancelled, its 1 attempt counted: it was
sent); 0 failures; the hedged call counts 1 hedge, won, and 1 cancelled
copy. A breaker with failure_threshold=1 stays closed (a failure would have
opened it), and a token-bucket budget of 10 with token_ratio 1 ends full
(a failure would have taken a token). The counters are read as deltas: the
origin is shared with the other tests.
"""

from __future__ import annotations

import asyncio
from typing import Any

import mulligan
from hedge_helpers import new_id as _id, seen as _seen

_KEYS = ("calls", "attempts", "successes", "failures", "cancelled", "hedges", "hedges_won",
         "hedge_cancelled", "in_flight")


def _counts(origin: str) -> dict[str, int]:
    for m in mulligan.metrics_snapshot():
        if m["name"] == origin:
            return {k: m[k] for k in _KEYS}
    return dict.fromkeys(_KEYS, 0)


def _delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in _KEYS}


_EXPECTED = {"calls": 2, "attempts": 2, "successes": 1, "failures": 0, "cancelled": 1,
             "hedges": 1, "hedges_won": 1, "hedge_cancelled": 1, "in_flight": 0}


def _origin(server: Any) -> str:
    return server.url("/").rstrip("/")


def test_async_a_cancelled_loser_is_counted_cancelled_not_failed(server: Any) -> None:
    hid = _id()
    budget = mulligan.RetryBudget.token_bucket(max_tokens=10, token_ratio=1)
    breaker = {"failure_threshold": 1}

    async def main() -> tuple[mulligan.Response, Any]:
        async with mulligan.AsyncClient(hedge=0.05, budget=budget, breaker=breaker) as client:
            response = await client.get(server.url(f"/hedge?id={hid}&slow=0&ms=400"))
            # The origin's breaker reports its state under the origin's name.
            states = [m["breaker_state"] for m in mulligan.metrics_snapshot()
                      if m["name"] == _origin(server)]
            return response, states

    before = _counts(_origin(server))
    response, state = asyncio.run(main())
    after = _counts(_origin(server))
    assert response.hedge_winner == 2
    assert response.text == f"hedge 1 of {hid}\n"
    assert _delta(before, after) == _EXPECTED
    assert state == ["closed"]
    assert budget.tokens() == 10.0
    assert len(_seen(server, hid, 2)) == 2  # nginx saw both copies


def test_sync_a_cancelled_loser_is_counted_cancelled_not_failed(server: Any) -> None:
    hid = _id()
    before = _counts(_origin(server))
    with mulligan.Client(hedge=0.05) as client:
        response = client.get(server.url(f"/hedge?id={hid}&slow=0&ms=400"))
    after = _counts(_origin(server))
    assert response.hedge_winner == 2
    assert _delta(before, after) == _EXPECTED
    assert len(_seen(server, hid, 2)) == 2


def test_the_slow_tail_is_cut_end_to_end(server: Any) -> None:
    # Issue 18's end-to-end check on nginx's /tail, where nginx itself makes
    # 2% of requests (split_clients on $request_id, not the test) wait 100 ms
    # and the others 1 ms. 1,000 sequential GETs, each with its own `n`, so
    # nginx's log groups the copies of one call; a copy's start is its log
    # time minus its request time (the copies of a call start >= 20 ms
    # apart). With 20 slow requests expected, fewer than 3 slow first copies
    # has a chance below 1e-6.
    origin = server.url("/").rstrip("/")
    before = _counts(origin)

    async def main() -> dict[int, mulligan.Response]:
        async with mulligan.AsyncClient(hedge={"delay": 0.02, "max_attempts": 2}) as client:
            return {n: await client.get(server.url(f"/tail?n={n}&")) for n in range(1000)}

    responses = asyncio.run(main())
    sent = sum(r.attempts for r in responses.values())
    log = server.wait_for_requests("/tail", sent, timeout=10.0, settle=0.3)
    copies: dict[int, list[dict[str, Any]]] = {}
    for e in log:
        n = int(e["uri"].split("n=")[1].split("&")[0])
        copies.setdefault(n, []).append(e)
    start = lambda e: float(e["msec"]) - float(e["request_time"])  # noqa: E731

    assert all(r.status_code == 200 and r.text == "tail\n" for r in responses.values())
    assert {n: len(copies.get(n, [])) for n in responses} == {n: r.attempts for n, r in responses.items()}
    slow_first = [n for n in responses if float(min(copies[n], key=start)["request_time"]) >= 0.09]
    assert len(slow_first) >= 3, slow_first
    hedge_won_the_tail = 0
    for n in slow_first:
        # The first copy was slow, so the hedge went out after 20 ms; when
        # nginx answered it at least 10 ms before the first copy (it was not
        # slow too, and the loaded machine did not hold it back), it won.
        first, hedge = sorted(copies[n], key=start)
        if float(hedge["msec"]) < float(first["msec"]) - 0.01:
            assert responses[n].hedge_winner == 2, (n, copies[n])
            hedge_won_the_tail += 1
    assert hedge_won_the_tail >= 1, [copies[n] for n in slow_first]
    delta = _delta(before, _counts(origin))
    assert delta["hedges"] == sent - len(responses)
    assert delta["hedges_won"] == sum(r.hedge_winner == 2 for r in responses.values())
    assert delta["calls"] == sent  # each copy is one call of the origin
    assert delta["failures"] == 0
