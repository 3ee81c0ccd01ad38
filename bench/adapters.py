#!/usr/bin/env python3
"""The cost of mulligan's client adapters over the bare client, on loopback nginx.

Run after `pip install .` and `pip install '.[bench]'` (requests, urllib3,
httpx, aiohttp, tenacity), with nginx installed (Debian nginx-light and
libnginx-mod-http-echo, as for the tests):

    python bench/adapters.py [--requests 3000] [--concurrency 20] [--repeat 3]

One nginx (tests/nginx, one worker) serves every client in this one run;
every request is a GET of /ok that succeeds at its first attempt, so each
figure is what the retry layer costs when nothing fails (the common case).

For each library: the bare client (no retry layer), what users put on it
today to retry, and mulligan's adapter with the same budget (3 attempts):

- requests, sequential: HTTPAdapter(max_retries=0) bare; HTTPAdapter with
  urllib3's Retry(total=3, backoff_factor=0.2, status_forcelist=[408, 429,
  500, 502, 503, 504]); mulligan.adapters.requests.Adapter(attempts=3).
- httpx.Client, sequential: bare; HTTPTransport(retries=3) (connection
  failures only); tenacity's @retry(stop_after_attempt(3), wait_exponential,
  on httpx.TransportError and a retryable status) around client.get;
  mulligan.adapters.httpx.Transport(attempts=3).
- httpx.AsyncClient and aiohttp, `--concurrency` in flight on one asyncio
  loop: bare; AsyncHTTPTransport(retries=3) / tenacity's AsyncRetrying for
  httpx, a pass-through middleware for aiohttp (what any middleware costs);
  mulligan's AsyncTransport / Middleware(attempts=3).

Each figure is the best of `--repeat` rounds (the clients interleave in each
round). Two figures per client: the wall time per request, and this
process's CPU time per request (time.process_time), which excludes nginx and
whatever else the machine runs: the overhead of a retry layer is CPU spent in
the client, and that figure stays readable on a shared machine. By default (`--pin 0`) nginx and the sequential clients share CPU 0
and the concurrent ones run on the other CPUs (see bench/http_bench.py for
why); `--pin -1` leaves placement to the kernel.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import time
from typing import Any, Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "nginx"))
from nginx_server import NginxServer  # noqa: E402

RETRYABLE = (408, 429, 500, 502, 503, 504)


Times = tuple[float, float]  # (wall seconds, this process's CPU seconds)


def _timed(n: int, one: Callable[[], Any]) -> Times:
    one()  # warm the connection
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        one()
    return time.perf_counter() - t0, time.process_time() - c0


# -- requests -----------------------------------------------------------------


def _requests_session(adapter: Any) -> Any:
    import requests

    s = requests.Session()
    s.trust_env = False
    s.mount("http://", adapter)
    return s


def requests_bare(url: str, n: int) -> Times:
    from requests.adapters import HTTPAdapter

    s = _requests_session(HTTPAdapter(max_retries=0))
    try:
        return _timed(n, lambda: _ok(s.get(url).status_code))
    finally:
        s.close()


def requests_urllib3_retry(url: str, n: int) -> Times:
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    retry = Retry(total=3, backoff_factor=0.2, status_forcelist=list(RETRYABLE))
    s = _requests_session(HTTPAdapter(max_retries=retry))
    try:
        return _timed(n, lambda: _ok(s.get(url).status_code))
    finally:
        s.close()


def requests_mulligan(url: str, n: int) -> Times:
    from mulligan.adapters.requests import Adapter

    s = _requests_session(Adapter(attempts=3))
    try:
        return _timed(n, lambda: _ok(s.get(url).status_code))
    finally:
        s.close()


# -- httpx, sync ----------------------------------------------------------------


def httpx_bare(url: str, n: int) -> Times:
    import httpx

    with httpx.Client(trust_env=False) as c:
        return _timed(n, lambda: _ok(c.get(url).status_code))


def httpx_retries(url: str, n: int) -> Times:
    import httpx

    with httpx.Client(transport=httpx.HTTPTransport(retries=3), trust_env=False) as c:
        return _timed(n, lambda: _ok(c.get(url).status_code))


def httpx_tenacity(url: str, n: int) -> Times:
    import httpx
    import tenacity

    with httpx.Client(trust_env=False) as c:

        @tenacity.retry(
            stop=tenacity.stop_after_attempt(3),
            wait=tenacity.wait_exponential(multiplier=0.2, max=10),
            retry=tenacity.retry_if_exception_type(httpx.TransportError)
            | tenacity.retry_if_result(lambda r: r.status_code in RETRYABLE),
            reraise=True,
        )
        def get() -> Any:
            return c.get(url)

        return _timed(n, lambda: _ok(get().status_code))


def httpx_mulligan(url: str, n: int) -> Times:
    import httpx

    from mulligan.adapters.httpx import Transport

    with httpx.Client(transport=Transport(attempts=3), trust_env=False) as c:
        return _timed(n, lambda: _ok(c.get(url).status_code))


# -- concurrent -----------------------------------------------------------------


async def _workers(n: int, conc: int, one: Callable[[], Any]) -> Times:
    per = [n // conc + (1 if i < n % conc else 0) for i in range(conc)]

    async def worker(k: int) -> None:
        for _ in range(k):
            await one()

    await asyncio.gather(*(worker(1) for _ in range(conc)))  # warm the connections
    t0, c0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker(k) for k in per))
    return time.perf_counter() - t0, time.process_time() - c0


def _httpx_async(url: str, n: int, conc: int, transport: Any, wrap: Any = None) -> Times:
    import httpx

    async def main() -> Times:
        limits = httpx.Limits(max_connections=conc, max_keepalive_connections=conc)
        kwargs: dict[str, Any] = {"limits": limits, "trust_env": False}
        if transport is not None:
            kwargs = {"transport": transport(limits), "trust_env": False}
        async with httpx.AsyncClient(**kwargs) as c:
            get = (lambda: c.get(url)) if wrap is None else wrap(c, url)

            async def one() -> None:
                _ok((await get()).status_code)

            return await _workers(n, conc, one)

    return asyncio.run(main())


def httpx_async_bare(url: str, n: int, conc: int) -> Times:
    return _httpx_async(url, n, conc, None)


def httpx_async_retries(url: str, n: int, conc: int) -> Times:
    import httpx

    return _httpx_async(url, n, conc, lambda limits: httpx.AsyncHTTPTransport(retries=3, limits=limits))


def httpx_async_tenacity(url: str, n: int, conc: int) -> Times:
    import httpx
    import tenacity

    def wrap(c: Any, url: str) -> Any:
        async def get() -> Any:
            async for attempt in tenacity.AsyncRetrying(
                stop=tenacity.stop_after_attempt(3),
                wait=tenacity.wait_exponential(multiplier=0.2, max=10),
                retry=tenacity.retry_if_exception_type(httpx.TransportError)
                | tenacity.retry_if_result(lambda r: r.status_code in RETRYABLE),
                reraise=True,
            ):
                with attempt:
                    r = await c.get(url)
                if not attempt.retry_state.outcome.failed:  # type: ignore[union-attr]
                    attempt.retry_state.set_result(r)
            return r

        return get

    return _httpx_async(url, n, conc, None, wrap)


def httpx_async_mulligan(url: str, n: int, conc: int) -> Times:
    import httpx

    from mulligan.adapters.httpx import AsyncTransport

    return _httpx_async(
        url, n, conc,
        lambda limits: AsyncTransport(httpx.AsyncHTTPTransport(limits=limits), attempts=3),
    )


def _aiohttp(url: str, n: int, conc: int, middlewares: tuple[Any, ...]) -> Times:
    import aiohttp

    async def main() -> Times:
        connector = aiohttp.TCPConnector(limit=conc)
        async with aiohttp.ClientSession(connector=connector, middlewares=middlewares) as s:
            async def one() -> None:
                async with s.get(url) as r:
                    await r.read()
                    _ok(r.status)

            return await _workers(n, conc, one)

    return asyncio.run(main())


def aiohttp_bare(url: str, n: int, conc: int) -> Times:
    return _aiohttp(url, n, conc, ())


def aiohttp_passthrough(url: str, n: int, conc: int) -> Times:
    async def passthrough(req: Any, handler: Any) -> Any:
        return await handler(req)

    return _aiohttp(url, n, conc, (passthrough,))


def aiohttp_mulligan(url: str, n: int, conc: int) -> Times:
    from mulligan.adapters.aiohttp import Middleware

    return _aiohttp(url, n, conc, (Middleware(attempts=3),))


def _ok(status: int) -> None:
    assert status == 200, status


# -- in process (no network) ----------------------------------------------------


def inprocess_overhead(n: int) -> list[tuple[str, float]]:
    """µs of CPU per request that each retry layer adds over httpx.Client on an
    httpx.MockTransport (no socket, no server: what is left is the layer)."""
    import httpx
    import tenacity

    from mulligan.adapters.httpx import Transport

    ok = httpx.Response(200)

    def handler(request: Any) -> Any:
        return ok

    def run(client: Any, get: Optional[Callable[[], Any]] = None) -> float:
        one = get if get is not None else (lambda: client.get("http://127.0.0.1:1/ok"))
        one()
        c0 = time.process_time()
        for _ in range(n):
            one()
        return (time.process_time() - c0) / n * 1e6

    results: list[tuple[str, float]] = []
    with httpx.Client(transport=httpx.MockTransport(handler)) as c:
        bare = run(c)

        @tenacity.retry(stop=tenacity.stop_after_attempt(3),
                        retry=tenacity.retry_if_exception_type(httpx.TransportError)
                        | tenacity.retry_if_result(lambda r: r.status_code in RETRYABLE),
                        reraise=True)
        def get() -> Any:
            return c.get("http://127.0.0.1:1/ok")

        results.append(("httpx + tenacity @retry(3)", run(c, get) - bare))
    with httpx.Client(transport=Transport(httpx.MockTransport(handler), attempts=3)) as c:
        results.append(("httpx + mulligan Transport(attempts=3)", run(c) - bare))
    results.insert(0, ("httpx.Client on MockTransport (bare: its own µs)", bare))
    return results


# -- report -------------------------------------------------------------------

# (group, label, role, function, concurrent); role: "bare", "peer" (what the
# adapter replaces) or "mulligan".
ROWS: list[tuple[str, str, str, Callable[..., Times], bool]] = [
    ("requests", "requests, HTTPAdapter(max_retries=0)", "bare", requests_bare, False),
    ("requests", "requests + urllib3 Retry(3)", "peer", requests_urllib3_retry, False),
    ("requests", "requests + mulligan Adapter(attempts=3)", "mulligan", requests_mulligan, False),
    ("httpx", "httpx.Client", "bare", httpx_bare, False),
    ("httpx", "httpx + HTTPTransport(retries=3)", "peer", httpx_retries, False),
    ("httpx", "httpx + tenacity @retry(3)", "peer", httpx_tenacity, False),
    ("httpx", "httpx + mulligan Transport(attempts=3)", "mulligan", httpx_mulligan, False),
    ("httpx async", "httpx.AsyncClient", "bare", httpx_async_bare, True),
    ("httpx async", "httpx + AsyncHTTPTransport(retries=3)", "peer", httpx_async_retries, True),
    ("httpx async", "httpx + tenacity AsyncRetrying(3)", "peer", httpx_async_tenacity, True),
    ("httpx async", "httpx + mulligan AsyncTransport(attempts=3)", "mulligan", httpx_async_mulligan, True),
    ("aiohttp", "aiohttp.ClientSession", "bare", aiohttp_bare, True),
    ("aiohttp", "aiohttp + a pass-through middleware", "peer", aiohttp_passthrough, True),
    ("aiohttp", "aiohttp + mulligan Middleware(attempts=3)", "mulligan", aiohttp_mulligan, True),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pin", type=int, default=0,
                        help="CPU for nginx and the sequential clients (default 0; -1: no pinning)")
    args = parser.parse_args()
    n, conc = args.requests, args.concurrency
    seq_cpus: Optional[set[int]] = None
    other_cpus: Optional[set[int]] = None
    placement = "unpinned"
    if args.pin >= 0 and hasattr(os, "sched_setaffinity"):
        allowed = os.sched_getaffinity(0)
        if args.pin in allowed:
            seq_cpus = {args.pin}
            other_cpus = (allowed - seq_cpus) or seq_cpus
            placement = "nginx and sequential clients on CPU %d, concurrent clients on CPU %s" % (
                args.pin, ",".join(map(str, sorted(other_cpus))))

    def place(cpus: Optional[set[int]]) -> None:
        if cpus:
            os.sched_setaffinity(0, cpus)

    place(seq_cpus)  # nginx, started below, inherits it
    best: dict[str, float] = {}
    cpu: dict[str, float] = {}
    with NginxServer() as server:
        url = server.url("/ok")
        for _ in range(args.repeat):
            for _group, label, _role, fn, concurrent in ROWS:
                place(other_cpus if concurrent else seq_cpus)
                wall, used = fn(url, n, conc) if concurrent else fn(url, n)
                best[label] = min(wall, best.get(label, wall))
                cpu[label] = min(used, cpu.get(label, used))

    print("GET /ok on loopback nginx (1 worker), every request succeeding at once; %d requests "
          "per run, best of %d; Python %s, %s, %d CPUs (%s)" % (
              n, args.repeat, platform.python_version(), platform.machine(), os.cpu_count() or 0,
              placement))
    print()
    print("| library | client | mode | µs/request (wall) | client CPU µs/request | CPU over the bare "
          "client | mulligan's speed-up (CPU) |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for group in dict.fromkeys(g for g, *_ in ROWS):
        rows = [r for r in ROWS if r[0] == group]
        bare = next(cpu[r[1]] for r in rows if r[2] == "bare") / n * 1e6
        ours = next(cpu[r[1]] for r in rows if r[2] == "mulligan") / n * 1e6
        for _g, label, role, _fn, concurrent in rows:
            us = cpu[label] / n * 1e6
            mode = "%d in flight" % conc if concurrent else "sequential"
            over = "" if role == "bare" else "%+.1f" % (us - bare)
            speed = "%.2fx" % (us / ours) if role == "peer" else ""
            print("| %s | %s | %s | %.1f | %.1f | %s | %s |" % (
                group, label, mode, best[label] / n * 1e6, us, over, speed))
    print()
    print("In process, no network (httpx.MockTransport), CPU µs per request, best of %d:" % args.repeat)
    print()
    print("| client | µs added over the bare client |")
    print("| --- | ---: |")
    over: dict[str, float] = {}
    for _ in range(args.repeat):
        for label, us in inprocess_overhead(max(n, 2000)):
            over[label] = min(us, over.get(label, us))
    for label, us in over.items():
        print("| %s | %.1f |" % (label, us))
    print()
    print("client CPU = this process's CPU time per request (time.process_time: nginx and other "
          "processes excluded, so it reads the client's own cost even on a busy machine); "
          "CPU over the bare client = that minus the bare client's; mulligan's speed-up = the "
          "peer's CPU per request / the adapter's (above 1: the adapter is cheaper).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
