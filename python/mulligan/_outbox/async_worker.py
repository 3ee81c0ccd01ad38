"""The asyncio worker of :class:`mulligan.Outbox`: the same delivery as the
blocking worker (one attempt per lease, the entry's key on every attempt;
the core records the outcome and decides the next attempt), with HTTP through
:class:`mulligan.AsyncClient`, coroutine job handlers awaited, and every
SQLite call run in the event loop's default executor (the core releases the
GIL), so that an fsync never blocks the loop.

.. versionadded:: 0.5.0
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import socket
from typing import Any, Callable, Optional

from .._errors import TransportError
from .._http.async_client import AsyncClient

# The worker reads the Outbox's private parts (its _core.Outbox, clock and
# handlers); typed Any so that this module does not import outbox.py, which
# imports it (the package imports downward only).
Outbox = Any

__all__ = ["close", "deliver_due", "run_worker"]


async def _db(fn: Callable[..., Any], *args: Any) -> Any:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, functools.partial(fn, *args))


def _client(box: Outbox) -> AsyncClient:
    if box._aclient is None:
        box._aclient = AsyncClient(attempts=1, timeout=box._attempt_timeout, budget=None)
    client: AsyncClient = box._aclient
    return client


async def _deliver_http(box: Outbox, lease: Any, entry: Any, successes: list[Any]) -> None:
    try:
        response = await _client(box).request(
            entry["method"],
            entry["url"],
            headers=list(entry["headers"]),
            data=entry["body"],
            idempotency_key=entry["idempotency_key"],
        )
    except TransportError as e:
        await _db(box._record_transport, lease, e)
        return
    except (TypeError, ValueError) as e:
        await _db(box._record_refused, lease, e)
        return
    await _db(box._record_response, lease, response.status_code,
              response.headers.get("Retry-After"), successes)


async def _deliver_job(box: Outbox, lease: Any, entry: Any, successes: list[Any]) -> None:
    handler = box._handlers.get(entry["job"])
    if handler is None:
        await _db(box._record_job_failure, lease, None)
        return
    try:
        result = handler(entry["payload"], entry["idempotency_key"])
        if inspect.isawaitable(result):
            await result
    except Exception as e:  # noqa: BLE001 - any failure of the handler is this attempt's
        await _db(box._record_job_failure, lease, e)
        return
    successes.append((lease, 0))


async def deliver_due(box: Outbox, *, worker: Optional[str], batch: int) -> int:
    """Leases up to ``batch`` due entries and delivers each once, recording
    the batch's successes in one transaction (as the blocking worker does);
    returns how many were leased."""
    name = worker or f"{socket.gethostname()}:{os.getpid()}"
    leases = await _db(box._box.lease, name, batch, box._now())
    successes: list[Any] = []
    try:
        for lease in leases:
            entry = lease.entry
            if entry["kind"] == "http":
                await _deliver_http(box, lease, entry, successes)
            else:
                await _deliver_job(box, lease, entry, successes)
    finally:
        if successes:
            await _db(box._box.complete_many, successes, box._now())
    return len(leases)


async def run_worker(
    box: Outbox, *, worker: Optional[str], batch: int, poll_interval: float, until_idle: bool
) -> int:
    """Delivers until cancelled (or idle, with ``until_idle``)."""
    total = 0
    while True:
        n = await deliver_due(box, worker=worker, batch=batch)
        total += n
        if n:
            continue
        if until_idle and (await _db(box.stats)).depth == 0:
            return total
        if box._clock is not None:
            box._clock.sleep(poll_interval)
            await asyncio.sleep(0)
        else:
            await asyncio.sleep(poll_interval)


async def close(box: Outbox) -> None:
    """Closes the asyncio worker's client, if one was made."""
    client, box._aclient = box._aclient, None
    if client is not None:
        await client.aclose()
