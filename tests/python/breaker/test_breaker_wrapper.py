"""The Python breaker wrapper's own duties: documented defaults, clear errors
that name the bad argument, transition logging, the async context manager,
and registries that hand their settings to every breaker they build.

Written against surviving mutants of scripts/mutation.sh; expected values are
the defaults and messages documented in CircuitBreaker's docstring and
DESIGN.md section 5.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import logging
from typing import Any

import pytest

import mulligan

_names = itertools.count()


def name() -> str:
    return f"wrapper-{next(_names)}"


class Clock:
    def __init__(self, now: float = 500.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_defaults_are_the_documented_ones() -> None:
    assert mulligan.CircuitBreaker(name()).options == {
        "failure_threshold": 5,
        "window": "none",
        "window_size": 100,
        "window_duration": 60.0,
        "window_buckets": 10,
        "failure_rate_threshold": 50.0,
        "minimum_calls": 10,
        "slow_call_duration": None,
        "slow_call_rate_threshold": 100.0,
        "reset_timeout": 30.0,
        "reset_timeout_multiplier": 1.0,
        "max_reset_timeout": 300.0,
        "half_open_max_calls": 1,
        "permit_timeout": 60.0,
        "max_half_open_duration": None,
    }
    assert mulligan.CircuitBreaker().name == "default"


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"reset_timeout": -1}, ValueError, "reset_timeout must be > 0"),
        ({"max_reset_timeout": "a"}, TypeError,
         "max_reset_timeout must be a number of seconds or a datetime.timedelta, got 'a'"),
        ({"permit_timeout": 0}, ValueError, "permit_timeout must be > 0"),
        ({"window": "time", "window_duration": -1}, ValueError, "window_duration must be > 0"),
        ({"window": "time", "window_buckets": 0}, ValueError, r"window_buckets must be in \[1, 3600\]"),
        ({"window": "count", "slow_call_duration": -1}, ValueError, "slow_call_duration must be > 0"),
        ({"failure_on": 3}, TypeError, "failure_on must be an exception type"),
        ({"ignore_on": "x"}, TypeError, "ignore_on must be an exception type"),
        ({"failure_on": (ValueError, 3)}, TypeError, "failure_on must hold exception types"),
        ({"clock": 3}, TypeError, "clock must be a callable or None, got 3"),
    ],
)
def test_bad_options_name_the_argument(options: dict[str, Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        mulligan.CircuitBreaker(name(), **options)


def test_bad_arguments_of_the_methods_say_what_is_wrong() -> None:
    b = mulligan.CircuitBreaker(name())
    with pytest.raises(TypeError, match="name must be a str, got 3"):
        mulligan.CircuitBreaker(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="listener must be a callable, got 3"):
        b.add_listener(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="CircuitBreaker decorates callables, got 3"):
        b(3)  # type: ignore[type-var]
    with pytest.raises(TypeError, match="name must be a str, got 3"):
        mulligan.BreakerRegistry().get(3)  # type: ignore[arg-type]


def test_generators_of_both_kinds_are_refused() -> None:
    b = mulligan.CircuitBreaker(name())

    def gen() -> Any:
        yield 1

    async def agen() -> Any:
        yield 1

    for fn in (gen, agen):
        with pytest.raises(TypeError, match="cannot decorate a generator function: guard the code"):
            b(fn)


def test_a_decorated_coroutine_function_carries_its_breaker() -> None:
    b = mulligan.CircuitBreaker(name())

    @b
    async def fetch() -> int:
        return 1

    @b
    def get() -> int:
        return 1

    assert fetch.breaker is b  # type: ignore[attr-defined]
    assert get.breaker is b  # type: ignore[attr-defined]


def test_async_with_records_the_exception_as_a_failure() -> None:
    b = mulligan.CircuitBreaker(name(), failure_threshold=1)

    async def main() -> None:
        with pytest.raises(ConnectionError):
            async with b:
                raise ConnectionError("down")

    asyncio.run(main())
    assert b.counts["failures"] == 1
    assert b.state == "open"


def test_transitions_are_logged_at_warning_when_opening_and_info_otherwise(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    b = mulligan.CircuitBreaker(name(), failure_threshold=1, reset_timeout=10.0, clock=clock)
    caplog.set_level(logging.INFO, logger="mulligan")
    with pytest.raises(ConnectionError), b:
        raise ConnectionError("down")
    clock.now += 10.0
    with b:
        pass
    records = [r for r in caplog.records if getattr(r, "mulligan_event", None) == "breaker_transition"]
    assert [(r.levelno, r.getMessage()) for r in records] == [
        (logging.WARNING, f"mulligan: circuit breaker {b.name!r} closed -> open (failure_threshold)"),
        (logging.INFO, f"mulligan: circuit breaker {b.name!r} open -> half_open (reset_timeout_elapsed)"),
        (logging.INFO, f"mulligan: circuit breaker {b.name!r} half_open -> closed (probe_succeeded)"),
    ]
    first = records[0]
    assert (first.mulligan_breaker, first.mulligan_from_state, first.mulligan_to_state,
            first.mulligan_reason, first.mulligan_at) == (b.name, "closed", "open",
                                                          "failure_threshold", 500.0)
    assert records[2].mulligan_at == 510.0


def test_manual_switches_happen_at_the_breakers_clock(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock(1234.0)
    b = mulligan.CircuitBreaker(name(), clock=clock)
    seen: list[tuple[str, float]] = []
    b.add_listener(lambda t: seen.append((t.to_state, t.at)))
    b.force_open()
    clock.now += 1
    b.disable()
    clock.now += 1
    b.metrics_only()
    clock.now += 1
    b.reset()
    assert seen == [("forced_open", 1234.0), ("disabled", 1235.0), ("metrics_only", 1236.0),
                    ("closed", 1237.0)]


def test_a_raising_listener_is_logged_with_its_breaker_and_contained(
    caplog: pytest.LogCaptureFixture,
) -> None:
    b = mulligan.CircuitBreaker(name())

    def broken(t: Any) -> None:
        raise RuntimeError("listener bug")

    b.add_listener(broken)
    with caplog.at_level(logging.ERROR, logger="mulligan"):
        b.force_open()
    assert b.state == "forced_open"
    errors = [r for r in caplog.records if getattr(r, "mulligan_event", None) == "breaker_listener_error"]
    assert len(errors) == 1
    assert errors[0].mulligan_breaker == b.name
    assert errors[0].getMessage() == (
        f"mulligan: circuit breaker {b.name!r} listener {broken!r} raised"
    )


def test_a_registry_hands_its_filters_and_clock_to_get_and_find() -> None:
    clock = Clock(100.0)
    registry = mulligan.BreakerRegistry(failure_threshold=1, reset_timeout=5.0,
                                        failure_on=ConnectionError, ignore_on=TimeoutError,
                                        clock=clock)

    def check(b: mulligan.CircuitBreaker) -> None:
        with pytest.raises(TimeoutError), b:  # ignore_on wins over the timeout rule
            raise TimeoutError
        with pytest.raises(ValueError), b:  # not in failure_on: ignored
            raise ValueError
        assert b.state == "closed"
        with pytest.raises(ConnectionError), b:
            raise ConnectionError
        assert b.state == "open"
        assert b.time_until_probe == 5.0  # measured on the registry's clock
        b.reset()

    first = registry.get("svc")
    assert registry.find("svc") is first
    check(first)
    # A breaker whose wrapper is gone is wrapped again, with the same settings.
    del first
    gc.collect()
    again = registry.find("svc")
    assert again is not None
    check(again)
    assert registry.get("svc") is again
    assert registry.find("nothing") is None
