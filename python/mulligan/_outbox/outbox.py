"""``mulligan.Outbox``: calls that must eventually happen, kept in SQLite or
(0.6) on Redis Streams.

Example::

    box = mulligan.Outbox("outbox.db", policy={"attempts": 8, "max_delay": 300})
    box.enqueue("POST", "https://hooks.example/paid", json={"order": 17})

    @box.handler("send_email")
    def send_email(payload: bytes, key: str) -> None: ...

    box.enqueue_job("send_email", b"to=ann")
    box.run_worker()          # blocks: delivers due entries until stopped

An entry is written (fsync'ed, with ``sync="full"``) before its first attempt
and keeps one Idempotency-Key for its whole life. A worker leases due entries
for ``lease_timeout`` seconds (a visibility timeout): if it dies, the lease
expires and another worker takes the entry. After a failed attempt the core
decides the next attempt time with the policy (backoff and jitter,
Retry-After), or dead-letters the entry with its attempt history.

.. versionadded:: 0.5.0
"""

from __future__ import annotations

import builtins
import inspect
import json as _json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any, Callable, Optional, TypeVar, Union

from .. import _core, _validate
from . import async_worker as _async_worker
from .job import SERIALIZERS, OutboxJob, P
from .records import OutboxAttempt, OutboxEntry, OutboxStats
from .._http.client import Client
from .._http.headers import _check_headers
from .._http.request import _check_url
from .._errors import OutboxError, TransportError
from .._state.redis import RedisState, _core_state

__all__ = ["Outbox", "OutboxAttempt", "OutboxEntry", "OutboxStats"]

_log = logging.getLogger("mulligan")

#: A job handler: called with the payload (bytes) and the entry's
#: Idempotency-Key (str); returning means delivered, raising means this
#: attempt failed (retried by the policy).
JobHandler = Callable[[bytes, str], Any]

# The keyword arguments of _core.RetryPolicy that an outbox policy may set.
_POLICY_KEYS = frozenset(
    {
        "attempts",
        "backoff",
        "base_delay",
        "multiplier",
        "max_delay",
        "jitter",
        "jitter_fraction",
        "deadline",
        "attempt_timeout",
        "retry_after_max",
        "clamp_retry_after",
        "respect_retry_after",
        "retryable_statuses",
        "seed",
        "min_delay",
    }
)

_STATES = ("pending", "leased", "done", "dead")

_R = TypeVar("_R")
_OWNER = "mulligan.Outbox"
_INT64_MAX = 2**63 - 1


def _check_policy(given: Mapping[str, Any]) -> None:
    """Checks the types of the policy options here, naming the field
    (``policy.attempts``): the core would take ``True`` as 1 and ``1.5`` as 1."""
    for key, value in given.items():
        field = f"policy.{key}"
        if key == "attempts":
            _validate.attempts(_OWNER, field, value)
        elif key == "seed":
            if value is not None:
                _validate.integer(_OWNER, field, value, 0, 2**64 - 1, range_text="[0, 2**64)")
        elif key in ("deadline", "attempt_timeout"):
            _validate.seconds_or_none(_OWNER, field, value, positive=True)
        elif key in ("base_delay", "max_delay", "retry_after_max", "min_delay"):
            _validate.seconds(_OWNER, field, value)
        elif key in ("multiplier", "jitter_fraction"):
            _validate.number(_OWNER, field, value)
        elif key in ("clamp_retry_after", "respect_retry_after"):
            _validate.flag(_OWNER, field, value)
        elif key in ("backoff", "jitter"):
            if not isinstance(value, str):
                raise TypeError(f"{_OWNER}: {field} must be a str, got {value!r}")
        elif key == "retryable_statuses" and value is not None:
            for status in value:
                _validate.integer(_OWNER, field, status, 100, 599)


def _entry_id(entry_id: Any) -> int:
    """An entry id: an int in [1, 2**63 - 1] (SQLite's rowid range)."""
    return _validate.integer(_OWNER, "entry_id", entry_id, 1, _INT64_MAX,
                             range_text="[1, 2**63 - 1]")


def _bytes(value: Union[bytes, bytearray, memoryview, str, None], field: str) -> bytes:
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"mulligan.Outbox: {field} must be bytes or str, got {type(value).__name__}")


def _key(value: Optional[str]) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or not value:
        raise ValueError("mulligan.Outbox: idempotency_key must be a non-empty str or None")
    return value


def _http_item(
    method: str,
    url: str,
    headers: Union[Mapping[str, str], Iterable[tuple[str, str]], None],
    body: Union[bytes, bytearray, memoryview, str, None],
    json: Any,
    idempotency_key: Optional[str],
) -> tuple[str, str, str, list[tuple[str, str]], bytes, str, bytes, str]:
    """The _core form of an HTTP entry: (kind, method, url, headers, body,
    job, payload, key). The URL and the header fields are checked as
    :class:`mulligan.Client` checks them, so that an entry the worker could
    never send is refused here (ValueError/TypeError), not dead on arrival."""
    _check_url(url)
    pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers or [])
    _check_headers(pairs)
    if json is not None:
        if body is not None:
            raise ValueError("mulligan.Outbox.enqueue: give body or json, not both")
        body = _json.dumps(json, separators=(",", ":"))
        if not any(k.lower() == "content-type" for k, _ in pairs):
            pairs.append(("Content-Type", "application/json"))
    return ("http", method, url, pairs, _bytes(body, "body"), "", b"", _key(idempotency_key))


def _location(path: Any, state: Any, name: Optional[str]) -> tuple[Any, str]:
    """Returns (the ``_core.RedisState`` or None, what ``Outbox.path`` says)
    for the ``path`` / ``state`` arguments; ValueError when both or neither
    are given, or a Redis outbox has no name."""
    if state is not None and path is not None:
        raise ValueError(f"{_OWNER}: give path or state, not both")
    if state is None and path is None:
        raise ValueError(f"{_OWNER}: give path (a file or a redis:// URL) or state")
    if state is None:
        where = os.fspath(path)
        if not isinstance(where, str) or not where.startswith(("redis://", "rediss://")):
            return None, where
        state = RedisState(where)
    core_state = _core_state(state, _OWNER)
    if not name:
        raise ValueError(f"{_OWNER}: name must name the outbox on Redis")
    return core_state, f"{state.endpoint} {name}"


class Outbox:
    """A durable queue of HTTP requests and jobs in an SQLite file, or on a
    Redis server (Redis Streams with a consumer group: many workers on many
    machines; added in 0.6).

    Where it lives is the one choice between the two; everything else is the
    same contract::

        Outbox("/var/lib/app/outbox.db")                    # SQLite
        Outbox("redis://10.0.0.5:6379/0", name="webhooks")  # Redis
        Outbox(state=mulligan.RedisState(url, timeout=1.0), name="webhooks")

    Args:
        path: the database file (created when absent), or a
            ``redis://[[user]:password@]host[:port][/db]`` URL (a
            :class:`mulligan.RedisState` with its defaults: prefix
            ``"mulligan"``, 0.25 s bounds). (Redis: added in 0.6.)
        state: a :class:`mulligan.RedisState` to keep the outbox on, instead
            of ``path`` (which must then be omitted): its prefix and
            timeouts apply. Every call is bounded by its timeout and raises
            :class:`mulligan.OutboxError` when Redis is down. (Added in 0.6.)
        policy: the retry policy as a mapping of ``mulligan.Client``-style
            options: ``attempts`` (default 3, counted across restarts),
            ``backoff``, ``base_delay`` (0.2 s), ``multiplier``,
            ``max_delay`` (10 s), ``jitter`` ("full"), ``jitter_fraction``,
            ``seed``, ``min_delay``, ``retry_after_max`` (60 s),
            ``clamp_retry_after``, ``respect_retry_after``,
            ``retryable_statuses``, ``deadline`` (seconds: an entry older
            than this is dead-lettered rather than retried) and
            ``attempt_timeout`` (the bound on one delivery; default 30 s).
        sync: ``"full"`` (default: every commit is fsync'ed before the call
            returns, so an enqueued entry survives a power loss) or
            ``"normal"`` (survives a crash of the process; the last commits
            may be lost on power loss). On Redis, ``"full"`` requires the
            server to run ``appendonly yes`` and ``appendfsync always``
            (checked at opening, else OutboxError); ``"normal"`` takes the
            server's persistence as it is.
        busy_timeout: seconds a write waits for another process's
            transaction (default 5). Not read on Redis.
        lease_timeout: the visibility timeout, in seconds (default 30): a
            worker that has not finished an entry by then loses it to the
            next worker's lease.
        max_size_bytes: a cap on the file's size (0: none); an enqueue past
            it raises :class:`mulligan.OutboxError` like a full disk. Must
            be 0 on Redis (bound the server with ``maxmemory``).
        clock: an object with ``monotonic()`` and ``sleep(seconds)``, such
            as :class:`mulligan.testing.FakeClock`, whose readings are the
            outbox's Unix seconds; default ``time.time`` and ``time.sleep``.
        name: the ``outbox`` label of its metrics (default: the path). On
            Redis, required: the outbox's name on the server (its keys are
            ``{prefix:outbox:name}:...``).
        metrics: when true (the default), the default metrics registry
            exports it while the object lives: gauges
            ``mulligan_outbox_depth{outbox,state}`` (state pending, leased)
            and ``mulligan_outbox_oldest_age_seconds{outbox}``, counters
            ``mulligan_outbox_deliveries_total{outbox,result}`` (result
            success, failure, lease_expired) and
            ``mulligan_outbox_dead_letters_total{outbox}``, read from the
            file at every export (:func:`mulligan.prometheus_text`,
            :func:`mulligan.metrics_json`, ``limits_snapshot()["outboxes"]``,
            OpenTelemetry), at the installed
            :class:`mulligan.testing.FakeClock`'s reading, else
            ``time.time()``. Counts are the file's, so every process that
            opens one file reports the same values. (Added in 0.6.)
        create: when false, an absent file is refused
            (:class:`mulligan.OutboxError` "no such file") instead of made,
            as the command's actions open it. (Added in 0.6.)

    Raises:
        ValueError: a bad option (the message names it).
        TypeError: an option of the wrong type (the message names it:
            ``policy.attempts=True`` and ``max_size_bytes=1.5`` are refused,
            not read as 1).
        mulligan.OutboxError: the file cannot be opened or is not an outbox:
            a database that holds other tables and no ``outbox_meta`` table
            (the outbox's schema marker) is refused, so the outbox never adds
            its tables to another program's database.

    Thread-safety: one Outbox may be shared by threads (the core serializes
    its SQLite or Redis connection); several processes may open the same
    file, and processes on many machines the same Redis outbox.

    .. versionadded:: 0.5.0
    """

    def __init__(
        self,
        path: Union[str, os.PathLike[str], None] = None,
        *,
        state: Any = None,
        policy: Optional[Mapping[str, Any]] = None,
        sync: str = "full",
        busy_timeout: float = 5.0,
        lease_timeout: float = 30.0,
        max_size_bytes: int = 0,
        clock: Any = None,
        name: Optional[str] = None,
        metrics: bool = True,
        create: bool = True,
    ) -> None:
        given = dict(policy or {})
        unknown = sorted(set(given) - _POLICY_KEYS)
        if unknown:
            raise ValueError(
                f"mulligan.Outbox: unknown policy option {unknown[0]!r} "
                f"(known: {', '.join(sorted(_POLICY_KEYS))})"
            )
        _check_policy(given)
        if not isinstance(sync, str):
            raise TypeError(f"{_OWNER}: sync must be 'full' or 'normal', got {sync!r}")
        busy = _validate.seconds(_OWNER, "busy_timeout", busy_timeout)
        lease = _validate.seconds(_OWNER, "lease_timeout", lease_timeout, positive=True)
        cap = _validate.integer(_OWNER, "max_size_bytes", max_size_bytes, 0, _INT64_MAX,
                                range_text="[0, 2**63 - 1]")
        _validate.name_or_none(_OWNER, "name", name)
        _validate.flag(_OWNER, "metrics", metrics)
        _validate.flag(_OWNER, "create", create)
        core_state, where = _location(path, state, name)
        self._attempt_timeout = given.get("attempt_timeout", 30.0)
        self._policy = _core.RetryPolicy(**given)
        self._core_box: Optional[_core.Outbox] = _core.Outbox(
            "" if core_state is not None else where,
            self._policy,
            sync=sync,
            busy_timeout=busy,
            lease_timeout=lease,
            max_size_bytes=cap,
            name=name or "",
            metrics=metrics,
            create=create,
            state=core_state,
        )
        # The file, or "redis://host:port/db name" (no credentials).
        self.path = where
        self._now: Callable[[], float] = clock.monotonic if clock is not None else time.time
        self._sleep: Callable[[float], Any] = clock.sleep if clock is not None else time.sleep
        self._handlers: dict[str, JobHandler] = {}
        self._client: Optional[Client] = None
        self._aclient: Any = None  # the asyncio worker's AsyncClient
        self._clock = clock
        self._lock = threading.Lock()

    @property
    def _box(self) -> _core.Outbox:
        """The core outbox; OutboxError once :meth:`close` ran."""
        box = self._core_box
        if box is None:
            raise OutboxError(f"mulligan.Outbox: the outbox {self.path} is closed")
        return box

    # --- enqueue ------------------------------------------------------------

    def enqueue(
        self,
        method: str,
        url: str,
        *,
        headers: Union[Mapping[str, str], Iterable[tuple[str, str]], None] = None,
        body: Union[bytes, bytearray, memoryview, str, None] = None,
        json: Any = None,
        idempotency_key: Optional[str] = None,
    ) -> OutboxEntry:
        """Writes an HTTP request to deliver, before any attempt.

        Args:
            method: the HTTP method (``"POST"``).
            url: an absolute http:// or https:// URL.
            headers: a mapping or pairs (no Idempotency-Key: the entry's own
                key is sent).
            body: the body (str is sent as UTF-8). Not with ``json``.
            json: a value sent as a JSON body with ``Content-Type:
                application/json`` (unless headers set one).
            idempotency_key: the entry's key; default a fresh UUID v4.

        Returns:
            The stored :class:`OutboxEntry` (its id and key).

        Raises:
            ValueError: a bad method, URL, header or key, or a key already
                in the outbox.
            mulligan.OutboxError: the entry could not be written (read-only
                file, full disk or size cap); nothing was written.
        """
        item = _http_item(method, url, headers, body, json, idempotency_key)
        d = self._box.enqueue_http(item[1], item[2], item[3], item[4], item[7], self._now())
        return OutboxEntry._of(d)

    def enqueue_many(self, entries: Iterable[Mapping[str, Any]]) -> builtins.list[OutboxEntry]:
        """Writes several entries in one transaction (one fsync with
        ``sync="full"``), all or none.

        Args:
            entries: mappings of :meth:`enqueue`'s arguments (``method``,
                ``url``, and optionally ``headers``, ``body``, ``json``,
                ``idempotency_key``) or of :meth:`enqueue_job`'s (``job``,
                optionally ``payload``, ``idempotency_key``).

        Returns:
            The stored entries, in the order given.

        Raises:
            ValueError: a bad entry, or a key already there or given twice
                (nothing is written).
            mulligan.OutboxError: as :meth:`enqueue` (nothing is written).
        """
        items: builtins.list[tuple[str, str, str, builtins.list[tuple[str, str]], bytes, str, bytes, str]] = []
        for e in entries:
            if "job" in e:
                unknown = set(e) - {"job", "payload", "idempotency_key"}
                if unknown:
                    raise ValueError(f"mulligan.Outbox.enqueue_many: unknown job field {sorted(unknown)[0]!r}")
                items.append(("job", "", "", [], b"", e["job"], _bytes(e.get("payload"), "payload"),
                              _key(e.get("idempotency_key"))))
            else:
                unknown = set(e) - {"method", "url", "headers", "body", "json", "idempotency_key"}
                if unknown or "method" not in e or "url" not in e:
                    raise ValueError(
                        "mulligan.Outbox.enqueue_many: an HTTP entry needs method and url and "
                        "takes headers, body, json and idempotency_key"
                    )
                items.append(_http_item(e["method"], e["url"], e.get("headers"), e.get("body"),
                                        e.get("json"), e.get("idempotency_key")))
        return [OutboxEntry._of(d) for d in self._box.enqueue_many(items, self._now())]

    def enqueue_job(
        self,
        job: str,
        payload: Union[bytes, bytearray, memoryview, str, None] = None,
        *,
        idempotency_key: Optional[str] = None,
    ) -> OutboxEntry:
        """Writes a named job (run by the handler registered under ``job``).

        Raises the same errors as :meth:`enqueue`.
        """
        d = self._box.enqueue_job(job, _bytes(payload, "payload"), _key(idempotency_key), self._now())
        return OutboxEntry._of(d)

    # --- handlers -----------------------------------------------------------

    def register(self, job: str, handler: JobHandler) -> None:
        """Registers ``handler(payload, idempotency_key)`` for jobs named
        ``job`` (replacing any earlier one). A handler that returns has
        delivered; one that raises an Exception failed this attempt."""
        if not job:
            raise ValueError("mulligan.Outbox.register: job must not be empty")
        if not callable(handler):
            raise TypeError("mulligan.Outbox.register: handler must be callable")
        self._handlers[job] = handler

    def handler(self, job: str) -> Callable[[JobHandler], JobHandler]:
        """Decorator form of :meth:`register`."""

        def decorate(fn: JobHandler) -> JobHandler:
            self.register(job, fn)
            return fn

        return decorate

    def job(
        self, name: str, *, serializer: str = "json", with_key: bool = False
    ) -> Callable[[Callable[P, _R]], OutboxJob[P, _R]]:
        """The decorator that enqueues, in Celery's ``@app.task`` idiom:
        registers the function as the handler of job ``name`` and returns an
        :class:`mulligan.OutboxJob`, whose call runs the function now and
        whose ``.delay(*args, **kwargs)`` enqueues a call of it (returning
        the :class:`OutboxEntry`) that a worker delivers later::

            @box.job("send_email")
            def send_email(to: str, subject: str) -> None: ...

            send_email.delay("ann@example.com", subject="paid")  # enqueued

        Args:
            name: the job's name (not empty; replaces an earlier handler).
            serializer: ``"json"`` (default: the arguments as JSON, only
                JSON values) or ``"raw"`` (one bytes or str argument, passed
                to the function as bytes). Never pickle.
            with_key: pass the entry's Idempotency-Key to the function as
                the keyword argument ``idempotency_key``.

        Raises:
            ValueError: an empty name or an unknown serializer; at
                decoration, a name that already has a handler (two
                functions of one job name would take each other's queued
                entries; :meth:`register` replaces on purpose).

        .. versionadded:: 0.6.0
        """
        _validate.name(_OWNER + ".job", "name", name)
        if not name:
            raise ValueError(f"{_OWNER}.job: name must not be empty")
        if serializer not in SERIALIZERS:
            raise ValueError(
                f"{_OWNER}.job: serializer must be one of {', '.join(SERIALIZERS)}, "
                f"got {serializer!r}"
            )
        _validate.flag(_OWNER + ".job", "with_key", with_key)

        def decorate(fn: Callable[P, _R]) -> OutboxJob[P, _R]:
            if not callable(fn):
                raise TypeError(f"{_OWNER}.job: expected a function, got {fn!r}")
            if name in self._handlers:
                raise ValueError(
                    f"{_OWNER}.job: the job {name!r} already has a handler; a second "
                    f"function would take its queued entries (use register() to replace it)"
                )
            job = OutboxJob(self, name, fn, serializer, with_key)
            self.register(name, job._handle)
            return job

        return decorate

    # --- delivery -----------------------------------------------------------

    def deliver_due(self, *, worker: Optional[str] = None, batch: int = 16) -> int:
        """Leases up to ``batch`` due entries and delivers each once.

        Returns:
            How many entries were leased (delivered or failed).
        """
        name = worker or f"{socket.gethostname()}:{os.getpid()}"
        leases = self._box.lease(name, batch, self._now())
        # Group commit: the batch's successes are recorded in one transaction
        # (one fsync with sync="full") after the batch; a failure is recorded
        # at once. A worker that dies before the commit has its batch's
        # successes delivered again, with the same keys (at least once).
        successes: list[tuple[Any, int]] = []
        try:
            for lease in leases:
                self._deliver(lease, successes)
        finally:
            if successes:
                self._box.complete_many(successes, self._now())
        return len(leases)

    def run_worker(
        self,
        *,
        worker: Optional[str] = None,
        batch: int = 16,
        poll_interval: float = 0.5,
        stop: Optional[threading.Event] = None,
        until_idle: bool = False,
    ) -> int:
        """Delivers due entries until ``stop`` is set (or, with
        ``until_idle``, until no entry is pending or leased), waiting
        ``poll_interval`` seconds (through the clock) when nothing is due.

        An entry whose delivery kills the process (a poison entry) takes
        its batch-mates' leases with it: each is charged the expired lease
        as an attempt, so use ``batch=1`` where a handler can crash the
        process.

        Returns:
            How many entries were leased in all.

        Raises:
            OutboxError: the backend failed (SQLite, or Redis down or too
                slow); the entries stay as they were (a lease taken expires
                and is handed over). Restart the worker (a supervisor).
        """
        total = 0
        while stop is None or not stop.is_set():
            n = self.deliver_due(worker=worker, batch=batch)
            total += n
            if n:
                continue
            if until_idle and self.stats().depth == 0:
                break
            if stop is not None and self._clock is None:
                stop.wait(poll_interval)  # wakes at once when stop is set
            else:
                self._sleep(poll_interval)
        return total

    def _deliver(self, lease: Any, successes: list[tuple[Any, int]]) -> None:
        entry = lease.entry
        if entry["kind"] == "http":
            self._deliver_http(lease, entry, successes)
        else:
            self._deliver_job(lease, entry, successes)

    def _http_client(self) -> Client:
        with self._lock:
            if self._client is None:
                # One attempt per lease: the outbox owns the retries, across
                # restarts; no budget or breaker of the client's own.
                self._client = Client(attempts=1, timeout=self._attempt_timeout, budget=None)
            return self._client

    def _deliver_http(
        self, lease: Any, entry: Mapping[str, Any], successes: list[tuple[Any, int]]
    ) -> None:
        try:
            response = self._http_client().request(
                entry["method"],
                entry["url"],
                headers=list(entry["headers"]),
                data=entry["body"],
                idempotency_key=entry["idempotency_key"],
            )
        except TransportError as e:
            self._record_transport(lease, e)
            return
        except (TypeError, ValueError) as e:
            self._record_refused(lease, e)
            return
        self._record_response(
            lease, response.status_code, response.headers.get("Retry-After"), successes
        )

    def _record_refused(self, lease: Any, e: Exception) -> None:
        """An entry the client refused to send (an entry written before 0.5's
        checks at enqueue, or by another program): terminal, dead-lettered
        with the reason, so that it cannot stop the queue."""
        self._fail(lease, _core.Outcome.failure(False), f"refused by the client: {e}")

    def _fail(self, lease: Any, outcome: Any, message: str, status: int = 0) -> None:
        """Records a failed attempt. A lease lost meanwhile (the attempt ran
        past ``lease_timeout`` and another worker took the entry) is the
        normal at-least-once case: the late result is dropped and logged."""
        try:
            self._box.fail(lease, outcome, message, self._now(), status)
        except OutboxError as e:
            if "lease lost" not in str(e):
                raise
            _log.warning("mulligan.Outbox: dropped the late result of entry %s: %s",
                         lease.entry["id"], e)

    def _record_transport(self, lease: Any, e: TransportError) -> None:
        kind = getattr(_core.ErrorKind, str(e.kind).upper(), _core.ErrorKind.TRANSPORT)
        self._fail(lease, _core.Outcome.transport(kind), str(e))

    def _record_response(
        self,
        lease: Any,
        status: int,
        retry_after: Optional[str],
        successes: Optional[list[tuple[Any, int]]] = None,
    ) -> None:
        """Records a response: a success joins ``successes`` (the batch's
        group commit), or is completed at once without a list; a failure is
        recorded at once, the core deciding its next attempt."""
        now = self._now()
        outcome = _core.http_response_outcome(status, retry_after, True, now)
        if self._policy.classify(outcome) != _core.Classification.SUCCESS:
            self._fail(lease, outcome, f"HTTP {status}", status)
        elif successes is not None:
            successes.append((lease, status))
        else:
            self._box.complete(lease, now, status)

    def _deliver_job(
        self, lease: Any, entry: Mapping[str, Any], successes: list[tuple[Any, int]]
    ) -> None:
        handler = self._handlers.get(entry["job"])
        if handler is None:
            self._record_job_failure(lease, None)
            return
        try:
            result = handler(entry["payload"], entry["idempotency_key"])
        except Exception as e:  # noqa: BLE001 - any failure of the handler is this attempt's
            self._record_job_failure(lease, e)
            return
        if inspect.isawaitable(result):
            # An async handler under the blocking worker has not run: never
            # count it delivered. Terminal: it needs adeliver_due/arun_worker.
            close = getattr(result, "close", None)
            if callable(close):
                close()  # no "coroutine was never awaited" warning
            self._fail(lease, _core.Outcome.failure(False),
                       f"the handler of job {entry['job']!r} is async: deliver it with "
                       "adeliver_due() or arun_worker()")
            return
        successes.append((lease, 0))

    def _record_job_failure(self, lease: Any, e: Optional[Exception]) -> None:
        if e is None:
            message = f"no handler registered for job {lease.entry['job']!r}"
        else:
            message = f"{type(e).__name__}: {e}"
        self._fail(lease, _core.Outcome.failure(True), message)

    # --- asyncio ------------------------------------------------------------

    async def adeliver_due(self, *, worker: Optional[str] = None, batch: int = 16) -> int:
        """The coroutine form of :meth:`deliver_due`: HTTP entries go through
        :class:`mulligan.AsyncClient` (one per worker, closed by
        :meth:`aclose`), coroutine job handlers are awaited, and the database
        calls run in the loop's default executor, so the loop never blocks
        on SQLite's fsync."""
        return await _async_worker.deliver_due(self, worker=worker, batch=batch)

    async def arun_worker(
        self,
        *,
        worker: Optional[str] = None,
        batch: int = 16,
        poll_interval: float = 0.5,
        until_idle: bool = False,
    ) -> int:
        """The coroutine form of :meth:`run_worker`: waits with
        ``asyncio.sleep`` (cancellation stops it; a cancelled delivery's
        lease simply expires), or through the clock when one was given.
        Returns how many entries were leased in all."""
        return await _async_worker.run_worker(
            self, worker=worker, batch=batch, poll_interval=poll_interval, until_idle=until_idle
        )

    async def aclose(self) -> None:
        """Closes the asyncio worker's AsyncClient, then does :meth:`close`
        (the blocking client and, since 0.6, the database)."""
        await _async_worker.close(self)
        self.close()

    # --- inspection and repair ------------------------------------------------

    def get(self, entry_id: int) -> OutboxEntry:
        """Returns entry ``entry_id``. ValueError when there is none, or the
        id is not an int in [1, 2**63 - 1] (TypeError for a non-int)."""
        return OutboxEntry._of(self._box.get(_entry_id(entry_id)))

    def list(self, state: Optional[str] = None, *, limit: int = 100) -> builtins.list[OutboxEntry]:
        """Returns up to ``limit`` entries, oldest first; only those in
        ``state`` (one of pending, leased, done, dead) when given."""
        if state is not None and state not in _STATES:
            raise ValueError(f"mulligan.Outbox.list: state must be one of {', '.join(_STATES)}, got {state!r}")
        return [OutboxEntry._of(d) for d in self._box.list(state, limit)]

    def history(self, entry_id: int) -> builtins.list[OutboxAttempt]:
        """Returns the attempts of entry ``entry_id``, first first."""
        return [OutboxAttempt(**d) for d in self._box.history(_entry_id(entry_id))]

    def stats(self) -> OutboxStats:
        """Returns the queue's counts now (see :class:`OutboxStats`)."""
        return OutboxStats(**self._box.stats(self._now()))

    def retry(self, entry_id: int) -> None:
        """Makes dead entry ``entry_id`` due now, with a fresh attempt budget
        (its history kept). ValueError when it is not dead or absent, or the
        id is not an int in [1, 2**63 - 1]."""
        self._box.retry(_entry_id(entry_id), self._now())

    def purge(self, state: str) -> int:
        """Deletes the ``"done"`` or ``"dead"`` entries and their history;
        returns how many. ValueError for any other state."""
        return int(self._box.purge(state))

    def close(self) -> None:
        """Closes the HTTP client and the database (idempotent). Any later
        use raises :class:`mulligan.OutboxError` "the outbox ... is closed";
        the outbox's metrics are no longer exported. (Closing the database:
        added in 0.6; 0.5 closed it with the object.)"""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
            self._core_box = None

    def __enter__(self) -> Outbox:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
