"""The optional exporters: prometheus_client collector and OpenTelemetry bridge."""

from __future__ import annotations

import pytest

import mulligan
from mulligan._telemetry import metrics as _metrics


@pytest.fixture(autouse=True)
def fresh_metrics() -> None:
    _metrics.reset_metrics()


def flaky_twice():
    state = {"n": 0}

    @mulligan.retry(on=ConnectionError, attempts=5, base_delay=0.0)
    def call() -> str:
        state["n"] += 1
        if state["n"] < 3:
            raise ConnectionError("again")
        return "ok"

    return call


def test_prometheus_client_collector_exports_exact_values() -> None:
    prometheus_client = pytest.importorskip("prometheus_client")
    import mulligan.prometheus

    registry = prometheus_client.CollectorRegistry()
    mulligan.prometheus.register(registry)
    call = flaky_twice()
    assert call() == "ok"
    name = call.__qualname__
    assert registry.get_sample_value("mulligan_calls_total", {"name": name}) == 1
    assert registry.get_sample_value("mulligan_attempts_total", {"name": name}) == 3
    assert registry.get_sample_value("mulligan_retries_total", {"name": name, "reason": "exception"}) == 2
    assert registry.get_sample_value("mulligan_successes_total", {"name": name}) == 1
    assert registry.get_sample_value("mulligan_failures_total", {"name": name}) == 0
    assert registry.get_sample_value("mulligan_attempts_per_call_bucket", {"name": name, "le": "3.0"}) == 1
    assert registry.get_sample_value("mulligan_attempts_per_call_bucket", {"name": name, "le": "2.0"}) == 0
    text = prometheus_client.generate_latest(registry).decode()
    assert f'mulligan_calls_in_flight{{name="{name}"}} 0.0' in text


def test_opentelemetry_bridge_reports_counters_and_resend_count() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider

    import mulligan.otel

    reader = InMemoryMetricReader()
    bridge = mulligan.otel.instrument(MeterProvider(metric_readers=[reader]))
    tracer = TracerProvider().get_tracer("test")
    try:
        call = flaky_twice()
        with tracer.start_as_current_span("GET /thing") as span:
            assert call() == "ok"
        assert span.attributes["http.request.resend_count"] == 2
        data = reader.get_metrics_data()
        points: dict[tuple[str, tuple], int] = {}
        for resource_metrics in data.resource_metrics:
            for scope in resource_metrics.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        points[(metric.name, tuple(sorted(point.attributes.items())))] = point.value
        name = call.__qualname__
        assert points[("mulligan.calls", (("mulligan.name", name),))] == 1
        assert points[("mulligan.attempts", (("mulligan.name", name),))] == 3
        assert points[
            ("mulligan.retries", (("mulligan.name", name), ("mulligan.retry.reason", "exception")))
        ] == 2
    finally:
        bridge.uninstrument()
