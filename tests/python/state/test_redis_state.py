"""mulligan.RedisState and IdempotencyStore(state=...) against a real
redis-server (the ``redis_server`` fixture of tests/python/conftest.py):
the store's semantics on Redis, two stores (two "processes") sharing one
record, failing closed (StateBackendUnavailable, 503 from the ASGI and WSGI
middlewares with the handler not run) while the server is down, and working
again after a restart. No secret in any error or repr.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

import mulligan
from mulligan.testing import FakeClock


def test_bad_arguments_name_the_field_and_hide_the_password() -> None:
    with pytest.raises(ValueError, match=r"mulligan.RedisState: url: rediss:// \(TLS\) is not "
                                         r"supported: it needs hiredis >= 1.0 built with SSL"):
        mulligan.RedisState("rediss://u:hunter2@h:6380/0")
    with pytest.raises(ValueError) as e:
        mulligan.RedisState("redis://u:hunter2@h:99999/0")
    assert str(e.value) == "mulligan.RedisState: url: the port must be digits in [1, 65535]"
    with pytest.raises(TypeError) as t:
        mulligan.RedisState(b"redis://u:hunter2@h/0")  # type: ignore[arg-type]
    assert "hunter2" not in str(t.value)
    with pytest.raises(ValueError, match=r"prefix byte 1 must be one of A-Z a-z 0-9 _ \. -"):
        mulligan.RedisState("redis://127.0.0.1:1/0", prefix="a b")
    # Review fixes (0.6): a ':' would let prefixes collide; hosts are at most
    # 255 bytes (RFC 1035 2.3.4); range errors name the Python keyword.
    with pytest.raises(ValueError, match="prefix byte 3 must be one of"):
        mulligan.RedisState("redis://127.0.0.1:1/0", prefix="svc:idem")
    with pytest.raises(ValueError) as h:
        mulligan.RedisState("redis://" + "h" * 300 + ":6379/0")
    assert str(h.value) == ("mulligan.RedisState: url: the host is longer than 255 bytes "
                            "(RFC 1035 section 2.3.4)")
    with pytest.raises(ValueError) as big:
        mulligan.RedisState("redis://127.0.0.1:1/0", timeout=7200)
    assert str(big.value) == "mulligan.RedisState: timeout must be in [1 ms, 1 h], got 7200000 ms"
    with pytest.raises(ValueError) as c:
        mulligan.RedisState("redis://127.0.0.1:1/0", connect_timeout=7200)
    assert str(c.value) == ("mulligan.RedisState: connect_timeout must be in [1 ms, 1 h], got "
                            "7200000 ms")
    with pytest.raises(ValueError, match="mulligan.RedisState: timeout must be > 0 seconds"):
        mulligan.RedisState("redis://127.0.0.1:1/0", timeout=0)
    with pytest.raises(TypeError, match="state must be a mulligan.RedisState or None"):
        mulligan.IdempotencyStore(state="redis://127.0.0.1/0")  # type: ignore[arg-type]


def test_store_semantics_on_redis(redis_server: Any) -> None:
    clock = FakeClock()
    state = mulligan.RedisState(redis_server.url, prefix="py")
    assert repr(state) == f"<mulligan.RedisState redis://127.0.0.1:{redis_server.port}/0 prefix='py'>"
    state.ping()
    store = mulligan.IdempotencyStore(state=state, lease=30, ttl=600, clock=clock.monotonic)
    r = store.reserve("k-1", b"POST /orders h", scope="alice")
    assert r.state == "reserved"
    clock.advance(29.75)
    again = store.reserve("k-1", b"POST /orders h", scope="alice")
    assert again.state == "in_flight"
    assert again.retry_after == pytest.approx(0.25)
    assert store.reserve("k-1", b"POST /orders other", scope="alice").state == "fingerprint_mismatch"
    store.complete(r, status=201, headers=[(b"content-type", b"application/json")], body=b'{"id":1}')
    replay = store.reserve("k-1", b"POST /orders h", scope="alice")
    assert replay.state == "replay"
    assert (replay.status, replay.headers, replay.body) == (
        201, [(b"content-type", b"application/json")], b'{"id":1}')
    clock.advance(600)
    assert store.reserve("k-1", b"POST /orders h", scope="alice").state == "reserved"
    health = state.health()
    assert health["reachable"] is True
    assert health["endpoint"] == f"redis://127.0.0.1:{redis_server.port}/0"
    # PING, SCRIPT LOAD of the two scripts used, then one round trip per
    # operation (5 reserves, 1 complete).
    assert health["round_trips"] == 1 + 2 + 6


def test_two_processes_share_one_record(redis_server: Any) -> None:
    a = mulligan.IdempotencyStore(state=mulligan.RedisState(redis_server.url))
    b = mulligan.IdempotencyStore(state=mulligan.RedisState(redis_server.url))
    r = a.reserve("pay-7", b"f")
    assert b.reserve("pay-7", b"f").state == "in_flight"
    a.complete(r, status=200, body=b"paid")
    assert b.reserve("pay-7", b"f").body == b"paid"


def test_down_fails_closed_then_works_after_a_restart(redis_server: Any) -> None:
    state = mulligan.RedisState(redis_server.url, timeout=0.2)
    store = mulligan.IdempotencyStore(state=state)
    r = store.reserve("k", b"f")
    redis_server.stop()
    with pytest.raises(mulligan.StateBackendUnavailable) as e:
        store.complete(r, status=200, body=b"x")
    assert isinstance(e.value, mulligan.MulliganError)
    with pytest.raises(mulligan.StateBackendUnavailable):
        store.reserve("k2", b"f")
    assert state.health()["reachable"] is False
    redis_server.start()
    # The reconnect backoff runs on the real clock (from 50 ms, doubling,
    # full jitter): poll briefly.
    for _ in range(100):
        try:
            r2 = store.reserve("k2", b"f")
            break
        except mulligan.StateBackendUnavailable:
            time.sleep(0.02)
    else:
        pytest.fail("the store did not reconnect within 2 s")
    assert r2.state == "reserved"


def _asgi_call(app: Any, key: str) -> tuple[int, dict[str, str], bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/orders", "query_string": b"",
             "headers": [(b"idempotency-key", key.encode())]}
    asyncio.run(app(scope, receive, send))
    headers = {n.decode(): v.decode() for n, v in sent[0]["headers"]}
    return sent[0]["status"], headers, sent[1]["body"]


def test_asgi_middleware_answers_503_and_does_not_run_the_handler(redis_server: Any) -> None:
    runs: list[str] = []

    async def handler(scope: Any, receive: Any, send: Any) -> None:
        runs.append("run")
        await send({"type": "http.response.start", "status": 201, "headers": []})
        await send({"type": "http.response.body", "body": b"made", "more_body": False})

    store = mulligan.IdempotencyStore(state=mulligan.RedisState(redis_server.url, timeout=0.2))
    app = mulligan.IdempotencyMiddleware(handler, store=store)
    assert _asgi_call(app, "a")[0] == 201
    assert _asgi_call(app, "a")[2] == b"made"
    assert runs == ["run"]
    redis_server.stop()
    status, headers, body = _asgi_call(app, "b")
    assert status == 503
    assert headers["retry-after"] == "1"
    assert headers["content-type"] == "application/problem+json"
    problem = json.loads(body)
    assert problem["type"].endswith("idempotency-store-unavailable")
    assert "127.0.0.1" not in problem["detail"]
    assert runs == ["run"]


def test_wsgi_middleware_answers_503_and_does_not_run_the_handler(redis_server: Any) -> None:
    import io

    runs: list[str] = []

    def handler(environ: Any, start_response: Any) -> list[bytes]:
        runs.append("run")
        start_response("201 Created", [("Content-Type", "text/plain")])
        return [b"made"]

    store = mulligan.IdempotencyStore(state=mulligan.RedisState(redis_server.url, timeout=0.2))
    app = mulligan.WSGIIdempotencyMiddleware(handler, store=store)

    def call(key: str) -> tuple[str, dict[str, str], bytes]:
        seen: dict[str, Any] = {}

        def start_response(status: str, headers: list[tuple[str, str]]) -> None:
            seen["status"] = status
            seen["headers"] = {n.lower(): v for n, v in headers}

        environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/orders", "QUERY_STRING": "",
                   "CONTENT_LENGTH": "2", "wsgi.input": io.BytesIO(b"{}"),
                   "HTTP_IDEMPOTENCY_KEY": key}
        body = b"".join(app(environ, start_response))
        return seen["status"], seen["headers"], body

    assert call("a")[0] == "201 Created"
    redis_server.stop()
    status, headers, _ = call("b")
    assert status == "503 Service Unavailable"
    assert headers["retry-after"] == "1"
    assert runs == ["run"]


def test_pickled_results_on_a_shared_store_need_trust_state(redis_server: Any) -> None:
    # Unpickling a record from a shared Redis runs the code it names: the
    # decorator refuses a shared store unless the caller says it is trusted.
    store = mulligan.IdempotencyStore(state=mulligan.RedisState(redis_server.url, prefix="pk"))
    with pytest.raises(ValueError, match="trust_state=True"):
        store.idempotent(key="request_id")
    runs: list[int] = []

    @store.idempotent(key="request_id", trust_state=True)
    def charge(amount: int, request_id: str) -> dict[str, int]:
        runs.append(amount)
        return {"charged": amount}

    assert charge(5, "r-1") == {"charged": 5}
    assert charge(5, request_id="r-1") == {"charged": 5}
    assert runs == [5]
    # An in-process store needs no such promise.
    mulligan.IdempotencyStore().idempotent(key="request_id")


def _toxiproxy_to(redis_server: Any) -> Any:
    """A toxiproxy of its own in front of the test's redis-server (the
    session fixture's proxy fronts nginx); skipped when none is installed."""
    import os

    from conftest import load_toxiproxy_server_module

    module = load_toxiproxy_server_module()
    try:
        module.find_toxiproxy()
    except module.ToxiproxyError as e:
        if os.environ.get("MULLIGAN_TOXIPROXY"):
            raise
        pytest.skip(str(e))
    server = module.ToxiproxyServer().start()
    port = server.create_proxy("redis", f"127.0.0.1:{redis_server.port}")
    return server, port


def test_asgi_middleware_keeps_the_loop_responsive_while_redis_is_slow(redis_server: Any) -> None:
    """Review fix (0.6): the shared store's round trips run in the executor.
    200 ms of latency between the store and redis-server (toxiproxy): a
    request costs two round trips (reserve, complete) = at least 400 ms, and
    meanwhile a 10 ms ticker on the same loop keeps ticking."""
    toxi, port = _toxiproxy_to(redis_server)
    try:
        state = mulligan.RedisState(f"redis://127.0.0.1:{port}/0", timeout=2.0)
        store = mulligan.IdempotencyStore(state=state)
        runs: list[str] = []

        async def handler(scope: Any, receive: Any, send: Any) -> None:
            runs.append("run")
            await send({"type": "http.response.start", "status": 201, "headers": []})
            await send({"type": "http.response.body", "body": b"made", "more_body": False})

        app = mulligan.IdempotencyMiddleware(handler, store=store)
        assert _asgi_call(app, "warm")[0] == 201  # loads the scripts, before the latency
        toxi.add_toxic("redis", "latency", {"latency": 200, "jitter": 0})

        async def scenario() -> tuple[float, float, list[Any]]:
            sent: list[Any] = []

            async def receive() -> dict[str, Any]:
                return {"type": "http.request", "body": b"{}", "more_body": False}

            async def send(message: Any) -> None:
                sent.append(message)

            scope = {"type": "http", "method": "POST", "path": "/orders", "query_string": b"",
                     "headers": [(b"idempotency-key", b"slow-1")]}
            loop = asyncio.get_running_loop()
            ticks: list[float] = []
            done = False

            async def ticker() -> None:
                while not done:
                    ticks.append(loop.time())
                    await asyncio.sleep(0.01)

            tick_task = asyncio.create_task(ticker())
            await asyncio.sleep(0)
            start = loop.time()
            await app(scope, receive, send)
            took = loop.time() - start
            done = True
            await tick_task
            gaps = [b - a for a, b in zip(ticks, ticks[1:])]
            return took, max(gaps), sent

        took, worst_gap, sent = asyncio.run(scenario())
        assert sent[0]["status"] == 201
        assert runs == ["run", "run"]
        assert took >= 0.4  # the latency was there: two round trips
        assert worst_gap < 0.15, f"the event loop stalled for {worst_gap:.3f} s"
        # The completed record is in Redis: a repeat replays it.
        toxi.reset()
        assert _asgi_call(app, "slow-1")[2] == b"made"
        assert runs == ["run", "run"]
        # A command timeout names the Python keyword (review fix, 0.6).
        fast = mulligan.RedisState(f"redis://127.0.0.1:{port}/0", timeout=0.05)
        fast.ping()
        toxi.add_toxic("redis", "latency", {"latency": 200, "jitter": 0})
        with pytest.raises(mulligan.StateBackendUnavailable) as e:
            fast.ping()
        assert "PING failed (no reply within 50 ms: timeout)" in str(e.value)
    finally:
        toxi.stop()
