"""@mulligan.retry on plain synchronous functions: exact counts, waits and errors."""

from __future__ import annotations

import math
import sys
import time
from typing import Any

import pytest

import mulligan
from conftest import load_vectors


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Records every time.sleep the retry loop makes, without sleeping."""
    recorded: list[float] = []
    monkeypatch.setattr(time, "sleep", recorded.append)
    return recorded


def test_retries_then_succeeds(sleeps: list[float]) -> None:
    calls = []

    @mulligan.retry(on=ConnectionError, attempts=3)
    def flaky(x: int, *, y: int) -> int:
        calls.append((x, y))
        if len(calls) < 3:
            raise ConnectionError("not yet")
        return x + y

    assert flaky(1, y=2) == 3
    assert calls == [(1, 2), (1, 2), (1, 2)]
    assert len(sleeps) <= 2


def test_success_does_not_touch_the_engine(sleeps: list[float]) -> None:
    calls = 0

    @mulligan.retry(on=ValueError)
    def ok() -> str:
        nonlocal calls
        calls += 1
        return "fine"

    assert [ok() for _ in range(5)] == ["fine"] * 5
    assert calls == 5
    assert sleeps == []


def test_gives_up_and_reraises_the_same_exception_with_a_note(sleeps: list[float]) -> None:
    raised: list[ValueError] = []

    @mulligan.retry(on=ValueError, attempts=3, jitter="none")
    def always_fails() -> None:
        exc = ValueError(f"failure {len(raised) + 1}")
        raised.append(exc)
        raise exc

    with pytest.raises(ValueError) as info:
        always_fails()
    assert len(raised) == 3
    assert info.value is raised[-1]  # the original (last) object, not a wrapper
    assert str(info.value) == "failure 3"
    if sys.version_info >= (3, 11):
        assert info.value.__notes__ == ["mulligan: gave up after 3 attempts (attempts_exhausted)"]
    assert sleeps == [0.2, 0.4]


def test_reraises_a_reused_exception_object_unchanged(sleeps: list[float]) -> None:
    boom = OSError("boom")

    @mulligan.retry(on=OSError, attempts=2)
    def fails() -> None:
        raise boom

    with pytest.raises(OSError) as info:
        fails()
    assert info.value is boom


def test_attempts_1_means_no_retry(sleeps: list[float]) -> None:
    calls = 0

    @mulligan.retry(on=ValueError, attempts=1)
    def fails() -> None:
        nonlocal calls
        calls += 1
        raise ValueError("once")

    with pytest.raises(ValueError) as info:
        fails()
    assert calls == 1
    assert sleeps == []
    if sys.version_info >= (3, 11):
        assert info.value.__notes__ == ["mulligan: gave up after 1 attempt (attempts_exhausted)"]


def test_non_matching_exception_is_not_retried(sleeps: list[float]) -> None:
    calls = 0

    @mulligan.retry(on=ConnectionError, attempts=5)
    def fails() -> None:
        nonlocal calls
        calls += 1
        raise KeyError("other")

    with pytest.raises(KeyError):
        fails()
    assert calls == 1
    assert sleeps == []


def test_non_matching_exception_after_a_retry_propagates(sleeps: list[float]) -> None:
    errors: list[BaseException] = [ConnectionError("first"), KeyError("second")]

    @mulligan.retry(on=ConnectionError, attempts=5)
    def fails() -> None:
        raise errors.pop(0)

    with pytest.raises(KeyError):
        fails()
    assert errors == []
    assert len(sleeps) <= 1


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit, GeneratorExit])
def test_stop_exceptions_are_never_retried_even_with_on_baseexception(
    sleeps: list[float], stop: type[BaseException]
) -> None:
    calls = 0

    @mulligan.retry(on=BaseException, attempts=5)
    def interrupted() -> None:
        nonlocal calls
        calls += 1
        raise stop()

    with pytest.raises(stop):
        interrupted()
    assert calls == 1
    assert sleeps == []


def test_keyboard_interrupt_on_a_later_attempt_is_not_retried(sleeps: list[float]) -> None:
    errors: list[BaseException] = [RuntimeError("first"), KeyboardInterrupt()]

    @mulligan.retry(on=BaseException, attempts=5)
    def fails() -> None:
        raise errors.pop(0)

    with pytest.raises(KeyboardInterrupt):
        fails()
    assert errors == []


def test_cancelled_error_is_never_retried(sleeps: list[float]) -> None:
    import asyncio

    calls = 0

    @mulligan.retry(on=BaseException, attempts=5)
    def cancelled() -> None:
        nonlocal calls
        calls += 1
        raise asyncio.CancelledError()

    with pytest.raises(asyncio.CancelledError):
        cancelled()
    assert calls == 1


def test_tuple_of_exception_types(sleeps: list[float]) -> None:
    errors: list[Exception] = [ValueError(), KeyError()]

    @mulligan.retry(on=(ValueError, KeyError), attempts=3)
    def fails() -> str:
        if errors:
            raise errors.pop(0)
        return "done"

    assert fails() == "done"


def test_default_waits_with_jitter_none(sleeps: list[float]) -> None:
    @mulligan.retry(on=ValueError, attempts=3, jitter="none", seed=1)
    def fails() -> None:
        raise ValueError

    with pytest.raises(ValueError):
        fails()
    assert sleeps == [0.2, 0.4]


def test_exponential_waits_saturate_at_max_delay(sleeps: list[float]) -> None:
    @mulligan.retry(on=ValueError, attempts=8, jitter="none", base_delay=1.0, max_delay=5.0)
    def fails() -> None:
        raise ValueError

    with pytest.raises(ValueError):
        fails()
    assert sleeps == [1.0, 2.0, 4.0, 5.0, 5.0, 5.0, 5.0]


def test_constant_and_linear_backoff(sleeps: list[float]) -> None:
    @mulligan.retry(on=ValueError, attempts=4, backoff="constant", base_delay=0.5, jitter="none")
    def constant() -> None:
        raise ValueError

    @mulligan.retry(on=ValueError, attempts=4, backoff="linear", base_delay=0.5, jitter="none")
    def linear() -> None:
        raise ValueError

    with pytest.raises(ValueError):
        constant()
    with pytest.raises(ValueError):
        linear()
    assert sleeps == [0.5, 0.5, 0.5, 0.5, 1.0, 1.5]


def test_zero_delay_does_not_sleep(sleeps: list[float]) -> None:
    calls = 0

    @mulligan.retry(on=ValueError, attempts=3, base_delay=0.0)
    def fails() -> None:
        nonlocal calls
        calls += 1
        raise ValueError

    with pytest.raises(ValueError):
        fails()
    assert calls == 3
    assert sleeps == []


def test_seeded_jitter_is_reproducible(sleeps: list[float]) -> None:
    @mulligan.retry(on=ValueError, attempts=5, seed=42)
    def fails() -> None:
        raise ValueError

    with pytest.raises(ValueError):
        fails()
    first = list(sleeps)
    sleeps.clear()
    with pytest.raises(ValueError):
        fails()
    assert sleeps == first
    assert all(0 <= d <= 10.0 for d in first)


@pytest.mark.parametrize(
    "case",
    load_vectors("backoff.json"),
    ids=lambda c: c["name"],
)
def test_shared_backoff_vectors(sleeps: list[float], case: dict[str, Any]) -> None:
    @mulligan.retry(
        on=ValueError,
        attempts=case["count"] + 1,
        backoff=case["backoff"],
        base_delay=case["base_ns"] / 1e9,
        multiplier=case["multiplier"],
        max_delay=case["max_delay_ns"] / 1e9,
        jitter=case["jitter"],
        jitter_fraction=case["jitter_fraction"],
        seed=case["seed"],
    )
    def fails() -> None:
        raise ValueError

    with pytest.raises(ValueError):
        fails()
    expected = [ns / 1e9 for ns in case["expected_ns"] if ns > 0]
    assert sleeps == pytest.approx(expected, abs=1e-9)


def test_deadline_stops_before_crossing_it() -> None:
    # The drivers read time through mulligan.testing's clock (time.monotonic
    # is bound once, so patching it does not reach them): use a FakeClock.
    calls = 0

    @mulligan.retry(on=ValueError, attempts=10, deadline=1.0, jitter="none", base_delay=0.2)
    def fails() -> None:
        nonlocal calls
        calls += 1
        raise ValueError

    with mulligan.testing.FakeClock() as clock, pytest.raises(ValueError) as info:
        fails()
    # 0.2 + 0.4 = 0.6 s waited; the next wait (0.8 s) would reach the deadline.
    assert clock.sleeps == [0.2, 0.4]
    assert calls == 3
    if sys.version_info >= (3, 11):
        assert info.value.__notes__ == ["mulligan: gave up after 3 attempts (deadline)"]


def test_wraps_keeps_metadata() -> None:
    def documented(a: int) -> int:
        """Adds nothing."""
        return a

    wrapped = mulligan.retry(on=ValueError)(documented)
    assert wrapped.__name__ == "documented"
    assert wrapped.__doc__ == "Adds nothing."
    assert wrapped.__wrapped__ is documented  # type: ignore[attr-defined]
    assert wrapped(7) == 7


# -- validation at decoration time -------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"attempts": 0}, "attempts"),
        ({"attempts": -3}, "attempts"),
        ({"base_delay": -1}, "base_delay"),
        ({"base_delay": math.nan}, "base_delay"),
        ({"base_delay": math.inf}, "base_delay"),
        ({"max_delay": -0.5}, "max_delay"),
        ({"max_delay": math.nan}, "max_delay"),
        ({"max_delay": math.inf}, "max_delay"),
        ({"multiplier": math.nan}, "multiplier"),
        ({"multiplier": -2.0}, "multiplier"),
        ({"deadline": 0}, "deadline"),
        ({"deadline": -1.0}, "deadline"),
        ({"deadline": math.nan}, "deadline"),
        ({"backoff": "fibonacci"}, "backoff"),
        ({"jitter": "lots"}, "jitter"),
    ],
)
def test_bad_values_raise_value_error_at_decoration(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        mulligan.retry(on=ValueError, **kwargs)


def test_retry_without_parentheses_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="parentheses"):

        @mulligan.retry  # type: ignore[arg-type]
        def f() -> None: ...


def test_exception_type_passed_positionally_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="on=ValueError"):
        mulligan.retry(ValueError)  # type: ignore[call-overload]


def test_on_is_required() -> None:
    with pytest.raises(TypeError, match="'on'"):
        mulligan.retry()  # type: ignore[call-overload]


@pytest.mark.parametrize("on", [42, "ValueError", None, (), (ValueError, 3), int])
def test_bad_on_is_a_type_error(on: Any) -> None:
    with pytest.raises(TypeError):
        mulligan.retry(on=on)


def test_non_int_attempts_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        mulligan.retry(on=ValueError, attempts=2.5)  # type: ignore[arg-type]


def test_generator_and_async_generator_functions_are_rejected() -> None:
    # Coroutine functions are supported (tests/python/retry/test_retry_async.py).
    decorator = mulligan.retry(on=ValueError)

    def gen() -> Any:
        yield 1

    async def agen() -> Any:
        yield 1

    for fn in (gen, agen):
        with pytest.raises(TypeError, match="generator"):
            decorator(fn)
