#!/usr/bin/env python3
"""redis_breaker_bench — a circuit breaker shared through Redis (issue 16),
in one run, on a redis-server that the bench starts on a free loopback port.

    pip install .[bench]          (pybreaker and redis, the peer)
    python bench/redis_breaker_bench.py [--number 200000] [--repeat 5] [--trips 100]

1. A guarded call in the closed state (a function that returns at once):
   mulligan's local breaker, mulligan's shared breaker
   (``CircuitBreaker(state=RedisState(...))``), pybreaker in memory and
   pybreaker with ``CircuitRedisStorage`` (redis-py). ns per call, the
   minimum over `repeat` timeit runs of `number` calls (pybreaker on Redis:
   number / 100, it makes round trips). Goal: shared <= 2x local.
2. Trip propagation: this process trips a shared breaker (failure_threshold
   1, one failing call) while 3 other processes hold a breaker of the same
   name; each of them notes, in its transition listener, the monotonic time
   (CLOCK_MONOTONIC, one clock for every process of the host) at which it
   opened. Per trip the latency is the slowest of the 3; then this process
   resets its breaker (the close propagates too) and waits until all 3 are
   closed before the next trip. p50 / p99 / max over `trips` trips.
   Goal: p99 < 100 ms.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
import timeit
from typing import Any, Callable, List

import mulligan
from _redis import free_port, start_redis  # bench/_redis.py

LISTENER = r'''
import sys
import time

import mulligan

state = mulligan.RedisState(sys.argv[1], prefix="bench")
breaker = mulligan.CircuitBreaker("propagation", failure_threshold=1, reset_timeout=60.0,
                                  state=state, poll_interval=0.05)


def seen(t):
    sys.stdout.write(f"{t.to_state} {time.monotonic_ns()}\n")
    sys.stdout.flush()


breaker.add_listener(seen)
while not breaker.sharing_health()["shared"]:
    time.sleep(0.001)
sys.stdout.write("ready 0\n")
sys.stdout.flush()
sys.stdin.readline()  # until the bench closes stdin
breaker.close_sharing()
'''


def target() -> int:
    return 1


def ns_per_call(fn: Callable[[], Any], number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e9


def guarded_calls(url: str, number: int, repeat: int) -> None:
    local = mulligan.CircuitBreaker("bench-local")(target)
    shared_breaker = mulligan.CircuitBreaker(
        "bench-shared", state=mulligan.RedisState(url, prefix="bench"))
    shared = shared_breaker(target)
    rows: List[tuple[str, float]] = [
        ("bare call", ns_per_call(target, number, repeat)),
        ("mulligan local breaker", ns_per_call(local, number, repeat)),
        ("mulligan shared breaker (Redis)", ns_per_call(shared, number, repeat)),
    ]
    try:
        import pybreaker
        import redis
    except ImportError:
        print("pybreaker / redis not installed (pip install .[bench]): peers skipped")
    else:
        memory = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=30)
        rows.append(("pybreaker in memory", ns_per_call(lambda: memory.call(target),
                                                        number, repeat)))
        client = redis.Redis.from_url(url)
        storage = pybreaker.CircuitRedisStorage(pybreaker.STATE_CLOSED, client,
                                                namespace="bench-pybreaker")
        on_redis = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=30, state_storage=storage)
        rows.append(("pybreaker CircuitRedisStorage",
                     ns_per_call(lambda: on_redis.call(target), max(number // 100, 100),
                                 repeat)))
    local_ns = rows[1][1]
    print(f"{'closed state, one guarded call':<34} {'ns/call':>10} {'x local':>8}")
    for name, ns in rows:
        print(f"{name:<34} {ns:>10.1f} {ns / local_ns:>8.2f}")
    shared_ratio = rows[2][1] / local_ns
    print(f"goal shared <= 2x local: {'met' if shared_ratio <= 2.0 else 'NOT met'} "
          f"({shared_ratio:.2f}x)")
    shared_breaker.close_sharing()


def percentile(values: List[float], p: float) -> float:
    """Nearest-rank percentile: the ceil(p/100 * n)-th smallest value."""
    ordered = sorted(values)
    rank = math.ceil(p / 100.0 * len(ordered))
    return ordered[min(len(ordered), max(1, rank)) - 1]


def propagation(url: str, trips: int) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(LISTENER)
        script = f.name
    listeners = [subprocess.Popen([sys.executable, script, url], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True) for _ in range(3)]
    try:
        for p in listeners:
            assert p.stdout is not None
            if p.stdout.readline().split()[0] != "ready":
                raise RuntimeError("a listener process failed to start")
        breaker = mulligan.CircuitBreaker(
            "propagation", failure_threshold=1, reset_timeout=60.0,
            state=mulligan.RedisState(url, prefix="bench"))

        @breaker
        def failing() -> None:
            raise ConnectionError("down")

        while not (breaker.sharing_health() or {}).get("shared"):
            time.sleep(0.001)
        worst: List[float] = []
        each: List[float] = []
        for _ in range(trips):
            start = time.monotonic_ns()
            try:
                failing()
            except ConnectionError:
                pass
            seen = []
            for p in listeners:
                assert p.stdout is not None
                state, at = p.stdout.readline().split()
                if state != "open":
                    raise RuntimeError(f"a listener saw {state}, expected open")
                seen.append((int(at) - start) / 1e6)
            worst.append(max(seen))
            each.extend(seen)
            breaker.reset()
            for p in listeners:
                assert p.stdout is not None
                state, _ = p.stdout.readline().split()
                if state != "closed":
                    raise RuntimeError(f"a listener saw {state}, expected closed")
        breaker.close_sharing()
    finally:
        for p in listeners:
            if p.stdin is not None:
                p.stdin.close()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        os.unlink(script)
    print(f"trip propagation to 3 processes, {trips} trips, ms from the failing call")
    print(f"{'':<28} {'p50':>8} {'p99':>8} {'max':>8}")
    print(f"{'slowest of the 3, per trip':<28} {percentile(worst, 50):>8.3f} "
          f"{percentile(worst, 99):>8.3f} {max(worst):>8.3f}")
    print(f"{'each process':<28} {percentile(each, 50):>8.3f} "
          f"{percentile(each, 99):>8.3f} {max(each):>8.3f}")
    print(f"goal p99 < 100 ms: {'met' if percentile(worst, 99) < 100.0 else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--trips", type=int, default=100)
    args = parser.parse_args()
    port = free_port()
    proc = start_redis(port)
    try:
        url = f"redis://127.0.0.1:{port}/0"
        print(f"Python {platform.python_version()}, {platform.machine()}, mulligan "
              f"{mulligan.__version__}; redis-server on loopback; one run")
        guarded_calls(url, args.number, args.repeat)
        print()
        propagation(url, args.trips)
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
