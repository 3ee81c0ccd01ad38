"""The adapters against mulligan's own idempotency middleware on uvicorn.

Concurrent POSTs with one Idempotency-Key reach a Starlette app behind
mulligan.IdempotencyMiddleware: the first runs the handler (slowly), the
others get 409 with Retry-After (the store's "still running"), which every
adapter waits out (real time: the server's lease is real) and retries with
the same key until the stored 201 is replayed. The handler runs once.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

uvicorn = pytest.importorskip("uvicorn")
requests = pytest.importorskip("requests")
httpx = pytest.importorskip("httpx")
aiohttp = pytest.importorskip("aiohttp", minversion="3.12")

from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

import mulligan  # noqa: E402
from mulligan.adapters.aiohttp import Middleware  # noqa: E402
from mulligan.adapters.httpx import AsyncTransport, Transport  # noqa: E402
from mulligan.adapters.requests import Adapter  # noqa: E402


class App:
    """The Starlette app and how often its handler ran, per key."""

    def __init__(self) -> None:
        self.runs: dict[str, int] = {}
        self.lock = threading.Lock()

        async def orders(request: Request) -> JSONResponse:
            key = request.headers.get("idempotency-key", "")
            with self.lock:
                self.runs[key] = self.runs.get(key, 0) + 1
                n = self.runs[key]
            await asyncio.sleep(0.3)
            return JSONResponse({"order": n}, status_code=201)

        app = Starlette(routes=[Route("/orders", orders, methods=["POST"])])
        app.add_middleware(
            mulligan.IdempotencyMiddleware,
            store=mulligan.IdempotencyStore(lease=30.0, in_flight_retry_after=1.0),
        )
        self.asgi = app


@pytest.fixture
def app_url() -> Iterator[tuple[App, str]]:
    app = App()
    config = uvicorn.Config(app.asgi, host="127.0.0.1", port=0, log_level="critical", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield app, f"http://127.0.0.1:{port}/orders"
    server.should_exit = True
    thread.join(10)


OPTIONS = {"attempts": 5, "backoff": "constant", "base_delay": 0.1, "jitter": "none"}


def test_requests_adapter_waits_out_409(app_url: tuple[App, str]) -> None:
    app, url = app_url
    key = mulligan.new_idempotency_key()
    out: list[Any] = []

    def one() -> None:
        with requests.Session() as s:
            s.trust_env = False
            s.mount("http://", Adapter(**OPTIONS))
            out.append(s.post(url, data=b"{}", headers={"Idempotency-Key": key}, timeout=10))

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert [r.status_code for r in out] == [201] * 4
    assert {r.json()["order"] for r in out} == {1}
    assert app.runs == {key: 1}


def test_httpx_transports_wait_out_409(app_url: tuple[App, str]) -> None:
    app, url = app_url
    key = mulligan.new_idempotency_key()

    async def run() -> list[Any]:
        async with httpx.AsyncClient(transport=AsyncTransport(**OPTIONS), trust_env=False) as c:
            return list(await asyncio.gather(
                *(c.post(url, content=b"{}", headers={"Idempotency-Key": key}) for _ in range(4))
            ))

    out = asyncio.run(run())
    with httpx.Client(transport=Transport(**OPTIONS), trust_env=False) as c:
        out.append(c.post(url, content=b"{}", headers={"Idempotency-Key": key}))  # a replay
    assert [r.status_code for r in out] == [201] * 5
    assert {r.json()["order"] for r in out} == {1}
    assert out[-1].headers.get("idempotent-replayed") == "true"
    assert app.runs == {key: 1}


def test_aiohttp_middleware_waits_out_409(app_url: tuple[App, str]) -> None:
    app, url = app_url
    key = mulligan.new_idempotency_key()

    async def run() -> list[tuple[int, Any]]:
        async with aiohttp.ClientSession(middlewares=(Middleware(**OPTIONS),)) as s:
            async def one() -> tuple[int, Any]:
                async with s.post(url, data=b"{}", headers={"Idempotency-Key": key}) as r:
                    return r.status, await r.json()

            return list(await asyncio.gather(*(one() for _ in range(4))))

    out = asyncio.run(run())
    assert [status for status, _ in out] == [201] * 4
    assert {body["order"] for _, body in out} == {1}
    assert app.runs == {key: 1}
