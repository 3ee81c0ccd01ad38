"""``mulligan outbox list|dead|retry|purge|stats``: run through the command's
main() on a real outbox file made by mulligan.Outbox on a FakeClock."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mulligan
from mulligan._cli.main import main
from mulligan.testing import FakeClock


def _made(tmp_path: Any) -> tuple[str, int, int]:
    path = str(tmp_path / "box.db")
    clock = FakeClock(start=1_700_000_000.0)
    box = mulligan.Outbox(path, policy={"attempts": 1}, clock=clock)

    @box.handler("boom")
    def boom(payload: bytes, key: str) -> None:
        raise OSError("disk on fire")

    dead = box.enqueue_job("boom", b"p", idempotency_key="dead-1")
    live = box.enqueue("POST", "http://127.0.0.1:9/hook", body=b"b", idempotency_key="live-1")
    assert box.deliver_due(batch=1) == 1  # only the job: the oldest due first
    return path, dead.id, live.id


def test_list_dead_stats_retry_purge(tmp_path: Any, capsys: Any) -> None:
    path, dead_id, live_id = _made(tmp_path)
    assert main(["outbox", "list", path]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[:4] for line in lines] == [
        [str(dead_id), "dead", "1", "dead-1"],
        [str(live_id), "pending", "0", "live-1"],
    ]
    assert lines[1].split("\t")[4] == "POST http://127.0.0.1:9/hook"

    assert main(["outbox", "dead", path, "--json"]) == 0
    dead = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [d["id"] for d in dead] == [dead_id]
    assert dead[0]["stop_reason"] == "attempts_exhausted"
    assert dead[0]["last_attempt"]["message"] == "OSError: disk on fire"

    assert main(["outbox", "stats", path, "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (stats["depth"], stats["dead"], stats["dead_letters"]) == (1, 1, 1)

    assert main(["outbox", "retry", path, str(dead_id), str(live_id)]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [f"{dead_id}\tpending"]
    assert "not dead" in captured.err
    assert main(["outbox", "purge", path, "--state", "done"]) == 0
    assert capsys.readouterr().out.strip() == "purged 0 done entries"
    assert main(["outbox", "list", path, "--state", "dead"]) == 0
    assert capsys.readouterr().out == ""


def test_usage_errors(tmp_path: Any, capsys: Any) -> None:
    with pytest.raises(SystemExit) as info:
        main(["outbox", "purge", str(tmp_path / "x.db"), "--state", "pending"])
    assert info.value.code == 2
    not_db = tmp_path / "not.db"
    not_db.write_text("plain text, not an SQLite database at all, certainly not an outbox\n")
    assert main(["outbox", "stats", str(not_db)]) == 1
    assert str(not_db) in capsys.readouterr().err


def test_a_mistyped_path_makes_no_database(tmp_path: Any, capsys: Any) -> None:
    typo = tmp_path / "tpyo.db"
    for action in (["stats"], ["list"], ["dead"], ["purge", "--state", "done"], ["retry", "1"]):
        args = ["outbox", action[0], str(typo), *action[1:]]
        assert main(args) == 1, args
        err = capsys.readouterr().err
        assert "no such file" in err and str(typo) in err
        assert "Traceback" not in err
    assert not typo.exists()
    assert list(tmp_path.iterdir()) == []


def test_an_empty_file_is_left_empty(tmp_path: Any, capsys: Any) -> None:
    # Opening would make an empty file an outbox (the schema written in); the
    # command only reads and edits outboxes that exist.
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    for action in (["stats"], ["list"], ["dead"], ["purge", "--state", "done"], ["retry", "1"]):
        assert main(["outbox", action[0], str(empty), *action[1:]]) == 1, action
        err = capsys.readouterr().err
        assert "is an empty file, not an outbox" in err and "Traceback" not in err
    assert empty.stat().st_size == 0


def test_retry_of_an_id_past_the_rowid_range_is_a_usage_error(tmp_path: Any, capsys: Any) -> None:
    path, _, _ = _made(tmp_path)
    for bad in ("99999999999999999999", "0", "seven"):
        with pytest.raises(SystemExit) as info:
            main(["outbox", "retry", path, bad])
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert f"invalid entry ID '{bad}'" in err and "Traceback" not in err
