"""Issue 16's "must show": a breaker tripped in one of 4 processes refuses in
all of them. Each process is a real Python subprocess with its own
``mulligan.RedisState`` and ``CircuitBreaker(state=...)``; redis-server is
real. Also: the Python front door's errors and its health report.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import pytest

import mulligan

WORKER = r'''
import sys

import mulligan

state = mulligan.RedisState(sys.argv[1], prefix="p4")
breaker = mulligan.CircuitBreaker("payments", failure_threshold=3, reset_timeout=30.0,
                                  state=state, poll_interval=0.05)
reasons = []
breaker.add_listener(lambda t: reasons.append(f"{t.to_state}:{t.reason}"))


@breaker
def call(fail):
    if fail:
        raise ConnectionError("down")
    return "ok"


def answer(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    command = line.strip()
    if command == "ready":
        answer(str(breaker.sharing_health()["shared"]))
    elif command == "trip":
        for _ in range(3):
            try:
                call(True)
            except ConnectionError:
                pass
        answer(breaker.state)
    elif command == "state":
        answer(breaker.state)
    elif command == "call":
        try:
            answer(call(False))
        except mulligan.CircuitOpenError as e:
            answer(f"refused {e.retry_in:.3f}")
    elif command == "reasons":
        answer(",".join(reasons))
    elif command == "health":
        h = breaker.sharing_health()
        answer(f"{h['published']} {h['applied']} {h['publish_failures']}")
    elif command == "quit":
        break
'''


class Worker:
    def __init__(self, script: str, url: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, script, url], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, command: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def until(self, command: str, expected: str, limit: float = 5.0) -> str:
        """Asks `command` every millisecond until it answers `expected`, for at
        most `limit` seconds after the first answer. The first answer waits for
        the worker's interpreter to import mulligan (0.4 s alone, over 5 s with
        4 workers starting on a loaded 2-core machine), which must not count
        against the bound on what is awaited.
        """
        answer = self.ask(command)
        end = time.monotonic() + limit
        while answer != expected and time.monotonic() < end:
            time.sleep(0.001)
            answer = self.ask(command)
        return answer

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.ask("quit")
            except (BrokenPipeError, OSError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass


def test_a_breaker_tripped_in_one_of_4_processes_refuses_in_all(
    redis_server: Any, tmp_path: Any
) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    workers = [Worker(str(script), redis_server.url) for _ in range(4)]
    try:
        for w in workers:
            assert w.until("ready", "True") == "True"
        assert [w.ask("call") for w in workers] == ["ok"] * 4

        assert workers[0].ask("trip") == "open"
        for w in workers[1:]:
            assert w.until("state", "open") == "open"
        for w in workers:
            answer = w.ask("call")
            assert answer.startswith("refused ")
            # 30 s from the trip, less the real time since (well under 5 s).
            assert 25.0 < float(answer.split()[1]) <= 30.0
        assert workers[0].ask("reasons") == "open:failure_threshold"
        # The others' listeners run on their subscriber threads after the
        # breaker's lock is released (and wait for the GIL): a worker can
        # answer "open" before its listener ran, so the reason is awaited.
        for w in workers[1:]:
            assert w.until("reasons", "open:shared_open") == "open:shared_open"
        # One write (the trip), applied by the three others; nothing echoed.
        # The counters trail the state change (the writer counts when the
        # script's reply arrives, a subscriber after applying), so awaited.
        assert workers[0].until("health", "1 0 0") == "1 0 0"
        for w in workers[1:]:
            assert w.until("health", "0 1 0") == "0 1 0"
    finally:
        for w in workers:
            w.close()
    assert [w.proc.returncode for w in workers] == [0] * 4


def test_shared_breaker_front_door(redis_server: Any) -> None:
    state = mulligan.RedisState(redis_server.url, prefix="fd")
    breaker = mulligan.CircuitBreaker("db", state=state)
    health = breaker.sharing_health()
    assert health is not None
    assert set(health) == {
        "shared", "subscribed", "epoch", "published", "publish_failures", "dropped",
        "applied", "reads", "resubscriptions", "last_error", "writer_id",
    }
    assert len(health["writer_id"]) == 16
    assert mulligan.CircuitBreaker("local").sharing_health() is None
    breaker.close_sharing()
    breaker.close_sharing()  # idempotent
    assert breaker.sharing_health() is None
    assert breaker.state == "closed"  # still serves locally

    with pytest.raises(ValueError, match="state and clock cannot be combined"):
        mulligan.CircuitBreaker("db", state=state, clock=lambda: 0.0)
    with pytest.raises(ValueError, match=r"poll_interval must be in \[10 ms, 1 h\], got 5 ms"):
        mulligan.CircuitBreaker("db", state=state, poll_interval=0.005)
    with pytest.raises(TypeError, match="state must be a mulligan.RedisState or None"):
        mulligan.CircuitBreaker("db", state="redis://127.0.0.1")  # type: ignore[arg-type]
    # Without state= the option would be ignored: refused at construction.
    with pytest.raises(ValueError, match=r"^mulligan.CircuitBreaker: poll_interval needs state="):
        mulligan.CircuitBreaker("db", poll_interval=0.5)
    assert mulligan.CircuitBreaker("db", poll_interval=None).sharing_health() is None
