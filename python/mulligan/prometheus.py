"""A ``prometheus_client`` collector for mulligan's metrics (optional extra).

Install with ``pip install "mulligan[prometheus]"``, then::

    import mulligan.prometheus
    mulligan.prometheus.register()          # into prometheus_client.REGISTRY

and your existing ``/metrics`` endpoint (``prometheus_client.start_http_server``,
``make_wsgi_app``, ``make_asgi_app``) exports ``mulligan_calls_total``,
``mulligan_retries_total{reason=...}``, ``mulligan_call_duration_seconds`` and
the rest, read from the engine at scrape time (no double bookkeeping).

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


def register(registry: Optional[CollectorRegistry] = None) -> MulliganCollector:
    """Registers a :class:`MulliganCollector` (into the default registry when None).

    Raises:
        ValueError: a collector with the same metric names is already registered.
    """
    collector = MulliganCollector()
    (registry if registry is not None else REGISTRY).register(collector)
    return collector
