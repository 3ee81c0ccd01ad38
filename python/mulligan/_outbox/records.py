"""The records :class:`mulligan.Outbox` hands out: an entry as stored, one
attempt of its history, and the queue's counts (plain frozen dataclasses,
built from the engine's dicts). Their own module so that the job decorator
(job.py) can name :class:`OutboxEntry` without importing outbox.py, which
imports it (the package imports downward only).

.. versionadded:: 0.5.0 (in this module since 0.6.0)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["OutboxAttempt", "OutboxEntry", "OutboxStats"]


@dataclass(frozen=True)
class OutboxEntry:
    """One entry as stored.

    Attributes:
        id: the entry's number (increasing in enqueue order).
        kind: ``"http"`` or ``"job"``.
        idempotency_key: the one key of the entry's whole life.
        method, url, headers, body: the HTTP request (kind ``"http"``).
        job, payload: the handler's name and the payload (kind ``"job"``).
        state: ``"pending"``, ``"leased"``, ``"done"`` or ``"dead"``.
        attempts: attempts recorded so far; since 0.6 a lease that expired
            unfinished (its worker died or overran ``lease_timeout``) is one,
            with the history row "lease expired, worker W".
        leases: times a worker leased it.
        created_at, next_attempt_at, lease_expires_at, finished_at: Unix
            seconds (the outbox's clock).
        lease_owner: the worker holding it (state ``"leased"``).
        stop_reason: ``"succeeded"``, or why it is dead
            (``"attempts_exhausted"``, ``"terminal"``,
            ``"retry_after_too_long"``, ``"deadline"``).
    """

    id: int
    kind: str
    idempotency_key: str
    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    job: str
    payload: bytes
    state: str
    attempts: int
    leases: int
    created_at: float
    next_attempt_at: float
    lease_owner: str
    lease_expires_at: float
    finished_at: float
    stop_reason: str

    @classmethod
    def _of(cls, d: Mapping[str, Any]) -> OutboxEntry:
        fields = dict(d)
        fields["headers"] = tuple(tuple(h) for h in fields["headers"])
        return cls(**fields)


@dataclass(frozen=True)
class OutboxAttempt:
    """One recorded attempt of an entry.

    Attributes:
        attempt: 1 for the first.
        at: when it was recorded (Unix seconds).
        http_status: the response's status, or 0.
        error: the failure's kind (``"none"``, ``"connection_refused"``, ...).
        classification: ``"success"``, ``"retryable"`` or ``"terminal"``.
        message: what the worker said (``"HTTP 503"``, the exception text).
        delay: the wait decided after it, in seconds (0 when it ended the
            entry).
    """

    attempt: int
    at: float
    http_status: int
    error: str
    classification: str
    message: str
    delay: float


@dataclass(frozen=True)
class OutboxStats:
    """Counts for metrics: ``depth`` (pending + leased), each state's count,
    ``oldest_age`` (seconds since the oldest live entry was enqueued, 0 when
    none), and ``deliveries`` / ``dead_letters`` since the file was made;
    ``failures`` (failed attempts recorded) and ``lease_expiries`` (leases
    that ended unfinished, each counted as an attempt) since the file was
    first opened by 0.6 (added in 0.6)."""

    depth: int
    pending: int
    leased: int
    done: int
    dead: int
    oldest_age: float
    deliveries: int
    dead_letters: int
    failures: int
    lease_expiries: int
