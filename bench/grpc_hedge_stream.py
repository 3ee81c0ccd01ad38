#!/usr/bin/env python3
"""Hedged unary-stream gRPC calls against a slow tail, on loopback (issue 18).

Run after `pip install .` and `pip install '.[grpc]'`:

    python bench/grpc_hedge_stream.py [--calls 2000] [--delay 0.01]

One grpcio server (a separate process, 8 threads) answers
``/bench.Echo/Stream`` with 3 messages; every 50th call it receives (2%)
waits 100 ms before its first message. Each client makes ``--calls``
sequential calls and times each one to its last message; in this one run:

- sync ``RetryInterceptor(service_config=True)`` over a service config whose
  entry has no policy (one attempt: no hedging), then one with a
  ``hedgingPolicy`` (``maxAttempts`` 2, ``hedgingDelay`` ``--delay``);
- the same two with ``aio_interceptors(service_config=True)`` on one loop.

Prints p50, p99 and p99.9 in ms, the server's calls per client call (1 +
the extra load) and the hedged/unhedged p99 ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import tempfile
import time
from typing import Any

import grpc
import grpc.aio

import mulligan
from mulligan.adapters.grpc import RetryInterceptor, aio_interceptors

METHOD = "/bench.Echo/Stream"
EVERY = 50
STALL = 0.1


def _serve(port_out: Any, count: Any, stop: Any) -> None:
    import threading
    from concurrent import futures

    lock = threading.Lock()

    def stream(request: bytes, context: Any) -> Any:
        with lock:
            count.value += 1
            n = count.value
        if n % EVERY == 0:
            ended = threading.Event()
            context.add_callback(ended.set)
            ended.wait(STALL)  # cut short when the client cancels this copy
            if not context.is_active():
                return
        yield from (b"1", b"2", b"3")

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    handler = grpc.unary_stream_rpc_method_handler(stream)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("bench.Echo", {"Stream": handler}),))
    port_out.put(server.add_insecure_port("127.0.0.1:0"))
    server.start()
    stop.wait()
    server.stop(None)


def _config(directory: str, delay: float | None) -> None:
    entry: dict[str, Any] = {"name": [{"service": "bench.Echo"}]}
    if delay is not None:
        entry["hedgingPolicy"] = {"maxAttempts": 2, "hedgingDelay": f"{delay}s"}
    path = os.path.join(directory, "service_config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"methodConfig": [entry]}, f)
    mulligan.load_config(path)


def _sync(target: str, calls: int) -> list[float]:
    channel = grpc.intercept_channel(grpc.insecure_channel(target), RetryInterceptor(service_config=True))
    method = channel.unary_stream(METHOD)
    out = []
    for _ in range(calls):
        began = time.perf_counter()
        assert list(method(b"x", timeout=5)) == [b"1", b"2", b"3"]
        out.append(time.perf_counter() - began)
    channel.close()
    return out


def _aio(target: str, calls: int) -> list[float]:
    async def main() -> list[float]:
        out = []
        async with grpc.aio.insecure_channel(target, interceptors=aio_interceptors(service_config=True)) as ch:
            method = ch.unary_stream(METHOD)
            for _ in range(calls):
                began = time.perf_counter()
                assert [m async for m in method(b"x", timeout=5)] == [b"1", b"2", b"3"]
                out.append(time.perf_counter() - began)
        return out

    return asyncio.run(main())


def _quantile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--delay", type=float, default=0.01, help="hedgingDelay, seconds")
    args = parser.parse_args()
    ctx = multiprocessing.get_context("spawn")
    port_out, count, stop = ctx.Queue(), ctx.Value("l", 0), ctx.Event()
    server = ctx.Process(target=_serve, args=(port_out, count, stop), daemon=True)
    server.start()
    target = f"127.0.0.1:{port_out.get(timeout=30)}"
    print(f"grpcio {grpc.__version__}, {args.calls} calls each, {100 // EVERY}% of server calls "
          f"stall {STALL * 1000:.0f} ms, load average {os.getloadavg()[0]:.1f}")
    print("| client | p50 ms | p99 ms | p99.9 ms | server calls per call | p99 vs unhedged |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as directory:
        for kind, run in (("sync", _sync), ("aio", _aio)):
            base = None
            for delay in (None, args.delay):
                _config(directory, delay)
                before = count.value
                times = sorted(run(target, args.calls))
                ratio = (count.value - before) / args.calls
                p99 = _quantile(times, 0.99)
                base = p99 if base is None else base
                name = f"{kind}, " + ("no hedging" if delay is None else f"hedged, delay {delay * 1000:g} ms")
                print(f"| {name} | {_quantile(times, 0.5) * 1000:.2f} | {p99 * 1000:.2f} | "
                      f"{_quantile(times, 0.999) * 1000:.2f} | {ratio:.4f} | {base / p99:.1f}x |")
    stop.set()
    server.join(10)


if __name__ == "__main__":
    main()
