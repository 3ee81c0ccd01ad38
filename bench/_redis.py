"""A redis-server on a free loopback port for the benches that measure
against a real Redis (redis_idempotency_bench, redis_breaker_bench,
redis_limiter_bench): one copy of the start-up they shared.

``start_redis(port, extra_args)`` runs ``$MULLIGAN_REDIS_SERVER`` (default
/usr/bin/redis-server) without persistence unless ``extra_args`` (appended to
its command line) asks for some, bound to 127.0.0.1, and returns
its process once it accepts connections (within about 5 s); the caller stops
it by that process. Raises RuntimeError when it does not start, and
FileNotFoundError when the program is missing. ``free_port()`` returns a TCP
port free on 127.0.0.1 now.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(port: int, extra_args: tuple[str, ...] = ()) -> "subprocess.Popen[bytes]":
    path = os.environ.get("MULLIGAN_REDIS_SERVER", "/usr/bin/redis-server")
    proc = subprocess.Popen([path, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", *extra_args], stdout=subprocess.DEVNULL)
    for _ in range(500):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                return proc
        except OSError:
            time.sleep(0.01)
    proc.kill()
    proc.wait()
    raise RuntimeError("redis-server did not start")
