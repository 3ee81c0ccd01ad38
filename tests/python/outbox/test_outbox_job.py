"""``@box.job(name)``: the decorator that enqueues (Celery's ``@app.task``
idiom). Calling the job runs the function here; ``.delay()`` writes an entry
whose payload is the arguments as JSON (or raw bytes), which the worker turns
back into the call. On a FakeClock with a real SQLite file."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import mulligan
from mulligan.testing import FakeClock

T0 = 1_700_000_000.0


def _box(tmp_path: Any, clock: FakeClock) -> mulligan.Outbox:
    return mulligan.Outbox(tmp_path / "outbox.db", clock=clock,
                           policy={"attempts": 2, "jitter": "none", "base_delay": 1.0})


def test_delay_enqueues_the_call_and_the_worker_makes_it(tmp_path: Any) -> None:
    box = _box(tmp_path, FakeClock(start=T0))
    sent: list[tuple[str, str, list[int]]] = []

    @box.job("send_email")
    def send_email(to: str, subject: str = "", tags: tuple[int, ...] = ()) -> str:
        """Sends one email."""
        sent.append((to, subject, list(tags)))
        return "queued-by-smtp"

    assert isinstance(send_email, mulligan.OutboxJob)
    assert send_email.__doc__ == "Sends one email." and send_email.name == "send_email"
    # A call runs the function now and enqueues nothing (Celery's idiom).
    assert send_email("bob@example.com") == "queued-by-smtp"
    assert sent == [("bob@example.com", "", [])] and box.stats().depth == 0
    sent.clear()

    entry = send_email.delay("ann@example.com", subject="paid", tags=(1, 2))
    assert isinstance(entry, mulligan.OutboxEntry)
    assert (entry.kind, entry.job, entry.state) == ("job", "send_email", "pending")
    # The payload is the documented JSON text, keys sorted, compact.
    assert entry.payload == b'{"args":["ann@example.com"],"kwargs":{"subject":"paid","tags":[1,2]}}'
    assert sent == []  # nothing ran yet
    assert box.run_worker(until_idle=True) == 1
    assert sent == [("ann@example.com", "paid", [1, 2])]
    assert box.get(entry.id).state == "done"


def test_enqueue_with_a_key_and_with_key_passes_it(tmp_path: Any) -> None:
    box = _box(tmp_path, FakeClock(start=T0))
    seen: list[tuple[int, str]] = []

    @box.job("capture", with_key=True)
    def capture(order: int, *, idempotency_key: str) -> None:
        seen.append((order, idempotency_key))

    entry = capture.enqueue([17], idempotency_key="capture-17")
    assert entry.idempotency_key == "capture-17"
    with pytest.raises(ValueError, match="already entry"):
        capture.enqueue([17], idempotency_key="capture-17")  # enqueued once
    box.run_worker(until_idle=True)
    assert seen == [(17, "capture-17")]


def test_raw_serializer_passes_bytes(tmp_path: Any) -> None:
    box = _box(tmp_path, FakeClock(start=T0))
    got: list[bytes] = []

    @box.job("blob", serializer="raw")
    def blob(payload: bytes) -> None:
        got.append(payload)

    assert blob.delay("héllo").payload == "héllo".encode("utf-8")
    assert blob.delay(b"\x00\xff").payload == b"\x00\xff"
    with pytest.raises(TypeError, match="exactly one bytes or str argument"):
        blob.delay(b"a", b"b")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="exactly one bytes or str argument"):
        blob.delay(17)  # type: ignore[arg-type]
    box.run_worker(until_idle=True)
    assert got == ["héllo".encode("utf-8"), b"\x00\xff"]


def test_what_json_cannot_carry_is_refused_at_delay_and_nothing_is_written(tmp_path: Any) -> None:
    box = _box(tmp_path, FakeClock(start=T0))

    @box.job("j")
    def j(value: Any) -> None: ...

    with pytest.raises(TypeError, match=r"job 'j': arguments must be JSON-serializable"):
        j.delay(object())
    with pytest.raises(TypeError, match="JSON-serializable"):
        j.delay(b"bytes are not JSON")
    with pytest.raises(ValueError, match="Out of range float values"):
        j.delay(float("nan"))
    assert box.stats().depth == 0


def test_bad_decorator_arguments(tmp_path: Any) -> None:
    box = _box(tmp_path, FakeClock(start=T0))
    with pytest.raises(ValueError, match="serializer must be one of json, raw, got 'pickle'"):
        box.job("x", serializer="pickle")
    with pytest.raises(ValueError, match="name must not be empty"):
        box.job("")
    with pytest.raises(TypeError, match="with_key must be a bool"):
        box.job("x", with_key=1)  # type: ignore[arg-type]


def test_an_undecodable_payload_fails_its_attempts_and_is_dead_lettered(tmp_path: Any) -> None:
    clock = FakeClock(start=T0)
    box = _box(tmp_path, clock)

    @box.job("j")
    def j() -> None: ...

    entry = box.enqueue_job("j", b'{"args": 1}')  # written by another program
    box.run_worker(until_idle=True)
    dead = box.get(entry.id)
    assert (dead.state, dead.attempts, dead.stop_reason) == ("dead", 2, "attempts_exhausted")
    assert box.history(entry.id)[0].message == (
        "ValueError: mulligan.Outbox job 'j': the payload is not "
        '{"args": [...], "kwargs": {...}}'
    )


def test_a_coroutine_job_is_awaited_by_the_asyncio_worker(tmp_path: Any) -> None:
    box = _box(tmp_path, FakeClock(start=T0))
    done: list[int] = []

    @box.job("acount")
    async def acount(n: int) -> None:
        await asyncio.sleep(0)
        done.append(n)

    acount.delay(3)
    assert json.loads(box.list()[0].payload) == {"args": [3], "kwargs": {}}
    assert asyncio.run(box.arun_worker(until_idle=True)) == 1
    assert done == [3]


def test_a_second_function_of_one_job_name_is_refused(tmp_path: Any) -> None:
    # Two functions of one name would take each other's queued entries (the
    # review's case: every queued call then failed on the other signature).
    with _box(tmp_path, FakeClock()) as box:
        @box.job("send")
        def send(to: str, subject: str = "") -> None: ...

        entry = send.delay("a@example.com", subject="paid")
        with pytest.raises(ValueError, match="the job 'send' already has a handler"):
            box.job("send")(lambda: None)
        # Nothing was lost: the first function still owns the job.
        assert box.get(entry.id).state == "pending"
        assert box._handlers["send"] == send._handle
