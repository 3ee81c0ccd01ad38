"""OpenTelemetry traces from the gRPC interceptors, against a real grpcio server.

Expected values are worked out by hand: the server answers UNAVAILABLE twice
then OK; with jitter "none" and base_delay 0.1 the FakeClock's waits are 0.1
and 0.2 s, so the attempt spans carry mulligan.retry.delay_s 0.1 then 0.2,
and the call span's waited_s is 0.3 (sum of the two). The server's own
record of each attempt's metadata says which span each attempt named as its
parent (traceparent, W3C Trace Context level 2: version 00, the trace id,
the parent span id, the flags).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

grpc = pytest.importorskip("grpc")
pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

import mulligan.otel  # noqa: E402
from mulligan.adapters.grpc import RetryInterceptor, aio_interceptors  # noqa: E402

from adapter_helpers import clock  # noqa: E402,F401
from grpc_server import STREAM, UNARY, ScriptedServer, Step, server  # noqa: E402,F401

U = grpc.StatusCode.UNAVAILABLE
OPTIONS = {"jitter": "none", "base_delay": 0.1}


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    bridge = mulligan.otel.instrument(tracing=True, tracer_provider=provider)
    try:
        yield memory
    finally:
        bridge.uninstrument()
        provider.shutdown()


def call_and_attempts(memory: InMemorySpanExporter) -> tuple[ReadableSpan, list[ReadableSpan]]:
    spans = list(memory.get_finished_spans())
    roots = [s for s in spans if s.parent is None]
    assert len(roots) == 1, [s.name for s in spans]
    root = roots[0]
    children = [s for s in spans if s.parent is not None and s.parent.span_id == root.context.span_id]
    assert len(children) == len(spans) - 1
    return root, sorted(children, key=lambda s: s.start_time or 0)


def parent_id(traceparent: str) -> int:
    version, _trace, parent, _flags = traceparent.split("-")
    assert version == "00"
    return int(parent, 16)


def check_retried_call(memory: InMemorySpanExporter, server: ScriptedServer, method: str) -> None:
    root, attempts = call_and_attempts(memory)
    name = method.lstrip("/")
    assert root.name == name and root.kind is SpanKind.CLIENT
    a = dict(root.attributes or {})
    assert (a["rpc.system"], a["rpc.service"], a["rpc.method"]) == ("grpc", "test.Echo", name.split("/")[1])
    assert a["mulligan.retry.attempts"] == 3
    assert a["mulligan.retry.waited_s"] == pytest.approx(0.3)
    # The gRPC conventions: rpc.grpc.status_code on every span, the call's
    # too; a client span's status is left unset on OK.
    assert a["rpc.grpc.status_code"] == 0
    assert root.status.status_code is StatusCode.UNSET
    assert [s.status.status_code for s in attempts] == [StatusCode.ERROR, StatusCode.ERROR, StatusCode.UNSET]
    assert [dict(s.attributes or {})["rpc.grpc.status_code"] for s in attempts] == [14, 14, 0]
    assert [dict(s.attributes or {}).get("error.type") for s in attempts] == ["UNAVAILABLE", "UNAVAILABLE", None]
    assert [dict(s.attributes or {}).get("mulligan.retry.delay_s") for s in attempts] == [
        None, pytest.approx(0.1), pytest.approx(0.2)]
    assert [s.kind for s in attempts] == [SpanKind.CLIENT] * 3
    # Each attempt went out naming its own attempt span as the parent.
    seen = [parent_id(s.metadata["traceparent"]) for s in server.attempts(method)]
    assert seen == [s.context.span_id for s in attempts]


def test_unary_retried_call_spans(server: ScriptedServer, clock: Any, exporter: InMemorySpanExporter) -> None:
    server.script(UNARY, Step(U), Step(U))
    ch = grpc.intercept_channel(grpc.insecure_channel(server.target), RetryInterceptor(**OPTIONS))
    assert ch.unary_unary(UNARY)(b"x") == b"ok:x"
    ch.close()
    check_retried_call(exporter, server, UNARY)


def test_stream_spans_end_at_the_first_message(server: ScriptedServer, clock: Any,
                                               exporter: InMemorySpanExporter) -> None:
    server.script(STREAM, Step(U), Step(U), Step(messages=(b"a", b"b")))
    ch = grpc.intercept_channel(grpc.insecure_channel(server.target), RetryInterceptor(**OPTIONS))
    assert list(ch.unary_stream(STREAM)(b"x")) == [b"a", b"b"]
    ch.close()
    check_retried_call(exporter, server, STREAM)


def test_aio_unary_retried_call_spans(server: ScriptedServer, clock: Any, exporter: InMemorySpanExporter) -> None:
    server.script(UNARY, Step(U), Step(U))

    async def main() -> bytes:
        async with grpc.aio.insecure_channel(server.target, interceptors=aio_interceptors(**OPTIONS)) as ch:
            return await ch.unary_unary(UNARY)(b"x")  # type: ignore[no-any-return]

    assert asyncio.run(main()) == b"ok:x"
    check_retried_call(exporter, server, UNARY)


def test_gave_up_call_is_an_error(server: ScriptedServer, clock: Any, exporter: InMemorySpanExporter) -> None:
    server.script(UNARY, Step(U), Step(U), Step(U))
    ch = grpc.intercept_channel(grpc.insecure_channel(server.target), RetryInterceptor(**OPTIONS))
    with pytest.raises(grpc.RpcError):
        ch.unary_unary(UNARY)(b"x")
    ch.close()
    root, attempts = call_and_attempts(exporter)
    assert len(attempts) == 3
    a = dict(root.attributes or {})
    assert a["error.type"] == "UNAVAILABLE"
    assert a["rpc.grpc.status_code"] == 14
    assert a["mulligan.retry.attempts"] == 3
    assert a["mulligan.retry.stop_reason"] == "attempts_exhausted"
    assert root.status.status_code is StatusCode.ERROR


def test_no_spans_and_no_traceparent_when_off(server: ScriptedServer, clock: Any) -> None:
    server.script(UNARY, Step(U))
    ch = grpc.intercept_channel(grpc.insecure_channel(server.target), RetryInterceptor(**OPTIONS))
    assert ch.unary_unary(UNARY)(b"x") == b"ok:x"
    ch.close()
    assert ["traceparent" in s.metadata for s in server.attempts(UNARY)] == [False, False]


def test_a_callers_traceparent_in_metadata_is_replaced_not_doubled(
        server: ScriptedServer, clock: Any, exporter: InMemorySpanExporter) -> None:
    server.script(UNARY, Step(U))
    stale = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    ch = grpc.intercept_channel(grpc.insecure_channel(server.target), RetryInterceptor(**OPTIONS))
    assert ch.unary_unary(UNARY)(b"x", metadata=[("traceparent", stale)]) == b"ok:x"
    ch.close()
    _root, attempts = call_and_attempts(exporter)
    seen = [[v for k, v in s.pairs if k == "traceparent"] for s in server.attempts(UNARY)]
    assert [[parent_id(tp) for tp in values] for values in seen] == [[s.context.span_id] for s in attempts]
