"""The 0.6 cuts of @mulligan.retry's hot paths (issue 19) keep their behaviour:
the success counter (_core.Counter), the stop-exception answer cached per
type, and the failure path that builds RetryDetails only for a hook or a
logger that reads them."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest

import mulligan
from mulligan import _core
from mulligan._retry.options import _NEVER_BY_TYPE, _never_retried
from mulligan.testing import FakeClock


@pytest.fixture
def quiet() -> Iterator[None]:
    """The mulligan logger off below ERROR, as the benches run it."""
    logger = logging.getLogger("mulligan")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def entry(name: str) -> dict[str, Any]:
    return next(e for e in mulligan.metrics_snapshot() if e["name"] == name)


def test_counter_counts_ticks_and_takes_no_arguments() -> None:
    counter = _core.Counter()
    assert counter.value == 0
    for _ in range(5):
        assert counter.tick() is None
    assert counter.value == 5
    with pytest.raises(TypeError, match="takes no arguments"):
        _core.Counter(3)  # type: ignore[call-arg]


def test_first_attempt_successes_reach_the_metrics_exactly() -> None:
    def fast_paths_ok() -> int:
        return 7

    fn = mulligan.retry(on=ConnectionError, attempts=3)(fast_paths_ok)
    timed = mulligan.retry(on=ConnectionError, attempts=3, deadline=5.0)(fast_paths_ok)
    for _ in range(4):
        assert fn() == 7
    for _ in range(3):
        assert timed() == 7
    # Both decorate the same qualified name: one metrics entry, 4 + 3 calls.
    e = entry(fast_paths_ok.__qualname__)
    assert (e["calls"], e["successes"], e["attempts"], e["failures"]) == (7, 7, 7, 0)
    assert fn() == 7  # read again: only the new tick is handed over
    e = entry(fast_paths_ok.__qualname__)
    assert (e["calls"], e["successes"]) == (8, 8)


def test_budget_earns_first_attempt_successes_through_its_counter() -> None:
    # gRPC A6: 10 tokens, a retryable failure takes 1, a success adds 0.5.
    budget = mulligan.RetryBudget.token_bucket(10, 0.5, name="fast-paths-budget")
    assert budget.tokens() == 10.0

    @mulligan.retry(on=ConnectionError, attempts=3, budget=budget)
    def ok() -> int:
        return 1

    calls = []

    @mulligan.retry(on=ConnectionError, attempts=3, base_delay=0.0, budget=budget)
    def always_down() -> int:
        calls.append(1)
        raise ConnectionError("down")

    with pytest.raises(ConnectionError):
        always_down()
    assert len(calls) == 3
    assert budget.tokens() == 7.0  # three failures
    for _ in range(4):
        assert ok() == 1
    assert budget.tokens() == 9.0  # four first-attempt successes, counted in Python


class Stop(KeyboardInterrupt):
    pass


def test_stop_exceptions_are_judged_alike_before_and_after_the_cache() -> None:
    import asyncio

    for exc, want in [
        (Stop(), True),
        (SystemExit(1), True),
        (asyncio.CancelledError(), True),
        (mulligan.BulkheadFullError("full"), True),
        (ConnectionError("x"), False),
        (ValueError("x"), False),
    ]:
        first = _never_retried(exc)
        assert type(exc) in _NEVER_BY_TYPE
        assert (first, _never_retried(exc)) == (want, want), exc


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception groups are 3.11+")
def test_exception_groups_are_judged_by_what_each_carries() -> None:
    class Group(BaseExceptionGroup):  # type: ignore[type-arg,misc,name-defined]  # noqa: F821
        pass

    plain = Group("g", [ValueError("x")])
    stopping = Group("g", [ValueError("x"), KeyboardInterrupt()])
    assert type(plain) is type(stopping)
    assert _never_retried(plain) is False
    assert _never_retried(stopping) is True  # the same type, another answer
    assert _never_retried(plain) is False
    assert type(plain) not in _NEVER_BY_TYPE


def test_hooks_get_every_detail_while_the_logger_is_off(quiet: None) -> None:
    seen: list[tuple[Any, ...]] = []
    gave_up: list[tuple[Any, ...]] = []

    def on_retry(d: mulligan.RetryDetails) -> None:
        seen.append((d.attempt, d.delay, type(d.exception).__name__, d.stop_reason, d.waited))

    def on_give_up(d: mulligan.RetryDetails) -> None:
        gave_up.append((d.attempt, d.stop_reason, d.waited))

    @mulligan.retry(on=ConnectionError, attempts=3, base_delay=0.5, jitter="none",
                    on_retry=on_retry, on_give_up=on_give_up)
    def down() -> int:
        raise ConnectionError("down")

    with FakeClock() as clock, pytest.raises(ConnectionError):
        down()
    assert clock.sleeps == [0.5, 1.0]
    assert seen == [(1, 0.5, "ConnectionError", None, 0.0), (2, 1.0, "ConnectionError", None, 0.5)]
    assert gave_up == [(3, "attempts_exhausted", 1.5)]
    last = down.statistics.last
    assert (last.attempts, last.waited, last.stop_reason) == (3, 1.5, "attempts_exhausted")


def test_without_hooks_or_logger_the_call_still_ends_alike(quiet: None) -> None:
    left = [2]

    @mulligan.retry(on=ConnectionError, attempts=3, base_delay=0.0)
    def flaky() -> int:
        if left[0]:
            left[0] -= 1
            raise ConnectionError("flaky")
        return 9

    assert flaky() == 9
    last = flaky.statistics.last
    assert (last.attempts, last.waited, last.stop_reason) == (3, 0.0, "succeeded")

    @mulligan.retry(on=ConnectionError, attempts=2, base_delay=0.0)
    def down() -> int:
        raise ConnectionError("down")

    with pytest.raises(ConnectionError) as info:
        down()
    assert info.value.__notes__ == ["mulligan: gave up after 2 attempts (attempts_exhausted)"]


def test_the_logger_still_logs_each_retry_and_the_give_up(caplog: pytest.LogCaptureFixture) -> None:
    @mulligan.retry(on=ConnectionError, attempts=2, base_delay=0.0)
    def down() -> int:
        raise ConnectionError("down")

    with caplog.at_level(logging.WARNING, logger="mulligan"), pytest.raises(ConnectionError):
        down()
    attempts = [r.mulligan_attempt for r in caplog.records if r.name == "mulligan"]
    assert attempts == [1, 2]


def test_an_exception_type_that_cannot_be_hashed_is_judged_without_the_cache() -> None:
    """A metaclass defining __eq__ makes its classes unhashable (or its
    __hash__ may raise): the per-type cache is skipped, and the retry goes on
    as for any exception (found by review: 0.6's cache raised TypeError)."""

    class Unhashable(type):
        def __eq__(cls, other: object) -> bool:
            return cls is other

    class Raising(type):
        def __hash__(cls) -> int:
            raise RuntimeError("no hash")

    class A(Exception, metaclass=Unhashable):
        pass

    class B(Exception, metaclass=Raising):
        pass

    for kind in (A, B):
        calls = []

        @mulligan.retry(on=kind, attempts=3, base_delay=0)
        def flaky() -> None:
            calls.append(1)
            raise kind("boom")

        with pytest.raises(kind, match="boom"):
            flaky()
        assert len(calls) == 3
        assert _never_retried(kind("x")) is False
