"""redis_idempotency_bench — the cost of one idempotency operation on Redis
(issue 16) against the in-memory store and against the floor, one Redis
round trip (PING), all measured in the same run on a redis-server that the
bench starts on a free loopback port.

    python bench/redis_idempotency_bench.py      (after pip install .)

Prints microseconds per reserve (new key), complete, replay and PING, and
each Redis figure as a multiple of PING: one round trip per operation is the
design (the scripts' own work is the rest).
"""

from __future__ import annotations

import time
from typing import Callable

import mulligan
from _redis import free_port, start_redis  # bench/_redis.py

N = 5_000


def per_op_us(fn: Callable[[int], object]) -> float:
    start = time.perf_counter()
    for i in range(N):
        fn(i)
    return (time.perf_counter() - start) / N * 1e6


def measure(store: mulligan.IdempotencyStore, tag: str) -> dict[str, float]:
    reservations = []
    out = {}
    out["reserve"] = per_op_us(lambda i: reservations.append(store.reserve(f"{tag}-{i}", b"fp")))
    out["complete"] = per_op_us(
        lambda i: store.complete(reservations[i], status=201, body=b'{"id": 42}'))
    out["replay"] = per_op_us(lambda i: store.reserve(f"{tag}-{i}", b"fp"))
    return out


def main() -> None:
    port = free_port()
    proc = start_redis(port)
    try:
        state = mulligan.RedisState(f"redis://127.0.0.1:{port}/0", prefix="bench")
        ping = per_op_us(lambda i: state.ping())
        memory = measure(mulligan.IdempotencyStore(), "m")
        redis = measure(mulligan.IdempotencyStore(state=state), "r")
        print(f"N = {N} per operation; redis-server on loopback; one run")
        print(f"{'operation':<10} {'memory us':>10} {'redis us':>10} {'redis/PING':>11}")
        for op in ("reserve", "complete", "replay"):
            print(f"{op:<10} {memory[op]:>10.2f} {redis[op]:>10.2f} {redis[op] / ping:>11.2f}")
        print(f"{'PING':<10} {'':>10} {ping:>10.2f} {1.0:>11.2f}")
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
