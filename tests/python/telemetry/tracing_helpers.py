"""Helpers of the tracing tests: an SDK provider with an in-memory exporter.

``spans`` turns mulligan's tracing on (``mulligan.otel.instrument(tracing=True,
tracer_provider=...)``) with a provider of its own, never the global one, so
tests cannot leak spans into each other; it turns tracing off afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Optional

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

import mulligan.otel  # noqa: E402


class Spans:
    """The finished spans of one test, and its provider."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def finished(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def call_and_attempts(self) -> tuple[ReadableSpan, list[ReadableSpan]]:
        """The one span without a parent among this test's, and its
        children ordered by start time; asserts there is nothing else."""
        spans = self.finished()
        roots = [s for s in spans if s.parent is None]
        assert len(roots) == 1, [s.name for s in spans]
        root = roots[0]
        children = [s for s in spans if s.parent is not None and s.parent.span_id == root.context.span_id]
        assert len(children) == len(spans) - 1, [s.name for s in spans]
        return root, sorted(children, key=lambda s: s.start_time or 0)


@pytest.fixture
def spans() -> Iterator[Spans]:
    recorder = Spans()
    bridge = mulligan.otel.instrument(tracing=True, tracer_provider=recorder.provider)
    try:
        yield recorder
    finally:
        bridge.uninstrument()
        recorder.provider.shutdown()


def traceparent(span: ReadableSpan) -> str:
    """The W3C traceparent naming ``span``, as version 00 spells it (the
    flags: sampled, 0x01, and with this SDK also random, 0x02)."""
    ctx = span.context
    assert ctx.trace_flags & 0x01
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def is_error(span: ReadableSpan) -> bool:
    return span.status.status_code is StatusCode.ERROR


def check_attempts(
    attempts: list[ReadableSpan],
    delays: list[float],
    error_types: list[Optional[str]],
    http: bool,
) -> None:
    """Each attempt span's number, delay, resend count and error.type:
    ``delays[i]`` is the wait before attempt i + 2."""
    assert len(attempts) == len(error_types)
    for i, span in enumerate(attempts):
        a = attrs(span)
        assert a["mulligan.attempt"] == i + 1
        if i == 0:
            assert "mulligan.retry.delay_s" not in a
            assert "http.request.resend_count" not in a
        else:
            assert a["mulligan.retry.delay_s"] == pytest.approx(delays[i - 1])
            if http:
                assert a["http.request.resend_count"] == i
            else:
                assert "http.request.resend_count" not in a
        assert a.get("error.type") == error_types[i]
        assert is_error(span) == (error_types[i] is not None)
        assert span.kind is (SpanKind.CLIENT if http else SpanKind.INTERNAL)
