"""A ``prometheus_client`` collector for mulligan's metrics (optional extra).

Install with ``pip install "mulligan[prometheus]"``, then::

    import mulligan.prometheus
    mulligan.prometheus.register()          # into prometheus_client.REGISTRY

and your existing ``/metrics`` endpoint (``prometheus_client.start_http_server``,
``make_wsgi_app``, ``make_asgi_app``) exports ``mulligan_calls_total``,
``mulligan_retries_total{reason=...}``, ``mulligan_call_duration_seconds`` and
the rest, read from the engine at scrape time (no double bookkeeping).
Since 0.4 also ``mulligan_rejections_total{reason=...}`` per name and the
overload primitives' families (``mulligan_budget_tokens``,
``mulligan_budget_retries_refused_total``, ``mulligan_throttle_*``,
``mulligan_bulkhead_*``, ``mulligan_rate_limiter_*``,
``mulligan_adaptive_rate_*``), and since 0.6 the durable outboxes'
(``mulligan_outbox_depth``, ``_oldest_age_seconds``, ``_deliveries_total``,
``_dead_letters_total``) and the parts shared through a state backend
(``mulligan_shared_state_fallback``, ``mulligan_shared_state_fallbacks_total``),
the same names and help texts as the engine's own
text export (:func:`mulligan.prometheus_text`).

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from typing import Any, Iterator, Optional

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.registry import REGISTRY, CollectorRegistry

from ._telemetry import metrics as _metrics

__all__ = ["MulliganCollector", "register"]

_COUNTERS = (
    ("mulligan_calls", "Logical calls started.", "calls"),
    ("mulligan_attempts", "Attempts made by finished calls.", "attempts"),
    ("mulligan_successes", "Calls that finally succeeded (eventual successes included).", "successes"),
    ("mulligan_failures", "Calls that gave up or were refused.", "failures"),
    ("mulligan_fallbacks", "Failed calls answered by a fallback.", "fallbacks"),
    ("mulligan_short_circuits", "Attempts refused by an open circuit breaker.", "short_circuits"),
)

_HISTOGRAMS = (
    ("mulligan_call_duration_seconds", "Time from a call's first attempt to its end.",
     "call_duration_seconds"),
    ("mulligan_attempts_per_call", "Attempts made by each finished call.", "attempts_per_call"),
    ("mulligan_retry_delay_seconds", "Waits scheduled before retries.", "retry_delay_seconds"),
)

_BREAKER_STATES = ("closed", "open", "half_open", "forced_open", "disabled", "metrics_only")


def _buckets(histogram: dict[str, Any]) -> list[tuple[str, float]]:
    """Cumulative (le, count) pairs, the last one "+Inf"."""
    out: list[tuple[str, float]] = []
    cumulative = 0
    bounds = list(histogram["upper_bounds"])
    for i, count in enumerate(histogram["counts"]):
        cumulative += int(count)
        le = repr(float(bounds[i])) if i < len(bounds) else "+Inf"
        out.append((le, float(cumulative)))
    return out


class MulliganCollector:
    """Yields every mulligan metric at collection time.

    Thread-safety: ``collect`` may run on any thread (prometheus_client's
    scrape threads); it only reads the engine's counters.
    """

    def collect(self) -> Iterator[Any]:
        snapshots = _metrics.metrics_snapshot()
        for metric, documentation, key in _COUNTERS:
            family = CounterMetricFamily(metric, documentation, labels=["name"])
            for snap in snapshots:
                family.add_metric([snap["name"]], float(snap[key]))
            yield family
        retries = CounterMetricFamily(
            "mulligan_retries", "Retries scheduled, by reason.", labels=["name", "reason"]
        )
        for snap in snapshots:
            for reason, count in snap["retries_by_reason"].items():
                retries.add_metric([snap["name"], reason], float(count))
        yield retries
        transitions = CounterMetricFamily(
            "mulligan_breaker_transitions",
            "Circuit breaker state changes.",
            labels=["name", "from", "to"],
        )
        for snap in snapshots:
            for from_state, to_state, count in snap["breaker_transitions"]:
                transitions.add_metric([snap["name"], from_state, to_state], float(count))
        yield transitions
        in_flight = GaugeMetricFamily(
            "mulligan_calls_in_flight", "Calls started and not yet finished.", labels=["name"]
        )
        waiting = GaugeMetricFamily(
            "mulligan_calls_waiting_to_retry",
            "Calls currently waiting before a retry.",
            labels=["name"],
        )
        state = GaugeMetricFamily(
            "mulligan_breaker_state",
            "Circuit breaker state (1 for the current state).",
            labels=["name", "state"],
        )
        for snap in snapshots:
            in_flight.add_metric([snap["name"]], float(snap["in_flight"]))
            waiting.add_metric([snap["name"]], float(snap["waiting_to_retry"]))
            if snap["breaker_state"] is not None:
                for candidate in _BREAKER_STATES:
                    state.add_metric(
                        [snap["name"], candidate], 1.0 if snap["breaker_state"] == candidate else 0.0
                    )
        yield in_flight
        yield waiting
        yield state
        for metric, documentation, key in _HISTOGRAMS:
            histograms = HistogramMetricFamily(metric, documentation, labels=["name"])
            for snap in snapshots:
                histogram = snap[key]
                histograms.add_metric(
                    [snap["name"]], buckets=_buckets(histogram), sum_value=float(histogram["sum"])
                )
            yield histograms
        yield from _limit_families(snapshots, _metrics.limits_snapshot())


# (family, type, help, list key, field) of the overload primitives (0.4).
_LIMIT_FAMILIES = (
    ("mulligan_budget_tokens", "gauge",
     "Room left in a retry budget: tokens (token_bucket), capacity (quota) or retries "
     "available now (ratio).", "budgets", "tokens"),
    ("mulligan_budget_retries_allowed", "counter", "Retries a retry budget allowed.",
     "budgets", "retries_allowed"),
    ("mulligan_budget_retries_refused", "counter", "Retries a retry budget refused.",
     "budgets", "retries_refused"),
    ("mulligan_throttle_requests", "gauge", "Requests counted in an adaptive throttle's window.",
     "throttles", "requests"),
    ("mulligan_throttle_accepts", "gauge",
     "Accepted answers counted in an adaptive throttle's window.", "throttles", "accepts"),
    ("mulligan_throttle_rejection_probability", "gauge",
     "The probability an adaptive throttle rejects the next request.", "throttles", "probability"),
    ("mulligan_throttle_rejections", "counter", "Requests an adaptive throttle rejected locally.",
     "throttles", "rejections"),
    ("mulligan_bulkhead_max_concurrent", "gauge", "A bulkhead's limit on calls in flight.",
     "bulkheads", "max_concurrent"),
    ("mulligan_bulkhead_in_flight", "gauge", "Calls holding a bulkhead's slot.",
     "bulkheads", "in_flight"),
    ("mulligan_bulkhead_queued", "gauge", "Calls waiting in a bulkhead's queue.",
     "bulkheads", "queued"),
    ("mulligan_rate_limiter_admitted", "counter", "Calls a rate limiter admitted at once.",
     "rate_limiters", "admitted"),
    ("mulligan_rate_limiter_waited", "counter", "Calls a rate limiter admitted after a wait.",
     "rate_limiters", "waited"),
    ("mulligan_rate_limiter_refused", "counter", "Calls a rate limiter refused.",
     "rate_limiters", "refused"),
    ("mulligan_adaptive_rate_fill_rate", "gauge",
     "Requests per second an adaptive client rate allows now (1 until the first throttle).",
     "adaptive_rates", "fill_rate"),
    ("mulligan_adaptive_rate_measured_rate", "gauge",
     "Requests per second sent, as an adaptive client rate measures them.",
     "adaptive_rates", "measured_rate"),
    ("mulligan_adaptive_rate_throttles", "counter",
     "Throttling answers an adaptive client rate recorded.", "adaptive_rates", "throttles"),
)


def _limit_families(
    snapshots: list[dict[str, Any]], limits: dict[str, list[dict[str, Any]]]
) -> Iterator[Any]:
    """The rejections by reason per name and the overload primitives' families."""
    rejections = CounterMetricFamily(
        "mulligan_rejections",
        "Calls refused by an overload protection, by reason.",
        labels=["name", "reason"],
    )
    for snap in snapshots:
        for reason, count in snap["rejections_by_reason"].items():
            rejections.add_metric([snap["name"], reason], float(count))
    yield rejections
    for metric, kind, documentation, key, field in _LIMIT_FAMILIES:
        entries = limits[key]
        if not entries:
            continue
        family: Any = (CounterMetricFamily if kind == "counter" else GaugeMetricFamily)(
            metric, documentation, labels=["name"]
        )
        for entry in entries:
            family.add_metric([entry["name"]], float(entry[field]))
        yield family
    if limits["bulkheads"]:
        refused = CounterMetricFamily(
            "mulligan_bulkhead_rejections",
            "Calls a bulkhead refused, by reason (full: no slot and no room in the queue; "
            "timeout: a waiter gave up).",
            labels=["name", "reason"],
        )
        waits = HistogramMetricFamily(
            "mulligan_bulkhead_queue_wait_seconds",
            "Time from joining a bulkhead's queue to the slot.",
            labels=["name"],
        )
        for b in limits["bulkheads"]:
            refused.add_metric([b["name"], "full"], float(b["rejected_full"]))
            refused.add_metric([b["name"], "timeout"], float(b["rejected_timeout"]))
            h = b["queue_wait_seconds"]
            waits.add_metric([b["name"]], buckets=_buckets(h), sum_value=float(h["sum"]))
        yield refused
        yield waits
    if limits["rate_limiters"]:
        limiter_waits = HistogramMetricFamily(
            "mulligan_rate_limiter_wait_seconds",
            "Waits of the calls a rate limiter admitted after one.",
            labels=["name"],
        )
        for r in limits["rate_limiters"]:
            h = r["wait_seconds"]
            limiter_waits.add_metric([r["name"]], buckets=_buckets(h), sum_value=float(h["sum"]))
        yield limiter_waits
    yield from _outbox_families(limits["outboxes"])
    yield from _shared_state_families(limits["shared_states"])


def _outbox_families(outboxes: list[dict[str, Any]]) -> Iterator[Any]:
    """The durable outboxes' families (0.6), as the engine's text export has them."""
    if not outboxes:
        return
    depth = GaugeMetricFamily(
        "mulligan_outbox_depth",
        "Entries in a durable outbox waiting for an attempt (pending) or held by a worker "
        "(leased).",
        labels=["outbox", "state"],
    )
    age = GaugeMetricFamily(
        "mulligan_outbox_oldest_age_seconds",
        "Age of a durable outbox's oldest pending or leased entry (0 when none).",
        labels=["outbox"],
    )
    deliveries = CounterMetricFamily(
        "mulligan_outbox_deliveries",
        "Delivery attempts a durable outbox recorded, by result (success, failure, "
        "lease_expired), since its file was made.",
        labels=["outbox", "result"],
    )
    dead = CounterMetricFamily(
        "mulligan_outbox_dead_letters",
        "Entries a durable outbox dead-lettered, since its file was made.",
        labels=["outbox"],
    )
    for o in outboxes:
        for state in ("pending", "leased"):
            depth.add_metric([o["name"], state], float(o[state]))
        age.add_metric([o["name"]], float(o["oldest_age_seconds"]))
        for result in ("success", "failure", "lease_expired"):
            deliveries.add_metric([o["name"], result], float(o["deliveries"][result]))
        dead.add_metric([o["name"]], float(o["dead_letters"]))
    yield depth
    yield age
    yield deliveries
    yield dead


def _shared_state_families(parts: list[dict[str, Any]]) -> Iterator[Any]:
    """The shared parts' fallback families (0.6), as the engine's text export has them."""
    if not parts:
        return
    fallback = GaugeMetricFamily(
        "mulligan_shared_state_fallback",
        "1 while a part shared through a state backend serves from its local state alone "
        "(the backend unreachable), else 0.",
        labels=["part", "name"],
    )
    periods = CounterMetricFamily(
        "mulligan_shared_state_fallbacks",
        "Times a part shared through a state backend began serving from its local state alone.",
        labels=["part", "name"],
    )
    for p in parts:
        fallback.add_metric([p["part"], p["name"]], 1.0 if p["fallback"] else 0.0)
        periods.add_metric([p["part"], p["name"]], float(p["fallback_periods"]))
    yield fallback
    yield periods


def register(registry: Optional[CollectorRegistry] = None) -> MulliganCollector:
    """Registers a :class:`MulliganCollector` (into the default registry when None).

    Raises:
        ValueError: a collector with the same metric names is already registered.
    """
    collector = MulliganCollector()
    (registry if registry is not None else REGISTRY).register(collector)
    return collector
