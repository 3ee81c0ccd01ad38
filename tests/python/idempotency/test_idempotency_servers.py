"""Idempotency end to end on real servers: uvicorn + Starlette (ASGI middleware)
and werkzeug + Flask (WSGI middleware), started on free loopback ports by the
fixtures below, driven by plain HTTP clients and by mulligan's own Client.

Every case of issue 6 runs against both servers: 200 concurrent POSTs with one
key, a handler that raises, a key reused with another body, a flaky path that
drops the first response after the handler ran, plus the 400 answers, scopes,
and the client-side key.
"""

from __future__ import annotations

import asyncio
import collections
import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any, Optional

import pytest

import mulligan

starlette = pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")
flask = pytest.importorskip("flask")
werkzeug_serving = pytest.importorskip("werkzeug.serving")

from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402


class Counters:
    """What the handlers did, per idempotency key (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: collections.Counter[str] = collections.Counter()
        self.failures: collections.Counter[str] = collections.Counter()
        self.requests = 0
        self.orders = 0

    def run(self, key: str) -> int:
        with self.lock:
            self.runs[key] += 1
            self.orders += 1
            return self.orders

    def fail_first(self, key: str) -> bool:
        with self.lock:
            self.failures[key] += 1
            return self.failures[key] == 1


def user_of_asgi(scope: Any) -> str:
    for name, value in scope["headers"]:
        if name == b"x-user":
            return str(value.decode("latin-1"))
    return ""


def user_of_wsgi(environ: Any) -> str:
    return str(environ.get("HTTP_X_USER", ""))


# --- the two servers ---------------------------------------------------------


def make_starlette_app(store: mulligan.IdempotencyStore, counters: Counters) -> Any:
    async def orders(request: Request) -> JSONResponse:
        body = await request.body()
        key = request.headers.get("idempotency-key", "")
        delay = float(request.query_params.get("delay", "0"))
        n = counters.run(key)
        if delay:
            await asyncio.sleep(delay)
        return JSONResponse(
            {"order": n, "echo": body.decode(), "user": request.headers.get("x-user", "")},
            status_code=201,
        )

    async def fail(request: Request) -> JSONResponse:
        key = request.headers.get("idempotency-key", "")
        if counters.fail_first(key):
            raise RuntimeError("the handler failed")
        return JSONResponse({"order": counters.run(key)}, status_code=201)

    app = Starlette(
        routes=[
            Route("/orders", orders, methods=["POST"]),
            Route("/required/orders", orders, methods=["POST"]),
            Route("/fail", fail, methods=["POST"]),
        ]
    )
    app.add_middleware(
        mulligan.IdempotencyMiddleware,
        store=store,
        required=lambda method, path: path.startswith("/required"),
        scope=user_of_asgi,
    )

    async def counting(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            with counters.lock:
                counters.requests += 1
        await app(scope, receive, send)

    return counting


def make_flask_app(store: mulligan.IdempotencyStore, counters: Counters) -> Any:
    app = flask.Flask("mulligan_idempotency_test")

    @app.post("/orders")
    @app.post("/required/orders")
    def orders() -> Any:
        key = flask.request.headers.get("Idempotency-Key", "")
        delay = float(flask.request.args.get("delay", "0"))
        n = counters.run(key)
        if delay:
            time.sleep(delay)
        body = flask.request.get_data()
        return flask.jsonify(
            {"order": n, "echo": body.decode(), "user": flask.request.headers.get("X-User", "")}
        ), 201

    @app.post("/fail")
    def fail() -> Any:
        key = flask.request.headers.get("Idempotency-Key", "")
        if counters.fail_first(key):
            raise RuntimeError("the handler failed")
        return flask.jsonify({"order": counters.run(key)}), 201

    inner = mulligan.WSGIIdempotencyMiddleware(
        app.wsgi_app,
        store=store,
        required=lambda method, path: path.startswith("/required"),
        scope=user_of_wsgi,
    )

    def counting(environ: Any, start_response: Any) -> Any:
        with counters.lock:
            counters.requests += 1
        return inner(environ, start_response)

    return counting


class Server:
    def __init__(self, kind: str, port: int, store: mulligan.IdempotencyStore, counters: Counters):
        self.kind = kind
        self.port = port
        self.store = store
        self.counters = counters

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture(params=["starlette", "flask"])
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    store = mulligan.IdempotencyStore(lease=30.0, in_flight_retry_after=1.0)
    counters = Counters()
    if request.param == "starlette":
        config = uvicorn.Config(
            make_starlette_app(store, counters),
            host="127.0.0.1",
            port=0,
            log_level="critical",
            lifespan="off",
            backlog=1024,
        )
        userver = uvicorn.Server(config)
        thread = threading.Thread(target=userver.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not userver.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        port = userver.servers[0].sockets[0].getsockname()[1]
        yield Server("starlette", port, store, counters)
        userver.should_exit = True
        thread.join(10)
    else:
        wserver = werkzeug_serving.make_server(
            "127.0.0.1", 0, make_flask_app(store, counters), threaded=True
        )
        wserver.socket.listen(1024)  # 200 simultaneous connects
        thread = threading.Thread(target=wserver.serve_forever, daemon=True)
        thread.start()
        yield Server("flask", wserver.port, store, counters)
        wserver.shutdown()
        thread.join(10)


def post(
    port: int, path: str, body: bytes, key: Optional[str], user: str = ""
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    if user:
        headers["X-User"] = user
    try:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


# --- the cases ---------------------------------------------------------------


def test_concurrent_posts_with_one_key_run_the_handler_once(server: Server) -> None:
    n = 200
    key = mulligan.new_idempotency_key()
    body = b'{"amount": 42}'
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def one(i: int) -> None:
        barrier.wait()
        results[i] = post(server.port, "/orders?delay=0.5", body, key)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)

    assert server.counters.runs[key] == 1
    assert server.counters.requests == n  # none lost, none doubled
    original = [r for r in results if r[0] == 201 and "idempotent-replayed" not in r[1]]
    replayed = [r for r in results if r[0] == 201 and r[1].get("idempotent-replayed") == "true"]
    conflicts = [r for r in results if r[0] == 409]
    assert len(original) == 1
    assert len(original) + len(replayed) + len(conflicts) == n
    assert conflicts, "a 0.5 s handler must make some requests meet it in flight"
    for status, headers, payload in conflicts:
        assert headers["content-type"] == "application/problem+json"
        assert headers["retry-after"] == "1"
        problem = json.loads(payload)
        assert problem["status"] == 409 and problem["type"].endswith("idempotency-key-in-flight")
    for _, _, payload in replayed:
        assert payload == original[0][2]

    # After it finished every repeat is a replay of the same response.
    status, headers, payload = post(server.port, "/orders?delay=0.5", body, key)
    assert (status, headers["idempotent-replayed"], payload) == (201, "true", original[0][2])
    assert server.counters.runs[key] == 1


def test_mulligan_client_retries_409_until_it_gets_the_result(server: Server) -> None:
    # The client treats 409 + Retry-After as "still running" for a keyed
    # request: every caller ends up with the one result.
    key = mulligan.new_idempotency_key()
    client = mulligan.Client()
    out: list[Any] = []

    def one() -> None:
        out.append(
            client.post(
                server.url("/orders?delay=0.3"), data=b"{}", idempotency_key=key, attempts=5
            )
        )

    threads = [threading.Thread(target=one) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert server.counters.runs[key] == 1
    assert [r.status_code for r in out] == [201] * 10
    assert len({r.content for r in out}) == 1
    assert all(r.idempotency_key == key for r in out)
    assert any(r.attempts > 1 for r in out)


def test_a_failing_handler_releases_the_key(server: Server) -> None:
    key = mulligan.new_idempotency_key()
    status, _, _ = post(server.port, "/fail", b"{}", key)
    assert status == 500
    assert server.store.stats()["in_flight"] == 0
    status, headers, payload = post(server.port, "/fail", b"{}", key)
    assert status == 201 and "idempotent-replayed" not in headers
    assert server.counters.failures[key] == 2
    assert server.counters.runs[key] == 1
    status, headers, replay = post(server.port, "/fail", b"{}", key)
    assert (status, headers["idempotent-replayed"], replay) == (201, "true", payload)


def test_same_key_different_body_is_422_and_the_handler_does_not_run(server: Server) -> None:
    key = mulligan.new_idempotency_key()
    assert post(server.port, "/orders", b'{"amount": 1}', key)[0] == 201
    status, headers, payload = post(server.port, "/orders", b'{"amount": 2}', key)
    assert status == 422
    assert headers["content-type"] == "application/problem+json"
    problem = json.loads(payload)
    assert problem["status"] == 422 and problem["type"].endswith("idempotency-key-reused")
    assert set(problem) == {"type", "title", "status", "detail"}
    assert server.counters.runs[key] == 1


def test_missing_and_malformed_keys_get_400(server: Server) -> None:
    status, headers, payload = post(server.port, "/required/orders", b"{}", None)
    assert status == 400 and headers["content-type"] == "application/problem+json"
    assert json.loads(payload)["type"].endswith("idempotency-key-missing")
    for bad in ['"unterminated', '"bad \\n escape"', "x" * 256, '"' + "y" * 256 + '"', 'a"b']:
        status, _, payload = post(server.port, "/orders", b"{}", bad)
        assert status == 400, bad
        assert json.loads(payload)["type"].endswith("idempotency-key-malformed")
    # Without `required`, a request without a key passes through untouched.
    assert post(server.port, "/orders", b"{}", None)[0] == 201
    assert post(server.port, "/orders", b"{}", None)[0] == 201
    assert server.counters.runs[""] == 2
    assert sum(server.counters.runs.values()) == 2


def test_structured_field_and_bare_keys_name_the_same_entry(server: Server) -> None:
    assert post(server.port, "/orders", b"{}", '"order-77"')[0] == 201
    status, headers, _ = post(server.port, "/orders", b"{}", "order-77")
    assert status == 201 and headers["idempotent-replayed"] == "true"


def test_scopes_keep_users_apart(server: Server) -> None:
    key = "shared-key-1"
    a = post(server.port, "/orders", b"{}", key, user="alice")
    b = post(server.port, "/orders", b"{}", key, user="bob")
    assert a[0] == b[0] == 201
    assert json.loads(a[2])["user"] == "alice" and json.loads(b[2])["user"] == "bob"
    assert "idempotent-replayed" not in b[1]
    again = post(server.port, "/orders", b"{}", key, user="bob")
    assert again[1]["idempotent-replayed"] == "true" and json.loads(again[2])["user"] == "bob"


# --- the flaky path ----------------------------------------------------------


class DropFirstResponseProxy:
    """A TCP proxy in front of a server that, for the first request carrying a
    given Idempotency-Key, forwards the request, waits for the whole response
    (so the handler has run) and then closes the client's connection without
    sending a byte of it: a response lost on the way back."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.dropped: list[str] = []
        self.forwarded = 0
        self._seen: set[str] = set()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self.listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _read_message(sock: socket.socket, buf: bytes) -> tuple[Optional[bytes], bytes]:
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                return None, buf
            buf += chunk
        head, _, rest = buf.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                return None, buf
            rest += chunk
        return head + b"\r\n\r\n" + rest[:length], rest[length:]

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            while True:
                request, buf = self._read_message(conn, buf)
                if request is None:
                    return
                key = ""
                for line in request.split(b"\r\n\r\n")[0].split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"idempotency-key":
                        key = value.strip().decode("latin-1")
                with socket.create_connection(("127.0.0.1", self.upstream_port)) as up:
                    up.sendall(request)
                    response, _ = self._read_message(up, b"")
                if response is None:
                    return
                if key and key not in self._seen:
                    self._seen.add(key)
                    self.dropped.append(key)
                    return  # closes the client's connection: the response is lost
                self.forwarded += 1
                conn.sendall(response)


def test_client_retry_through_a_flaky_path_applies_the_side_effect_once(server: Server) -> None:
    proxy = DropFirstResponseProxy(server.port)
    try:
        client = mulligan.Client()
        response = client.post(
            f"http://127.0.0.1:{proxy.port}/orders",
            json={"amount": 99},
            idempotency_key=True,
            attempts=3,
            base_delay=0.05,
        )
    finally:
        proxy.close()
    key = response.idempotency_key
    assert key is not None and proxy.dropped == [key]
    assert response.status_code == 201
    assert response.attempts == 2
    assert response.headers["Idempotent-Replayed"] == "true"
    assert server.counters.runs[key] == 1  # the side effect happened once
    assert response.json()["echo"] == '{"amount":99}'


def test_the_key_is_visible_on_the_transport_error(server: Server) -> None:
    proxy = DropFirstResponseProxy(server.port)
    try:
        with pytest.raises(mulligan.TransportError) as info:
            mulligan.Client().post(
                f"http://127.0.0.1:{proxy.port}/orders",
                data=b"{}",
                headers={"Idempotency-Key": "header-key-1"},
                attempts=1,
            )
    finally:
        proxy.close()
    # The key is visible on the error, and the handler ran once.
    assert info.value.idempotency_key == "header-key-1"
    assert server.counters.runs["header-key-1"] == 1


def test_caller_supplied_key_round_trips(server: Server) -> None:
    response = mulligan.Client().post(
        server.url("/orders"), data=b"{}", idempotency_key="client-chosen-42"
    )
    assert response.status_code == 201 and response.idempotency_key == "client-chosen-42"
    assert server.counters.runs["client-chosen-42"] == 1
    again = mulligan.Client().post(
        server.url("/orders"), data=b"{}", idempotency_key="client-chosen-42"
    )
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == response.content
