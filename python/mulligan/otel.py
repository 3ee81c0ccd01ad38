"""An OpenTelemetry bridge for mulligan's metrics and retries (optional extra).

Install with ``pip install "mulligan[opentelemetry]"``, configure a
``MeterProvider`` as usual, then::

    import mulligan.otel
    bridge = mulligan.otel.instrument()     # the global meter provider

It registers observable instruments read from the engine at each collection:
``mulligan.calls``, ``mulligan.attempts``, ``mulligan.retries`` (attribute
``mulligan.retry.reason``), ``mulligan.successes``, ``mulligan.failures``,
``mulligan.fallbacks``, ``mulligan.short_circuits`` (counters),
``mulligan.calls.in_flight`` and ``mulligan.calls.waiting_to_retry`` (gauges),
each with the attribute ``mulligan.name``. Since 0.4 also
``mulligan.rejections`` (attribute ``mulligan.rejection.reason``: budget,
throttled, bulkhead_full, rate_limited) and the overload primitives' own
instruments, named by the primitive: ``mulligan.budget.tokens`` (gauge),
``mulligan.budget.retries.allowed`` / ``.refused``,
``mulligan.throttle.rejections``, ``mulligan.throttle.probability`` (gauge),
``mulligan.bulkhead.in_flight`` / ``.queued`` (gauges),
``mulligan.bulkhead.rejections`` (attribute ``mulligan.rejection.reason``:
full, timeout), ``mulligan.rate_limiter.admitted`` / ``.waited`` /
``.refused``, ``mulligan.adaptive_rate.fill_rate`` (gauge) and
``mulligan.adaptive_rate.throttles``. Since 0.6 the durable outboxes:
``mulligan.outbox.depth`` (gauge, attribute ``mulligan.outbox.state``:
pending, leased), ``mulligan.outbox.oldest_age`` (gauge, seconds),
``mulligan.outbox.deliveries`` (attribute ``mulligan.outbox.result``:
success, failure, lease_expired) and ``mulligan.outbox.dead_letters``, each
with the attribute ``mulligan.outbox``; and the parts shared through a state
backend: ``mulligan.shared_state.fallback`` (gauge, 1 while the part serves
from its local state alone, else 0) and ``mulligan.shared_state.fallbacks``
(counter of fallback periods begun), each with the attributes
``mulligan.shared_state.part`` (breaker, rate_limiter) and ``mulligan.name``.
Following the HTTP semantic
conventions, every retry scheduled while a span is recording sets
``http.request.resend_count`` on that span to the number of the attempt about
to be sent minus one (attribute defined by OpenTelemetry's HTTP client span
conventions).

Traces (0.4): ``instrument(tracing=True)`` also turns on one span per logical
call and one child span per attempt, from the decorators, ``retrying()``
blocks, ``Client``/``AsyncClient`` and the requests, httpx and aiohttp
adapters, with the trace context propagated into every attempt's request
headers (README, "OpenTelemetry traces"; the spans and attributes are listed
in ``mulligan._telemetry.tracing``). With tracing on, the attempt spans carry
``http.request.resend_count`` themselves, so ``tag_spans`` is not used.
Tracing is off until then, and turning it on without an SDK (the API's
default provider) records nothing.

.. versionadded:: 0.1.0
.. versionchanged:: 0.4.0 ``tracing=`` and ``tracer_provider=``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from opentelemetry import metrics, trace
from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation
from opentelemetry.trace import TracerProvider

from ._telemetry import metrics as _metrics
from ._telemetry import tracing as _tracing
from ._version import __version__

__all__ = ["OtelBridge", "instrument"]

RESEND_COUNT = "http.request.resend_count"


class OtelBridge:
    """The registered instruments and span hook; :meth:`uninstrument` removes the hook."""

    def __init__(self, meter: Meter, tag_spans: bool, tracing: bool = False) -> None:
        self.meter = meter
        self._listener_id = 0
        #: True while this bridge has tracing on (``instrument(tracing=True)``).
        self.tracing = tracing

        def counter(key: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
            def observe(_: CallbackOptions) -> Iterable[Observation]:
                return [
                    Observation(int(s[key]), {"mulligan.name": s["name"]})
                    for s in _metrics.metrics_snapshot()
                ]

            return observe

        for key, description in (
            ("calls", "Logical calls started."),
            ("attempts", "Attempts made by finished calls."),
            ("successes", "Calls that finally succeeded."),
            ("failures", "Calls that gave up or were refused."),
            ("fallbacks", "Failed calls answered by a fallback."),
            ("short_circuits", "Attempts refused by an open circuit breaker."),
        ):
            meter.create_observable_counter(
                f"mulligan.{key}", callbacks=[counter(key)], unit="{call}", description=description
            )

        def retries(_: CallbackOptions) -> Iterable[Observation]:
            return [
                Observation(int(count), {"mulligan.name": s["name"], "mulligan.retry.reason": reason})
                for s in _metrics.metrics_snapshot()
                for reason, count in s["retries_by_reason"].items()
            ]

        meter.create_observable_counter(
            "mulligan.retries", callbacks=[retries], unit="{retry}", description="Retries, by reason."
        )

        def gauge(key: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
            def observe(_: CallbackOptions) -> Iterable[Observation]:
                return [
                    Observation(int(s[key]), {"mulligan.name": s["name"]})
                    for s in _metrics.metrics_snapshot()
                ]

            return observe

        meter.create_observable_up_down_counter(
            "mulligan.calls.in_flight", callbacks=[gauge("in_flight")], unit="{call}"
        )
        meter.create_observable_up_down_counter(
            "mulligan.calls.waiting_to_retry", callbacks=[gauge("waiting_to_retry")], unit="{call}"
        )
        self._register_limits(meter)
        if tag_spans:
            self._listener_id = _metrics.add_event_listener(self._on_retry, ["retry_scheduled"])

    @staticmethod
    def _register_limits(meter: Meter) -> None:
        """The rejections by reason and the overload primitives (0.4)."""

        def rejections(_: CallbackOptions) -> Iterable[Observation]:
            return [
                Observation(int(n), {"mulligan.name": s["name"], "mulligan.rejection.reason": r})
                for s in _metrics.metrics_snapshot()
                for r, n in s["rejections_by_reason"].items()
            ]

        meter.create_observable_counter(
            "mulligan.rejections", callbacks=[rejections], unit="{call}",
            description="Calls refused by an overload protection, by reason.",
        )

        def field(key: str, name: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
            def observe(_: CallbackOptions) -> Iterable[Observation]:
                return [
                    Observation(e[name], {"mulligan.name": e["name"]})
                    for e in _metrics.limits_snapshot()[key]
                ]

            return observe

        counters = (
            ("mulligan.budget.retries.allowed", "budgets", "retries_allowed", "{retry}"),
            ("mulligan.budget.retries.refused", "budgets", "retries_refused", "{retry}"),
            ("mulligan.throttle.rejections", "throttles", "rejections", "{request}"),
            ("mulligan.rate_limiter.admitted", "rate_limiters", "admitted", "{call}"),
            ("mulligan.rate_limiter.waited", "rate_limiters", "waited", "{call}"),
            ("mulligan.rate_limiter.refused", "rate_limiters", "refused", "{call}"),
            ("mulligan.adaptive_rate.throttles", "adaptive_rates", "throttles", "{response}"),
        )
        for instrument, key, name, unit in counters:
            meter.create_observable_counter(instrument, callbacks=[field(key, name)], unit=unit)
        gauges = (
            ("mulligan.budget.tokens", "budgets", "tokens", "{token}"),
            ("mulligan.throttle.probability", "throttles", "probability", "1"),
            ("mulligan.bulkhead.in_flight", "bulkheads", "in_flight", "{call}"),
            ("mulligan.bulkhead.queued", "bulkheads", "queued", "{call}"),
            ("mulligan.adaptive_rate.fill_rate", "adaptive_rates", "fill_rate", "{request}/s"),
        )
        for instrument, key, name, unit in gauges:
            meter.create_observable_gauge(instrument, callbacks=[field(key, name)], unit=unit)

        def bulkhead_rejections(_: CallbackOptions) -> Iterable[Observation]:
            out = []
            for b in _metrics.limits_snapshot()["bulkheads"]:
                for reason, n in (("full", b["rejected_full"]), ("timeout", b["rejected_timeout"])):
                    out.append(Observation(int(n), {"mulligan.name": b["name"],
                                                    "mulligan.rejection.reason": reason}))
            return out

        meter.create_observable_counter(
            "mulligan.bulkhead.rejections", callbacks=[bulkhead_rejections], unit="{call}"
        )
        OtelBridge._register_outboxes(meter)
        OtelBridge._register_shared_states(meter)

    @staticmethod
    def _register_outboxes(meter: Meter) -> None:
        """The durable outboxes (0.6): depth by state, the oldest live
        entry's age, deliveries by result and dead letters, attribute
        ``mulligan.outbox`` (the Prometheus families' ``outbox`` label)."""

        def outboxes() -> list[dict[str, Any]]:
            return list(_metrics.limits_snapshot()["outboxes"])

        def depth(_: CallbackOptions) -> Iterable[Observation]:
            return [
                Observation(int(o[state]), {"mulligan.outbox": o["name"], "mulligan.outbox.state": state})
                for o in outboxes()
                for state in ("pending", "leased")
            ]

        def oldest_age(_: CallbackOptions) -> Iterable[Observation]:
            return [Observation(float(o["oldest_age_seconds"]), {"mulligan.outbox": o["name"]})
                    for o in outboxes()]

        def deliveries(_: CallbackOptions) -> Iterable[Observation]:
            return [
                Observation(int(n), {"mulligan.outbox": o["name"], "mulligan.outbox.result": result})
                for o in outboxes()
                for result, n in o["deliveries"].items()
            ]

        def dead_letters(_: CallbackOptions) -> Iterable[Observation]:
            return [Observation(int(o["dead_letters"]), {"mulligan.outbox": o["name"]})
                    for o in outboxes()]

        meter.create_observable_gauge("mulligan.outbox.depth", callbacks=[depth], unit="{entry}")
        meter.create_observable_gauge("mulligan.outbox.oldest_age", callbacks=[oldest_age], unit="s")
        meter.create_observable_counter(
            "mulligan.outbox.deliveries", callbacks=[deliveries], unit="{attempt}"
        )
        meter.create_observable_counter(
            "mulligan.outbox.dead_letters", callbacks=[dead_letters], unit="{entry}"
        )

    @staticmethod
    def _register_shared_states(meter: Meter) -> None:
        """The parts shared through a state backend (0.6): whether each
        serves from local state alone now, and how many times it began to
        (the Prometheus families ``mulligan_shared_state_fallback`` and
        ``mulligan_shared_state_fallbacks_total``)."""

        def observe(value: Callable[[dict[str, Any]], int]) -> Callable[[CallbackOptions], Iterable[Observation]]:
            def callback(_: CallbackOptions) -> Iterable[Observation]:
                return [
                    Observation(value(s), {"mulligan.shared_state.part": s["part"], "mulligan.name": s["name"]})
                    for s in _metrics.limits_snapshot()["shared_states"]
                ]

            return callback

        meter.create_observable_gauge(
            "mulligan.shared_state.fallback", callbacks=[observe(lambda s: int(bool(s["fallback"])))]
        )
        meter.create_observable_counter(
            "mulligan.shared_state.fallbacks",
            callbacks=[observe(lambda s: int(s["fallback_periods"]))],
            unit="{period}",
        )

    @staticmethod
    def _on_retry(event: dict[str, Any]) -> None:
        span = trace.get_current_span()
        if span.is_recording():
            # The attempt that failed is `attempt`; the next request is its
            # `attempt`-th resend.
            span.set_attribute(RESEND_COUNT, int(event["attempt"]))

    def uninstrument(self) -> None:
        """Stops tagging spans and, when this bridge turned it on, tracing
        (calls already traced end their spans); observable instruments live
        as long as their meter. Idempotent."""
        if self._listener_id:
            _metrics.remove_event_listener(self._listener_id)
            self._listener_id = 0
        if self.tracing:
            _tracing.disable()
            self.tracing = False


def instrument(
    meter_provider: Optional[MeterProvider] = None,
    *,
    tag_spans: bool = True,
    tracing: bool = False,
    tracer_provider: Optional[TracerProvider] = None,
) -> OtelBridge:
    """Registers mulligan's instruments on a meter of ``meter_provider``,
    and with ``tracing=True`` turns traces on.

    Args:
        meter_provider: the provider to use; the global one when None.
        tag_spans: set ``http.request.resend_count`` on the current span when
            a retry is scheduled (ignored with ``tracing=True``, whose attempt
            spans carry it).
        tracing: one span per logical call and one per attempt (process-wide,
            until :meth:`OtelBridge.uninstrument`). Default False.
        tracer_provider: the provider of mulligan's tracer; the global one
            when None (read through the API's proxy, so an SDK provider set
            globally later is used from then on).

    Returns:
        The :class:`OtelBridge`.

    Raises:
        TypeError: ``tracing`` or ``tag_spans`` is not a bool, or
            ``tracer_provider`` has no ``get_tracer`` (not a TracerProvider).

    Thread-safety: call it once at start-up; calls in flight on other
    threads keep the switch they began with.
    """
    for field, value in (("tracing", tracing), ("tag_spans", tag_spans)):
        if not isinstance(value, bool):
            raise TypeError(f"mulligan.otel.instrument: {field} must be a bool, got {value!r}")
    if tracer_provider is not None and not callable(getattr(tracer_provider, "get_tracer", None)):
        raise TypeError(
            f"mulligan.otel.instrument: tracer_provider must be a TracerProvider, got {tracer_provider!r}"
        )
    provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
    meter = provider.get_meter("mulligan", __version__)
    if tracing:
        _tracing.enable(tracer_provider)
    return OtelBridge(meter, tag_spans and not tracing, tracing)
