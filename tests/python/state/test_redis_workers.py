"""Issue 16's "must show": 200 concurrent same-key POSTs across 4 uvicorn
worker processes sharing one Redis idempotency store run the handler exactly
once, and every answer is the stored response or a 409.

uvicorn (``--workers 4``), Starlette and redis-server are real; the app is a
small module written to a temporary folder. Each worker process has its own
``mulligan.RedisState`` and ``IdempotencyStore(state=...)``.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

APP = '''
import asyncio
import os

import mulligan
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route


def make():
    state = mulligan.RedisState(os.environ["APP_REDIS_URL"], prefix="w4")
    store = mulligan.IdempotencyStore(state=state, lease=30, in_flight_retry_after=0.05)
    runs = os.environ["APP_RUNS_FILE"]

    async def orders(request: Request) -> JSONResponse:
        body = await request.body()
        with open(runs, "a") as f:
            f.write(f"{os.getpid()}\\n")
        await asyncio.sleep(0.5)  # every other request arrives while this runs
        return JSONResponse({"ran_in": os.getpid(), "echo": body.decode()}, status_code=201)

    async def pid(request: Request) -> PlainTextResponse:
        return PlainTextResponse(str(os.getpid()))

    app = Starlette(routes=[Route("/orders", orders, methods=["POST"]), Route("/pid", pid)])
    app.add_middleware(mulligan.IdempotencyMiddleware, store=store)
    return app
'''


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _request(port: int, method: str, path: str, body: bytes = b"",
             headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def test_200_concurrent_same_key_posts_across_4_workers_run_once(
    redis_server: Any, tmp_path: Any
) -> None:
    (tmp_path / "w4app.py").write_text(APP)
    runs = tmp_path / "runs.txt"
    runs.write_text("")
    port = _free_port()
    env = dict(os.environ, APP_REDIS_URL=redis_server.url, APP_RUNS_FILE=str(runs))
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--factory", "w4app:make", "--workers", "4",
         "--host", "127.0.0.1", "--port", str(port), "--app-dir", str(tmp_path),
         "--log-level", "warning", "--no-access-log"],
        env=env,
    )
    try:
        # Wait until all four workers answer (each reports its pid).
        pids: set[str] = set()
        deadline = time.monotonic() + 60
        while len(pids) < 4 and time.monotonic() < deadline:
            try:
                pids.add(_request(port, "GET", "/pid")[2].decode())
            except OSError:
                time.sleep(0.05)
        assert len(pids) == 4, f"only {len(pids)} uvicorn workers answered"

        headers = {"Idempotency-Key": "order-2024-0001", "Content-Type": "application/json"}
        body = json.dumps({"sku": "A-1", "qty": 2}).encode()
        with ThreadPoolExecutor(max_workers=200) as pool:
            answers = list(pool.map(
                lambda _: _request(port, "POST", "/orders", body, headers), range(200)))

        ran = runs.read_text().split()
        assert len(ran) == 1, f"the handler ran {len(ran)} times: {ran}"
        statuses = [status for status, _, _ in answers]
        assert set(statuses) <= {201, 409}, statuses
        created = [a for a in answers if a[0] == 201]
        assert created, "no answer carried the response"
        for _, h, b in created:
            assert json.loads(b) == {"ran_in": int(ran[0]), "echo": body.decode()}
        for status, h, _ in answers:
            if status == 409:
                assert "retry-after" in h
        # After the first finished: every repeat is the stored response.
        status, h, b = _request(port, "POST", "/orders", body, headers)
        assert status == 201
        assert h.get("idempotent-replayed") == "true"
        assert json.loads(b)["ran_in"] == int(ran[0])
        assert len(runs.read_text().split()) == 1
        print(f"4 workers {sorted(pids)}: {statuses.count(201)} x 201, "
              f"{statuses.count(409)} x 409, handler ran once in {ran[0]}")
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
