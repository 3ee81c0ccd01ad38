"""redis_limiter_bench — issue 16's goal for the shared rate limiter: a global
rate R across 8 processes holds within +-5%, and what one acquire costs on
Redis against the local limiter and against the floor, one Redis round trip
(PING), all in the same run on a redis-server that the bench starts on a
free loopback port.

    python bench/redis_limiter_bench.py [--rate 200] [--procs 8] [--seconds 4]

Part 1 runs `procs` processes (spawned), each calling
``RateLimiter(rate, state=RedisState(...)).acquire()`` in a loop (it
reserves the next slot and sleeps until it), and counts the admissions of
all of them in the measurement window (the run less 0.5 s at each end); it
then does the same with each process's own local limiter at the same rate,
which admits `procs` x R together: the problem the shared limiter solves.
Part 2 times reserve() on a limiter that never waits: local, shared, and
PING. Exit status 1 when the shared rate is off by more than 5%.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from typing import Any, Optional

import mulligan
from _redis import free_port, start_redis  # bench/_redis.py


def worker(url: Optional[str], rate: float, seconds: float, prefix: str, ready: Any, go: Any,
           start: Any, out: Any) -> None:
    """One process: sets up, says ready, waits for the common start (Unix
    time), then acquires in a loop for `seconds`; puts the Unix times of its
    admissions and its fallback count."""
    state = mulligan.RedisState(url, prefix=prefix, timeout=1.0) if url else None
    limiter = mulligan.RateLimiter(rate, name="global", state=state)
    ready.put(os.getpid())
    go.wait()
    start_at = start.value
    stop_at = start_at + seconds
    times = []
    while time.time() < start_at:
        time.sleep(0.001)
    while True:
        limiter.acquire()
        now = time.time()
        if now >= stop_at:
            break
        times.append(now)
    out.put((times, limiter.fallbacks))


def global_rate(url: Optional[str], rate: float, procs: int, seconds: float,
                prefix: str) -> tuple[float, int]:
    """Admissions per second of `procs` processes in the run less 0.5 s at
    each end, and their fallbacks."""
    ctx = multiprocessing.get_context("spawn")
    out, ready, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    start = ctx.Value("d", 0.0)
    ps = [ctx.Process(target=worker, args=(url, rate, seconds, prefix, ready, go, start, out))
          for _ in range(procs)]
    for p in ps:
        p.start()
    for _ in ps:  # every interpreter started and connected (slow on a loaded machine)
        ready.get(timeout=120)
    start.value = time.time() + 0.2
    go.set()
    results = [out.get(timeout=seconds + 60) for _ in ps]
    for p in ps:
        p.join()
    lo, hi = start.value + 0.5, start.value + seconds - 0.5
    admitted = sum(1 for times, _ in results for t in times if lo <= t < hi)
    return admitted / (hi - lo), sum(f for _, f in results)


def per_call_us(fn: Any, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--procs", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    if args.seconds <= 1.0 or args.rate <= 0 or args.procs < 1:
        parser.error("--seconds must be > 1 (0.5 s at each end is left out), --rate > 0, "
                     "--procs >= 1")
    port = free_port()
    redis = start_redis(port)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        shared, fallbacks = global_rate(url, args.rate, args.procs, args.seconds, "bench1")
        local, _ = global_rate(None, args.rate, args.procs, args.seconds, "unused")
        off = (shared - args.rate) / args.rate * 100
        print(f"global rate, {args.procs} processes, R = {args.rate:g}/s, "
              f"{args.seconds:g} s run ({args.seconds - 1:g} s measured):")
        print(f"  shared (Redis)     {shared:9.1f}/s  {off:+.2f}% of R  (fallbacks: {fallbacks})")
        print(f"  local per process  {local:9.1f}/s  {local / args.rate:.2f} x R")

        state = mulligan.RedisState(url, prefix="bench2")
        local_l = mulligan.RateLimiter(1e9, name="local")
        shared_l = mulligan.RateLimiter(1e6, burst=1000, name="cost", state=state)
        local_us = per_call_us(local_l.reserve, 200_000)
        shared_us = per_call_us(shared_l.reserve, 5_000)
        ping_us = per_call_us(state.ping, 5_000)
        print("one reserve() (never waiting), microseconds:")
        print(f"  local limiter      {local_us:8.3f}")
        print(f"  shared (Redis)     {shared_us:8.3f}  {shared_us / local_us:.0f} x local, "
              f"{shared_us / ping_us:.2f} x PING")
        print(f"  PING (floor)       {ping_us:8.3f}")
        return 0 if abs(off) <= 5.0 and fallbacks == 0 else 1
    finally:
        redis.kill()
        redis.wait()


if __name__ == "__main__":
    sys.exit(main())
