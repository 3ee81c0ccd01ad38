"""Outbox delivery throughput against a plain in-memory retry loop, one run.

    python bench/outbox_bench.py [--entries 2000] [--batch 64]

One nginx (tests/nginx, one worker) serves every run; each run POSTs
`--entries` small JSON bodies to /ok (200) with an Idempotency-Key:
  - in-memory: a loop over mulligan.Client.request (3 attempts, nothing
    durable): the baseline;
  - outbox sync=normal and sync=full: enqueue the entries into a fresh SQLite
    outbox (WAL; FULL fsyncs every commit), half one by one (one commit each)
    and half with enqueue_many in `--batch`-sized transactions, then
    run_worker(until_idle=True)
    delivers them (lease, one request, complete: one commit per entry
    delivered plus one per lease batch);
  - outbox on Redis (0.6), sync=full: the same, on a redis-server started
    here with appendonly yes and appendfsync always (every write fsync'ed
    to the AOF before Redis replies), skipped when redis-server is missing.
Prints entries per second for enqueue and delivery and the ratio of each
outbox run's delivery rate to the in-memory loop's. Issue 21's goal: at least
2,000 entries per second delivered with durability on.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

from _nginx import nginx_server_module  # bench/_nginx.py
from _redis import free_port, start_redis  # bench/_redis.py


def _in_memory(url: str, n: int) -> float:
    import mulligan

    with mulligan.Client(attempts=3) as client:
        start = time.perf_counter()
        for i in range(n):
            r = client.request("POST", url, json={"n": i}, idempotency_key=True)
            assert r.status_code == 200, r.status_code
        return n / (time.perf_counter() - start)


def _outbox(url: str, n: int, sync: str, batch: int) -> tuple[float, float, float]:
    import mulligan

    with tempfile.TemporaryDirectory() as d:
        if sync != "redis":
            return _deliver(mulligan.Outbox(os.path.join(d, "bench.db"), sync=sync), url, n, batch)
        port = free_port()
        proc = start_redis(port, ("--appendonly", "yes", "--appendfsync", "always", "--dir", d))
        try:
            state = mulligan.RedisState(f"redis://127.0.0.1:{port}/0", timeout=5.0)
            return _deliver(mulligan.Outbox(state=state, name="bench"), url, n, batch)
        finally:
            proc.kill()
            proc.wait()


def _deliver(box: Any, url: str, n: int, batch: int) -> tuple[float, float, float]:
    """Enqueues n entries (half one by one, half in batches), then delivers them;
    returns the three rates."""
    start = time.perf_counter()
    for i in range(n // 2):
        box.enqueue("POST", url, json={"n": i})
    enqueue_rate = (n // 2) / (time.perf_counter() - start)
    start = time.perf_counter()
    rest = n - n // 2
    for first in range(0, rest, batch):
        box.enqueue_many([{"method": "POST", "url": url, "json": {"n": i}}
                          for i in range(first, min(first + batch, rest))])
    enqueue_many_rate = rest / (time.perf_counter() - start)
    start = time.perf_counter()
    box.run_worker(batch=batch, until_idle=True, poll_interval=0.01)
    deliver_rate = n / (time.perf_counter() - start)
    stats = box.stats()
    assert stats.deliveries == n and stats.depth == 0, stats
    box.close()
    return enqueue_rate, enqueue_many_rate, deliver_rate


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args(argv)
    nginx = nginx_server_module()
    with nginx.NginxServer() as server:
        url = server.url("/ok")
        _in_memory(url, 50)  # warm the connection and the module
        base = _in_memory(url, args.entries)
        print(f"in-memory Client loop       {base:9.0f} requests/s")
        runs = ["normal", "full"]
        if os.access(os.environ.get("MULLIGAN_REDIS_SERVER", "/usr/bin/redis-server"), os.X_OK):
            runs.append("redis")
        for sync in runs:
            enq, enq_many, rate = _outbox(url, args.entries, sync, args.batch)
            print(f"outbox {'redis sync=full' if sync == 'redis' else 'sync=' + sync:<16} enqueue {enq:7.0f}/s  enqueue_many {enq_many:7.0f}/s  "
                  f"deliver {rate:7.0f}/s  ratio to in-memory {rate / base:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
