"""Metrics of the overload primitives (issue 14), from Python: a scripted
sequence on a fake clock, then exact counts in limits_snapshot(), the
Prometheus text, the JSON, the prometheus_client collector and the events.
Every expected number is worked out by hand in the comments."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mulligan
from mulligan import _budget
from mulligan._retry.state import STATE
from mulligan._telemetry import metrics as _metrics
from mulligan.testing import FakeClock, set_clock


@pytest.fixture(autouse=True)
def _clock() -> Any:
    _budget._clear()
    _metrics.reset_metrics()
    clock = FakeClock()
    with set_clock(clock):
        yield clock
    _budget._clear()
    _metrics.reset_metrics()


class Down(Exception):
    pass


def _only(entries: list[dict[str, Any]], name: str) -> dict[str, Any]:
    found = [e for e in entries if e["name"] == name]
    assert len(found) == 1, entries
    return found[0]


def test_budget_tokens_refusals_and_rejections_by_reason() -> None:
    # gRPC A6, max 10, ratio 0.1, calls of 3 attempts that always fail:
    # call 1 takes 10 -> 9 -> 8 -> 7 (2 retries allowed), call 2 6 (allowed)
    # then 5 (refused), calls 3 and 4: 4, 3 (refused). 3 allowed, 3 refused,
    # tokens 3; then two first-attempt successes add 0.1 each: 3.2.
    budget = mulligan.RetryBudget.token_bucket(10, 0.1, name="py-b1")
    events: list[tuple[str, str]] = []
    listener = mulligan.add_event_listener(
        lambda e: events.append((e["name"], e["stop_reason"])), ["rejected"])

    @mulligan.retry(on=Down, attempts=3, base_delay=0, budget=budget)
    def fail() -> None:
        raise Down()

    @mulligan.retry(on=Down, budget=budget)
    def ok() -> int:
        return 1

    try:
        for _ in range(4):
            with pytest.raises(Down):
                fail()
        assert ok() == 1 and ok() == 1
    finally:
        mulligan.remove_event_listener(listener)
    entry = _only(mulligan.limits_snapshot()["budgets"], "py-b1")
    assert entry["kind"] == "token_bucket"
    assert entry["tokens"] == pytest.approx(3.2)
    assert entry["max_tokens"] == 10.0
    assert (entry["retries_allowed"], entry["retries_refused"]) == (3, 3)
    svc = _only(mulligan.metrics_snapshot(), fail.__qualname__)
    assert svc["rejections_by_reason"] == {
        "budget": 3, "throttled": 0, "bulkhead_full": 0, "rate_limited": 0}
    assert events == [(fail.__qualname__, "budget")] * 3
    text = mulligan.prometheus_text()
    assert f'mulligan_rejections_total{{name="{fail.__qualname__}",reason="budget"}} 3\n' in text
    assert 'mulligan_budget_retries_refused_total{name="py-b1"} 3\n' in text
    doc = json.loads(mulligan.metrics_json())
    assert _only(doc["budgets"], "py-b1")["retries_allowed"] == 3
    assert doc["totals"]["rejections"] == 3


def test_bulkhead_and_limiter_counts(_clock: FakeClock) -> None:
    # Bulkhead of 1 without a queue: holding the slot, two more tries are
    # refused (rejected_full 2). Limiter 2/s, burst 1, max_wait 0.6 s, three
    # calls at one instant: at once, after 0.5 s (le=0.5 bucket), refused.
    bulkhead = mulligan.Bulkhead(1, name="py-db")
    limiter = mulligan.RateLimiter(2, name="py-api", max_wait=0.6)
    assert bulkhead._core.try_acquire()
    for _ in range(2):
        with pytest.raises(mulligan.BulkheadFullError):
            bulkhead.acquire(timeout=0)
    snap = mulligan.limits_snapshot()
    b = _only(snap["bulkheads"], "py-db")
    assert (b["in_flight"], b["queued"], b["rejected_full"], b["max_concurrent"]) == (1, 0, 2, 1)
    bulkhead._core.release()
    assert limiter.reserve() == 0.0
    assert limiter.reserve() == pytest.approx(0.5)
    with pytest.raises(mulligan.RateLimitedError):
        limiter.reserve()
    r = _only(mulligan.limits_snapshot()["rate_limiters"], "py-api")
    assert (r["admitted"], r["waited"], r["refused"]) == (1, 1, 1)
    assert r["wait_seconds"]["counts"][7] == 1 and r["wait_seconds"]["count"] == 1
    assert r["wait_seconds"]["sum"] == pytest.approx(0.5)
    text = mulligan.prometheus_text()
    assert 'mulligan_bulkhead_in_flight{name="py-db"} 0\n' in text
    assert 'mulligan_bulkhead_rejections_total{name="py-db",reason="full"} 2\n' in text
    assert 'mulligan_rate_limiter_wait_seconds_bucket{name="py-api",le="0.5"} 1\n' in text


def test_throttle_window_and_probability(_clock: FakeClock) -> None:
    # K = 2: 4 requests answered 200 and 2 answered 503 (each admitted:
    # p stays 0 while requests <= 2 * accepts): requests 6, accepts 4,
    # p = max(0, (6 - 8) / 7) = 0. Two more 503s: requests 8, p = 0 / 9 = 0,
    # then the tenth request sees (9 - 8) / 10 = 0.1 (the draw decides).
    throttle = mulligan.AdaptiveThrottle(k=2, seed=3, name="py-sre")
    core = throttle._core
    for status in (200, 200, 200, 200, 503, 503, 503, 503):
        assert core.admit(STATE.now())
        core.record(status == 200)
    t = _only(mulligan.limits_snapshot()["throttles"], "py-sre")
    assert (t["requests"], t["accepts"], t["probability"], t["rejections"]) == (8, 4, 0.0, 0)


def test_prometheus_client_collector_exports_the_same_counts() -> None:
    prometheus_client = pytest.importorskip("prometheus_client")
    import mulligan.prometheus

    registry = prometheus_client.CollectorRegistry()
    mulligan.prometheus.register(registry)
    limiter = mulligan.RateLimiter(1, name="py-exp", max_wait=0)
    limiter.reserve()
    with pytest.raises(mulligan.RateLimitedError):
        limiter.reserve()
    assert registry.get_sample_value("mulligan_rate_limiter_refused_total", {"name": "py-exp"}) == 1
    assert registry.get_sample_value("mulligan_rate_limiter_admitted_total", {"name": "py-exp"}) == 1


def test_unnamed_primitives_are_not_exported() -> None:
    mulligan.RateLimiter(5)
    assert all(r["name"] for r in mulligan.limits_snapshot()["rate_limiters"])


def test_rejected_is_a_known_event_kind() -> None:
    listener = mulligan.add_event_listener(lambda e: None, ["rejected"])
    assert mulligan.remove_event_listener(listener)


def test_decorator_guard_refusals_count_on_the_policy() -> None:
    # A bulkhead of 1 held elsewhere: two calls refused at once, each a call
    # of the policy that failed with 0 attempts and reason bulkhead_full.
    bulkhead = mulligan.Bulkhead(1, name="py-guard")
    seen: list[str] = []
    listener = mulligan.add_event_listener(lambda e: seen.append(e["stop_reason"]), ["rejected"])

    @mulligan.retry(on=Down, bulkhead=bulkhead)
    def work() -> int:
        return 1

    assert bulkhead._core.try_acquire()
    try:
        for _ in range(2):
            with pytest.raises(mulligan.BulkheadFullError):
                work()
    finally:
        bulkhead._core.release()
        mulligan.remove_event_listener(listener)
    assert work() == 1
    snap = _only(mulligan.metrics_snapshot(), work.__qualname__)
    assert snap["rejections_by_reason"]["bulkhead_full"] == 2
    assert (snap["calls"], snap["failures"], snap["successes"]) == (3, 2, 1)
    assert seen == ["bulkhead_full", "bulkhead_full"]
