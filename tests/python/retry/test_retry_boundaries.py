"""The Python retry drivers at their documented boundaries, and their argument errors.

- retry_after_max (DESIGN.md section 5): a delay hint equal to it is honoured,
  one just above it stops the retries (retry_after_too_long), or waits the
  maximum with clamp_retry_after; through @retry and through retrying().
- A hint of 0 means retry now; a negative one is absent (the backoff applies).
- A zero wait is no sleep; callables with ``async def __call__`` get the
  async driver; a call that is abandoned (cancelled, interrupted) is never
  a failure of its breaker.
- Bad arguments are refused with a message that names them.

Expected values are worked out by hand from those rules. Written against
surviving mutants of scripts/mutation.sh.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import re
import sys
from typing import Any, Callable

import pytest

import mulligan
from mulligan._telemetry import metrics as _metrics
from mulligan.testing import FakeClock

_names = itertools.count()


@pytest.fixture(autouse=True)
def fresh_metrics() -> None:
    _metrics.reset_metrics()


class Hinted(Exception):
    """A failure that carries a delay hint (a Retry-After in seconds)."""

    def __init__(self, hint: float) -> None:
        super().__init__(f"retry in {hint} s")
        self.hint = hint


def hint_of(exc: Any) -> Any:
    return exc.hint


def hinted(hints: list[float], **options: Any) -> tuple[Callable[[], Any], list[int]]:
    """A function raising Hinted(h) for each hint in turn, then returning "ok"."""
    calls: list[int] = []
    items = iter(hints)

    @mulligan.retry(on=Hinted, delay_hint=hint_of, base_delay=7.0, jitter="none", **options)
    def fn() -> str:
        calls.append(1)
        for h in items:
            raise Hinted(h)
        return "ok"

    return fn, calls


# --- retry_after_max -------------------------------------------------------------


def test_a_hint_equal_to_retry_after_max_is_honoured() -> None:
    fn, calls = hinted([5.0, 4.999], retry_after_max=5.0)
    with FakeClock() as clock:
        assert fn() == "ok"
    assert clock.sleeps == [5.0, 4.999]
    assert len(calls) == 3


def test_a_hint_just_over_retry_after_max_stops_at_once() -> None:
    fn, calls = hinted([5.001], retry_after_max=5.0)
    with FakeClock() as clock, pytest.raises(Hinted) as info:
        fn()
    assert clock.sleeps == []
    assert len(calls) == 1
    stats = fn.statistics.last  # type: ignore[attr-defined]
    assert stats is not None and stats.stop_reason == "retry_after_too_long"
    if sys.version_info >= (3, 11):
        assert info.value.__notes__ == [
            "mulligan: gave up after 1 attempt (retry_after_too_long: the delay hint of 5.001 s"
            " exceeds retry_after_max 5 s)"
        ]


@pytest.mark.parametrize("hint", [2**2000, 10**400, 1e300], ids=["2**2000", "10**400", "1e300"])
def test_a_hint_too_large_for_a_float_stops_as_too_long(hint: Any) -> None:
    # float(2**2000) raises OverflowError: such a hint is as long as 1e300,
    # past retry_after_max (default 60 s), so the retries stop at once.
    fn, calls = hinted([hint])
    with FakeClock() as clock, pytest.raises(Hinted):
        fn()
    assert clock.sleeps == []
    assert len(calls) == 1
    stats = fn.statistics.last  # type: ignore[attr-defined]
    assert stats is not None and stats.stop_reason == "retry_after_too_long"


def test_a_negative_hint_too_large_for_a_float_is_absent() -> None:
    # -(2**2000) is negative: absent, so the backoff's 7 s applies (jitter none).
    fn, calls = hinted([-(2**2000)], retry_after_max=5.0)
    with FakeClock() as clock:
        assert fn() == "ok"
    assert clock.sleeps == [7.0]
    assert len(calls) == 2


def test_clamp_retry_after_waits_the_maximum_for_a_longer_hint() -> None:
    fn, _ = hinted([5.001, 5.0], retry_after_max=5.0, clamp_retry_after=True)
    with FakeClock() as clock:
        assert fn() == "ok"
    assert clock.sleeps == [5.0, 5.0]


def block_sleeps(hints: list[float], **options: Any) -> tuple[list[float], Any]:
    """Runs a retrying() block over the hints; returns its sleeps and its last statistics."""
    items = iter(hints)
    block = mulligan.retrying(on=Hinted, delay_hint=hint_of, base_delay=7.0, jitter="none",
                              **options)
    with FakeClock() as clock:
        try:
            for attempt in block:
                with attempt:
                    for h in items:
                        raise Hinted(h)
        except Hinted:
            pass
    return clock.sleeps, block.statistics.last


def test_retrying_blocks_hold_retry_after_max_too() -> None:
    assert block_sleeps([5.0], retry_after_max=5.0)[0] == [5.0]
    sleeps, stats = block_sleeps([5.001], retry_after_max=5.0)
    assert sleeps == []
    assert stats is not None and stats.stop_reason == "retry_after_too_long"
    assert block_sleeps([5.001], retry_after_max=5.0, clamp_retry_after=True)[0] == [5.0]


def test_a_zero_hint_retries_now_and_a_negative_one_is_ignored() -> None:
    fn, calls = hinted([0.0, -1.0, 0.5], attempts=5)
    with FakeClock() as clock:
        assert fn() == "ok"
    # 0: no wait (not the 7 s backoff); -1: the backoff, 7 s * 2 for the
    # second retry, capped at the default max_delay of 10 s; 0.5: half a second.
    assert clock.sleeps == [10.0, 0.5]
    assert len(calls) == 4


def test_a_retrying_block_with_no_backoff_never_sleeps() -> None:
    failures = iter([ConnectionError(), ConnectionError()])
    with FakeClock() as clock:
        for attempt in mulligan.retrying(on=ConnectionError, attempts=3, base_delay=0.0):
            with attempt:
                for e in failures:
                    raise e
    assert clock.sleeps == []


# --- what gets the async driver, and names ------------------------------------------


def test_an_object_with_an_async_call_method_is_awaited_and_retried() -> None:
    class Fetcher:
        def __init__(self) -> None:
            self.calls = 0

        async def __call__(self) -> str:
            self.calls += 1
            if self.calls < 3:
                raise ConnectionError
            return "ok"

    fetcher = Fetcher()
    fn = mulligan.retry(on=ConnectionError, attempts=3, base_delay=0.0)(fetcher)
    with FakeClock():
        assert asyncio.run(fn()) == "ok"
    assert fetcher.calls == 3


def test_the_statistics_name_falls_back_to_name_then_repr() -> None:
    def flaky(state: list[int]) -> None:
        state.append(1)
        if len(state) < 2:
            raise ConnectionError

    class Named:
        __name__ = "named-callable"

        def __init__(self) -> None:
            self.state: list[int] = []

        def __call__(self) -> None:
            flaky(self.state)

    partial = functools.partial(flaky, [])
    named = Named()
    with FakeClock():
        for target, expected in ((partial, repr(partial)), (named, "named-callable")):
            fn = mulligan.retry(on=ConnectionError, attempts=2, base_delay=0.0)(target)
            fn()
            assert fn.statistics.last.name == expected  # type: ignore[attr-defined]


# --- abandoned calls never count as failures --------------------------------------
#
# KeyboardInterrupt and CancelledError are never counted as failures
# (DESIGN.md section 5), even when they end a call whose earlier attempts
# failed: with failure_threshold 1 a single failure recorded would open it.


def test_a_call_interrupted_between_attempts_is_not_a_breaker_failure() -> None:
    b = mulligan.CircuitBreaker(f"abandon-{next(_names)}", failure_threshold=1)

    def interrupt(details: Any) -> None:
        raise KeyboardInterrupt

    @mulligan.retry(on=ConnectionError, attempts=3, base_delay=0.0, breaker=b,
                    on_retry=interrupt)
    def down() -> None:
        raise ConnectionError

    with FakeClock(), pytest.raises(KeyboardInterrupt):
        down()
    assert b.counts["failures"] == 0
    assert b.state == "closed"


def test_a_coroutine_cancelled_in_its_wait_is_not_a_breaker_failure() -> None:
    b = mulligan.CircuitBreaker(f"abandon-{next(_names)}", failure_threshold=1)
    calls: list[int] = []

    @mulligan.retry(on=ConnectionError, attempts=3, base_delay=60.0, breaker=b)
    async def down() -> None:
        calls.append(1)
        raise ConnectionError

    async def main() -> None:
        task = asyncio.ensure_future(down())
        while not calls:  # the first attempt ran; the task now waits 60 s (real time)
            await asyncio.sleep(0)
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert len(calls) == 1
    assert b.counts["failures"] == 0
    assert b.state == "closed"


def test_a_fallback_receives_the_failure_with_its_note() -> None:
    seen: list[BaseException] = []

    @mulligan.retry(on=ConnectionError, attempts=2, base_delay=0.0,
                    fallback=lambda e: seen.append(e) or "fallback")
    def down() -> None:
        raise ConnectionError("down")

    with FakeClock():
        assert down() == "fallback"
    assert isinstance(seen[0], ConnectionError)
    if sys.version_info >= (3, 11):
        assert seen[0].__notes__ == ["mulligan: gave up after 2 attempts (attempts_exhausted)"]


# --- argument errors ---------------------------------------------------------------


def plain() -> None:
    pass


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({}, TypeError, r"missing required keyword argument: 'on' \(or 'on_result'\); name the "
                        r"exceptions to retry, e.g. @mulligan.retry\(on=ConnectionError\)"),
        ({"on": ()}, TypeError, "on= must name at least one exception type"),
        ({"on": ValueError, "attempts": True}, TypeError, "attempts must be an int, got True"),
        ({"on": ValueError, "base_delay": True}, TypeError, "base_delay must be a number of seconds"),
        ({"on": ValueError, "max_delay": -1}, ValueError, "max_delay must be >= 0"),
        ({"on": ValueError, "deadline": "x"}, TypeError, "deadline must be a number of seconds"),
        ({"on": ValueError, "retry_after_max": -1}, ValueError, "retry_after_max must be >= 0"),
        ({"on": ValueError, "seed": True}, TypeError, "seed must be an int or None, got True"),
        ({"on": ValueError, "seed": 2**64}, ValueError, r"seed must be in \[0, 2\*\*64\)"),
        ({"on": ValueError, "seed": -1}, ValueError, r"seed must be in \[0, 2\*\*64\)"),
        ({"on": ValueError, "breaker_per_attempt": 1}, TypeError,
         "breaker_per_attempt must be a bool, got 1"),
        ({"on": ValueError, "on_retry": 3}, TypeError, "on_retry must be a callable or a list"),
        ({"on": ValueError, "on_give_up": 3}, TypeError, "on_give_up must be a callable or a list"),
    ],
)
def test_bad_arguments_are_refused_by_name(options: dict[str, Any], error: type,
                                           message: str) -> None:
    with pytest.raises(error, match=message):
        mulligan.retry(**options)(plain)


def test_the_seed_range_includes_zero_and_excludes_two_to_the_64() -> None:
    mulligan.retry(on=ValueError, seed=0)(plain)
    mulligan.retry(on=ValueError, seed=2**64 - 1)(plain)
    with pytest.raises(ValueError):
        mulligan.retry(on=ValueError, seed=2**64)(plain)


# --- FakeClock's own argument checks ----------------------------------------------


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (float("inf"), ValueError, "must be a finite number of seconds, got inf"),
        (float("nan"), ValueError, "must be a finite number of seconds, got nan"),
        (-1.0, ValueError, "must be >= 0 seconds, got -1.0"),
        (1e300, ValueError, "below 9.2e9"),
        ("1", TypeError, "must be a number of seconds"),
    ],
)
@pytest.mark.parametrize("method", ["sleep", "advance"])
def test_fake_clock_refuses_bad_values_and_changes_nothing(
    method: str, value: Any, error: type, message: str
) -> None:
    clock = FakeClock(start=1000.0)
    clock.sleep(2.0)
    with pytest.raises(error, match=re.escape(message)):
        getattr(clock, method)(value)
    # Unchanged: the reading, the record of sleeps, and the engine's view
    # (a later step moves both from where they were).
    assert clock.monotonic() == 1002.0
    assert clock.sleeps == [2.0]
    clock.advance(0.5)
    assert clock.monotonic() == 1002.5
    assert clock._native.now() == pytest.approx(1002.5)
