"""What an operator sees of a breaker: stale results, the last trip, per-call
events, its own counts in metrics_json, one metrics name per live breaker.

Exact values worked out by hand from each event script; an injected clock,
no sleeping.
"""

from __future__ import annotations

import gc
import json
from typing import Any, Dict, List, Optional

import pytest

import mulligan
from mulligan import BreakerCallEvent, BreakerTrip, CircuitBreaker, CircuitOpenError


class Clock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class Boom(Exception):
    pass


def fail() -> None:
    raise Boom("down")


def succeed() -> str:
    return "ok"


def entry(name: str) -> Optional[Dict[str, Any]]:
    for e in json.loads(mulligan.metrics_json())["metrics"]:
        if e["name"] == name:
            return dict(e)
    return None


def test_a_result_after_a_transition_is_counted_as_stale_and_changes_nothing() -> None:
    clock = Clock()
    b = CircuitBreaker("obs-stale", failure_threshold=2, reset_timeout=10.0, clock=clock)
    early = b._acquire()  # a permit from before the trip
    for _ in range(2):
        with pytest.raises(Boom):
            b(fail)()
    assert b.state == "open"
    b._record(early, 0)  # a success that arrives late
    assert b.state == "open"
    counts = b.counts
    assert counts["stale"] == 1
    assert counts["calls"] == 2
    assert counts["successes"] == 0
    b.reset()
    assert b.counts["stale"] == 0


def test_last_trip_keeps_the_window_figures_after_the_window_is_cleared() -> None:
    clock = Clock()
    b = CircuitBreaker(
        "obs-trip",
        failure_threshold=0,
        window="count",
        window_size=10,
        minimum_calls=4,
        failure_rate_threshold=50.0,
        reset_timeout=10.0,
        clock=clock,
    )
    assert b.last_trip is None
    # S F S F: 2 of 4 failed (50 % reaches 50 %) on the 4th call.
    b(succeed)()
    with pytest.raises(Boom):
        b(fail)()
    b(succeed)()
    clock.now = 1001.5
    with pytest.raises(Boom):
        b(fail)()
    assert b.state == "open"
    assert b.counts["window_calls"] == 0  # cleared by the transition
    assert b.last_trip == BreakerTrip(
        from_state="closed",
        reason="failure_rate",
        at=1001.5,
        consecutive_failures=1,
        window_calls=4,
        window_failure_rate=50.0,
        window_slow_rate=0.0,
    )
    # A failed probe replaces it; closing again keeps it.
    clock.now = 1011.5
    with pytest.raises(Boom):
        b(fail)()
    trip = b.last_trip
    assert trip is not None
    assert (trip.from_state, trip.reason, trip.at) == ("half_open", "probe_failed", 1011.5)
    clock.now = 1021.5
    b(succeed)()
    assert b.state == "closed"
    assert b.last_trip == trip
    b.reset()
    assert b.last_trip is None


def test_call_listeners_get_one_event_per_call() -> None:
    clock = Clock()
    b = CircuitBreaker(
        "obs-calls", failure_threshold=2, reset_timeout=10.0, ignore_on=KeyError, clock=clock
    )
    events: List[BreakerCallEvent] = []
    listener = events.append
    assert b.add_call_listener(listener) is listener

    def lookup() -> None:
        raise KeyError("x")

    early = b._acquire()
    b(succeed)()
    with pytest.raises(KeyError):
        b(lookup)()
    with pytest.raises(Boom):
        b(fail)()
    clock.now = 1000.25
    with pytest.raises(Boom):
        b(fail)()  # opens
    with pytest.raises(CircuitOpenError):
        b(succeed)()
    b._record(early, 1)  # stale
    assert [(e.kind, e.state, e.stale) for e in events] == [
        ("success", "closed", False),
        ("ignored", "closed", False),
        ("failure", "closed", False),
        ("failure", "closed", False),
        ("rejected", "open", False),
        ("failure", "open", True),
    ]
    assert events[0].name == "obs-calls"
    assert events[0].duration == 0.0  # the clock did not move during the call
    assert events[0].at == 1000.0
    assert events[4].at == 1000.25
    assert b.remove_call_listener(listener)
    assert not b.remove_call_listener(listener)
    b.reset()
    b(succeed)()
    assert len(events) == 6


def test_a_raising_call_listener_is_logged_and_does_not_break_the_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    b = CircuitBreaker("obs-raising", clock=Clock())

    def bad(event: BreakerCallEvent) -> None:
        raise RuntimeError("listener bug")

    b.add_call_listener(bad)
    assert b(succeed)() == "ok"
    assert "call listener" in caplog.text
    with pytest.raises(TypeError):
        b.add_call_listener("not callable")  # type: ignore[arg-type]


def test_metrics_json_shows_the_breakers_own_counts() -> None:
    b = CircuitBreaker("obs-metrics", failure_threshold=3, clock=Clock())
    assert b.metrics_name == "obs-metrics"
    b(succeed)()
    b(succeed)()
    for _ in range(3):
        with pytest.raises(Boom):
            b(fail)()
    with pytest.raises(CircuitOpenError):
        b(succeed)()
    e = entry("obs-metrics")
    assert e is not None
    assert e["breaker_state"] == "open"
    breaker = e["breaker"]
    assert (breaker["calls"], breaker["successes"], breaker["failures"]) == (5, 2, 3)
    assert (breaker["rejected"], breaker["stale"]) == (1, 0)
    assert breaker["last_trip"]["reason"] == "failure_threshold"
    assert breaker["last_trip"]["consecutive_failures"] == 3


def test_a_breaker_built_twice_reports_under_two_names() -> None:
    first = CircuitBreaker("obs-twice", failure_threshold=1, clock=Clock())
    second = CircuitBreaker("obs-twice", failure_threshold=1, clock=Clock())
    assert first.metrics_name == "obs-twice"
    assert second.metrics_name == "obs-twice#2"
    with pytest.raises(Boom):
        second(fail)()
    a, b = entry("obs-twice"), entry("obs-twice#2")
    assert a is not None and b is not None
    assert (a["breaker_state"], a["breaker"]["failures"]) == ("closed", 0)
    assert (b["breaker_state"], b["breaker"]["failures"]) == ("open", 1)
    del first
    gc.collect()
    third = CircuitBreaker("obs-twice", clock=Clock())
    assert third.metrics_name == "obs-twice"  # freed with the first one
    a = entry("obs-twice")
    assert a is not None
    assert a["breaker"]["calls"] == 0


# -- configuration cannot be changed silently ----------------------------------


def test_assigning_an_option_raises_and_changes_nothing() -> None:
    b = CircuitBreaker("obs-assign", failure_threshold=5, clock=Clock())
    with pytest.raises(AttributeError, match=r"failure_threshold cannot be changed"):
        b.failure_threshold = 2  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="reset_timeout"):
        b.reset_timeout = 1.0  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="no settable attribute 'fail_max'"):
        b.fail_max = 2  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        b.name = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del b.name  # type: ignore[misc]
    assert b.options["failure_threshold"] == 5
    # Still 5: four failures leave it closed.
    for _ in range(4):
        with pytest.raises(Boom):
            b(fail)()
    assert b.state == "closed"
    with pytest.raises(AttributeError, match="configure"):
        mulligan.breakers.max_breakers = 3  # type: ignore[attr-defined]


def test_circuit_breaker_with_options_is_get_or_create() -> None:
    registry = mulligan.BreakerRegistry()
    a = registry.get_or_create("obs-goc", failure_threshold=3, reset_timeout=10.0)
    assert a.options["failure_threshold"] == 3
    assert a.options["reset_timeout"] == 10.0
    # The same configuration (a duration as timedelta is the same) -> the same breaker.
    import datetime

    assert registry.get_or_create(
        "obs-goc", failure_threshold=3, reset_timeout=datetime.timedelta(seconds=10)
    ) is a
    assert registry.get("obs-goc") is a
    assert registry.find("obs-goc") is a
    assert "obs-goc" in registry
    assert a in list(registry)
    with pytest.raises(ValueError) as info:
        registry.get_or_create("obs-goc", failure_threshold=4, reset_timeout=10.0)
    assert "failure_threshold (4 != 3)" in str(info.value)
    with pytest.raises(ValueError, match=r"reset_timeout \(30.0 != 10.0\)"):
        registry.get_or_create("obs-goc", failure_threshold=3)
    # A name of the shared configuration is compared with it.
    shared = registry.get("obs-shared")
    assert registry.get_or_create("obs-shared", failure_threshold=5) is shared
    with pytest.raises(ValueError, match=r"half_open_max_calls \(2 != 1\)"):
        registry.get_or_create("obs-shared", half_open_max_calls=2)
    # Bad input is refused before anything is created.
    with pytest.raises(TypeError, match="unknown breaker options"):
        registry.get_or_create("obs-bad", fail_max=3)
    with pytest.raises(ValueError, match="failure_rate_threshold"):
        registry.get_or_create("obs-bad", window="count", failure_rate_threshold=0.0)
    assert registry.find("obs-bad") is None


def test_module_level_circuit_breaker_takes_options() -> None:
    a = mulligan.circuit_breaker("obs-module-goc", failure_threshold=2)
    assert mulligan.circuit_breaker("obs-module-goc") is a
    assert mulligan.circuit_breaker("obs-module-goc", failure_threshold=2) is a
    with pytest.raises(ValueError, match="already exists with a different configuration"):
        mulligan.circuit_breaker("obs-module-goc", failure_threshold=9)


def test_configure_refuses_while_breakers_are_in_use() -> None:
    registry = mulligan.BreakerRegistry(failure_threshold=5)
    held = registry.get("obs-held")
    with pytest.raises(RuntimeError, match=r"breakers in use: \['obs-held'\]"):
        registry.configure(failure_threshold=2)
    assert registry.get("obs-held") is held  # one live breaker under the name
    assert held.options["failure_threshold"] == 5
    del held
    gc.collect()
    # Nobody holds it: the new configuration takes effect for the name.
    registry.configure(failure_threshold=2)
    fresh = registry.get("obs-held")
    assert fresh.options["failure_threshold"] == 2
    # A bad configuration changes nothing.
    del fresh
    gc.collect()
    with pytest.raises(ValueError):
        registry.configure(max_breakers=0)
    with pytest.raises(TypeError):
        registry.configure(fail_max=1)
    assert registry.get("obs-held").options["failure_threshold"] == 2
