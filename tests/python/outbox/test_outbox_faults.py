"""mulligan.Outbox under faults a queue must survive: entries the client
could never send, an async handler under the blocking worker, a lease lost
while its attempt ran, and text outside ASCII. Each one must end in a clear
error or a dead letter with its reason, never a stopped queue or an entry
counted delivered that was not."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import mulligan
from mulligan.testing import FakeClock

T0 = 1_700_000_000.0


def _box(tmp_path: Any, clock: FakeClock, **options: Any) -> mulligan.Outbox:
    return mulligan.Outbox(tmp_path / "outbox.db", policy={"attempts": 3, "jitter": "none",
                                                          "base_delay": 0.5},
                           clock=clock, **options)


@pytest.mark.parametrize(
    "url, headers, words",
    [
        ("http://127.0.0.1:9/a b", None, "whitespace"),
        ("http://127.0.0.1:9/\r\nHost: evil", None, "control characters"),
        ("http://", None, "host"),
        ("http://127.0.0.1:9/", {"Content-Length": "3"}, "managed by the client"),
        ("http://127.0.0.1:9/", {"Transfer-Encoding": "chunked"}, "managed by the client"),
        ("http://127.0.0.1:9/", {"X-A": "line\r\nX-B: 1"}, "CR, LF or NUL"),
    ],
)
def test_an_entry_the_client_could_not_send_is_refused_at_enqueue(
    tmp_path: Any, url: str, headers: Any, words: str
) -> None:
    box = _box(tmp_path, FakeClock(start=T0))
    with pytest.raises(ValueError, match=words):
        box.enqueue("POST", url, headers=headers, body=b"x")
    assert box.stats().depth == 0  # nothing written


def test_an_unsendable_entry_is_dead_lettered_and_the_queue_goes_on(
    tmp_path: Any, server: Any
) -> None:
    # An entry the client refuses (written without the checks, as by 0.5's
    # first cut or another program) no longer stops the worker: it is dead,
    # terminal, with the reason; the good entry of the same batch is delivered.
    clock = FakeClock(start=T0)
    box = _box(tmp_path, clock)
    bad = box._box.enqueue_http("POST", "http://", [], b"x", "", T0)
    good = box.enqueue("POST", server.url("/ok"), body=b"y")
    assert box.run_worker(poll_interval=0.25, until_idle=True) == 2
    dead = box.get(bad["id"])
    assert (dead.state, dead.stop_reason, dead.attempts) == ("dead", "terminal", 1)
    assert box.history(bad["id"])[0].message.startswith("refused by the client: ")
    assert box.get(good.id).state == "done"
    keys = [e["idempotency_key"] for e in server.wait_for_access_log(1)]
    assert keys == [good.idempotency_key]


def test_an_async_handler_under_the_blocking_worker_is_never_counted_delivered(
    tmp_path: Any,
) -> None:
    box = _box(tmp_path, FakeClock(start=T0))
    ran: list[bytes] = []

    @box.handler("mail")
    async def mail(payload: bytes, key: str) -> None:
        ran.append(payload)

    entry = box.enqueue_job("mail", b"to=ann")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited"
        box.run_worker(poll_interval=0.25, until_idle=True)
    assert ran == []
    dead = box.get(entry.id)
    assert (dead.state, dead.stop_reason) == ("dead", "terminal")
    assert "is async: deliver it with adeliver_due() or arun_worker()" in box.history(entry.id)[0].message
    assert box.stats().deliveries == 0
    # The asyncio worker delivers it once it is retried.
    box.retry(entry.id)

    async def deliver() -> int:
        return await box.adeliver_due()

    import asyncio

    assert asyncio.run(deliver()) == 1
    assert ran == [b"to=ann"] and box.get(entry.id).state == "done"


def test_a_late_failure_after_the_lease_was_lost_is_dropped(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # Worker A's attempt outlives its 10 s lease; worker B takes the entry
    # and delivers it; A's late failure is dropped (logged), not raised.
    clock = FakeClock(start=T0)
    a = _box(tmp_path, clock, lease_timeout=10)
    b = _box(tmp_path, clock, lease_timeout=10)
    seen: list[str] = []

    def slow_then_fail(payload: bytes, key: str) -> None:
        seen.append("A")
        clock.advance(11)  # past A's lease
        # B's lease counts A's expired lease as attempt 1 (0.6): due again
        # after the first backoff, 0.5 s.
        assert b.deliver_due(worker="B") == 0
        clock.advance(0.5)
        assert b.deliver_due(worker="B") == 1
        raise RuntimeError("A's attempt timed out")

    a.register("job", slow_then_fail)
    b.register("job", lambda payload, key: seen.append("B"))
    entry = a.enqueue_job("job", b"p")
    with caplog.at_level("WARNING", logger="mulligan"):
        assert a.deliver_due(worker="A") == 1
    assert seen == ["A", "B"]
    done = a.get(entry.id)
    assert (done.state, done.stop_reason, done.attempts) == ("done", "succeeded", 2)
    assert [h.message for h in a.history(entry.id)] == ["lease expired, worker A", "delivered"]
    assert any("dropped the late result of entry" in r.getMessage() for r in caplog.records)


def test_text_outside_ascii_is_sent_as_the_client_sends_it(tmp_path: Any, server: Any) -> None:
    clock = FakeClock(start=T0)
    box = _box(tmp_path, clock)
    url = server.url("/ok/caf\u00e9")
    entry = box.enqueue("POST", url, headers={"X-Name": "Jos\u00e9"}, body=b"x")
    assert entry.url == url and ("X-Name", "Jos\u00e9") in entry.headers
    assert box.get(entry.id).url == url
    box.run_worker(poll_interval=0.25, until_idle=True)
    with mulligan.Client(attempts=1) as client:
        client.post(url, headers={"X-Name": "Jos\u00e9"}, data=b"x")
    log = server.wait_for_access_log(2)
    assert len(log) == 2 and log[0]["uri"] == log[1]["uri"]
    assert "%C3%83" not in log[0]["uri"]  # not encoded twice
