"""Metrics, retry status and the event stream, read from the C++ engine.

Every retry loop, breaker and HTTP client of the engine reports into one
registry, labelled by the name of the policy, breaker or client origin. This
module reads it:

* :func:`metrics_snapshot` — a list of plain dicts, one per name;
* :func:`prometheus_text` — the Prometheus text exposition format
  (``mulligan_calls_total``, ``mulligan_retries_total{reason=...}``,
  ``mulligan_call_duration_seconds`` ...);
* :func:`metrics_json` — the same as a JSON document whose ``totals`` hold the
  six classic counters: calls, retries, circuit_opens, fallbacks, successes and
  failures;
* :func:`status` — how many calls are in flight and how many are waiting to
  retry, globally and per name (for a "Retrying..." banner);
* :func:`add_event_listener` — attempt started/failed, retry scheduled, gave
  up, breaker transition, fallback used, rejected (0.4: a refusal by a budget,
  the throttle, a bulkhead or a rate limiter), as dicts;
* :func:`limits_snapshot` (0.4) — the retry budgets, adaptive throttles,
  bulkheads, rate limiters and adaptive rates in use, read from their own
  counters (tokens, allowed/refused retries, requests/accepts, in flight,
  queued, rejections, waits).

Each name's snapshot has ``rejections_by_reason`` (budget, throttled,
bulkhead_full, rate_limited; 0.4), counted from the call's stop reason.
While a :class:`mulligan.testing.FakeClock` is active, windowed values (a
ratio budget's tokens, a throttle's window) are read at its time.

Counting rules: a logical call counts once whatever its attempts; an eventual
success is a success, never a failure; ``retries = attempts - calls`` for
finished calls.

The hot path of a decorated Python function counts its first-attempt successes
in Python (one ``_core.Counter.tick()``, a raw C method, no engine call); they are
flushed into the engine whenever anything here reads the metrics, and are
counted in calls, attempts and successes but not timed.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

from .. import _core, _validate
from .._retry.state import STATE

__all__ = [
    "EventListener",
    "RetryStatus",
    "add_event_listener",
    "limits_snapshot",
    "metrics_json",
    "metrics_snapshot",
    "prometheus_text",
    "remove_event_listener",
    "reset_metrics",
    "status",
]

EventListener = Callable[[dict[str, Any]], None]

EVENT_KINDS = (
    "attempt_started",
    "attempt_failed",
    "retry_scheduled",
    "gave_up",
    "breaker_transition",
    "fallback_used",
    "succeeded",
    "short_circuited",
    "rejected",
)


class _FastSuccesses:
    """First-attempt successes of one name, counted without a native call.

    ``counter`` is a :class:`mulligan._core.Counter`: its ``tick()`` (a
    METH_NOARGS method, which CPython calls without building a bound method)
    is atomic under the GIL, and ``value`` reads the count without changing
    it. (Before 0.6: ``itertools.count().__next__``, three times the
    instructions per tick.)
    """

    __slots__ = ("_flushed", "_metrics", "counter")

    def __init__(self, metrics: _core.Metrics) -> None:
        self.counter = _core.Counter()
        self._flushed = 0
        self._metrics = metrics

    def flush(self) -> None:
        total = self.counter.value
        if total > self._flushed:
            self._metrics.untimed_first_attempt_successes(total - self._flushed)
            self._flushed = total


_lock = threading.Lock()
_fast: dict[str, _FastSuccesses] = {}
_handles: dict[str, _core.Metrics] = {}


def _metrics_for(name: str) -> _core.Metrics:
    """Returns the engine's metrics handle for ``name`` (cached)."""
    handle = _handles.get(name)
    if handle is None:
        with _lock:
            handle = _handles.get(name)
            if handle is None:
                handle = _core.metrics(name)
                _handles[name] = handle
    return handle


def _success_counter(name: str) -> _core.Counter:
    """Returns the hot-path success counter of ``name``: ``tick()`` it once
    per first-attempt success (the metrics' reads hand the count to the
    engine). (Added in 0.6; replaces ``_success_ticker``.)"""
    with _lock:
        fast = _fast.get(name)
        if fast is None:
            fast = _FastSuccesses(_core.metrics(name))
            _fast[name] = fast
        return fast.counter


# Functions that hand Python-side counts to the engine before a read (the
# budgets' hot-path success ticks register one; 0.4).
_flushers: list[Callable[[], None]] = []


def _add_flusher(flush: Callable[[], None]) -> None:
    """Registers ``flush`` to run before every read of the metrics."""
    with _lock:
        _flushers.append(flush)


def _flush() -> None:
    with _lock:
        for fast in _fast.values():
            fast.flush()
        flushers = list(_flushers)
    for flush in flushers:
        flush()


def _now() -> Optional[float]:
    """The fake clock's time while one is active, else None (the engine's now)."""
    return STATE.now() if STATE.clock is not None else None


def metrics_snapshot() -> list[dict[str, Any]]:
    """Returns one dict per name, sorted by name.

    Keys: ``name``, ``calls``, ``attempts``, ``retries``, ``retries_by_reason``
    (status, transport, timeout, retry_after, exception), ``successes``,
    ``failures``, ``fallbacks``, ``short_circuits``, ``hedges``, ``hedges_won``,
    ``hedge_cancelled`` (0.5), ``cancelled`` (0.6: calls ended because they
    were no longer wanted, a hedged request's losing copies; neither
    successes nor failures, their attempts counted), ``circuit_opens``,
    ``breaker_transitions`` (list of (from, to, count)), ``breaker_state``
    (str or None), ``in_flight``, ``waiting_to_retry``, and the histograms
    ``call_duration_seconds``, ``attempts_per_call``, ``retry_delay_seconds``
    (dicts with ``upper_bounds``, non-cumulative ``counts`` whose last entry is
    +Inf, ``count`` and ``sum``; seconds for durations).

    Thread-safety: safe from any thread.
    """
    _flush()
    return list(_core.metrics_snapshot())


def prometheus_text() -> str:
    """Returns every metric in the Prometheus text exposition format 0.0.4."""
    _flush()
    return str(_core.metrics_prometheus(_now()))


def metrics_json() -> str:
    """Returns every metric as a JSON document: ``{"metrics": [...], "totals": {...}}``."""
    _flush()
    return str(_core.metrics_json(_now()))


def limits_snapshot() -> dict[str, list[dict[str, Any]]]:
    """Returns the overload primitives in use, by kind (Added in 0.4).

    Keys, each a list of dicts sorted by name (a second live primitive of a
    kind with the same name is reported as ``name#2``; unnamed ones are not
    reported):

    * ``budgets``: ``name``, ``kind``, ``tokens`` (tokens, capacity left, or
      retries available now), ``max_tokens``, ``retries_allowed``,
      ``retries_refused``;
    * ``throttles``: ``name``, ``requests`` and ``accepts`` in the window,
      ``probability``, ``rejections``;
    * ``bulkheads``: ``name``, ``max_concurrent``, ``max_queue``,
      ``in_flight``, ``queued``, ``rejected_full``, ``rejected_timeout``,
      ``queue_wait_seconds`` (a histogram dict, seconds);
    * ``rate_limiters``: ``name``, ``admitted`` (at once), ``waited``,
      ``refused``, ``wait_seconds`` (histogram);
    * ``adaptive_rates``: ``name``, ``enabled``, ``fill_rate``,
      ``measured_rate`` (requests per second), ``admitted``, ``waited``,
      ``refused``, ``throttles``.
    * ``outboxes`` (0.6): ``name`` (the ``outbox`` label), ``pending``,
      ``leased``, ``done``, ``dead``, ``depth`` (pending + leased),
      ``oldest_age_seconds``, ``deliveries`` (a dict: ``success``,
      ``failure``, ``lease_expired``), ``dead_letters``, read from each live
      :class:`mulligan.Outbox`'s file at the installed fake clock's reading
      (as Unix seconds), else ``time.time()``.
    * ``shared_states`` (0.6): the parts shared through a state backend
      (:class:`mulligan.RedisState`): ``part`` (``"breaker"`` or
      ``"rate_limiter"``), ``name``, ``fallback`` (True while the part serves
      from its local state alone because Redis is unreachable) and
      ``fallback_periods`` (times it began to), the values of the Prometheus
      families ``mulligan_shared_state_fallback`` and
      ``mulligan_shared_state_fallbacks_total``.

    Thread-safety: safe from any thread.
    """
    _flush()
    return dict(_core.metrics_limits_snapshot(_now()))


def reset_metrics() -> None:
    """Forgets every metric (for tests). Handles held elsewhere stay valid but detached."""
    with _lock:
        _core.metrics_clear()
        _fast.clear()
        _handles.clear()


@dataclass(frozen=True)
class RetryStatus:
    """What is retrying right now.

    Attributes:
        in_flight: calls started and not finished, over all names.
        waiting_to_retry: calls currently waiting before their next attempt.
        by_name: ``{name: (in_flight, waiting_to_retry)}`` for names with any.
    """

    in_flight: int
    waiting_to_retry: int
    by_name: dict[str, tuple[int, int]]

    @property
    def retrying(self) -> bool:
        """True while at least one call waits to retry (show "Retrying...")."""
        return self.waiting_to_retry > 0


def status() -> RetryStatus:
    """Returns how many calls are in flight and waiting to retry, globally and per name.

    The counts come from the engine's counters, so they cost the calls nothing.
    Calls that succeed on their first attempt on the Python hot path are not
    seen as in flight (they are counted once they finish).
    """
    by_name: dict[str, tuple[int, int]] = {}
    in_flight = waiting = 0
    for snap in _core.metrics_snapshot():
        flight, wait = int(snap["in_flight"]), int(snap["waiting_to_retry"])
        if flight or wait:
            by_name[str(snap["name"])] = (flight, wait)
        in_flight += flight
        waiting += wait
    return RetryStatus(in_flight=in_flight, waiting_to_retry=waiting, by_name=by_name)


def add_event_listener(listener: EventListener, kinds: Optional[Iterable[str]] = None) -> int:
    """Subscribes ``listener(event)`` to the engine's event stream.

    Args:
        listener: called with a dict: ``kind``, ``name``, ``attempt``, ``delay``
            (seconds), ``error_kind``, ``http_status``, ``retry_reason``,
            ``stop_reason``, ``elapsed`` (seconds), and for breaker transitions
            ``from_state``, ``to_state``, ``transition_reason``. It runs
            synchronously on the thread that caused the event (for HTTP calls,
            the thread that called the client), so keep it quick. Exceptions it
            raises are reported through :func:`sys.unraisablehook`.
        kinds: the event kinds wanted (see ``EVENT_KINDS``); all when None.

    Returns:
        An id for :func:`remove_event_listener`.

    Raises:
        TypeError: ``listener`` is not callable.
        ValueError: an unknown kind.
    """
    _validate.function("mulligan.add_event_listener", "listener", listener)
    wanted = list(kinds) if kinds is not None else []
    for kind in wanted:
        if kind not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {kind!r}; expected one of {', '.join(EVENT_KINDS)}")
    return int(_core.add_event_listener(listener, wanted))


def remove_event_listener(listener_id: int) -> bool:
    """Unsubscribes a listener; returns False when the id is unknown."""
    return bool(_core.remove_event_listener(listener_id))

