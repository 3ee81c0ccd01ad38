"""@mulligan.retry beyond the basics: predicates, results, hints, hooks, logging,
methods, retry_with, give-up forms, testing switches, statistics, and the
issue-3 edge cases, all on the sync driver with a FakeClock (no real sleeping)."""

from __future__ import annotations

import datetime
import inspect
import logging
import math
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import mulligan
from mulligan import _core
from mulligan.testing import FakeClock


@pytest.fixture
def clock() -> Iterator[FakeClock]:
    with FakeClock() as c:
        yield c


def failing(n: int, exc: type[BaseException] = ValueError) -> Any:
    """Returns a function that raises `exc` on its first n calls, then returns the call count."""
    calls = [0]

    def fn() -> int:
        calls[0] += 1
        if calls[0] <= n:
            raise exc(f"failure {calls[0]}")
        return calls[0]

    fn.calls = calls  # type: ignore[attr-defined]
    return fn


# -- what to retry ---------------------------------------------------------------


def test_predicate_on_exception(clock: FakeClock) -> None:
    errors = [OSError(503, "busy"), OSError(503, "busy"), OSError(404, "gone")]

    def fn() -> None:
        raise errors.pop(0)

    wrapped = mulligan.retry(on=lambda e: isinstance(e, OSError) and e.errno == 503, attempts=5)(fn)
    with pytest.raises(OSError) as info:
        wrapped()
    assert info.value.errno == 404
    assert errors == []
    assert not getattr(info.value, "__notes__", [])  # terminal: propagates unchanged


def test_predicate_retry_unless_value_error_never_retries_stop_exceptions(clock: FakeClock) -> None:
    import asyncio

    for stop in (asyncio.CancelledError, KeyboardInterrupt, SystemExit, GeneratorExit):
        fn = failing(5, stop)
        wrapped = mulligan.retry(on=lambda e: not isinstance(e, ValueError), attempts=5)(fn)
        with pytest.raises(stop):
            wrapped()
        assert fn.calls == [1]
    fn = failing(5, ValueError)
    with pytest.raises(ValueError):
        mulligan.retry(on=lambda e: not isinstance(e, ValueError), attempts=5)(fn)()
    assert fn.calls == [1]
    assert clock.sleeps == []


def test_on_result_retries_until_accepted(clock: FakeClock) -> None:
    values = iter([None, None, 7])

    @mulligan.retry(on_result=lambda r: r is None, attempts=5, jitter="none", base_delay=1.0)
    def poll() -> int | None:
        return next(values)

    assert poll() == 7
    assert clock.sleeps == [1.0, 2.0]
    stats = poll.statistics.last
    assert stats is not None and (stats.attempts, stats.stop_reason) == (3, "succeeded")


def test_on_result_give_up_returns_the_last_value(clock: FakeClock) -> None:
    values = iter(["a", "b", "c"])

    @mulligan.retry(on_result=lambda r: r != "ok", attempts=3, jitter="none")
    def poll() -> str:
        return next(values)

    assert poll() == "c"
    assert clock.sleeps == [0.2, 0.4]


def test_on_and_on_result_together(clock: FakeClock) -> None:
    script: list[Any] = [ValueError("x"), "bad", "good"]

    @mulligan.retry(on=ValueError, on_result=lambda r: r == "bad", attempts=5, base_delay=0)
    def fn() -> str:
        item = script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return str(item)

    assert fn() == "good"
    assert fn.statistics.last is not None and fn.statistics.last.attempts == 3


@pytest.mark.parametrize("on", [None])
def test_on_or_on_result_is_required(on: Any) -> None:
    with pytest.raises(TypeError, match="'on'"):
        mulligan.retry(on=on)


@pytest.mark.parametrize("bad", [ValueError, 3, "x"])
def test_on_result_must_be_a_predicate(bad: Any) -> None:
    with pytest.raises(TypeError, match="on_result"):
        mulligan.retry(on_result=bad)


# -- backoff edge cases (issue 3) ------------------------------------------------


@pytest.mark.parametrize("jitter", ["none", "full", "equal", "proportional"])
def test_exponential_at_retry_1025_and_beyond_stays_within_the_cap(
    clock: FakeClock, jitter: str
) -> None:
    fn = failing(10**6)
    wrapped = mulligan.retry(
        on=ValueError, attempts=1100, base_delay=0.2, max_delay=1.2, jitter=jitter, seed=7
    )(fn)
    with pytest.raises(ValueError):
        wrapped()
    assert fn.calls == [1100]
    delays = clock.sleeps
    assert all(not math.isnan(d) and 0.0 < d <= 1.2 for d in delays)
    if jitter == "none":
        assert delays[:4] == [0.2, 0.4, 0.8, 1.2]
        assert delays[1024:] == [1.2] * (1099 - 1024)  # retries 1025..1099: exactly the cap
    if jitter == "proportional":
        # min(d, cap / 1.2) * uniform(0.8, 1.2): the spread survives at the cap.
        assert all(0.8 <= d <= 1.2 for d in delays[1024:])
        assert len(set(delays[1024:])) > 1


def test_decorrelated_stays_within_base_and_cap(clock: FakeClock) -> None:
    fn = failing(10**6)
    wrapped = mulligan.retry(
        on=ValueError, attempts=1100, backoff="decorrelated", base_delay=0.1, max_delay=1.2, seed=3
    )(fn)
    with pytest.raises(ValueError):
        wrapped()
    assert len(clock.sleeps) == 1099
    assert all(0.1 <= d <= 1.2 and math.isfinite(d) for d in clock.sleeps)
    assert max(clock.sleeps) == 1.2  # saturates at the cap


def test_jitter_range_larger_than_the_delay_is_rejected_at_construction() -> None:
    # 100 ms +/- 200 ms: proportional jitter with f = 2.0 could give a negative wait.
    with pytest.raises(ValueError, match=r"jitter_fraction must be in \[0, 1\], got 2"):
        mulligan.retry(on=ValueError, base_delay=0.1, jitter="proportional", jitter_fraction=2.0)
    with pytest.raises(ValueError, match="jitter_fraction"):
        mulligan.retrying(on=ValueError, jitter="proportional", jitter_fraction=-0.1)


@pytest.mark.parametrize("backoff", ["constant", "linear", "exponential", "decorrelated"])
@pytest.mark.parametrize("jitter", ["none", "full", "equal", "proportional"])
def test_a_cap_of_1_2_s_is_never_exceeded(clock: FakeClock, backoff: str, jitter: str) -> None:
    fn = failing(10**6)
    wrapped = mulligan.retry(
        on=ValueError,
        attempts=300,
        backoff=backoff,
        base_delay=0.5,
        multiplier=3.0,
        max_delay=1.2,
        jitter=jitter,
        jitter_fraction=1.0,
    )(fn)
    with pytest.raises(ValueError):
        wrapped()
    assert 0 < len(clock.sleeps) <= 299
    assert max(clock.sleeps) <= 1.2


def test_stop_is_a_decision_not_a_magic_duration(clock: FakeClock) -> None:
    gave_up: list[mulligan.RetryDetails] = []
    wrapped = mulligan.retry(
        on=ValueError, attempts=2, jitter="none", base_delay=1.0, on_give_up=gave_up.append
    )(failing(5))
    with pytest.raises(ValueError):
        wrapped()
    assert clock.sleeps == [1.0]
    (details,) = gave_up
    assert (details.attempt, details.delay, details.stop_reason) == (2, 0.0, "attempts_exhausted")
    # In the engine itself: a stop decision carries a reason and no delay.
    session = _core.RetryPolicy(attempts=1).begin(0.0)
    decision = session.on_outcome(_core.Outcome.failure(True), 0.0)
    assert (decision.retry, decision.delay, decision.reason) == (False, 0.0, "attempts_exhausted")


# -- delay hints (Retry-After-like) ------------------------------------------------


class Throttled(Exception):
    def __init__(self, retry_after: float | None) -> None:
        super().__init__(f"retry after {retry_after}")
        self.retry_after = retry_after


def test_delay_hint_replaces_the_backoff(clock: FakeClock) -> None:
    errors = [Throttled(7.0), Throttled(None), Throttled(float("nan"))]

    @mulligan.retry(
        on=Throttled, attempts=4, jitter="none", delay_hint=lambda e: e.retry_after
    )
    def fn() -> str:
        if errors:
            raise errors.pop(0)
        return "ok"

    assert fn() == "ok"
    # 7 s from the hint; None and NaN fall back to the backoff (0.4, 0.8: n = 1, 2).
    assert clock.sleeps == [7.0, 0.4, 0.8]


def test_delay_hint_of_3600_s_with_retry_after_max_60_gives_up_at_once(clock: FakeClock) -> None:
    fn = failing(5, lambda msg: Throttled(3600.0))  # type: ignore[arg-type]
    gave_up: list[mulligan.RetryDetails] = []
    wrapped = mulligan.retry(
        on=Throttled,
        attempts=5,
        retry_after_max=60.0,
        delay_hint=lambda e: e.retry_after,
        on_give_up=gave_up.append,
    )(fn)
    with pytest.raises(Throttled) as info:
        wrapped()
    assert fn.calls == [1]
    assert clock.sleeps == []
    assert gave_up[0].stop_reason == "retry_after_too_long"
    assert gave_up[0].from_delay_hint is True
    if sys.version_info >= (3, 11):
        assert info.value.__notes__ == [
            "mulligan: gave up after 1 attempt (retry_after_too_long: the delay hint of "
            "3600 s exceeds retry_after_max 60 s)"
        ]


def test_delay_hint_clamp_mode_waits_retry_after_max(clock: FakeClock) -> None:
    fn = failing(1, lambda msg: Throttled(3600.0))  # type: ignore[arg-type]
    wrapped = mulligan.retry(
        on=Throttled,
        attempts=5,
        retry_after_max=datetime.timedelta(minutes=1),
        clamp_retry_after=True,
        delay_hint=lambda e: e.retry_after,
    )(fn)
    assert wrapped() == 2
    assert clock.sleeps == [60.0]


def test_delay_hint_that_would_cross_the_deadline_stops(clock: FakeClock) -> None:
    fn = failing(5, lambda msg: Throttled(8.0))  # type: ignore[arg-type]
    wrapped = mulligan.retry(
        on=Throttled, attempts=5, deadline=5.0, delay_hint=lambda e: e.retry_after
    )(fn)
    with pytest.raises(Throttled) as info:
        wrapped()
    assert fn.calls == [1] and clock.sleeps == []
    if sys.version_info >= (3, 11):
        assert info.value.__notes__ == ["mulligan: gave up after 1 attempt (deadline)"]


def test_huge_and_negative_hints_saturate(clock: FakeClock) -> None:
    hints = [-5.0, math.inf]
    fn = failing(2, lambda msg: Throttled(hints.pop(0)))  # type: ignore[arg-type]
    wrapped = mulligan.retry(
        on=Throttled, attempts=5, delay_hint=lambda e: e.retry_after, clamp_retry_after=True
    )(fn)
    assert wrapped() == 3
    # -5 is invalid (like Retry-After: -5): the backoff applies (full jitter of
    # the 0.2 s base); inf is clamped to retry_after_max, 60 s.
    assert len(clock.sleeps) == 2
    assert 0.0 <= clock.sleeps[0] <= 0.2
    assert clock.sleeps[1] == 60.0


def test_delay_hint_must_return_a_number(clock: FakeClock) -> None:
    wrapped = mulligan.retry(on=ValueError, delay_hint=lambda e: "soon")(failing(1))
    with pytest.raises(TypeError, match="delay_hint"):
        wrapped()


# -- deadline (issue 3) -------------------------------------------------------------


def test_deadline_5_s_with_waits_1_2_4_never_starts_the_fourth_attempt(clock: FakeClock) -> None:
    fn = failing(10)
    wrapped = mulligan.retry(
        on=ValueError, attempts=10, deadline=5.0, base_delay=1.0, jitter="none"
    )(fn)
    clock.advance(100.0)  # time passing after decoration does not count
    with pytest.raises(ValueError) as info:
        wrapped()
    # Attempts at 0, 1 and 3 s; the fourth would start at 3 + 4 = 7 s > 5 s.
    assert fn.calls == [3]
    assert clock.sleeps == [1.0, 2.0]
    if sys.version_info >= (3, 11):
        assert info.value.__notes__ == ["mulligan: gave up after 3 attempts (deadline)"]


def test_deadline_budget_is_measured_from_the_start_of_the_first_attempt(clock: FakeClock) -> None:
    calls = 0

    @mulligan.retry(on=ValueError, attempts=10, deadline=datetime.timedelta(seconds=5),
                    base_delay=1.0, jitter="none")
    def slow_first() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            clock.advance(2.5)  # the first attempt takes 2.5 s
        raise ValueError

    with pytest.raises(ValueError):
        slow_first()
    # Fails at 2.5 s, waits 1 s; fails at 3.5 s: a 2 s wait would reach 5.5 s.
    assert calls == 2
    assert clock.sleeps == [1.0]


def test_details_report_elapsed_and_time_left(clock: FakeClock) -> None:
    seen: list[mulligan.RetryDetails] = []
    wrapped = mulligan.retry(
        on=ValueError, attempts=10, deadline=5.0, base_delay=1.0, jitter="none", on_retry=seen.append
    )(failing(10))
    with pytest.raises(ValueError):
        wrapped()
    assert [(d.attempt, d.delay, d.elapsed, d.time_left, d.waited) for d in seen] == [
        (1, 1.0, 0.0, 5.0, 0.0),
        (2, 2.0, 1.0, 4.0, 1.0),
    ]


# -- hooks and logging ----------------------------------------------------------------


def test_hooks_receive_frozen_slotted_details(clock: FakeClock) -> None:
    retried: list[mulligan.RetryDetails] = []
    gave_up: list[mulligan.RetryDetails] = []
    fn = failing(5)
    wrapped = mulligan.retry(
        on=ValueError,
        attempts=3,
        jitter="none",
        on_retry=[retried.append],
        on_give_up=gave_up.append,
    )(fn)
    with pytest.raises(ValueError):
        wrapped()
    assert [(d.name, d.attempt, d.delay, str(d.exception), d.stop_reason) for d in retried] == [
        ("failing.<locals>.fn", 1, 0.2, "failure 1", None),
        ("failing.<locals>.fn", 2, 0.4, "failure 2", None),
    ]
    assert [(d.attempt, d.delay, d.stop_reason, d.waited) for d in gave_up] == [
        (3, 0.0, "attempts_exhausted", pytest.approx(0.6))
    ]
    details = retried[0]
    assert not hasattr(details, "__dict__")
    with pytest.raises(AttributeError):
        details.attempt = 9  # type: ignore[misc]
    assert isinstance(mulligan.RetryDetails.__slots__, tuple)


def test_every_retry_and_give_up_is_logged(clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    wrapped = mulligan.retry(on=ValueError, attempts=3, jitter="none")(failing(5))
    with caplog.at_level(logging.WARNING, logger="mulligan"), pytest.raises(ValueError):
        wrapped()
    records = [r for r in caplog.records if r.name == "mulligan"]
    assert [r.levelno for r in records] == [logging.WARNING] * 3
    assert [(r.mulligan_attempt, r.mulligan_delay) for r in records[:2]] == [(1, 0.2), (2, 0.4)]  # type: ignore[attr-defined]
    assert records[2].mulligan_stop_reason == "attempts_exhausted"  # type: ignore[attr-defined]
    assert "retrying in 0.200 s" in records[0].getMessage()
    assert "gave up after 3 attempts" in records[2].getMessage()


def test_bad_hook_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="on_retry"):
        mulligan.retry(on=ValueError, on_retry=42)  # type: ignore[arg-type]


# -- give-up forms ---------------------------------------------------------------------


def test_raise_on_give_up_carries_every_outcome(clock: FakeClock) -> None:
    fn = failing(5)
    wrapped = mulligan.retry(on=ValueError, attempts=3, raise_on_give_up=True)(fn)
    with pytest.raises(mulligan.RetriesExhausted) as info:
        wrapped()
    e = info.value
    assert (e.attempts, e.stop_reason) == (3, "attempts_exhausted")
    assert [(o.attempt, str(o.exception), o.result) for o in e.outcomes] == [
        (1, "failure 1", None),
        (2, "failure 2", None),
        (3, "failure 3", None),
    ]
    assert e.__cause__ is e.outcomes[-1].exception
    assert "gave up after 3 attempts (attempts_exhausted)" in str(e)


def test_raise_on_give_up_with_results(clock: FakeClock) -> None:
    values = iter([1, 2])
    wrapped = mulligan.retry(on_result=lambda r: r < 10, attempts=2, raise_on_give_up=True)(
        lambda: next(values)
    )
    with pytest.raises(mulligan.RetriesExhausted) as info:
        wrapped()
    assert [(o.exception, o.result) for o in info.value.outcomes] == [(None, 1), (None, 2)]
    assert info.value.__cause__ is None


# -- shape of the wrapper ----------------------------------------------------------------


def test_signature_and_metadata_are_kept() -> None:
    def documented(a: int, *, b: str = "x") -> int:
        """Docs."""
        return a

    wrapped = mulligan.retry(on=ValueError)(documented)
    assert (wrapped.__name__, wrapped.__doc__, wrapped.__wrapped__) == ("documented", "Docs.", documented)
    assert inspect.signature(wrapped) == inspect.signature(documented)


class Service:
    def __init__(self) -> None:
        self.calls = 0

    @mulligan.retry(on=ValueError, attempts=3, base_delay=0)
    def method(self, x: int) -> int:
        self.calls += 1
        if self.calls < 3:
            raise ValueError
        return x * 2

    @mulligan.retry(on=ValueError, attempts=3, base_delay=0)
    @classmethod
    def cls_outer(cls, x: int) -> str:
        return cls.__name__ + str(x)

    @classmethod
    @mulligan.retry(on=ValueError, attempts=3, base_delay=0)
    def cls_inner(cls, x: int) -> str:
        return cls.__name__ + str(x)

    @mulligan.retry(on=ValueError, attempts=3, base_delay=0)
    @staticmethod
    def static_outer(x: int) -> int:
        return -x

    @staticmethod
    @mulligan.retry(on=ValueError, attempts=3, base_delay=0)
    def static_inner(x: int) -> int:
        return -x


def test_methods_classmethods_and_staticmethods() -> None:
    s = Service()
    assert s.method(4) == 8 and s.calls == 3
    assert Service.cls_outer(1) == "Service1" and s.cls_outer(2) == "Service2"
    assert Service.cls_inner(1) == "Service1" and s.cls_inner(2) == "Service2"
    assert Service.static_outer(3) == -3 and s.static_outer(3) == -3
    assert Service.static_inner(3) == -3 and s.static_inner(3) == -3
    assert Service.method.__name__ == "method"


def test_flaky_classmethod_is_retried() -> None:
    attempts = []

    class K:
        @mulligan.retry(on=KeyError, attempts=3, base_delay=0)
        @classmethod
        def load(cls) -> str:
            attempts.append(cls)
            if len(attempts) < 2:
                raise KeyError
            return "loaded"

    assert K.load() == "loaded" and attempts == [K, K]


def test_retry_with_returns_a_variant(clock: FakeClock) -> None:
    fn = failing(10)
    wrapped = mulligan.retry(on=ValueError, attempts=5, base_delay=0)(fn)
    once = wrapped.retry_with(attempts=1)
    assert once.__wrapped__ is fn
    with pytest.raises(ValueError):
        once()
    assert fn.calls == [1]
    with pytest.raises(ValueError):
        wrapped()
    assert fn.calls == [6]  # the original keeps 5 attempts
    slow = wrapped.retry_with(base_delay=2.0, jitter="none", attempts=2)
    with pytest.raises(ValueError):
        slow()
    assert clock.sleeps == [2.0]
    with pytest.raises(ValueError, match="attempts must be in"):
        wrapped.retry_with(attempts=0)


# -- testing switches ------------------------------------------------------------------


def test_set_active_false_propagates_the_first_failure(clock: FakeClock) -> None:
    fn = failing(5)
    wrapped = mulligan.retry(on=ValueError, attempts=5)(fn)
    with mulligan.testing.set_active(False):
        with pytest.raises(ValueError) as info:
            wrapped()
    assert fn.calls == [1] and not getattr(info.value, "__notes__", [])
    mulligan.testing.set_active(False)
    try:
        with pytest.raises(ValueError):
            wrapped()
        assert fn.calls == [2]
    finally:
        mulligan.testing.set_active(True)
    assert wrapped() == 6  # retries are back: calls 3, 4 and 5 fail, 6 succeeds


def test_set_testing_caps_attempts_and_removes_waits() -> None:
    fn = failing(10)
    wrapped = mulligan.retry(on=ValueError, attempts=5, base_delay=30.0)(fn)
    with mulligan.testing.set_testing(True, attempts=3):
        with pytest.raises(ValueError) as info:
            wrapped()  # would wait 30 + 60 s without testing mode
    assert fn.calls == [3]
    if sys.version_info >= (3, 11):
        assert info.value.__notes__ == ["mulligan: gave up after 3 attempts (attempts_exhausted)"]
    mulligan.testing.set_testing(True)
    try:
        with pytest.raises(ValueError):
            wrapped()
        assert fn.calls == [4]
    finally:
        mulligan.testing.set_testing(False)
    with pytest.raises(ValueError, match="attempts"):
        mulligan.testing.set_testing(True, attempts=0)


def test_fake_clock_context_restores_real_time() -> None:
    from mulligan._retry.state import STATE

    with FakeClock(start=5.0) as c:
        assert STATE.now() == 5.0
        c.sleep(1.5)
        assert STATE.now() == 6.5 and c.sleeps == [1.5] and c.slept == 1.5
    assert STATE.clock is None and STATE.now() != 6.5


# -- statistics --------------------------------------------------------------------------


def test_statistics_record_calls_that_failed_at_least_once(clock: FakeClock) -> None:
    outcomes = [ValueError(), None, ValueError(), ValueError(), None]

    @mulligan.retry(on=ValueError, attempts=5, jitter="none", base_delay=1.0)
    def fn() -> str:
        item = outcomes.pop(0)
        if item is not None:
            raise item
        return "ok"

    assert fn.statistics.last is None
    fn()
    assert fn.statistics.last == mulligan.RetryStatistics(
        name="test_statistics_record_calls_that_failed_at_least_once.<locals>.fn",
        attempts=2,
        waited=1.0,
        elapsed=1.0,
        stop_reason="succeeded",
    )
    fn()
    assert fn.statistics.last is not None and fn.statistics.last.attempts == 3
    assert fn.statistics.last.retries == 2
    fn.statistics.clear()
    assert fn.statistics.last is None


def test_two_threads_see_their_own_attempt_counts() -> None:
    barrier = threading.Barrier(2, timeout=10)
    failures = {"a": 1, "b": 3}
    per_thread: dict[str, list[int]] = {"a": [], "b": []}
    results: dict[str, Any] = {}
    local = threading.local()

    def on_retry(details: mulligan.RetryDetails) -> None:
        per_thread[local.name].append(details.attempt)

    @mulligan.retry(on=ValueError, attempts=10, base_delay=0, on_retry=on_retry)
    def work(name: str) -> int:
        local.calls = getattr(local, "calls", 0) + 1
        if local.calls == 1:
            barrier.wait()  # both calls are in flight at once
        if local.calls <= failures[name]:
            raise ValueError(name)
        barrier_after = local.calls
        return barrier_after

    def run(name: str) -> None:
        local.name = name
        results[name] = (work(name), work.statistics.last)

    threads = [threading.Thread(target=run, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["a"][0] == 2 and results["b"][0] == 4
    assert results["a"][1].attempts == 2 and results["b"][1].attempts == 4
    assert per_thread == {"a": [1], "b": [1, 2, 3]}
    assert work.statistics.last is None  # the main thread made no call


# -- input found by review ----------------------------------------------------------


def test_attempts_and_seed_out_of_range_are_value_errors() -> None:
    for bad in (0, -1, 2**31, 2**40):
        with pytest.raises(ValueError, match="attempts must be in"):
            mulligan.retry(on=ValueError, attempts=bad)
    for bad_seed in (-1, 2**64, 2**70):
        with pytest.raises(ValueError, match="seed must be in"):
            mulligan.retry(on=ValueError, seed=bad_seed)
    mulligan.retry(on=ValueError, attempts=2**31 - 1, seed=2**64 - 1)  # the bounds themselves


def test_an_exception_group_carrying_keyboard_interrupt_is_never_retried() -> None:
    calls = []

    @mulligan.retry(on=BaseException, attempts=3, base_delay=0.0)
    def boom() -> None:
        calls.append(1)
        raise BaseExceptionGroup("g", [ValueError("x"), KeyboardInterrupt()])

    with pytest.raises(BaseExceptionGroup):
        boom()
    assert calls == [1]


def test_a_negative_delay_hint_is_ignored_like_an_invalid_retry_after() -> None:
    from mulligan.testing import FakeClock

    calls = []

    @mulligan.retry(on=ValueError, attempts=2, base_delay=0.5, jitter="none",
                    delay_hint=lambda e: -5)
    def flaky() -> int:
        calls.append(1)
        if len(calls) < 2:
            raise ValueError("again")
        return 1

    with FakeClock() as clock:
        assert flaky() == 1
    assert clock.sleeps == [0.5]  # the backoff, not a zero wait
