"""mulligan.adapters.aiohttp.Middleware against the suite's real nginx.

Each request runs in a fresh event loop through an aiohttp.ClientSession
with the middleware; the FakeClock records every wait, so nothing sleeps.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

aiohttp = pytest.importorskip("aiohttp", minversion="3.12")

import mulligan  # noqa: E402
from mulligan.adapters.aiohttp import CircuitOpenError, Middleware, RetriesExhausted  # noqa: E402

from adapter_helpers import FAST, clock, closed_port, lines, script  # noqa: E402,F401


def send(middleware: Middleware, method: str, url: str, **kwargs: Any) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one request through ``middleware``."""

    async def run() -> tuple[int, dict[str, str], bytes]:
        async with aiohttp.ClientSession(middlewares=(middleware,)) as session:
            async with session.request(method, url, **kwargs) as r:
                return r.status, dict(r.headers), await r.read()

    return asyncio.run(run())


def test_503_then_200_exact_attempts(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,503,200")
    status, _, body = send(Middleware(attempts=5, **FAST), "GET", url)
    assert status == 200 and body.startswith(b"step 3 of")
    assert len(lines(server, call_id, 3)) == 3
    assert clock.sleeps == [0.5, 0.5]


def test_gives_up_and_returns_last_response(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503")
    status, _, _ = send(Middleware(attempts=3, **FAST), "GET", url)
    assert status == 503
    assert len(lines(server, call_id, 3)) == 3


def test_raise_on_give_up(server: Any, clock: Any) -> None:
    url, _ = script(server, "504")
    with pytest.raises(aiohttp.ClientResponseError) as info:
        send(Middleware(attempts=2, raise_on_give_up=True, **FAST), "GET", url)
    assert isinstance(info.value, RetriesExhausted) and isinstance(info.value, mulligan.RetriesExhausted)
    assert info.value.status == 504 and info.value.attempts == 2


def test_retry_after_is_honoured_exactly(server: Any, clock: Any) -> None:
    url, call_id = script(server, "429:2,503:5,200")
    events: list[Any] = []

    async def hook(event: Any) -> None:  # a coroutine hook is awaited
        events.append(event)

    status, _, _ = send(Middleware(attempts=4, on_retry=hook, **FAST), "GET", url)
    assert status == 200
    assert clock.sleeps == [2.0, 5.0]
    assert [(e.status, e.from_retry_after) for e in events] == [(429, True), (503, True)]
    assert len(lines(server, call_id, 3)) == 3


def test_keyed_post_same_key_on_every_attempt(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,503,200")
    status, headers, _ = send(Middleware(attempts=3, idempotency_key=True, **FAST), "POST", url, data=b"order")
    assert status == 200
    seen = lines(server, call_id, 3)
    keys = {line["idempotency_key"] for line in seen}
    assert len(seen) == 3 and len(keys) == 1
    assert headers["Echo-Idempotency-Key"] == keys.pop()


def test_post_without_key_not_retried_after_send(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,200")
    status, _, _ = send(Middleware(attempts=3, **FAST), "POST", url, data=b"x")
    assert status == 503
    assert len(lines(server, call_id, 1)) == 1


def test_breaker_opens_and_refuses_without_contacting_nginx(server: Any, clock: Any) -> None:
    m = Middleware(attempts=1, breaker={"failure_threshold": 2})
    for _ in range(2):
        assert send(m, "GET", server.url("/down"))[0] == 503
    with pytest.raises(CircuitOpenError) as info:
        send(m, "GET", server.url("/ok"))
    assert isinstance(info.value, mulligan.CircuitOpenError) and isinstance(info.value, aiohttp.ClientError)
    assert info.value.key == server.base_url
    assert len(server.wait_for_requests("/down", 3)) == 2
    assert server.wait_for_requests("/ok", 1, timeout=0.2) == []


def test_connection_refused_keeps_aiohttp_error(clock: Any) -> None:
    url = f"http://127.0.0.1:{closed_port()}/x"
    with pytest.raises(aiohttp.ClientConnectorError):
        send(Middleware(attempts=3, **FAST), "POST", url, data=b"x")  # nothing sent: retried
    assert clock.sleeps == [0.5, 0.5]


def test_attempt_timeout(server: Any, clock: Any) -> None:
    with pytest.raises(asyncio.TimeoutError):
        send(Middleware(attempts=2, timeout=0.2, **FAST), "GET", server.url("/slow?s=1"))
    assert clock.sleeps == [0.5]
    assert len(server.wait_for_requests("/slow", 2, timeout=3)) == 2


def test_async_iterator_body_not_replayed(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,200")

    async def body() -> Any:
        yield b"a"

    status, _, _ = send(Middleware(attempts=3, **FAST), "PUT", url, data=body())
    assert status == 503
    assert len(lines(server, call_id, 1)) == 1


def test_fallback(server: Any, clock: Any) -> None:
    # The session expects a ClientResponse from its chain, so the middleware
    # is called directly here, in front of a handler that makes real requests
    # to nginx through a second session.
    seen: list[Any] = []
    url, call_id = script(server, "503")
    m = Middleware(attempts=2, fallback=lambda exc: seen.append(exc) or "fallback", **FAST)

    async def run() -> Any:
        async with aiohttp.ClientSession() as session:

            class Request:
                method = "GET"
                headers: dict[str, str] = {}
                body = b""

            Request.url = url  # type: ignore[attr-defined]

            async def handler(req: Any) -> Any:
                return await session.get(req.url)

            return await m(Request(), handler)  # type: ignore[arg-type]

    assert asyncio.run(run()) == "fallback"
    assert isinstance(seen[0], RetriesExhausted) and seen[0].status == 503
    assert len(lines(server, call_id, 2)) == 2


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"attempts": 0}, "attempts"),
        ({"base_delay": -1}, "base_delay"),
        ({"breaker": {"failure_threshold": "5"}}, "failure_threshold"),
        ({"stop": 3}, "stop"),
    ],
)
def test_bad_options_raise_at_construction(options: dict[str, Any], field: str) -> None:
    with pytest.raises((ValueError, TypeError), match=field):
        Middleware(**options)
