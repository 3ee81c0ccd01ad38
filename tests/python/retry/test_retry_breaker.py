"""@mulligan.retry(..., breaker=...): the breaker is checked before every attempt."""

from __future__ import annotations

import asyncio

import pytest

import mulligan
from mulligan._telemetry import metrics as _metrics
from mulligan.testing import FakeClock


@pytest.fixture(autouse=True)
def fresh_metrics() -> None:
    _metrics.reset_metrics()


def counting(calls: list[int], fail: bool = True):
    def fn() -> str:
        calls.append(1)
        if fail:
            raise ConnectionError("down")
        return "ok"

    return fn


def test_five_attempts_around_threshold_three_stop_at_circuit_open_without_a_fourth() -> None:
    clock = FakeClock()
    breaker = mulligan.CircuitBreaker("retry-bk-1", failure_threshold=3, clock=clock.monotonic)
    calls: list[int] = []
    fn = mulligan.retry(on=ConnectionError, attempts=5, base_delay=0.1, jitter="none",
                        breaker=breaker, breaker_per_attempt=True)(counting(calls))
    with clock, pytest.raises(mulligan.CircuitOpenError) as refused:
        fn()
    assert len(calls) == 3
    assert refused.value.attempts == 3
    assert refused.value.name == "retry-bk-1"
    # Opened after attempt 3 (at 0.3 s); refused 0.4 s later, before attempt 4.
    assert refused.value.retry_in == pytest.approx(30.0 - 0.4)
    assert isinstance(refused.value.__cause__, ConnectionError)
    assert breaker.state == "open"
    assert clock.sleeps == [0.1, 0.2, 0.4]  # the wait before the refused 4th attempt happened


def test_by_default_one_result_is_recorded_per_logical_call() -> None:
    clock = FakeClock()
    breaker = mulligan.CircuitBreaker("retry-bk-2", failure_threshold=2, clock=clock.monotonic)
    calls: list[int] = []
    fn = mulligan.retry(on=ConnectionError, attempts=3, base_delay=0.0, breaker=breaker)(
        counting(calls)
    )
    with clock:
        with pytest.raises(ConnectionError):
            fn()
        assert (len(calls), breaker.state, breaker.counts["failures"]) == (3, "closed", 1)
        with pytest.raises(ConnectionError):
            fn()
        assert (len(calls), breaker.state) == (6, "open")
        with pytest.raises(mulligan.CircuitOpenError) as refused:
            fn()
    assert len(calls) == 6  # refused before running
    assert refused.value.attempts == 0


def test_a_failed_half_open_probe_reopens_and_the_retry_is_refused() -> None:
    clock = FakeClock()
    breaker = mulligan.CircuitBreaker(
        "retry-bk-3", failure_threshold=1, reset_timeout=10.0, clock=clock.monotonic
    )
    calls: list[int] = []
    fn = mulligan.retry(on=ConnectionError, attempts=4, base_delay=0.0, breaker=breaker)(
        counting(calls)
    )
    with clock:
        with pytest.raises(ConnectionError):
            fn()
        # One result per logical call: the call's 4 attempts count as one failure.
        assert breaker.state == "open" and len(calls) == 4
        clock.advance(10.0)
        assert breaker.state == "half_open"
        with pytest.raises(mulligan.CircuitOpenError) as refused:
            fn()
    assert len(calls) == 5  # exactly one probe ran
    assert refused.value.attempts == 1
    assert breaker.state == "open"


def test_success_closes_and_counts() -> None:
    breaker = mulligan.CircuitBreaker("retry-bk-4", failure_threshold=2)
    calls: list[int] = []
    fn = mulligan.retry(on=ConnectionError, breaker=breaker)(counting(calls, fail=False))
    assert fn() == "ok" and fn() == "ok"
    assert breaker.counts["successes"] == 2
    assert breaker.state == "closed"


def test_fallback_value_and_callable() -> None:
    clock = FakeClock()
    breaker = mulligan.CircuitBreaker("retry-bk-5", failure_threshold=1, clock=clock.monotonic)
    calls: list[int] = []
    fn = mulligan.retry(on=ConnectionError, attempts=2, base_delay=0.0, breaker=breaker,
                        fallback=lambda exc: f"fallback after {type(exc).__name__}")(counting(calls))
    with clock:
        assert fn() == "fallback after ConnectionError"  # gave up
        assert fn() == "fallback after CircuitOpenError"  # refused
    assert len(calls) == 2
    @mulligan.retry(on=ConnectionError, attempts=2, base_delay=0.0, fallback=None)
    def plain() -> None:
        raise ConnectionError("down")

    with FakeClock():
        assert plain() is None
    snap = {s["name"]: s for s in mulligan.metrics_snapshot()}
    assert snap[fn.__qualname__]["fallbacks"] == 2
    assert snap[fn.__qualname__]["failures"] == 2


def test_async_functions_compose_the_same_way() -> None:
    clock = FakeClock()
    breaker = mulligan.CircuitBreaker("retry-bk-6", failure_threshold=3, clock=clock.monotonic)
    calls: list[int] = []

    @mulligan.retry(on=ConnectionError, attempts=5, base_delay=0.0, breaker=breaker,
                    breaker_per_attempt=True)
    async def fetch() -> None:
        calls.append(1)
        raise ConnectionError("down")

    async def main() -> None:
        with pytest.raises(mulligan.CircuitOpenError) as refused:
            await fetch()
        assert refused.value.attempts == 3

    with clock:
        asyncio.run(main())
    assert len(calls) == 3


def test_terminal_errors_are_ignored_by_the_breaker() -> None:
    breaker = mulligan.CircuitBreaker("retry-bk-7", failure_threshold=1)

    @mulligan.retry(on=ConnectionError, breaker=breaker)
    def bad_request() -> None:
        raise ValueError("400")

    for _ in range(3):
        with pytest.raises(ValueError):
            bad_request()
    assert breaker.state == "closed"
    assert breaker.counts["ignored"] == 3


def test_breaker_must_be_a_circuit_breaker() -> None:
    with pytest.raises(TypeError, match="breaker must be a mulligan.CircuitBreaker"):
        mulligan.retry(on=ConnectionError, breaker="payments")  # type: ignore[arg-type]


def test_a_failing_fallback_keeps_the_original_failure_as_its_cause() -> None:
    def broken_fallback(exc: BaseException) -> None:
        raise RuntimeError("fallback failed too")

    @mulligan.retry(on=ConnectionError, attempts=2, base_delay=0.0, fallback=broken_fallback)
    def down() -> None:
        raise ConnectionError("down")

    with FakeClock(), pytest.raises(RuntimeError) as info:
        down()
    assert isinstance(info.value.__cause__, ConnectionError)
