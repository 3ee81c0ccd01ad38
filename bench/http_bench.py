#!/usr/bin/env python3
"""HTTP client throughput of mulligan against its peers, on loopback nginx.

Run after `pip install .` and `pip install .[bench]` (requests, urllib3, httpx,
aiohttp, pycurl), with nginx installed (Debian nginx-light and
libnginx-mod-http-echo, as for the tests) and optionally wrk:

    python bench/http_bench.py [--requests 3000] [--concurrency 50] [--repeat 3]

One nginx (tests/nginx, one worker) serves every client in this one run.

Sequential: one client sends `--requests` GETs of /ok one after another on a
kept-alive connection. mulligan.Client (3 attempts, exponential backoff: the
retry engine is active, it simply never needs to retry) against requests +
urllib3 Retry (same budget), httpx.Client (no retry layer) and pycurl
reusing one easy handle with no retries at all: the floor, what libcurl alone
costs from Python.

Concurrent: `--requests` GETs with `--concurrency` in flight on one asyncio
loop: mulligan.AsyncClient against httpx.AsyncClient and aiohttp, each with
a connection limit of `--concurrency`. wrk (one thread, the same number of
connections) shows the ceiling of the server itself.

Each figure is the best of `--repeat` runs; ratios are against mulligan in
the same mode. A peer that is not installed is skipped and the table says so.

CPU placement: by default (`--pin 0`) nginx runs on CPU 0. Sequential
clients run on CPU 0 too: on a small VM a ping-pong between two CPUs pays an
idle vCPU's wake-up on every request, so unpinned sequential figures swing by
3x with whatever else the machine runs, while on one CPU they are stable
(each request costs client CPU plus nginx CPU, the same for every client).
Concurrent clients and wrk run on the other CPUs, as a load generator would.
`--pin -1` leaves placement to the kernel.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from typing import Any, Callable, Optional

import mulligan

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "nginx"))
from nginx_server import NginxServer  # noqa: E402


def have(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


# -- sequential ---------------------------------------------------------------


def seq_mulligan(url: str, n: int) -> float:
    with mulligan.Client(attempts=3) as c:
        c.get(url)
        t0 = time.perf_counter()
        for _ in range(n):
            r = c.get(url)
            assert r.status_code == 200
        return time.perf_counter() - t0


def seq_requests(url: str, n: int) -> float:
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    s = requests.Session()
    retry = Retry(total=3, backoff_factor=0.2, status_forcelist=[408, 429, 500, 502, 503, 504])
    s.mount("http://", HTTPAdapter(max_retries=retry))
    s.get(url)
    t0 = time.perf_counter()
    for _ in range(n):
        r = s.get(url)
        assert r.status_code == 200
    dt = time.perf_counter() - t0
    s.close()
    return dt


def seq_httpx(url: str, n: int) -> float:
    import httpx

    with httpx.Client() as c:
        c.get(url)
        t0 = time.perf_counter()
        for _ in range(n):
            r = c.get(url)
            assert r.status_code == 200
        return time.perf_counter() - t0


def seq_pycurl(url: str, n: int) -> float:
    import io

    import pycurl

    c = pycurl.Curl()
    c.setopt(pycurl.URL, url)
    c.setopt(pycurl.NOSIGNAL, 1)
    buf = io.BytesIO()
    c.setopt(pycurl.WRITEDATA, buf)
    c.perform()
    t0 = time.perf_counter()
    for _ in range(n):
        buf = io.BytesIO()
        c.setopt(pycurl.WRITEDATA, buf)
        c.perform()
        assert c.getinfo(pycurl.RESPONSE_CODE) == 200
        buf.getvalue()
    dt = time.perf_counter() - t0
    c.close()
    return dt


# -- concurrent ---------------------------------------------------------------


async def _workers(n: int, conc: int, one: Callable[[], Any]) -> float:
    per = [n // conc + (1 if i < n % conc else 0) for i in range(conc)]

    async def worker(k: int) -> None:
        for _ in range(k):
            await one()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(k) for k in per))
    return time.perf_counter() - t0


def conc_mulligan(url: str, n: int, conc: int) -> float:
    async def main() -> float:
        async with mulligan.AsyncClient(attempts=3) as c:
            async def one() -> None:
                r = await c.get(url)
                assert r.status_code == 200

            await _workers(conc, conc, one)  # warm the connections
            return await _workers(n, conc, one)

    return asyncio.run(main())


def conc_httpx(url: str, n: int, conc: int) -> float:
    import httpx

    async def main() -> float:
        limits = httpx.Limits(max_connections=conc, max_keepalive_connections=conc)
        async with httpx.AsyncClient(limits=limits) as c:
            async def one() -> None:
                r = await c.get(url)
                assert r.status_code == 200

            await _workers(conc, conc, one)
            return await _workers(n, conc, one)

    return asyncio.run(main())


def conc_aiohttp(url: str, n: int, conc: int) -> float:
    import aiohttp

    async def main() -> float:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=conc)) as s:
            async def one() -> None:
                async with s.get(url) as r:
                    await r.read()
                    assert r.status == 200

            await _workers(conc, conc, one)
            return await _workers(n, conc, one)

    return asyncio.run(main())


def wrk_rate(url: str, conc: int, seconds: int, cpus: Optional[set[int]]) -> Optional[float]:
    wrk = shutil.which("wrk")
    if wrk is None:
        return None

    def place() -> None:
        if cpus:
            os.sched_setaffinity(0, cpus)

    out = subprocess.run(
        [wrk, "-t1", "-c%d" % conc, "-d%ds" % seconds, url],
        capture_output=True, text=True, check=True, preexec_fn=place,
    ).stdout
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    return float(m.group(1)) if m else None


# -- report -------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--wrk-seconds", type=int, default=3)
    parser.add_argument("--pin", type=int, default=0,
                        help="CPU for the benchmark and nginx (default 0; -1: no pinning)")
    args = parser.parse_args()
    n, conc, rep = args.requests, args.concurrency, args.repeat
    seq_cpus: Optional[set[int]] = None
    other_cpus: Optional[set[int]] = None
    placement = "unpinned"
    if args.pin >= 0 and hasattr(os, "sched_setaffinity"):
        allowed = os.sched_getaffinity(0)
        if args.pin in allowed:
            seq_cpus = {args.pin}
            other_cpus = (allowed - seq_cpus) or seq_cpus
            placement = ("nginx and sequential clients on CPU %d, concurrent clients and wrk "
                         "on CPU %s" % (args.pin, ",".join(map(str, sorted(other_cpus)))))

    def place(cpus: Optional[set[int]]) -> None:
        if cpus:
            os.sched_setaffinity(0, cpus)

    place(seq_cpus)  # nginx, started below, inherits it

    seq = [
        ("mulligan.Client (3 attempts)", "mulligan", seq_mulligan),
        ("requests + urllib3 Retry(3)", "requests", seq_requests),
        ("httpx.Client (no retries)", "httpx", seq_httpx),
        ("pycurl, no retries (floor)", "pycurl", seq_pycurl),
    ]
    concurrent = [
        ("mulligan.AsyncClient (3 attempts)", "mulligan", conc_mulligan),
        ("httpx.AsyncClient", "httpx", conc_httpx),
        ("aiohttp", "aiohttp", conc_aiohttp),
    ]
    seq_mode, conc_mode = "sequential", "concurrent (%d in flight)" % conc
    best: dict[str, Optional[float]] = {}
    with NginxServer() as server:
        url = server.url("/ok")
        # Rounds interleave the clients, so that a busy spell of the machine
        # does not fall on one client only; each keeps its best round.
        for _ in range(rep):
            place(seq_cpus)
            for label, mod, fn in seq:
                if have(mod):
                    t = fn(url, n)
                    best[label] = min(t, best.get(label) or t)
            place(other_cpus)
            for label, mod, cfn in concurrent:
                if have(mod):
                    t = cfn(url, n, conc)
                    best[label] = min(t, best.get(label) or t)
        wrk = wrk_rate(url, conc, args.wrk_seconds, other_cpus)
    rows: list[tuple[str, str, Optional[float]]] = [
        (label, seq_mode, best.get(label)) for label, _, _ in seq
    ] + [(label, conc_mode, best.get(label)) for label, _, _ in concurrent]

    print("HTTP GET /ok on loopback nginx (1 worker); %d requests per run, best of %d; "
          "Python %s, %s, %d CPUs (%s)" % (n, rep, platform.python_version(), platform.machine(),
                                            os.cpu_count() or 0, placement))
    print()
    print("| client | mode | requests/s | µs/request | mulligan's speed-up |")
    print("| --- | --- | ---: | ---: | ---: |")
    base: dict[str, float] = {}
    for label, mode, t in rows:
        if t is not None and label.startswith("mulligan"):
            base[mode] = t
    for label, mode, t in rows:
        if t is None:
            print("| %s | %s | not installed | | |" % (label, mode))
            continue
        ratio = t / base[mode] if mode in base else float("nan")
        print("| %s | %s | %.0f | %.1f | %.2fx |" % (label, mode, n / t, t / n * 1e6, ratio))
    if wrk is not None:
        print("| wrk -t1 -c%d (server ceiling) | concurrent | %.0f | %.1f | |" % (conc, wrk, 1e6 / wrk))
    else:
        print("| wrk (server ceiling) | concurrent | not installed | | |")
    print()
    print("speed-up = the peer's time per request / mulligan's (above 1: mulligan is faster; "
          "for pycurl, below 1 means mulligan costs that much more than bare libcurl).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
