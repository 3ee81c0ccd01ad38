"""mulligan.adapters.httpx.Transport and AsyncTransport against the real nginx.

Every behaviour runs through both transports: ``send`` makes one request
with an ``httpx.Client`` or, in a fresh event loop, an ``httpx.AsyncClient``
(environment proxies off), so the sync and async adapters must agree on
attempts, waits (the FakeClock's record), keys and errors.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

import pytest

httpx = pytest.importorskip("httpx")

import mulligan  # noqa: E402
from mulligan.adapters.httpx import (  # noqa: E402
    AsyncTransport,
    CircuitOpenError,
    RetriesExhausted,
    Transport,
)

from adapter_helpers import FAST, clock, closed_port, lines, script  # noqa: E402,F401


class Sync:
    """Requests through one httpx.Client over a mulligan Transport."""

    def __init__(self, **options: Any) -> None:
        self.client = httpx.Client(transport=Transport(**options), trust_env=False, timeout=5)

    def send(self, method: str, url: str, **kwargs: Any) -> Any:
        return self.client.request(method, url, **kwargs)

    def close(self) -> None:
        self.client.close()


class Async:
    """The same through httpx.AsyncClient over an AsyncTransport (one loop per request)."""

    def __init__(self, **options: Any) -> None:
        self.transport = AsyncTransport(**options)

    def send(self, method: str, url: str, **kwargs: Any) -> Any:
        async def run() -> Any:
            async with httpx.AsyncClient(transport=self.transport, trust_env=False, timeout=5) as c:
                return await c.request(method, url, **kwargs)

        return asyncio.run(run())

    def close(self) -> None:
        pass


@pytest.fixture(params=["sync", "async"])
def make(request: Any) -> Callable[..., Any]:
    kind = Sync if request.param == "sync" else Async
    made: list[Any] = []

    def factory(**options: Any) -> Any:
        made.append(kind(**options))
        return made[-1]

    yield factory
    for m in made:
        m.close()


def test_503_then_200_exact_attempts(make: Any, server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,503,200")
    r = make(attempts=5, **FAST).send("GET", url)
    assert r.status_code == 200 and r.text.startswith("step 3 of")
    assert len(lines(server, call_id, 3)) == 3
    assert clock.sleeps == [0.5, 0.5]


def test_gives_up_and_returns_last_response(make: Any, server: Any, clock: Any) -> None:
    url, call_id = script(server, "503")
    r = make(attempts=3, **FAST).send("GET", url)
    assert r.status_code == 503 and r.text.startswith("step 3 of")
    assert len(lines(server, call_id, 3)) == 3


def test_raise_on_give_up(make: Any, server: Any, clock: Any) -> None:
    url, _ = script(server, "502")
    with pytest.raises(httpx.HTTPStatusError) as info:
        make(attempts=2, raise_on_give_up=True, **FAST).send("GET", url)
    assert isinstance(info.value, RetriesExhausted) and isinstance(info.value, mulligan.RetriesExhausted)
    assert info.value.attempts == 2 and info.value.response.status_code == 502


def test_retry_after_is_honoured_exactly(make: Any, server: Any, clock: Any) -> None:
    url, call_id = script(server, "503:2,429:4,200")
    events: list[Any] = []
    r = make(attempts=4, on_retry=events.append, **FAST).send("GET", url)
    assert r.status_code == 200
    assert clock.sleeps == [2.0, 4.0]
    assert [(e.status, e.from_retry_after, e.attempt) for e in events] == [(503, True, 1), (429, True, 2)]
    assert len(lines(server, call_id, 3)) == 3


def test_keyed_post_same_key_on_every_attempt(make: Any, server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,500,200")
    r = make(attempts=3, idempotency_key=True, **FAST).send("POST", url, content=b"order")
    assert r.status_code == 200
    seen = lines(server, call_id, 3)
    keys = {line["idempotency_key"] for line in seen}
    assert len(seen) == 3 and len(keys) == 1
    assert r.headers["Echo-Idempotency-Key"] == keys.pop()


def test_post_without_key_not_retried_after_send(make: Any, server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,200")
    r = make(attempts=3, **FAST).send("POST", url, content=b"x")
    assert r.status_code == 503
    assert len(lines(server, call_id, 1)) == 1


def test_callers_key_kept(make: Any, server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,200")
    r = make(attempts=3, **FAST).send("PATCH", url, content=b"x", headers={"Idempotency-Key": "k-1"})
    assert r.status_code == 200
    assert [line["idempotency_key"] for line in lines(server, call_id, 2)] == ["k-1", "k-1"]


def test_breaker_opens_and_refuses_without_contacting_nginx(make: Any, server: Any, clock: Any) -> None:
    m = make(attempts=1, breaker={"failure_threshold": 2})
    for _ in range(2):
        assert m.send("GET", server.url("/down")).status_code == 503
    with pytest.raises(CircuitOpenError) as info:
        m.send("GET", server.url("/ok"))
    assert isinstance(info.value, mulligan.CircuitOpenError)
    assert isinstance(info.value, httpx.TransportError)
    assert info.value.key == server.base_url
    assert info.value.request.url.path == "/ok"
    assert len(server.wait_for_requests("/down", 3)) == 2
    assert server.wait_for_requests("/ok", 1, timeout=0.2) == []


def test_connection_refused_keeps_httpx_connect_error(make: Any, clock: Any) -> None:
    url = f"http://127.0.0.1:{closed_port()}/x"
    with pytest.raises(httpx.ConnectError) as info:
        make(attempts=3, **FAST).send("POST", url, content=b"x")  # nothing sent: retried
    assert clock.sleeps == [0.5, 0.5]
    if hasattr(BaseException, "add_note"):
        assert info.value.__notes__ == ["mulligan: gave up after 3 attempts (attempts_exhausted)"]


def test_read_timeout_keeps_httpx_read_timeout(make: Any, server: Any, clock: Any) -> None:
    with pytest.raises(httpx.ReadTimeout):
        make(attempts=2, timeout=0.2, **FAST).send("GET", server.url("/slow?s=1"))
    assert clock.sleeps == [0.5]
    assert len(server.wait_for_requests("/slow", 2, timeout=3)) == 2


def test_generator_body_not_replayed(make: Any, server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,200")

    def body() -> Any:
        yield b"a"

    async def abody() -> Any:
        yield b"a"

    content = body() if isinstance(make(), Sync) else abody()
    r = make(attempts=3, **FAST).send("PUT", url, content=content)
    assert r.status_code == 503
    assert len(lines(server, call_id, 1)) == 1


def test_fallback(make: Any, server: Any, clock: Any) -> None:
    url, _ = script(server, "503")
    r = make(attempts=2, fallback=lambda exc: httpx.Response(299), **FAST).send("GET", url)
    assert r.status_code == 299


def test_wrapped_transport_is_used(server: Any, clock: Any) -> None:
    sent: list[str] = []

    class Spy(httpx.BaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.HTTPTransport()

        def handle_request(self, request: Any) -> Any:
            sent.append(request.method)
            return self.inner.handle_request(request)

        def close(self) -> None:
            self.inner.close()

    url, _ = script(server, "503,200")
    with httpx.Client(transport=Transport(Spy(), attempts=3, **FAST), trust_env=False) as c:
        assert c.get(url).status_code == 200
    assert sent == ["GET", "GET"]


@pytest.mark.parametrize("cls", [Transport, AsyncTransport])
@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"attempts": 0}, "attempts"),
        ({"max_delay": -1}, "max_delay"),
        ({"retry_on": "503"}, "retry_on"),
        ({"allowed_methods": "GET"}, "allowed_methods"),
        ({"breaker": {"reset_timeout": 0}}, "reset_timeout"),
        ({"idempotency_key": "yes"}, "idempotency_key"),
    ],
)
def test_bad_options_raise_at_construction(cls: Any, options: dict[str, Any], field: str) -> None:
    with pytest.raises((ValueError, TypeError), match=field):
        cls(**options)


def test_keyed_409_with_retry_after_is_waited_out(make: Any, server: Any, clock: Any) -> None:
    url, call_id = script(server, "409:3,201")
    r = make(attempts=3, **FAST).send("POST", url, headers={"Idempotency-Key": "k-409"})
    assert r.status_code == 201
    assert clock.sleeps == [3.0]
    assert [line["idempotency_key"] for line in lines(server, call_id, 2)] == ["k-409", "k-409"]


def test_deadline_trims_the_attempt_and_stops_the_retries(make: Any, server: Any, clock: Any) -> None:
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        make(attempts=5, deadline=0.3, **FAST).send("GET", server.url("/slow?s=2"))
    assert time.monotonic() - started < 1.5
    assert clock.sleeps == []
