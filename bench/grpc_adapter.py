#!/usr/bin/env python3
"""The cost of mulligan's gRPC interceptors over a bare grpcio channel, on loopback.

Run after `pip install .` and `pip install '.[grpc]'`:

    python bench/grpc_adapter.py [--calls 2000] [--repeat 3]

One grpcio server (a separate process, generic bytes handler, 4 threads)
answers every unary call at once, so each figure is what the retry layer
costs when nothing fails (the common case). The clients, in this one run,
interleaved in each round:

- sync: a bare ``grpc.insecure_channel``; the same channel with grpcio's own
  retries (``grpc.enable_retries`` and a service config ``retryPolicy`` of 3
  attempts on UNAVAILABLE, the peer's way); a pass-through Python interceptor
  (what any ``grpc.intercept_channel`` interceptor costs); mulligan's
  ``RetryInterceptor(attempts=3)``; and the same with ``breaker=True`` and a
  call ``timeout=`` (the per-call deadline path).
- aio, sequential on one loop: a bare ``grpc.aio`` channel, a pass-through aio
  interceptor, mulligan's ``AsyncRetryInterceptor(attempts=3)``.

Each figure is the best of ``--repeat`` rounds: the wall time per call and
this process's CPU time per call (time.process_time: excludes the server
process and whatever else the machine runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import time
from typing import Any, Callable

import grpc
import grpc.aio

METHOD = "/bench.Echo/Unary"
GRPC_RETRY = json.dumps({
    "methodConfig": [{
        "name": [{"service": "bench.Echo"}],
        "retryPolicy": {
            "maxAttempts": 3, "initialBackoff": "0.2s", "maxBackoff": "10s",
            "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"],
        },
    }]
})


def _serve(port_out: Any, stop: Any) -> None:
    from concurrent import futures

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handler = grpc.unary_unary_rpc_method_handler(lambda request, context: request)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("bench.Echo", {"Unary": handler}),))
    port_out.put(server.add_insecure_port("127.0.0.1:0"))
    server.start()
    stop.wait()
    server.stop(None)


class _PassThrough(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(details, request)


class _AioPassThrough(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(details, request)


def _timed(n: int, one: Callable[[], Any]) -> tuple[float, float]:
    for _ in range(20):
        one()  # warm up the connection
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        one()
    return (time.perf_counter() - t0) / n, (time.process_time() - c0) / n


def _sync_clients(target: str) -> dict[str, Callable[[], Any]]:
    from mulligan.adapters.grpc import RetryInterceptor

    def call(channel: Any, **kw: Any) -> Callable[[], Any]:
        stub = channel.unary_unary(METHOD)
        return lambda: stub(b"x", **kw)

    return {
        "grpc channel (bare)": call(grpc.insecure_channel(target)),
        "grpc + enable_retries, retryPolicy(3)": call(grpc.insecure_channel(
            target, options=[("grpc.enable_retries", 1), ("grpc.service_config", GRPC_RETRY)])),
        "grpc + pass-through interceptor": call(
            grpc.intercept_channel(grpc.insecure_channel(target), _PassThrough())),
        "grpc + mulligan RetryInterceptor(attempts=3)": call(
            grpc.intercept_channel(grpc.insecure_channel(target), RetryInterceptor(attempts=3))),
        "grpc + mulligan RetryInterceptor(3, breaker), timeout=5": call(
            grpc.intercept_channel(grpc.insecure_channel(target), RetryInterceptor(attempts=3, breaker=True)),
            timeout=5.0),
    }


async def _aio_round(target: str, n: int) -> dict[str, tuple[float, float]]:
    from mulligan.adapters.grpc import AsyncRetryInterceptor

    out = {}
    kinds = {
        "grpc.aio channel (bare)": [],
        "grpc.aio + pass-through interceptor": [_AioPassThrough()],
        "grpc.aio + mulligan AsyncRetryInterceptor(attempts=3)": [AsyncRetryInterceptor(attempts=3)],
    }
    for name, interceptors in kinds.items():
        async with grpc.aio.insecure_channel(target, interceptors=interceptors or None) as ch:
            stub = ch.unary_unary(METHOD)
            for _ in range(20):
                await stub(b"x")
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(n):
                await stub(b"x")
            out[name] = ((time.perf_counter() - t0) / n, (time.process_time() - c0) / n)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    ports: Any = multiprocessing.Queue()
    stop = multiprocessing.Event()
    proc = multiprocessing.Process(target=_serve, args=(ports, stop), daemon=True)
    proc.start()
    target = f"127.0.0.1:{ports.get(timeout=30)}"
    best: dict[str, tuple[float, float]] = {}
    try:
        clients = _sync_clients(target)
        for _ in range(args.repeat):
            for name, one in clients.items():
                wall, cpu = _timed(args.calls, one)
                old = best.get(name)
                best[name] = (wall, cpu) if old is None else (min(old[0], wall), min(old[1], cpu))
            for name, (wall, cpu) in asyncio.run(_aio_round(target, args.calls)).items():
                old = best.get(name)
                best[name] = (wall, cpu) if old is None else (min(old[0], wall), min(old[1], cpu))
    finally:
        stop.set()
        proc.join(10)
    print(f"# grpcio {grpc.__version__}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"{args.calls} calls x best of {args.repeat}; load average {os.getloadavg()[0]:.1f}")
    print("| client | µs/call (wall) | client CPU µs/call | CPU over the bare channel |")
    print("| --- | ---: | ---: | ---: |")
    bare = {"grpc.": best["grpc channel (bare)"][1], "grpc.aio": best["grpc.aio channel (bare)"][1]}
    for name, (wall, cpu) in best.items():
        base = bare["grpc.aio"] if name.startswith("grpc.aio") else bare["grpc."]
        over = "" if "(bare)" in name else f"{(cpu - base) * 1e6:+.1f}"
        print(f"| {name} | {wall * 1e6:.1f} | {cpu * 1e6:.1f} | {over} |")


if __name__ == "__main__":
    main()
