"""OpenTelemetry traces from Client, AsyncClient and the adapters, against nginx.

Each call meets /script?steps=503,503,200 (503, 503, then 200) on the suite's
nginx; the FakeClock makes the 0.5 s constant waits instant. nginx logs the
traceparent header of every request it got, so the test reads, per attempt,
which span the request named as its parent: the attempt's own span, for the
adapters (each attempt is sent anew) and, since 0.5, for Client and
AsyncClient (the engine's resend carries the fields set for it).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.trace import SpanKind  # noqa: E402

import mulligan  # noqa: E402
from mulligan.testing import FakeClock  # noqa: E402

from tracing_helpers import Spans, attrs, check_attempts, is_error, spans, traceparent  # noqa: E402,F401

FAST = {"backoff": "constant", "base_delay": 0.5, "jitter": "none"}
_serial = itertools.count()


def script(server: Any, steps: str) -> tuple[str, str]:
    call_id = f"otel-{os.getpid()}-{next(_serial)}"
    return server.url(f"/script?id={call_id}&steps={steps}"), call_id


def seen(server: Any, call_id: str, count: int) -> list[str]:
    """The traceparent header of each request nginx logged for ``call_id``."""
    deadline = time.monotonic() + 3.0
    found: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        found = [line for line in server.access_log() if f"id={call_id}&" in line["uri"]]
        if len(found) >= count:
            break
        time.sleep(0.01)
    return [line.get("traceparent", "") for line in found]


def check_http_call(server: Any, spans: Spans, url: str, call_id: str) -> None:
    """The spans of GET ``url`` answered 503, 503, 200 after waits of 0.5 s."""
    root, attempts = spans.call_and_attempts()
    port = int(server.base_url.rsplit(":", 1)[1])
    assert root.name == "GET" and root.kind is SpanKind.CLIENT
    a = attrs(root)
    assert a["http.request.method"] == "GET"
    assert a["url.full"] == url
    assert (a["server.address"], a["server.port"]) == ("127.0.0.1", port)
    assert a["http.response.status_code"] == 200
    assert (a["mulligan.retry.attempts"], a["mulligan.retry.stop_reason"]) == (3, "succeeded")
    assert a["mulligan.retry.waited_s"] == pytest.approx(1.0)
    assert "error.type" not in a and not is_error(root)
    assert [s.name for s in attempts] == ["GET"] * 3
    check_attempts(attempts, [0.5, 0.5], ["503", "503", None], http=True)
    assert [attrs(s)["http.response.status_code"] for s in attempts] == [503, 503, 200]
    for s in attempts:
        assert (attrs(s)["url.full"], attrs(s)["server.port"]) == (url, port)
    # Three attempt spans, three distinct parents named on the wire.
    expected = [traceparent(s) for s in attempts]
    assert len(set(expected)) == 3 and traceparent(root) not in expected
    assert seen(server, call_id, 3) == expected


def test_client_spans_and_traceparent(server: Any, spans: Spans) -> None:
    url, call_id = script(server, "503,503,200")
    with FakeClock() as clock, mulligan.Client(**FAST) as client:
        assert client.get(url).status_code == 200
    assert clock.sleeps == [0.5, 0.5]
    check_http_call(server, spans, url, call_id=call_id)


def test_async_client_spans_and_traceparent(server: Any, spans: Spans) -> None:
    url, call_id = script(server, "503,503,200")

    async def run() -> int:
        async with mulligan.AsyncClient(**FAST) as client:
            return (await client.get(url)).status_code

    with FakeClock():
        assert asyncio.run(run()) == 200
    check_http_call(server, spans, url, call_id=call_id)


def test_client_give_up_on_status(server: Any, spans: Spans) -> None:
    url, _ = script(server, "503")
    with FakeClock(), mulligan.Client(attempts=2, **FAST) as client:
        assert client.get(url).status_code == 503
    root, attempts = spans.call_and_attempts()
    check_attempts(attempts, [0.5], ["503", "503"], http=True)
    a = attrs(root)
    assert (a["http.response.status_code"], a["error.type"]) == (503, "503")
    assert a["mulligan.retry.stop_reason"] == "attempts_exhausted" and is_error(root)


def test_client_transport_failure_and_redacted_url(spans: Spans) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://user:secret@127.0.0.1:{port}/x?token=t0k&q=1"
    with FakeClock(), mulligan.Client(attempts=3, **FAST) as client:
        with pytest.raises(mulligan.ConnectionRefused):
            client.get(url)
    root, attempts = spans.call_and_attempts()
    check_attempts(attempts, [0.5, 0.5], ["connection_refused"] * 3, http=True)
    a = attrs(root)
    assert a["url.full"] == f"http://[redacted]@127.0.0.1:{port}/x?token=[redacted]&q=1"
    assert a["error.type"] == "connection_refused"
    assert (a["mulligan.retry.attempts"], a["mulligan.retry.stop_reason"]) == (3, "attempts_exhausted")
    assert "http.response.status_code" not in attrs(attempts[0])


def test_no_traceparent_and_no_span_when_tracing_is_off(server: Any) -> None:
    recorder = Spans()
    mulligan.otel.instrument(tracing=True, tracer_provider=recorder.provider).uninstrument()
    url, call_id = script(server, "503,200")
    with FakeClock(), mulligan.Client(**FAST) as client:
        assert client.get(url).status_code == 200
    assert seen(server, call_id, 2) == ["", ""]
    assert recorder.finished() == []


def check_adapter_call(server: Any, spans: Spans, url: str, call_id: str) -> None:
    check_http_call(server, spans, url, call_id=call_id)


def test_requests_adapter(server: Any, spans: Spans) -> None:
    requests = pytest.importorskip("requests")
    from mulligan.adapters.requests import Adapter

    url, call_id = script(server, "503,503,200")
    session = requests.Session()
    session.trust_env = False
    session.mount("http://", Adapter(**FAST))
    with FakeClock():
        assert session.get(url).status_code == 200
    check_adapter_call(server, spans, url, call_id)


def test_httpx_transport(server: Any, spans: Spans) -> None:
    httpx = pytest.importorskip("httpx")
    from mulligan.adapters.httpx import Transport

    url, call_id = script(server, "503,503,200")
    with FakeClock(), httpx.Client(transport=Transport(**FAST), trust_env=False) as client:
        assert client.get(url).status_code == 200
    check_adapter_call(server, spans, url, call_id)


def test_httpx_async_transport(server: Any, spans: Spans) -> None:
    httpx = pytest.importorskip("httpx")
    from mulligan.adapters.httpx import AsyncTransport

    url, call_id = script(server, "503,503,200")

    async def run() -> int:
        async with httpx.AsyncClient(transport=AsyncTransport(**FAST), trust_env=False) as client:
            return (await client.get(url)).status_code

    with FakeClock():
        assert asyncio.run(run()) == 200
    check_adapter_call(server, spans, url, call_id)


def test_aiohttp_middleware(server: Any, spans: Spans) -> None:
    aiohttp = pytest.importorskip("aiohttp")
    from mulligan.adapters.aiohttp import Middleware

    url, call_id = script(server, "503,503,200")

    async def run() -> int:
        async with aiohttp.ClientSession(middlewares=(Middleware(**FAST),)) as session:
            async with session.get(url) as response:
                return response.status

    with FakeClock():
        assert asyncio.run(run()) == 200
    check_adapter_call(server, spans, url, call_id)


def test_adapter_transport_failure(spans: Spans) -> None:
    requests = pytest.importorskip("requests")
    import socket

    from mulligan.adapters.requests import Adapter

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    session = requests.Session()
    session.trust_env = False
    session.mount("http://", Adapter(attempts=2, **FAST))
    with FakeClock(), pytest.raises(requests.exceptions.ConnectionError):
        session.get(f"http://127.0.0.1:{port}/")
    root, attempts = spans.call_and_attempts()
    check_attempts(attempts, [0.5], ["connection_refused"] * 2, http=True)
    assert attrs(root)["error.type"] == "connection_refused"
    assert [e.name for e in attempts[0].events] == ["exception"]
