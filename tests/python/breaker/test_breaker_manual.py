"""Timed forced open, manual half-open and the half-open time limit of
mulligan.CircuitBreaker: exact states and transitions after each event
script (worked out by hand), with an injected clock."""

from __future__ import annotations

import datetime
import math
from typing import List, Tuple

import pytest

from mulligan import BreakerTransition, CircuitBreaker, CircuitOpenError


class Clock:
    def __init__(self, start: float = 100.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class Boom(Exception):
    pass


def fail() -> None:
    raise Boom("down")


def ok() -> str:
    return "ok"


def record(b: CircuitBreaker) -> List[Tuple[str, str, str, float]]:
    log: List[Tuple[str, str, str, float]] = []

    def listener(t: BreakerTransition) -> None:
        log.append((t.from_state, t.to_state, t.reason, t.at))

    b.add_listener(listener)
    return log


def test_force_open_for_a_duration_then_probe() -> None:
    clock = Clock()
    b = CircuitBreaker("manual-for", reset_timeout=10.0, clock=clock)
    log = record(b)
    b.force_open(20.0)
    assert b.state == "open"
    clock.now = 119.0
    with pytest.raises(CircuitOpenError) as info:
        b(ok)()
    assert info.value.retry_in == 1.0
    clock.now = 120.0
    assert b.state == "half_open"
    assert b(ok)() == "ok"
    assert b.state == "closed"
    assert log == [
        ("closed", "open", "forced_open_until", 100.0),
        ("open", "half_open", "reset_timeout_elapsed", 120.0),
        ("half_open", "closed", "probe_succeeded", 120.0),
    ]
    assert b.last_trip is None  # not a trip


def test_force_open_until_an_instant_and_with_a_timedelta() -> None:
    clock = Clock()
    b = CircuitBreaker("manual-until", clock=clock)
    b.force_open(until=150.0)
    assert b.time_until_probe == 50.0
    b.reset()
    b.force_open(datetime.timedelta(seconds=2.5))
    assert b.time_until_probe == 2.5
    b.reset()
    b.force_open()  # no argument: forced open until reset, as before
    assert b.state == "forced_open"
    assert math.isinf(b.time_until_probe)


def test_force_open_bad_input_changes_nothing() -> None:
    clock = Clock()
    b = CircuitBreaker("manual-bad", clock=clock)
    with pytest.raises(ValueError, match="duration"):
        b.force_open(0)
    with pytest.raises(ValueError, match="duration"):
        b.force_open(-1.0)
    with pytest.raises(ValueError, match="must be after now"):
        b.force_open(until=100.0)
    with pytest.raises(TypeError, match="not both"):
        b.force_open(1.0, until=200.0)
    with pytest.raises(TypeError):
        b.force_open("soon")  # type: ignore[arg-type]
    assert b.state == "closed"


def test_force_open_for_without_an_injected_clock_uses_the_monotonic_clock() -> None:
    b = CircuitBreaker("manual-real-clock")
    b.force_open(3600.0)
    assert b.state == "open"
    assert 3599.0 < b.time_until_probe <= 3600.0


def test_manual_half_open_probes_from_any_state() -> None:
    clock = Clock()
    b = CircuitBreaker("manual-half", reset_timeout=10.0, clock=clock)
    log = record(b)
    b.half_open()
    b.half_open()  # already half-open: nothing
    assert b.state == "half_open"
    clock.now = 102.0
    with pytest.raises(Boom):
        b(fail)()
    assert b.state == "open"
    assert b.time_until_probe == 10.0
    b.force_open()
    clock.now = 104.0
    b.half_open()
    assert b(ok)() == "ok"
    assert log == [
        ("closed", "half_open", "half_open", 100.0),
        ("half_open", "open", "probe_failed", 102.0),
        ("open", "forced_open", "forced_open", 102.0),
        ("forced_open", "half_open", "half_open", 104.0),
        ("half_open", "closed", "probe_succeeded", 104.0),
    ]


def test_max_half_open_duration_reopens_when_probes_never_return() -> None:
    clock = Clock()
    b = CircuitBreaker(
        "manual-limit",
        failure_threshold=1,
        reset_timeout=10.0,
        max_half_open_duration=5.0,
        clock=clock,
    )
    assert b.options["max_half_open_duration"] == 5.0
    log = record(b)
    with pytest.raises(Boom):
        b(fail)()  # open until 110
    clock.now = 110.0
    lost = b._acquire()  # half-open until 115; never recorded
    clock.now = 114.999
    assert b.state == "half_open"
    clock.now = 115.0
    assert b.state == "open"
    clock.now = 116.0
    with pytest.raises(CircuitOpenError) as info:
        b(ok)()
    assert info.value.retry_in == 9.0  # reopened at 115 for 10 s
    b._record(lost, 0)
    assert b.counts["stale"] == 1
    clock.now = 125.0
    assert b(ok)() == "ok"
    assert [e[2] for e in log] == [
        "failure_threshold",
        "reset_timeout_elapsed",
        "half_open_timeout",
        "reset_timeout_elapsed",
        "probe_succeeded",
    ]
    assert log[2][3] == 115.0
    trip = b.last_trip
    assert trip is not None
    assert (trip.from_state, trip.reason, trip.at) == ("half_open", "half_open_timeout", 115.0)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf")])
def test_max_half_open_duration_must_be_positive(bad: float) -> None:
    with pytest.raises(ValueError, match="max_half_open_duration"):
        CircuitBreaker("manual-bad-limit", max_half_open_duration=bad)
