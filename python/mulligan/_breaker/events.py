"""What a breaker tells an operator besides its transitions:
:class:`BreakerCallEvent` (one per call) and :class:`BreakerTrip` (the
figures of its last opening).

.. versionadded:: 0.2.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict

__all__ = ["BreakerCallEvent", "BreakerTrip"]


@dataclass(frozen=True)
class BreakerCallEvent:
    """One call through a breaker, as given to call listeners
    (:meth:`mulligan.CircuitBreaker.add_call_listener`).

    The kinds are resilience4j's per-call CircuitBreakerEvent kinds:
    ``"success"`` (onSuccess), ``"failure"`` (onError), ``"ignored"``
    (onIgnoredError) and ``"rejected"`` (onCallNotPermitted).

    Attributes:
        name: the breaker's name.
        kind: ``"success"``, ``"failure"``, ``"ignored"`` or ``"rejected"``.
        state: the state the breaker answered in (``"rejected"``) or was in
            when the result arrived (before any transition it caused).
        duration: results only: seconds from the permit to the result
            (0.0 for ``"rejected"``).
        stale: results only: True when the permit was issued before a
            transition (or a probe outlived its permit timeout), so the result
            changed nothing; it is counted in ``counts["stale"]``.
        at: the breaker clock's reading, monotonic seconds.

    .. versionadded:: 0.2.0
    """

    __slots__ = ("name", "kind", "state", "duration", "stale", "at")
    name: str
    kind: str
    state: str
    duration: float
    stale: bool
    at: float


@dataclass(frozen=True)
class BreakerTrip:
    """The figures of a breaker's last opening: the consecutive-failure run
    and the sliding window just before the transition cleared them, so an
    operator can see why it opened (:attr:`mulligan.CircuitBreaker.last_trip`).

    Attributes:
        from_state: ``"closed"`` for a trip, ``"half_open"`` for a failed
            probe, ``"metrics_only"`` for the trip a metrics-only breaker would
            have made.
        reason: the transition's reason (``"failure_threshold"``,
            ``"failure_rate"``, ``"slow_call_rate"``, ``"probe_failed"``, or
            ``"metrics_only:<condition>"``).
        at: the breaker clock's reading (monotonic seconds) of the tripping call.
        consecutive_failures: the run of consecutive failures at the trip.
        window_calls: calls in the sliding window (0 without a window).
        window_failure_rate: the window's failure rate, percent.
        window_slow_rate: the window's slow-call rate, percent.

    .. versionadded:: 0.2.0
    """

    __slots__ = (
        "from_state",
        "reason",
        "at",
        "consecutive_failures",
        "window_calls",
        "window_failure_rate",
        "window_slow_rate",
    )
    from_state: str
    reason: str
    at: float
    consecutive_failures: int
    window_calls: int
    window_failure_rate: float
    window_slow_rate: float

    @classmethod
    def _from_core(cls, d: Dict[str, Any]) -> "BreakerTrip":
        return cls(
            d["from_state"],
            d["reason"],
            d["at"],
            d["consecutive_failures"],
            d["window_calls"],
            d["window_failure_rate"],
            d["window_slow_rate"],
        )
