"""``mulligan outbox list|dead|retry|purge|stats DB``: inspects and repairs a
durable outbox file (:class:`mulligan.Outbox`).

- ``list DB [--state S] [--limit N] [--json]``: entries, oldest first.
- ``dead DB [--limit N] [--json]``: the dead letters with their last attempt.
- ``retry DB ID...``: makes dead entries due now (history kept).
- ``purge DB --state done|dead``: deletes finished entries and their history.
- ``stats DB [--json]``: depth, each state's count, the oldest live entry's
  age, deliveries and dead letters.

Exit codes: 0 done, 1 an entry given to ``retry`` is not dead or absent, or
the file is absent or not an outbox, 2 usage (an ID that is not an int in
[1, 2**63 - 1] among them).

Every action opens the file with ``create=False`` (since 0.6): a mistyped
path, or an empty file, is an error, never a new empty database.

DB may be a ``redis://`` URL with ``--name NAME`` (0.6): the Redis outbox of
that name (``create=False`` too: an absent one is "no such outbox"), opened
with ``sync="normal"``, since the command checks no server persistence.
``--prefix P`` names the key prefix the outbox's :class:`mulligan.RedisState`
was made with (default ``mulligan``), and ``--timeout SECONDS`` bounds each
Redis command (default 5 s: the command may read large entries).

An :class:`mulligan.OutboxError` while the action runs (a read-only file on
``purge``, Redis gone or too slow) is printed as ``mulligan outbox: ...``
with exit code 1, never a traceback.

.. versionadded:: 0.5.0
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from typing import Any, Optional, TextIO

from .._errors import OutboxError
from .._outbox import Outbox, OutboxEntry
from .._state.redis import RedisState

__all__ = ["add_outbox_parser", "outbox_main"]


_INT64_MAX = 2**63 - 1


def _entry_id(text: str) -> int:
    """An entry ID on the command line: an int in [1, 2**63 - 1] (SQLite's
    rowid range); anything else is a usage error naming the value."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid entry ID {text!r}: not an integer") from None
    if not 1 <= value <= _INT64_MAX:
        raise argparse.ArgumentTypeError(
            f"invalid entry ID {text!r}: must be in [1, 2**63 - 1]"
        )
    return value


def add_outbox_parser(sub: Any) -> None:
    """Adds ``outbox`` and its actions to the command's subparsers."""
    o = sub.add_parser("outbox", help="inspect and repair a durable outbox file")
    actions = o.add_subparsers(dest="outbox_command", metavar="ACTION")
    actions.required = True
    ls = actions.add_parser("list", help="list entries, oldest first")
    ls.add_argument("db", metavar="DB")
    ls.add_argument("--state", choices=("pending", "leased", "done", "dead"), default=None)
    ls.add_argument("--limit", type=int, default=100)
    ls.add_argument("--json", action="store_true", help="one JSON object per line")
    dead = actions.add_parser("dead", help="list dead letters with their last attempt")
    dead.add_argument("db", metavar="DB")
    dead.add_argument("--limit", type=int, default=100)
    dead.add_argument("--json", action="store_true", help="one JSON object per line")
    retry = actions.add_parser("retry", help="make dead entries due now")
    retry.add_argument("db", metavar="DB")
    retry.add_argument("ids", nargs="+", type=_entry_id, metavar="ID")
    purge = actions.add_parser("purge", help="delete done or dead entries")
    purge.add_argument("db", metavar="DB")
    purge.add_argument("--state", choices=("done", "dead"), required=True)
    stats = actions.add_parser("stats", help="depth, ages and counts")
    stats.add_argument("db", metavar="DB")
    stats.add_argument("--json", action="store_true")
    for action in (ls, dead, retry, purge, stats):
        action.add_argument("--name", default=None,
                            help="the outbox's name, when DB is a redis:// URL (0.6)")
        action.add_argument("--prefix", default="mulligan",
                            help="the RedisState's key prefix, when DB is a redis:// URL "
                                 "(default mulligan)")
        action.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS",
                            help="each Redis command's bound, when DB is a redis:// URL "
                                 "(default 5)")


def _target(e: OutboxEntry) -> str:
    return f"{e.method} {e.url}" if e.kind == "http" else f"job {e.job}"


def _row(e: OutboxEntry, now: float) -> str:
    if e.state == "pending":
        when = f"due in {max(0.0, e.next_attempt_at - now):.3f}s"
    elif e.state == "leased":
        when = f"leased by {e.lease_owner} for {max(0.0, e.lease_expires_at - now):.3f}s"
    else:
        when = e.stop_reason
    return f"{e.id}\t{e.state}\t{e.attempts}\t{e.idempotency_key}\t{_target(e)}\t{when}"


def _entry_json(e: OutboxEntry) -> dict[str, Any]:
    d = dataclasses.asdict(e)
    d["body"] = e.body.decode("utf-8", "replace")
    d["payload"] = e.payload.decode("utf-8", "replace")
    d["headers"] = [list(h) for h in e.headers]
    return d


def outbox_main(
    args: argparse.Namespace, stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None
) -> int:
    """Runs one ``mulligan outbox`` action; returns the exit code."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    if getattr(args, "limit", 1) < 1:
        print("mulligan outbox: --limit must be >= 1", file=err)
        return 2
    redis = args.db.startswith(("redis://", "rediss://"))
    if not redis and os.path.isfile(args.db) and os.path.getsize(args.db) == 0:
        # An empty file would become an outbox when opened; the command only
        # reads and edits outboxes that exist.
        print(f"mulligan outbox: {args.db} is an empty file, not an outbox", file=err)
        return 1
    if not redis and (args.name is not None or args.prefix != "mulligan"):
        print("mulligan outbox: --name and --prefix name a Redis outbox: DB must be a "
              "redis:// URL", file=err)
        return 2
    try:
        if redis:
            state = RedisState(args.db, prefix=args.prefix, timeout=args.timeout)
            box = Outbox(state=state, name=args.name, sync="normal", create=False, metrics=False)
        else:
            box = Outbox(args.db, create=False, metrics=False)
    except (OutboxError, ValueError) as e:
        print(f"mulligan outbox: {e}", file=err)
        return 1
    try:
        return _act(args, box, out, err)
    except OutboxError as e:
        print(f"mulligan outbox: {e}", file=err)
        return 1
    finally:
        box.close()


def _act(args: argparse.Namespace, box: Outbox, out: TextIO, err: TextIO) -> int:
    """Runs the action on the open outbox; returns the exit code."""
    now = time.time()
    action = args.outbox_command
    if action in ("list", "dead"):
        entries = box.list("dead" if action == "dead" else args.state, limit=args.limit)
        for entry in entries:
            last = box.history(entry.id)[-1:] if action == "dead" else []
            if args.json:
                d = _entry_json(entry)
                if action == "dead":
                    d["last_attempt"] = dataclasses.asdict(last[0]) if last else None
                print(json.dumps(d, sort_keys=True), file=out)
            else:
                tail = f"\t{last[0].message}" if last else ""
                print(_row(entry, now) + tail, file=out)
        return 0
    if action == "retry":
        status = 0
        for entry_id in args.ids:
            try:
                box.retry(entry_id)
                print(f"{entry_id}\tpending", file=out)
            except ValueError as e:
                print(f"mulligan outbox retry: {e}", file=err)
                status = 1
        return status
    if action == "purge":
        print(f"purged {box.purge(args.state)} {args.state} entries", file=out)
        return 0
    s = box.stats()
    if args.json:
        print(json.dumps(dataclasses.asdict(s), sort_keys=True), file=out)
    else:
        for name, value in dataclasses.asdict(s).items():
            print(f"{name}\t{value}", file=out)
    return 0
