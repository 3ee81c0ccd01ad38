"""mulligan.Outbox on Redis Streams (0.6), on the suite's real redis-server
(no persistence, so sync="normal") and a FakeClock: two objects sharing one
outbox, the options' errors, a stopped server, the command. Delivery to nginx
with one key per entry is test_outbox.py's test, run over both backends, and
the kill -9 worker test is test_outbox_crash.py's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import mulligan
from mulligan.testing import FakeClock

_POLICY = {"attempts": 3, "jitter": "none", "base_delay": 0.5}


def _box(redis_server: Any, clock: FakeClock, **kw: Any) -> mulligan.Outbox:
    return mulligan.Outbox(redis_server.url, name="hooks", sync="normal", policy=_POLICY,
                           clock=clock, **kw)


def test_a_second_outbox_object_on_the_same_name_shares_the_entries(redis_server: Any) -> None:
    clock = FakeClock(start=1_700_000_000.0)
    state = mulligan.RedisState(redis_server.url, timeout=5.0)
    producer = mulligan.Outbox(state=state, name="jobs", sync="normal", policy=_POLICY,
                               clock=clock)
    worker = _box(redis_server, clock, metrics=False)
    assert worker.path == f"{redis_server.url} hooks"  # no credentials
    seen: list[tuple[bytes, str]] = []
    worker_jobs = mulligan.Outbox(redis_server.url, name="jobs", sync="normal",
                                  policy=_POLICY, clock=clock)
    worker_jobs.register("mail", lambda payload, key: seen.append((payload, key)))
    entry = producer.enqueue_job("mail", b"to=ann", idempotency_key="mail-1")
    assert worker.stats().depth == 0  # another name, another outbox
    assert worker_jobs.run_worker(poll_interval=0.25, until_idle=True) == 1
    assert seen == [(b"to=ann", "mail-1")]
    assert producer.get(entry.id).state == "done"


def test_bad_redis_options_raise_clear_errors(redis_server: Any) -> None:
    state = mulligan.RedisState(redis_server.url)
    with pytest.raises(ValueError, match="give path or state, not both"):
        mulligan.Outbox("x.db", state=state, name="a")
    with pytest.raises(ValueError, match="give path"):
        mulligan.Outbox()
    with pytest.raises(ValueError, match="name must name the outbox on Redis"):
        mulligan.Outbox(redis_server.url)
    with pytest.raises(TypeError, match="state must be a mulligan.RedisState"):
        mulligan.Outbox(state="redis://x", name="a")
    # The suite's server does not fsync every write: sync="full" is refused.
    with pytest.raises(mulligan.OutboxError, match="appendfsync always"):
        mulligan.Outbox(state=state, name="a")
    with pytest.raises(ValueError, match="maxmemory"):
        mulligan.Outbox(state=state, name="a", sync="normal", max_size_bytes=1024)
    with pytest.raises(mulligan.OutboxError, match="no such outbox"):
        mulligan.Outbox(state=state, name="absent", sync="normal", create=False)


def test_a_stopped_server_raises_outbox_error_naming_the_server(redis_server: Any) -> None:
    clock = FakeClock(start=1_700_000_000.0)
    box = _box(redis_server, clock)
    box.enqueue_job("mail", b"x")
    redis_server.stop()
    with pytest.raises(mulligan.OutboxError, match="outbox hooks: enqueue") as e:
        box.enqueue_job("mail", b"y", idempotency_key="k-2")
    assert "k-2" in str(e.value)
    assert redis_server.url in str(e.value)


def test_the_command_reads_and_repairs_a_redis_outbox(redis_server: Any, capsys: Any) -> None:
    from mulligan._cli.main import main

    clock = FakeClock(start=1_700_000_000.0)
    box = _box(redis_server, clock, metrics=False)
    box.register("never", lambda payload, key: 1 / 0)
    entry = box.enqueue_job("never", b"x")
    box.run_worker(poll_interval=0.5, until_idle=True)
    url = redis_server.url
    assert main(["outbox", "stats", url, "--name", "hooks", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (stats["depth"], stats["dead"], stats["dead_letters"]) == (0, 1, 1)
    assert main(["outbox", "dead", url, "--name", "hooks", "--json"]) == 0
    dead = json.loads(capsys.readouterr().out)
    assert dead["id"] == entry.id and dead["stop_reason"] == "attempts_exhausted"
    assert main(["outbox", "retry", url, "--name", "hooks", str(entry.id)]) == 0
    capsys.readouterr()
    assert box.get(entry.id).state == "pending"
    assert main(["outbox", "list", url, "--name", "absent"]) == 1
    assert "no such outbox" in capsys.readouterr().err


def test_the_command_finds_an_outbox_under_its_state_prefix(redis_server: Any, capsys: Any) -> None:
    """--prefix (0.6) names the RedisState prefix the outbox was made with:
    without it the command looks under "mulligan" and finds no such outbox,
    never another outbox of the same name."""
    from mulligan._cli.main import main

    state = mulligan.RedisState(redis_server.url, prefix="shop")
    box = mulligan.Outbox(state=state, name="webhooks", sync="normal", metrics=False)
    box.enqueue_job("send", b"1")
    box.enqueue_job("send", b"2")
    url = redis_server.url
    assert main(["outbox", "stats", url, "--name", "webhooks", "--prefix", "shop", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pending"] == 2
    assert main(["outbox", "stats", url, "--name", "webhooks"]) == 1
    assert "no such outbox" in capsys.readouterr().err
    box.close()


def test_redis_options_on_a_file_are_a_usage_error(tmp_path: Any, capsys: Any) -> None:
    from mulligan._cli.main import main

    path = tmp_path / "box.db"
    mulligan.Outbox(path, metrics=False).close()
    assert main(["outbox", "stats", str(path), "--name", "webhooks"]) == 2
    assert main(["outbox", "stats", str(path), "--prefix", "shop"]) == 2
    assert capsys.readouterr().err.count("DB must be a redis:// URL") == 2
    assert main(["outbox", "stats", str(path)]) == 0
