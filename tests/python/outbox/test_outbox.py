"""mulligan.Outbox: jobs and HTTP entries through the core's SQLite outbox
(and, for the nginx delivery test, its Redis Streams outbox too: 0.6).

Schedules run on mulligan.testing.FakeClock (its readings are the outbox's
Unix seconds), so the retry times asserted are the policy's exact delays
(jitter off); HTTP entries go to the real nginx of tests/nginx, whose access
log says which Idempotency-Key reached the server on every attempt.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

import mulligan
from mulligan.testing import FakeClock


def _box(tmp_path: Any, clock: FakeClock, **policy: Any) -> mulligan.Outbox:
    options = {"attempts": 3, "jitter": "none", "base_delay": 0.5}
    options.update(policy)
    return mulligan.Outbox(tmp_path / "outbox.db", policy=options, clock=clock)


def test_job_retries_at_the_policy_times_then_is_delivered(tmp_path: Any) -> None:
    clock = FakeClock(start=1_700_000_000.0)
    box = _box(tmp_path, clock)
    calls: list[tuple[float, bytes, str]] = []

    @box.handler("charge")
    def charge(payload: bytes, key: str) -> None:
        calls.append((clock.monotonic(), payload, key))
        if len(calls) < 3:
            raise RuntimeError(f"gateway down {len(calls)}")

    entry = box.enqueue_job("charge", b"order=17", idempotency_key="charge-17")
    assert entry.state == "pending" and entry.idempotency_key == "charge-17"
    assert box.run_worker(poll_interval=0.25, until_idle=True) == 3
    t0 = 1_700_000_000.0
    # Waits 0.5 s then 1.0 s (base 0.5, exponential x2, no jitter), seen
    # through 0.25 s polls: attempts at t0, t0 + 0.5, t0 + 1.5.
    assert [c[0] for c in calls] == [t0, t0 + 0.5, t0 + 1.5]
    assert {c[1] for c in calls} == {b"order=17"}
    assert {c[2] for c in calls} == {"charge-17"}
    done = box.get(entry.id)
    assert (done.state, done.attempts, done.stop_reason) == ("done", 3, "succeeded")
    history = box.history(entry.id)
    assert [h.message for h in history] == [
        "RuntimeError: gateway down 1",
        "RuntimeError: gateway down 2",
        "delivered",
    ]
    assert [h.delay for h in history] == [0.5, 1.0, 0.0]
    stats = box.stats()
    assert (stats.depth, stats.done, stats.deliveries, stats.dead_letters) == (0, 1, 1, 0)


def test_dead_letter_keeps_history_and_survives_reopening(tmp_path: Any) -> None:
    clock = FakeClock(start=1_700_000_000.0)
    box = _box(tmp_path, clock, attempts=2)
    box.register("never", lambda payload, key: 1 / 0)
    entry = box.enqueue_job("never", "x")
    box.run_worker(poll_interval=0.5, until_idle=True)
    del box
    again = _box(tmp_path, clock, attempts=2)
    dead = again.list("dead")
    assert [e.id for e in dead] == [entry.id]
    assert dead[0].stop_reason == "attempts_exhausted"
    assert [h.message for h in again.history(entry.id)] == [
        "ZeroDivisionError: division by zero",
        "ZeroDivisionError: division by zero",
    ]
    assert again.stats().dead_letters == 1
    again.retry(entry.id)
    assert again.get(entry.id).state == "pending"
    with pytest.raises(ValueError, match="not dead"):
        again.retry(entry.id)


@pytest.fixture(params=["sqlite", "redis"])
def located_box(request: Any, tmp_path: Any) -> Any:
    """A factory of outboxes like _box's, in a file or (0.6) on the suite's
    redis-server (the outbox "hooks"; sync normal: it keeps no AOF)."""
    if request.param == "sqlite":
        return lambda clock: _box(tmp_path, clock)
    url = request.getfixturevalue("redis_server").url
    policy = {"attempts": 3, "jitter": "none", "base_delay": 0.5}
    return lambda clock: mulligan.Outbox(url, name="hooks", sync="normal", policy=policy,
                                         clock=clock)


def test_http_entries_reach_nginx_with_one_key_each(located_box: Any, server: Any) -> None:
    clock = FakeClock(start=1_700_000_000.0)
    box = located_box(clock)
    entries = [
        box.enqueue("POST", server.url("/echo"), json={"n": i}, headers={"X-N": str(i)})
        for i in range(3)
    ]
    down = box.enqueue("POST", server.url("/down"), body=b"x")
    box.run_worker(poll_interval=0.25, until_idle=True)
    log = server.wait_for_access_log(6)
    keys = [e["idempotency_key"] for e in log]
    for e in entries:
        assert keys.count(e.idempotency_key) == 1
        assert box.get(e.id).state == "done"
    # /down answers 503 three times: the same key on every attempt, then dead.
    assert keys.count(down.idempotency_key) == 3
    assert [e["status"] for e in log if e["idempotency_key"] == down.idempotency_key] == [503] * 3
    assert box.get(down.id).stop_reason == "attempts_exhausted"
    assert [h.http_status for h in box.history(down.id)] == [503, 503, 503]
    assert box.stats().deliveries == 3
    box.close()


def test_bad_input_and_a_full_outbox_raise_clear_errors(tmp_path: Any) -> None:
    clock = FakeClock(start=1_700_000_000.0)
    with pytest.raises(ValueError, match="unknown policy option 'retries'"):
        mulligan.Outbox(tmp_path / "a.db", policy={"retries": 3})
    with pytest.raises(ValueError, match="lease_timeout"):
        mulligan.Outbox(tmp_path / "a.db", lease_timeout=0)
    with pytest.raises(ValueError, match="sync"):
        mulligan.Outbox(tmp_path / "a.db", sync="sometimes")
    box = mulligan.Outbox(tmp_path / "full.db", max_size_bytes=96 * 1024, clock=clock)
    with pytest.raises(ValueError, match="method"):
        box.enqueue("PO ST", "http://127.0.0.1:9/")
    with pytest.raises(ValueError, match="Idempotency-Key"):
        box.enqueue("POST", "http://127.0.0.1:9/", headers={"Idempotency-Key": "k"})
    written = 0
    with pytest.raises(mulligan.OutboxError, match="full") as info:
        for i in range(1000):
            box.enqueue("POST", "http://127.0.0.1:9/", body=os.urandom(4096))
            written += 1
    assert str(tmp_path / "full.db") in str(info.value)
    assert 0 < written < 1000
    assert box.stats().pending == written  # nothing dropped, nothing extra


def test_asyncio_worker_delivers_http_and_coroutine_jobs(tmp_path: Any, server: Any) -> None:
    clock = FakeClock(start=1_700_000_000.0)
    box = _box(tmp_path, clock)
    seen: list[str] = []

    @box.handler("notify")
    async def notify(payload: bytes, key: str) -> None:
        await asyncio.sleep(0)
        seen.append(key)
        if len(seen) == 1:
            raise ConnectionError("push service down")

    job = box.enqueue_job("notify", b"hi")
    http = box.enqueue("PUT", server.url("/echo"), body=b"x")

    async def main() -> int:
        try:
            return await box.arun_worker(poll_interval=0.25, until_idle=True)
        finally:
            await box.aclose()

    assert asyncio.run(main()) == 3  # the job twice, the request once
    assert seen == [job.idempotency_key] * 2
    with pytest.raises(mulligan.OutboxError, match="is closed"):  # aclose closed it (0.6)
        box.get(job.id)
    box = _box(tmp_path, clock)
    assert box.get(job.id).state == "done" and box.get(http.id).state == "done"
    assert [h.delay for h in box.history(job.id)] == [0.5, 0.0]
    log = server.wait_for_access_log(1)
    assert [e["idempotency_key"] for e in log] == [http.idempotency_key]
    assert log[0]["method"] == "PUT"


def test_enqueue_many_is_all_or_nothing(tmp_path: Any) -> None:
    clock = FakeClock(start=1_700_000_000.0)
    box = _box(tmp_path, clock)
    entries = box.enqueue_many(
        [
            {"method": "POST", "url": "http://127.0.0.1:9/a", "json": {"n": 1}},
            {"job": "mail", "payload": b"to=ann", "idempotency_key": "mail-1"},
        ]
    )
    assert [e.kind for e in entries] == ["http", "job"]
    assert entries[0].headers == (("Content-Type", "application/json"),)
    assert entries[0].body == b'{"n":1}'
    assert entries[1].idempotency_key == "mail-1"
    with pytest.raises(ValueError, match="already entry"):
        box.enqueue_many([{"job": "mail", "payload": "x"}, {"job": "mail", "idempotency_key": "mail-1"}])
    with pytest.raises(ValueError, match="needs method and url"):
        box.enqueue_many([{"url": "http://127.0.0.1:9/"}])
    assert box.stats().pending == 2
