"""Options and misuse refused with a clear error naming the field (issue 21,
0.6 fixes): bool where an int is meant, a fractional byte count, another
program's SQLite database, use after close(), and entry ids outside SQLite's
rowid range."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

import mulligan


def test_attempts_true_and_fractional_sizes_are_refused(tmp_path: Any) -> None:
    path = tmp_path / "o.db"
    with pytest.raises(TypeError, match=r"mulligan.Outbox: policy.attempts must be an int, got True"):
        mulligan.Outbox(path, policy={"attempts": True})
    with pytest.raises(TypeError, match=r"mulligan.Outbox: max_size_bytes must be an int, got 1.5"):
        mulligan.Outbox(path, max_size_bytes=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"lease_timeout must be a number of seconds"):
        mulligan.Outbox(path, lease_timeout=True)
    with pytest.raises(TypeError, match=r"policy.base_delay must be a number of seconds"):
        mulligan.Outbox(path, policy={"base_delay": "1s"})
    with pytest.raises(ValueError, match=r"max_size_bytes must be in \[0, 2\*\*63 - 1\], got -1"):
        mulligan.Outbox(path, max_size_bytes=-1)
    assert not path.exists()  # refused before the file was made


def test_another_programs_database_is_refused_and_left_alone(tmp_path: Any) -> None:
    path = tmp_path / "app.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT)")
    con.commit()
    con.close()
    with pytest.raises(mulligan.OutboxError) as info:
        mulligan.Outbox(path)
    assert str(info.value) == (
        f"outbox {path}: not a mulligan outbox: it holds other tables (users) and no "
        "outbox_meta schema marker; refusing to add the outbox's tables to it"
    )
    con = sqlite3.connect(path)
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    con.close()
    assert tables == ["users"]


def test_use_after_close_is_a_clear_error(tmp_path: Any) -> None:
    box = mulligan.Outbox(tmp_path / "o.db")
    entry = box.enqueue_job("j", b"p")
    box.close()
    box.close()  # idempotent
    for use in (lambda: box.enqueue_job("j", b"p"), lambda: box.get(entry.id), box.stats,
                box.deliver_due, lambda: box.list()):
        with pytest.raises(mulligan.OutboxError, match=r"the outbox .*o\.db is closed"):
            use()
    again = mulligan.Outbox(tmp_path / "o.db")  # the file is intact
    assert again.get(entry.id).state == "pending"
    again.close()


def test_entry_ids_outside_the_rowid_range(tmp_path: Any) -> None:
    box = mulligan.Outbox(tmp_path / "o.db")
    for bad in (0, -1, 2**63, 99999999999999999999):
        with pytest.raises(ValueError, match=r"entry_id must be in \[1, 2\*\*63 - 1\]"):
            box.retry(bad)
    with pytest.raises(TypeError, match="entry_id must be an int, got True"):
        box.get(True)
    with pytest.raises(ValueError, match="no outbox entry 2"):
        box.get(2)
    box.close()
