"""kill -9 of an outbox worker in the middle of a delivery, then a restart:
every entry is delivered, and nginx's access log shows each entry's one
Idempotency-Key reaching the server (issue 21's "must show").

Real processes and real time (the lease must really expire): the worker is
tests/python/outbox/worker_main.py; the first entry goes to nginx's /slow
(1.5 s), so the test can kill the worker while that request is in flight.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

import mulligan

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker_main.py")
LEASE_TIMEOUT = 1.0


def _start(path: str, n: int) -> "subprocess.Popen[bytes]":
    return subprocess.Popen([sys.executable, WORKER, path, str(LEASE_TIMEOUT), str(n)])


@pytest.fixture(params=["sqlite", "redis"])
def location(request: Any, tmp_path: Any) -> tuple[str, dict[str, Any]]:
    """Where the outbox lives, and the options worker_main.py uses there: a
    file, or (0.6) the Redis outbox "crash" on the suite's redis-server."""
    if request.param == "sqlite":
        return str(tmp_path / "outbox.db"), {}
    return request.getfixturevalue("redis_server").url, {"name": "crash", "sync": "normal"}


def test_kill_9_mid_delivery_then_restart_delivers_everything(
    location: tuple[str, dict[str, Any]], server: Any
) -> None:
    path, where = location
    box = mulligan.Outbox(path, lease_timeout=LEASE_TIMEOUT, **where)
    slow = box.enqueue("POST", server.url("/slow?s=1.5"), body=b"slow")
    rest = [box.enqueue("POST", server.url("/echo"), json={"n": i}) for i in range(9)]

    first = _start(path, 1)
    try:
        # Wait until the worker holds the slow entry, then give its request
        # time to reach nginx (which answers only after 1.5 s) and kill it.
        deadline = time.monotonic() + 20
        while box.get(slow.id).state != "leased":
            assert time.monotonic() < deadline, "the worker never leased the first entry"
            time.sleep(0.01)
        time.sleep(0.5)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == -signal.SIGKILL
    crashed = box.get(slow.id)
    assert crashed.state == "leased" and crashed.lease_owner == "worker-1"
    assert crashed.attempts == 0  # the outcome of the killed delivery was never recorded

    second = _start(path, 2)
    assert second.wait(60) == 0
    stats = box.stats()
    assert (stats.done, stats.depth, stats.deliveries, stats.dead_letters) == (10, 0, 10, 0)
    assert stats.lease_expiries == 1  # the killed worker's lease, counted as an attempt (0.6)
    again = box.get(slow.id)
    assert again.leases == 2 and again.attempts == 2 and again.state == "done"
    history = box.history(slow.id)
    assert [(h.message, h.error, h.classification) for h in history] == [
        ("lease expired, worker worker-1", "timeout", "retryable"),
        ("delivered", "none", "success"),
    ]

    log = server.wait_for_access_log(11, timeout=5.0)
    keys = [e["idempotency_key"] for e in log]
    # The killed request still reached nginx (it logs 499 when the client went
    # away mid-response), and the retry carried the same key.
    slow_lines = [e for e in log if e["idempotency_key"] == slow.idempotency_key]
    assert len(slow_lines) == 2
    assert slow_lines[-1]["status"] == 200
    for e in rest:
        assert keys.count(e.idempotency_key) == 1, e
        assert box.get(e.id).state == "done"


def test_kill_9_behind_the_idempotency_middleware_applies_each_entry_once(tmp_path: Any) -> None:
    # A WSGI app behind mulligan's WSGIIdempotencyMiddleware (werkzeug's
    # threaded server on a free loopback port): `applied` counts the handler's
    # runs per key, `seen` every request that reached the server.
    from werkzeug import serving

    store = mulligan.IdempotencyStore(lease=30.0, in_flight_retry_after=1.0)
    applied: dict[str, int] = {}
    seen: list[str] = []
    lock = threading.Lock()

    def app(environ: Any, start_response: Any) -> list[bytes]:
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        if "slow" in environ.get("QUERY_STRING", ""):
            time.sleep(1.5)
        with lock:
            key = environ["HTTP_IDEMPOTENCY_KEY"]
            applied[key] = applied.get(key, 0) + 1
        start_response("201 Created", [("Content-Type", "text/plain")])
        return [b"applied\n"]

    guarded = mulligan.WSGIIdempotencyMiddleware(app, store=store)

    def outer(environ: Any, start_response: Any) -> Any:
        with lock:
            seen.append(environ.get("HTTP_IDEMPOTENCY_KEY", ""))
        return guarded(environ, start_response)

    wserver = serving.make_server("127.0.0.1", 0, outer, threaded=True)
    thread = threading.Thread(target=wserver.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{wserver.port}/apply"
        path = str(tmp_path / "outbox.db")
        box = mulligan.Outbox(path, lease_timeout=LEASE_TIMEOUT)
        slow = box.enqueue("POST", base + "?slow=1", body=b"capture 17")
        rest = [box.enqueue("POST", base, body=f"capture {i}") for i in range(4)]
        first = _start(path, 1)
        try:
            # Kill once the request is in the handler's 1.5 s: awaited on what
            # the server saw (`seen` is appended before the handler runs), not
            # slept for, since a loaded machine can hold the worker between
            # its lease and its request for longer than any fixed sleep.
            deadline = time.monotonic() + 20

            def arrived() -> bool:
                with lock:
                    return slow.idempotency_key in seen

            while not arrived():
                assert time.monotonic() < deadline, "the slow request never reached the server"
                time.sleep(0.01)
            first.send_signal(signal.SIGKILL)
            first.wait(10)
        finally:
            if first.poll() is None:
                first.kill()
        second = _start(path, 2)
        assert second.wait(60) == 0
        stats = box.stats()
        assert (stats.done, stats.depth, stats.dead_letters) == (5, 0, 0)
        # The slow entry reached the server at least twice (the killed
        # delivery and the retry; a 409 "still in flight" answer and its retry
        # too when the retry came before the first run ended), yet the
        # handler ran once per entry: the middleware replayed the rest.
        assert seen.count(slow.idempotency_key) >= 2
        assert applied == {e.idempotency_key: 1 for e in [slow, *rest]}
        history = box.history(slow.id)
        assert history[0].message == "lease expired, worker worker-1"  # the kill (0.6)
        assert history[-1].http_status == 201 and history[-1].classification == "success"
        assert all(h.http_status == 409 for h in history[1:-1]), history
    finally:
        wserver.shutdown()
        thread.join(10)


def test_a_poison_entry_that_kills_every_worker_ends_dead_with_its_history(tmp_path: Any) -> None:
    # The job kills its worker (SIGKILL) on every delivery. Each expired
    # lease is an attempt (0.6), so after 5 workers died (attempts: 5) the
    # next worker dead-letters it and exits, instead of dying forever.
    path = str(tmp_path / "outbox.db")
    box = mulligan.Outbox(path, lease_timeout=0.3, policy={"attempts": 5})
    poison = box.enqueue_job("poison", b"crash")
    deaths = 0
    for n in range(1, 10):
        worker = subprocess.Popen([sys.executable, WORKER, path, "0.3", str(n), "poison"])
        code = worker.wait(60)
        if code == 0:
            break
        assert code == -signal.SIGKILL
        deaths += 1
    assert deaths == 5
    dead = box.get(poison.id)
    assert (dead.state, dead.stop_reason, dead.attempts, dead.leases) == (
        "dead", "attempts_exhausted", 5, 5)
    history = box.history(poison.id)
    assert [h.message for h in history] == [f"lease expired, worker worker-{n}" for n in range(1, 6)]
    assert {(h.error, h.classification) for h in history} == {("timeout", "retryable")}
    assert history[-1].delay == 0.0
    stats = box.stats()
    assert (stats.dead, stats.dead_letters, stats.lease_expiries, stats.depth) == (1, 1, 5, 0)
