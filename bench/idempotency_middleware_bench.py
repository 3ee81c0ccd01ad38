"""idempotency_middleware_bench — the per-request cost of mulligan's idempotency
middlewares, without a network: the ASGI and WSGI apps are called directly with
a trivial inner app, so the difference to the bare app is the middleware's own
overhead (key parsing, body buffering, SHA-256 fingerprint, store look-up,
response capture and storage).

    python bench/idempotency_middleware_bench.py     (after pip install .)
"""

from __future__ import annotations

import asyncio
import io
import time
from typing import Any

import mulligan

N = 50_000
BODY = b'{"amount": 4200, "currency": "eur", "customer": "cus_123"}'


async def inner_asgi(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send(
        {
            "type": "http.response.start",
            "status": 201,
            "headers": [(b"content-type", b"application/json"), (b"content-length", b"11")],
        }
    )
    await send({"type": "http.response.body", "body": b'{"id": 42}\n', "more_body": False})


def asgi_scope(key: bytes | None) -> dict[str, Any]:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"60")]
    if key is not None:
        headers.append((b"idempotency-key", key))
    return {
        "type": "http",
        "method": "POST",
        "path": "/orders",
        "query_string": b"",
        "headers": headers,
    }


async def bench_asgi(app: Any, keys: list[bytes | None]) -> float:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": BODY, "more_body": False}

    async def send(message: Any) -> None:
        pass

    scopes = [asgi_scope(k) for k in keys]
    start = time.perf_counter()
    for scope in scopes:
        await app(scope, receive, send)
    return (time.perf_counter() - start) / len(scopes)


def inner_wsgi(environ: Any, start_response: Any) -> list[bytes]:
    environ["wsgi.input"].read()
    start_response("201 Created", [("Content-Type", "application/json"), ("Content-Length", "11")])
    return [b'{"id": 42}\n']


def bench_wsgi(app: Any, keys: list[str | None]) -> float:
    def start_response(status: str, headers: Any, exc_info: Any = None) -> Any:
        return None

    environs = []
    for k in keys:
        env = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": "/orders",
            "QUERY_STRING": "",
            "CONTENT_LENGTH": str(len(BODY)),
        }
        if k is not None:
            env["HTTP_IDEMPOTENCY_KEY"] = k
        environs.append(env)
    start = time.perf_counter()
    for env in environs:
        env["wsgi.input"] = io.BytesIO(BODY)
        for _ in app(env, start_response):
            pass
    return (time.perf_counter() - start) / len(environs)


def main() -> None:
    fresh = [f'"{mulligan.new_idempotency_key()}"'.encode() for _ in range(N)]
    same = [b'"8e03978e-40d5-43e8-bc93-6894a57f9324"'] * N

    store = mulligan.IdempotencyStore()
    asgi = mulligan.IdempotencyMiddleware(inner_asgi, store=store)
    bare = asyncio.run(bench_asgi(inner_asgi, [None] * N))
    passthrough = asyncio.run(bench_asgi(asgi, [None] * N))
    first = asyncio.run(bench_asgi(asgi, list(fresh)))
    replay = asyncio.run(bench_asgi(asgi, list(same)))
    print(f"ASGI  bare app            {bare * 1e6:6.2f} us/request")
    print(f"ASGI  no key (pass)      +{(passthrough - bare) * 1e6:6.2f} us")
    print(f"ASGI  first run (store)  +{(first - bare) * 1e6:6.2f} us")
    print(f"ASGI  replay             +{(replay - bare) * 1e6:6.2f} us")

    store = mulligan.IdempotencyStore()
    wsgi = mulligan.WSGIIdempotencyMiddleware(inner_wsgi, store=store)
    wfresh = [k.decode() for k in fresh]
    wsame = [k.decode() for k in same]
    bare = bench_wsgi(inner_wsgi, [None] * N)
    passthrough = bench_wsgi(wsgi, [None] * N)
    first = bench_wsgi(wsgi, wfresh)
    replay = bench_wsgi(wsgi, wsame)
    print(f"WSGI  bare app            {bare * 1e6:6.2f} us/request")
    print(f"WSGI  no key (pass)      +{(passthrough - bare) * 1e6:6.2f} us")
    print(f"WSGI  first run (store)  +{(first - bare) * 1e6:6.2f} us")
    print(f"WSGI  replay             +{(replay - bare) * 1e6:6.2f} us")


if __name__ == "__main__":
    main()
