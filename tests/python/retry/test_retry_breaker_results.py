"""What @mulligan.retry(..., breaker=...) reports to the breaker, sync and async alike.

DESIGN.md section 5: by default a logical call records one result after its
retries: a success, a failure (it gave up on retryable failures) or an
ignored result (it ended on a terminal error, or on an exception that is
never retried). Each scenario runs through a plain function and a coroutine
function, so both drivers are held to the same rule. Expected counts are
worked out by hand from that rule.

These were written against surviving mutants of scripts/mutation.sh (results
reported with the wrong kind or not at all, a terminal stop reason lost,
keyword arguments dropped on a retry, a zero wait slept).
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, Callable

import pytest

import mulligan
from mulligan._telemetry import metrics as _metrics
from mulligan.testing import FakeClock, set_active

_names = itertools.count()


@pytest.fixture(autouse=True)
def fresh_metrics() -> None:
    _metrics.reset_metrics()


def breaker(**options: Any) -> mulligan.CircuitBreaker:
    options.setdefault("failure_threshold", 5)
    return mulligan.CircuitBreaker(f"retry-results-{next(_names)}", **options)


def decorate(kind: str, script: list[Any], **options: Any) -> tuple[Callable[..., Any], list[Any]]:
    """A function that raises or returns the script's items in order.

    Returns the decorated function (plain or ``async def``) and the list of
    the keyword arguments each attempt received.
    """
    seen: list[Any] = []
    items = iter(script)

    def step(**kwargs: Any) -> Any:
        seen.append(kwargs)
        item = next(items)
        if isinstance(item, BaseException):
            raise item
        return item

    if kind == "sync":

        def plain(**kwargs: Any) -> Any:
            return step(**kwargs)

        return mulligan.retry(**options)(plain), seen

    async def coroutine(**kwargs: Any) -> Any:
        return step(**kwargs)

    return mulligan.retry(**options)(coroutine), seen


def run(kind: str, fn: Callable[..., Any], **kwargs: Any) -> tuple[Any, Any]:
    """Calls `fn`; returns (its value or the exception it raised, its statistics).

    The statistics are read where the call ran: an ``asyncio.run`` task has
    its own context.
    """
    if kind == "sync":
        try:
            return fn(**kwargs), fn.statistics.last
        except BaseException as e:  # SystemExit is one of the scripted outcomes
            return e, fn.statistics.last

    async def main() -> tuple[Any, Any]:
        try:
            return await fn(**kwargs), fn.statistics.last
        except BaseException as e:  # CancelledError is one of them
            return e, fn.statistics.last

    return asyncio.run(main())


KINDS = ["sync", "async"]


def counts(b: mulligan.CircuitBreaker) -> tuple[int, int, int]:
    c = b.counts
    return c["successes"], c["failures"], c["ignored"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_success_after_failures_records_one_success(kind: str) -> None:
    b = breaker()
    fn, seen = decorate(kind, [ConnectionError("a"), ConnectionError("b"), "ok"],
                        on=ConnectionError, attempts=5, base_delay=0.0, breaker=b)
    with FakeClock() as clock:
        value, stats = run(kind, fn, x=1)
    assert value == "ok"
    assert counts(b) == (1, 0, 0)
    assert b.counts["consecutive_failures"] == 0
    # Every attempt got the caller's keyword arguments, and a zero wait is no sleep.
    assert seen == [{"x": 1}] * 3
    assert clock.sleeps == []
    assert stats is not None and (stats.attempts, stats.stop_reason) == (3, "succeeded")


@pytest.mark.parametrize("kind", KINDS)
def test_giving_up_records_one_failure(kind: str) -> None:
    b = breaker()
    fn, seen = decorate(kind, [ConnectionError("a")] * 3,
                        on=ConnectionError, attempts=3, base_delay=0.5, jitter="none", breaker=b)
    with FakeClock() as clock:
        error, stats = run(kind, fn)
    assert isinstance(error, ConnectionError)
    assert counts(b) == (0, 1, 0)
    assert clock.sleeps == [0.5, 1.0]
    assert stats is not None and (stats.attempts, stats.stop_reason) == (3, "attempts_exhausted")


@pytest.mark.parametrize("kind", KINDS)
def test_a_terminal_exception_on_a_retry_is_ignored_and_stops_as_terminal(kind: str) -> None:
    # ValueError is not in on=: the retry ends there, and says nothing about
    # the dependency's health.
    b = breaker(failure_threshold=1)
    fn, seen = decorate(kind, [ConnectionError("a"), ValueError("400"), "never"],
                        on=ConnectionError, attempts=5, base_delay=0.0, breaker=b)
    with FakeClock():
        error, stats = run(kind, fn)
    assert isinstance(error, ValueError)
    assert len(seen) == 2
    assert counts(b) == (0, 0, 1)
    assert b.state == "closed"
    assert stats is not None and (stats.attempts, stats.stop_reason) == (2, "terminal")


@pytest.mark.parametrize("kind", KINDS)
def test_an_exception_the_predicate_rejects_on_a_retry_is_ignored(kind: str) -> None:
    b = breaker(failure_threshold=1)
    fn, seen = decorate(kind, [ConnectionError("retry"), ConnectionError("fatal"), "never"],
                        on=lambda e: "retry" in str(e), attempts=5, base_delay=0.0, breaker=b)
    with FakeClock():
        error, stats = run(kind, fn)
    assert isinstance(error, ConnectionError) and str(error) == "fatal"
    assert len(seen) == 2
    assert counts(b) == (0, 0, 1)
    assert stats is not None and stats.stop_reason == "terminal"


@pytest.mark.parametrize("kind", KINDS)
def test_a_rejected_result_then_an_accepted_one_records_a_success(kind: str) -> None:
    b = breaker()
    fn, seen = decorate(kind, [None, None, 42], on=ConnectionError, attempts=5, base_delay=0.0,
                        on_result=lambda r: r is None, breaker=b)
    with FakeClock():
        value, stats = run(kind, fn)
    assert value == 42
    assert stats is not None and (stats.attempts, stats.stop_reason) == (3, "succeeded")
    assert len(seen) == 3
    assert counts(b) == (1, 0, 0)


def never_retried(kind: str) -> BaseException:
    return SystemExit(3) if kind == "sync" else asyncio.CancelledError()


@pytest.mark.parametrize("kind", KINDS)
def test_an_exception_that_is_never_retried_on_a_retry_is_ignored(kind: str) -> None:
    # on=BaseException catches it, but SystemExit and CancelledError are never
    # retried and never count as failures (DESIGN.md section 5).
    b = breaker(failure_threshold=1)
    exc = never_retried(kind)
    fn, seen = decorate(kind, [ConnectionError("a"), exc, "never"],
                        on=BaseException, attempts=5, base_delay=0.0, breaker=b)
    with FakeClock():
        error, _ = run(kind, fn)
    assert error is exc
    assert len(seen) == 2
    assert counts(b) == (0, 0, 1)
    assert b.state == "closed"


@pytest.mark.parametrize("kind", KINDS)
def test_an_exception_that_is_never_retried_first_is_ignored(kind: str) -> None:
    b = breaker(failure_threshold=1)
    exc = never_retried(kind)
    fn, seen = decorate(kind, [exc, "never"], on=BaseException, attempts=5, base_delay=0.0,
                        breaker=b)
    with FakeClock():
        error, _ = run(kind, fn)
    assert error is exc
    assert len(seen) == 1
    assert counts(b) == (0, 0, 1)


@pytest.mark.parametrize("kind", KINDS)
def test_with_retries_off_a_failure_and_a_rejected_result_are_each_recorded(kind: str) -> None:
    b = breaker()
    failing, seen = decorate(kind, [ConnectionError("a"), "never"], on=ConnectionError,
                             attempts=5, breaker=b)
    passing, _ = decorate(kind, [None, "never"], on=ConnectionError, attempts=5,
                          on_result=lambda r: r is None, breaker=b)
    set_active(False)
    try:
        error, _ = run(kind, failing)
        assert isinstance(error, ConnectionError)
        assert len(seen) == 1
        assert counts(b) == (0, 1, 0)
        # A result on_result rejects is returned as it is; it is the failure
        # the policy would have retried (the pipeline's classification does
        # not change when retries are off).
        assert run(kind, passing)[0] is None
        assert counts(b) == (0, 2, 0)
    finally:
        set_active(True)
