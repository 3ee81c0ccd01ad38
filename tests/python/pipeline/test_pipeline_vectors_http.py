"""tests/vectors/pipeline.json through ``mulligan.Client`` and
``mulligan.AsyncClient`` against nginx's /script location.

Each scripted attempt is one request: success is a 200, a retryable failure
a 503 (with Retry-After when the step has a hint), a terminal one a 404
(tests/nginx/script.js answers the n-th request of a call id with the n-th
step). A case's breaker is the client's per-origin breaker
(``breaker={"failure_threshold": ..., "reset_timeout": ...}``), and the
case's calls go to one client, so to one breaker. The waits go through a
FakeClock (``FakeClock.sleeps``, cross-checked with the on_retry events),
so nothing sleeps for real; nginx's access log proves how many requests
each call sent. The clients report their metrics (and their breaker's
state) under the origin, so the registry is cleared before each case.

The clients take the case's policy as it is (``jitter="none"``, so every
wait is exact), except half_open_max_calls: their per-origin breakers admit
one probe, as every case with a breaker says (:func:`inexpressible` would
name a case that asks for another, and a test asserts there is none).
"""

from __future__ import annotations

import asyncio
from typing import Any, Optional

import pytest

import mulligan
from mulligan._telemetry import metrics as _metrics
from mulligan.testing import FakeClock

from pipeline_script import (
    CASES,
    Step,
    breaker_state_of,
    check_keys,
    logged_for,
    metrics_of,
    script_url,
    steps_of,
    unique,
)

# The clients' per-origin breakers admit one probe.
CLIENT_HALF_OPEN_MAX_CALLS = 1


def inexpressible(case: dict[str, Any]) -> Optional[str]:
    """Why the clients cannot run ``case`` exactly, or None when they can."""
    if case.get("breaker", {}).get("half_open_max_calls", 1) != CLIENT_HALF_OPEN_MAX_CALLS:
        return "the clients' per-origin breakers admit one probe"
    return None


def test_the_clients_run_every_case() -> None:
    # Not a silent skip: no case is left out.
    assert [case["name"] for case in CASES if inexpressible(case)] == []


RUNNABLE = [c for c in CASES if not inexpressible(c)]


def client_options(case: dict[str, Any], events: list[mulligan.RetryEvent]) -> dict[str, Any]:
    policy = case["policy"]
    options: dict[str, Any] = {
        "attempts": policy["max_attempts"],
        "backoff": policy["backoff"],
        "base_delay": policy["base_delay"],
        "jitter": "none",
        "on_retry": events.append,
    }
    for key in ("retry_after_max", "deadline", "multiplier"):
        if key in policy:
            options[key] = policy[key]
    if "breaker" in case:
        b = case["breaker"]
        options["breaker"] = {"failure_threshold": b["failure_threshold"], "reset_timeout": b["reset_timeout"]}
    return options


def check_waits(where: str, steps: list[Step], want: list[float], events: list[mulligan.RetryEvent],
                sleeps: list[float]) -> None:
    """The waits of one call: one on_retry event per retry decided, each
    after the attempt of the same number, each the vector's delay; the
    FakeClock slept each of them."""
    assert [e.attempt for e in events] == list(range(1, len(want) + 1)), where
    for event, step, delay in zip(events, steps, want):
        assert (event.status, event.kind) == (503, None), where
        assert event.from_retry_after == (step.retry_after is not None), where
        assert event.delay == pytest.approx(delay, abs=1e-9), where
    assert sleeps == pytest.approx(want, abs=1e-9), where


def check_call(where: str, call: dict[str, Any], steps: list[Step], result: Any,
               events: list[mulligan.RetryEvent], sleeps: list[float], origin: str,
               requests: int) -> None:
    """Checks one client call (``result``: the Response or the
    CircuitOpenError) against the call's ``expect``."""
    want = call["expect"]
    refused = isinstance(result, mulligan.CircuitOpenError)
    if refused:
        attempts, reason = result.attempts, "circuit_open"
        assert result.key == origin, where
    else:
        assert isinstance(result, mulligan.Response), (where, result)
        attempts, reason = result.attempts, result.stop_reason
        last = steps[attempts - 1]
        assert result.status_code == {"success": 200, "retryable": 503, "terminal": 404}[last.outcome], where
    assert attempts == want["attempts"], where
    assert requests == want["attempts"], (where, "requests nginx logged")
    assert reason == want["stop_reason"], where
    assert refused == want["refused"], where
    check_waits(where, steps, want["delays"], events, sleeps)
    if "breaker_state" in want:
        assert breaker_state_of(origin) == want["breaker_state"], where


@pytest.mark.parametrize("case", RUNNABLE, ids=lambda c: c["name"])
def test_pipeline_vectors_through_the_client(server: Any, case: dict[str, Any]) -> None:
    check_keys(case)
    _metrics.reset_metrics()  # the client reports under the origin, shared by every case
    origin = server.base_url
    events: list[mulligan.RetryEvent] = []
    with FakeClock() as clock, mulligan.Client(**client_options(case, events)) as client:
        for i, call in enumerate(case["calls"]):
            where = f"{case['name']}, call {i + 1}"
            clock.advance(call.get("advance", 0))
            steps = steps_of(call)
            call_id = unique("client")
            events.clear()
            before = len(clock.sleeps)
            try:
                result: Any = client.get(script_url(origin, steps, call_id))
            except mulligan.CircuitOpenError as e:
                result = e
            requests = logged_for(server, call_id, call["expect"]["attempts"])
            check_call(where, call, steps, result, list(events), clock.sleeps[before:], origin, requests)
    assert metrics_of(origin) == case["expect_metrics"], case["name"]


@pytest.mark.parametrize("case", RUNNABLE, ids=lambda c: c["name"])
def test_pipeline_vectors_through_the_async_client(server: Any, case: dict[str, Any]) -> None:
    check_keys(case)
    _metrics.reset_metrics()
    origin = server.base_url
    events: list[mulligan.RetryEvent] = []

    async def run_case(clock: FakeClock) -> None:
        async with mulligan.AsyncClient(**client_options(case, events)) as client:
            for i, call in enumerate(case["calls"]):
                where = f"{case['name']}, call {i + 1}"
                clock.advance(call.get("advance", 0))
                steps = steps_of(call)
                call_id = unique("async-client")
                events.clear()
                before = len(clock.sleeps)
                try:
                    result: Any = await client.get(script_url(origin, steps, call_id))
                except mulligan.CircuitOpenError as e:
                    result = e
                requests = logged_for(server, call_id, call["expect"]["attempts"])
                check_call(where, call, steps, result, list(events), clock.sleeps[before:], origin,
                           requests)

    with FakeClock() as clock:
        asyncio.run(run_case(clock))
    assert metrics_of(origin) == case["expect_metrics"], case["name"]
