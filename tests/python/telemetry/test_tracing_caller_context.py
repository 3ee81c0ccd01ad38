"""A request that already carries a trace context, through the adapters (0.6).

Against the suite's nginx, which logs every request's traceparent. The
caller's context is ``00-<CALLER_TRACE>-<CALLER_SPAN>-01`` with a tracestate
of its own. With no span current, the adapter's call span continues that
trace (its parent is the caller's span) and every attempt goes out naming
its own attempt span, once. With a span current, that span is the parent
(as OTel's HTTP instrumentations inject the current context over the
request's fields) and the caller's tracestate, which belonged to the
replaced traceparent, is gone.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from mulligan.testing import FakeClock  # noqa: E402

from tracing_helpers import Spans, spans, traceparent  # noqa: E402,F401
from test_tracing_http import seen  # noqa: E402

FAST = {"backoff": "constant", "base_delay": 0.5, "jitter": "none"}
CALLER_TRACE = 0x0AF7651916CD43DD8448EB211C80319C
CALLER_SPAN = 0xB7AD6B7169203331
CALLER = f"00-{CALLER_TRACE:032x}-{CALLER_SPAN:016x}-01"
_serial = itertools.count()


def script(server: Any, steps: str) -> tuple[str, str]:
    call_id = f"otel-caller-{os.getpid()}-{next(_serial)}"
    return server.url(f"/script?id={call_id}&steps={steps}"), call_id


def send(kind: str, url: str, headers: dict[str, str]) -> Any:
    """GET ``url`` with ``headers`` through the ``kind`` adapter; the
    headers the last attempt was sent with."""
    if kind == "requests":
        requests = pytest.importorskip("requests")
        from mulligan.adapters.requests import Adapter

        with requests.Session() as s:
            s.trust_env = False
            s.mount("http://", Adapter(**FAST))
            r = s.get(url, headers=headers, timeout=5)
        assert r.status_code == 200
        return r.request.headers
    if kind == "aiohttp":
        aiohttp = pytest.importorskip("aiohttp")
        from mulligan.adapters.aiohttp import Middleware

        async def run() -> Any:
            async with aiohttp.ClientSession(middlewares=(Middleware(**FAST),)) as session:
                async with session.get(url, headers=headers) as response:
                    assert response.status == 200
                    return response.request_info.headers

        return asyncio.run(run())
    httpx = pytest.importorskip("httpx")
    from mulligan.adapters.httpx import Transport

    with httpx.Client(transport=Transport(**FAST), trust_env=False) as client:
        r = client.get(url, headers=headers)
    assert r.status_code == 200
    return r.request.headers


@pytest.mark.parametrize("kind", ["requests", "httpx", "aiohttp"])
def test_a_callers_trace_context_is_continued(kind: str, server: Any, spans: Spans) -> None:
    url, call_id = script(server, "503,200")
    with FakeClock():
        sent = send(kind, url, {"traceparent": CALLER, "tracestate": "caller=1"})
    root, attempts = _tree(spans)
    assert root.context.trace_id == CALLER_TRACE
    assert root.parent is not None and root.parent.span_id == CALLER_SPAN
    assert len(attempts) == 2
    assert seen(server, call_id, 2) == [traceparent(s) for s in attempts]
    assert sent["tracestate"] == "caller=1"  # it belongs to the caller's trace, still the one sent


@pytest.mark.parametrize("kind", ["requests", "httpx", "aiohttp"])
def test_the_current_span_wins_and_the_stale_tracestate_goes(kind: str, server: Any, spans: Spans) -> None:
    tracer = spans.provider.get_tracer("test")
    url, call_id = script(server, "503,200")
    with FakeClock(), tracer.start_as_current_span("outer") as outer:
        sent = send(kind, url, {"traceparent": CALLER, "tracestate": "caller=1"})
    finished = spans.finished()
    (root,) = [s for s in finished if s.parent is not None and s.parent.span_id == outer.get_span_context().span_id]
    attempts = sorted((s for s in finished if s.parent is not None and s.parent.span_id == root.context.span_id),
                      key=lambda s: s.start_time or 0)
    assert root.context.trace_id == outer.get_span_context().trace_id != CALLER_TRACE
    assert seen(server, call_id, 2) == [traceparent(s) for s in attempts]
    assert "tracestate" not in sent


def _tree(spans: Spans) -> tuple[Any, list[Any]]:
    """The call span (the one whose parent is the caller's remote span) and
    its attempt spans by start time; asserts nothing else was recorded."""
    finished = spans.finished()
    roots = [s for s in finished if s.parent is not None and s.parent.span_id == CALLER_SPAN]
    assert len(roots) == 1, [(s.name, s.parent) for s in finished]
    root = roots[0]
    attempts = [s for s in finished if s.parent is not None and s.parent.span_id == root.context.span_id]
    assert len(attempts) == len(finished) - 1
    return root, sorted(attempts, key=lambda s: s.start_time or 0)


@pytest.mark.parametrize("client", ["Client", "AsyncClient"])
def test_mulligans_clients_drop_the_stale_tracestate(client: str, server: Any, spans: Spans) -> None:
    # The native clients' attempts carry the current span's traceparent and
    # no tracestate of the caller's (it belongs to the traceparent they
    # replace); they sent the caller's "caller=1" beside the new traceparent
    # until a fresh user's report (0.6). nginx logs both fields.
    import mulligan

    tracer = spans.provider.get_tracer("test")
    url, call_id = script(server, "503,200")
    headers = {"traceparent": CALLER, "tracestate": "caller=1"}
    with FakeClock(), tracer.start_as_current_span("outer"):
        if client == "Client":
            with mulligan.Client(**FAST) as c:
                assert c.get(url, headers=headers).status_code == 200
        else:
            async def run() -> None:
                async with mulligan.AsyncClient(**FAST) as c:
                    assert (await c.get(url, headers=headers)).status_code == 200

            asyncio.run(run())
    seen(server, call_id, 2)
    lines = [e for e in server.access_log() if f"id={call_id}&" in e["uri"]]
    assert [e["tracestate"] for e in lines] == ["", ""]
    assert all(e["traceparent"] and CALLER not in e["traceparent"] for e in lines)
