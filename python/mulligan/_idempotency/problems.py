"""The answers of the idempotency middlewares that the app does not give: RFC
9457 problem responses (400, 409, 422, 503), replays, and which stored
header fields a replay repeats.

==============================  ======  ==========================================
situation                       status  body / headers
==============================  ======  ==========================================
first request with a key        (app)   the handler's response, stored for ``ttl``
repeat, same fingerprint        stored  the stored response + ``Idempotent-Replayed: true``
repeat while the first runs     409     problem JSON + ``Retry-After``
same key, different request     422     problem JSON
key required but missing        400     problem JSON
key malformed or too long       400     problem JSON
store full of in-flight keys    503     problem JSON + ``Retry-After``
state backend (Redis) down      503     problem JSON + ``Retry-After``, handler not run
==============================  ======  ==========================================

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Optional

from .._text import fold
from .._errors import StateBackendUnavailable
from .store import IdempotencyReservation, IdempotencyStore

__all__: list[str] = []

# Hop-by-hop fields (RFC 9110 section 7.6.1) and per-response fields that a
# replay must not repeat.
_DROPPED_HEADERS = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"transfer-encoding",
        b"te",
        b"trailer",
        b"upgrade",
        b"proxy-connection",
        b"date",
        b"server",
    }
)
_PROBLEM_BASE = "tag:mulligan,2024:problem:"


def _problem(
    status: int, kind: str, title: str, detail: str, retry_after: Optional[float] = None
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """An RFC 9457 problem response: (status, headers, body)."""
    body = json.dumps(
        {"type": _PROBLEM_BASE + kind, "title": title, "status": status, "detail": detail},
        separators=(",", ":"),
    ).encode("utf-8")
    headers = [
        (b"content-type", b"application/problem+json"),
        (b"content-length", str(len(body)).encode("ascii")),
    ]
    if retry_after is not None:
        # Whole seconds (RFC 9110 delay-seconds), at least 1 so that a client
        # does not spin.
        headers.append((b"retry-after", str(max(1, math.ceil(retry_after))).encode("ascii")))
    return status, headers, body


def _missing_key() -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    return _problem(
        400,
        "idempotency-key-missing",
        "Idempotency-Key is missing",
        "This operation requires an Idempotency-Key header.",
    )


def _malformed_key(why: str) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    return _problem(400, "idempotency-key-malformed", "Idempotency-Key is malformed", why)


def _answer(
    r: IdempotencyReservation,
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The response for a reservation that is not ``"reserved"``."""
    if r.state == "replay":
        headers = [(n, v) for n, v in r.headers if fold(n) != b"idempotent-replayed"]
        headers.append((b"idempotent-replayed", b"true"))
        return r.status, headers, r.body
    if r.state == "in_flight":
        return _problem(
            409,
            "idempotency-key-in-flight",
            "A request with this Idempotency-Key is being processed",
            "Retry the request after the time given by Retry-After.",
            retry_after=r.retry_after,
        )
    return _problem(
        422,
        "idempotency-key-reused",
        "Idempotency-Key reused with a different request",
        "This Idempotency-Key was used with a different method, path or body.",
    )


def _store_full(detail: str) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    return _problem(
        503, "idempotency-store-full", "Too many requests in flight", detail, retry_after=1.0
    )


def _state_unavailable() -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """503 for a store whose backend (Redis) did not answer: fail closed. The
    detail names no host: the cause is logged by the server, not told to the
    client. (Added in 0.5.0.)"""
    return _problem(
        503,
        "idempotency-store-unavailable",
        "Idempotency store unavailable",
        "The request was not processed because its Idempotency-Key could not be checked. "
        "Retry the request after the time given by Retry-After.",
        retry_after=1.0,
    )


def _complete_or_keep(store: IdempotencyStore, reservation: IdempotencyReservation,
                      status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    """Stores a handler's response; when the store's backend is unavailable,
    tries once more (a Complete may be repeated with the same reservation,
    and the backend reconnects at once after a dropped connection), then
    leaves the key in flight: the response still goes to this client, and
    repeats get 409 until the lease runs out. Other errors propagate to the
    caller's handling (IdempotencyStoreFull, ValueError). (Added in 0.5.0.)"""
    try:
        store.complete(reservation, status=status, headers=headers, body=body)
    except StateBackendUnavailable:
        try:
            store.complete(reservation, status=status, headers=headers, body=body)
        except StateBackendUnavailable:
            pass


def _release_quietly(store: IdempotencyStore, reservation: IdempotencyReservation) -> None:
    """Frees a key; a lease not held any more, or a backend that is down
    (the key then stays in flight until its lease runs out), is not an error
    of the request. (Added in 0.5.0.)"""
    try:
        store.release(reservation)
    except (ValueError, StateBackendUnavailable):
        pass


def _storable_headers(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    return [(n, v) for n, v in headers if fold(n) not in _DROPPED_HEADERS]
