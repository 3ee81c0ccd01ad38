"""Hedged requests against a slow tail, on a real nginx (issue 18).

    python bench/hedge_tail.py [--calls 2000] [--quantile 0.95] [--cxx build/bench/hedge_tail_bench]

One nginx (tests/nginx, one worker) serves every run. Its /tail location
makes 2% of requests (split_clients on $request_id: random, independent of
the client) wait 100 ms and the others 1 ms (echo_sleep), the shape of
"The Tail at Scale" (Dean and Barroso, CACM 2013). One mulligan.AsyncClient
sends `--calls` sequential GETs per run:
  - without hedging;
  - hedged with a fixed delay: the p95 latency of the unhedged run, measured
    in this same run (Dean and Barroso's "defer a secondary request until the
    first has been outstanding for more than the 95th-percentile expected
    latency");
  - hedged with the quantile delay (``hedge={"quantile": 0.95}``): the engine
    learns the p95 of recent winners' latencies itself.
Each run reports p50, p99 and p99.9 of the calls' latency (client side,
perf_counter) and the extra load: requests nginx saw (its access log) per
call, minus one. Issue 18's goal: p99 at least 10x lower than without
hedging, at no more than 5% extra requests.

With --cxx (0.6), the same three runs of the C++ HttpClient (its hedged
Send: the copies on one libcurl multi handle in the calling thread) follow,
sent by bench/hedge_tail_bench.cc; their delay is the unhedged C++ run's p95.

The machine's load moves the 1 ms: read the ratios, not the absolute numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import statistics
import sys
import time
from typing import Any, Optional

from _nginx import nginx_server_module  # bench/_nginx.py


def _quantile(sorted_values: list[float], p: float) -> float:
    """Nearest rank: the ceil(p * n)-th smallest."""
    n = len(sorted_values)
    rank = max(1, min(n, -int(-p * n // 1)))
    return sorted_values[rank - 1]


async def _run(url: str, calls: int, hedge: Any) -> list[float]:
    import mulligan

    latencies: list[float] = []
    async with mulligan.AsyncClient(hedge=hedge, attempts=1) as client:
        for _ in range(20):  # warm the connections (not measured)
            await client.get(url)
        for _ in range(calls):
            t0 = time.perf_counter()
            response = await client.get(url)
            latencies.append(time.perf_counter() - t0)
            if response.status_code != 200:
                raise SystemExit(f"unexpected status {response.status_code}")
    return latencies


def _measure(server: Any, calls: int, hedge: Any) -> tuple[dict[str, float], list[float]]:
    server.clear_access_log()
    latencies = asyncio.run(_run(server.url("/tail"), calls, hedge))
    seen = len(server.wait_for_requests("/tail", calls + 20, timeout=5.0, settle=0.3))
    s = sorted(latencies)
    row = {
        "p50": _quantile(s, 0.50) * 1000,
        "p95": _quantile(s, 0.95) * 1000,
        "p99": _quantile(s, 0.99) * 1000,
        "p999": _quantile(s, 0.999) * 1000,
        "mean": statistics.fmean(s) * 1000,
        "requests_per_call": seen / (calls + 20),
    }
    return row, latencies


def _measure_cxx(server: Any, binary: str, calls: int, hedge: list[str]) -> dict[str, float]:
    """One run of hedge_tail_bench (the C++ HttpClient): its quantiles, and
    the requests nginx saw per call."""
    server.clear_access_log()
    out = subprocess.run([binary, server.url("/tail"), str(calls), *hedge], check=True,
                         capture_output=True, text=True).stdout
    row: dict[str, float] = json.loads(out)
    seen = len(server.wait_for_requests("/tail", calls + 20, timeout=5.0, settle=0.3))
    row["requests_per_call"] = seen / (calls + 20)
    return row


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--quantile", type=float, default=0.95)
    parser.add_argument("--cxx", help="hedge_tail_bench's path: add the C++ HttpClient's rows")
    args = parser.parse_args(argv)
    module = nginx_server_module()
    with module.NginxServer() as server:
        base, _ = _measure(server, args.calls, None)
        delay = base["p95"] / 1000
        fixed, _ = _measure(server, args.calls, {"delay": delay, "max_attempts": 2})
        learned, _ = _measure(
            server, args.calls, {"quantile": args.quantile, "delay": delay, "max_attempts": 2}
        )
        rows = [
            ("no hedging", base, base),
            (f"fixed delay {delay * 1000:.2f} ms (p95 of the unhedged run)", fixed, base),
            (f"quantile delay (p{args.quantile * 100:g} of recent winners)", learned, base),
        ]
        if args.cxx:
            cxx = _measure_cxx(server, args.cxx, args.calls, [])
            ms = f"{cxx['p95']:.3f}"
            rows += [
                ("C++ HttpClient, no hedging", cxx, cxx),
                (f"C++, fixed delay {ms} ms", _measure_cxx(server, args.cxx, args.calls, [ms]), cxx),
                (f"C++, quantile delay (p{args.quantile * 100:g})",
                 _measure_cxx(server, args.cxx, args.calls, [ms, str(args.quantile)]), cxx),
            ]
    print(f"{args.calls} sequential GETs per run; /tail: 2% of requests 100 ms, the rest 1 ms\n")
    print("| run | p50 ms | p99 ms | p99.9 ms | requests/call | extra load | p99 vs none |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, r, none in rows:
        print(
            f"| {name} | {r['p50']:.2f} | {r['p99']:.2f} | {r['p999']:.2f} | "
            f"{r['requests_per_call']:.4f} | {(r['requests_per_call'] - 1) * 100:.2f}% | "
            f"{none['p99'] / r['p99']:.1f}x |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
