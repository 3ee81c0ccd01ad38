"""The server side of idempotency keys: :class:`IdempotencyStore`, its
reservations, the key parser, request fingerprints, and ``@store.idempotent``.

The store itself lives in the C++ core (bounded, sharded, thread-safe); this
module wraps it. The ASGI and WSGI middlewares (``asgi``, ``wsgi``) build on
it through ``rules`` and ``problems``, so that both answer alike.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import pickle
import time
import warnings
from collections.abc import Awaitable, Iterable
from typing import Any, Callable, Optional, TypeVar, Union, cast

from .. import _core, _validate
from .._errors import (
    IdempotencyConflict,
    IdempotencyKeyMismatch,
    IdempotencyResultNotReplayable,
    IdempotencyStoreFull,
    MulliganError,
    StateBackendUnavailable,
)
from .._text import format_seconds
from .._validate import Seconds
from .._state.redis import RedisState, _core_state

__all__ = [
    "IdempotencyReservation",
    "IdempotencyStore",
    "parse_idempotency_key",
    "request_fingerprint",
]

F = TypeVar("F", bound=Callable[..., Any])
# What reserve() and complete() take for bytes (copied into bytes).
BytesLike = Union[bytes, bytearray, memoryview]

# Marks an entry stored by @store.idempotent for a call that completed but
# whose return value could not be stored (not picklable, or too big): a
# repeat raises IdempotencyResultNotReplayable instead of running again. A
# pickled result is stored without header fields, so the two never mix.
_NOT_REPLAYABLE = b"mulligan-result-not-replayable"
_SIZE_MAX = 2**64 - 1
_OWNER = "mulligan.IdempotencyStore"


def parse_idempotency_key(value: str, *, max_length: int = 255) -> str:
    """Returns the key held by an ``Idempotency-Key`` header field value.

    Accepts the IETF draft's form, a Structured Fields String (RFC 8941
    section 3.3.3: ``"..."``, printable ASCII, with ``\\"`` and ``\\\\``
    escapes), and, for Stripe-style clients (mulligan's own client included,
    which sends a bare UUID), a bare value of printable ASCII without quotes or
    backslashes. Surrounding spaces are ignored.

    Args:
        value: the field value.
        max_length: the longest key accepted, counted unquoted. Default 255.

    Returns:
        The key, unquoted.

    Raises:
        ValueError: the value is empty, malformed or too long.

    .. versionadded:: 0.1.0
    """
    if not isinstance(value, str):
        raise TypeError(f"value must be a str, got {type(value).__name__}")
    return _core.parse_idempotency_key(value, max_length)


def request_fingerprint(method: str, target: str, body: bytes) -> bytes:
    """Returns the fingerprint of an HTTP request: SHA-256 over the method, the
    request target (path and query) and the body. 32 bytes."""
    h = hashlib.sha256(method.encode("latin-1"))
    h.update(b"\0")
    h.update(target.encode("latin-1", "replace"))
    h.update(b"\0")
    h.update(body)
    return h.digest()


def _bytes_arg(name: str, value: Any) -> bytes:
    """bytes as is; bytearray and memoryview copied; anything else TypeError."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(
        f"{name} must be bytes (or bytearray or memoryview), got {type(value).__name__}: "
        f"{value!r:.80}"
    )


def _header_list(headers: Any) -> list[tuple[bytes, bytes]]:
    if isinstance(headers, (str, bytes, bytearray, memoryview)):
        raise TypeError(
            f"headers must be an iterable of (name, value) pairs of bytes, got "
            f"{type(headers).__name__}"
        )
    try:
        items = list(headers)
    except TypeError:
        raise TypeError(
            f"headers must be an iterable of (name, value) pairs of bytes, got "
            f"{type(headers).__name__}"
        ) from None
    out: list[tuple[bytes, bytes]] = []
    for i, item in enumerate(items):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise TypeError(f"headers[{i}] must be a (name, value) pair of bytes, got {item!r:.80}")
        name = _bytes_arg(f"headers[{i}] name", item[0])
        value = _bytes_arg(f"headers[{i}] value", item[1])
        out.append((name, value))
    return out


class IdempotencyReservation:
    """What :meth:`IdempotencyStore.reserve` found.

    Attributes:
        key: the idempotency key.
        scope: the scope it was reserved in.
        state: ``"reserved"`` (run, then :meth:`IdempotencyStore.complete` or
            :meth:`IdempotencyStore.release`), ``"replay"`` (send
            :attr:`status`, :attr:`headers`, :attr:`body`), ``"in_flight"``
            (answer 409 after :attr:`retry_after` seconds) or
            ``"fingerprint_mismatch"`` (answer 422).

    .. versionadded:: 0.1.0
    """

    __slots__ = ("_raw", "key", "scope", "state")

    def __init__(self, raw: Any, key: str, scope: str) -> None:
        self._raw = raw
        self.key = key
        self.scope = scope
        self.state: str = raw.state

    @property
    def retry_after(self) -> float:
        """Seconds to wait before retrying (``"in_flight"`` only; else 0)."""
        return cast(float, self._raw.retry_after)

    @property
    def status(self) -> int:
        """The stored HTTP status (``"replay"`` only; else 0)."""
        return cast(int, self._raw.status)

    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        """The stored header fields, in order (``"replay"`` only)."""
        return cast("list[tuple[bytes, bytes]]", self._raw.headers)

    @property
    def body(self) -> bytes:
        """The stored body (``"replay"`` only; else empty)."""
        return cast(bytes, self._raw.body)

    def __repr__(self) -> str:
        return f"<IdempotencyReservation {self.state} key={self.key!r}>"


class IdempotencyStore:
    """A bounded, thread-safe record of idempotency keys, in the C++ core.

    One store serves any number of middlewares, threads and event loops.
    Completed responses are replayed for ``ttl``; a reservation blocks its key
    for at most ``lease`` (a crashed handler cannot block it forever). Memory
    is bounded by ``max_entries`` and ``max_bytes``: completed entries are
    evicted oldest first, in-flight entries never (a store full of them
    refuses new keys with :class:`IdempotencyStoreFull`, 503 in the
    middlewares). Expired entries are swept lazily.

    Durations are seconds (int or float) or a :class:`datetime.timedelta`.

    Args:
        ttl: seconds a completed response is replayed, > 0. Default 86400 (24 h).
        lease: seconds a reservation holds its key, > 0. Default 60.
        in_flight_retry_after: the longest Retry-After hint of a 409, seconds
            (the hint is what is left of the lease, at most this), >= 0.
            Default 1.
        max_entries: bound on entries. Default 100,000.
        max_bytes: bound on stored bytes (keys, fingerprints, responses, plus
            a fixed per-entry overhead). Default 256 MiB.
        max_key_length: the longest key accepted. Default 255.
        shards: independently locked shards; bounds are split between them.
            Default 16.
        clock: a function returning monotonic seconds. Default
            ``time.monotonic``; tests pass a fake one.
        state: a :class:`mulligan.RedisState` to keep the records in Redis,
            shared by every process and machine of the service; None (the
            default) keeps them in this process's memory. On Redis each
            operation is one atomic Lua script, one round trip; the memory
            bounds (max_entries, max_bytes, shards) do not apply (the
            server's maxmemory does); times are this process's clock mapped
            to wall-clock milliseconds, so processes agree to within their
            clocks' skew. When Redis is down or slow, :meth:`reserve`,
            :meth:`complete` and :meth:`release` raise
            :class:`mulligan.StateBackendUnavailable` (fail closed: the
            middlewares answer 503 with Retry-After and do not run the
            handler). (Added in 0.5.0.)

    .. versionadded:: 0.1.0
    """

    def __init__(
        self,
        *,
        ttl: Seconds = 86400.0,
        lease: Seconds = 60.0,
        in_flight_retry_after: Seconds = 1.0,
        max_entries: int = 100_000,
        max_bytes: int = 256 * 2**20,
        max_key_length: int = 255,
        shards: int = 16,
        clock: Optional[Callable[[], float]] = None,
        state: Optional[RedisState] = None,
    ) -> None:
        v = _validate
        for name, value, high in (
            ("max_entries", max_entries, _SIZE_MAX),
            ("max_bytes", max_bytes, _SIZE_MAX),
            ("max_key_length", max_key_length, _SIZE_MAX),
            ("shards", shards, 1024),
        ):
            v.integer(_OWNER, name, value, 1, high)
        ttl_seconds = v.seconds(_OWNER, "ttl", ttl, positive=True)
        v.callable_or_none(_OWNER, "clock", clock)
        self._store = _core.IdempotencyStore(
            ttl=ttl_seconds,
            lease=v.seconds(_OWNER, "lease", lease, positive=True),
            in_flight_retry_after=v.seconds(_OWNER, "in_flight_retry_after", in_flight_retry_after),
            max_entries=max_entries,
            max_bytes=max_bytes,
            max_key_length=max_key_length,
            shards=shards,
            state=_core_state(state, _OWNER),
        )
        self._clock: Callable[[], float] = clock if clock is not None else time.monotonic
        self._ttl = ttl_seconds
        self._shared = state is not None
        self.max_key_length = max_key_length

    def reserve(
        self, key: str, fingerprint: BytesLike = b"", *, scope: str = ""
    ) -> IdempotencyReservation:
        """Looks up (scope, key) and reserves it when free.

        Args:
            key: the idempotency key (already parsed), a str.
            fingerprint: bytes identifying the request; a repeat with other
                bytes is a mismatch. A bytearray or memoryview is copied into
                bytes. Default empty.
            scope: who the key belongs to (e.g. the user), so one user's key
                never replays another's response. A str; None is refused
                (it is more likely a bug than "no scope", which is ``""``).
                Default ``""``.

        Returns:
            A :class:`IdempotencyReservation`.

        Raises:
            TypeError: key or scope is not a str, or fingerprint is not
                bytes-like.
            ValueError: the key is empty, too long or not printable ASCII, or
                the scope is not encodable as UTF-8.
            IdempotencyStoreFull: the key is new and the store is full of
                in-flight keys.
            StateBackendUnavailable: the store is on Redis and Redis could
                not answer in time (do not run the handler; answer 503).
        """
        if not isinstance(key, str):
            raise TypeError(f"key must be a str, got {type(key).__name__}: {key!r}")
        if not key.isascii():
            raise ValueError(f"key must be printable ASCII, got {key!r}")
        fingerprint = _bytes_arg("fingerprint", fingerprint)
        if not isinstance(scope, str):
            raise TypeError(f"scope must be a str, got {type(scope).__name__}: {scope!r}")
        try:
            scope.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"scope must be encodable as UTF-8, got {scope!r}") from None
        try:
            raw = self._store.reserve(scope, key, fingerprint, self._clock())
        except StateBackendUnavailable:
            raise
        except MulliganError as e:  # kUnavailable / kNoMemory from the core
            raise IdempotencyStoreFull(str(e)) from None
        return IdempotencyReservation(raw, key, scope)

    def complete(
        self,
        reservation: IdempotencyReservation,
        *,
        status: int = 200,
        headers: Iterable[tuple[BytesLike, BytesLike]] = (),
        body: BytesLike = b"",
    ) -> None:
        """Stores the response of a ``"reserved"`` reservation for ``ttl``.

        Args:
            reservation: what :meth:`reserve` returned.
            status: the HTTP status, an int in [100, 599].
            headers: (name, value) pairs of bytes (bytearray and memoryview
                are copied); names must be RFC 9110 tokens and values must
                not hold CR, LF or NUL, so that a replay cannot inject fields.
            body: the body, bytes-like.

        Raises:
            TypeError: an argument has the wrong type (a bool status
                included).
            ValueError: the status is outside [100, 599] or a header field is
                invalid: nothing is stored and the lease is still held, so
                :meth:`release` it (or complete again with a valid response).
            ValueError: the lease is not held any more (completed, released,
                or expired and taken over): nothing is stored.
            IdempotencyStoreFull: the response does not fit the byte budget;
                the key was released.
            StateBackendUnavailable: the store is on Redis and Redis could
                not answer in time; the record may or may not be stored, and
                completing again with the same reservation is safe.
        """
        if not isinstance(reservation, IdempotencyReservation):
            raise TypeError(
                f"reservation must be an IdempotencyReservation, got {type(reservation).__name__}"
            )
        _validate.integer(_OWNER, "status", status, 100, 599)
        fields = _header_list(headers)
        body = _bytes_arg("body", body)
        try:
            self._store.complete(reservation._raw, status, fields, body, self._clock())
        except StateBackendUnavailable:
            raise
        except MulliganError as e:
            raise IdempotencyStoreFull(str(e)) from None

    def release(self, reservation: IdempotencyReservation) -> None:
        """Frees a ``"reserved"`` key without storing anything (the handler
        failed), so that a retry runs again.

        Raises:
            TypeError: reservation is not an IdempotencyReservation.
            ValueError: the lease is not held any more.
            StateBackendUnavailable: a shared ``state=`` (Redis) could not be
                reached (0.5); the key stays in flight until its lease ends.
        """
        if not isinstance(reservation, IdempotencyReservation):
            raise TypeError(
                f"reservation must be an IdempotencyReservation, got {type(reservation).__name__}"
            )
        self._store.release(reservation._raw)

    def sweep(self) -> None:
        """Removes every expired entry now (the store also sweeps lazily)."""
        self._store.sweep(self._clock())

    def stats(self) -> dict[str, int]:
        """Returns gauges (entries, in_flight, bytes) and counters (reserved,
        replayed, in_flight_conflicts, fingerprint_mismatches, completed,
        released, evicted, expired, rejected_full)."""
        return self._store.stats()

    def idempotent(
        self,
        *,
        key: Union[str, Callable[..., Optional[str]]],
        fingerprint: Optional[Callable[..., Union[bytes, str]]] = None,
        scope: Optional[Callable[..., str]] = None,
        trust_state: bool = False,
    ) -> Callable[[F], F]:
        """Makes a function or coroutine function run once per idempotency key.

        The first call with a key runs the function and stores its return
        value (pickled) for ``ttl``; later calls with the key return a copy of
        it without running the function. A call that raises releases the key.

        A call that returns normally is never run again for its key, even when
        its return value cannot be stored (it cannot be pickled, or does not
        fit the store's byte budget): the key is then completed with a marker,
        the first call still returns its value (with a :class:`RuntimeWarning`
        saying that it will not be replayed), and a repeat raises
        :class:`IdempotencyResultNotReplayable` until the entry expires.

        Args:
            key: the name of the parameter holding the key, or a function of
                the call's arguments returning it. A name is looked up in the
                function's signature when decorating (TypeError if there is no
                such parameter and no ``**kwargs``) and read from the call's
                bound arguments, so the key may be passed by position or by
                keyword; a parameter left at its default uses the default, and
                a call that omits a required key parameter raises TypeError
                like any call missing an argument (nothing is reserved). A
                None key runs the function normally, without deduplication.
            fingerprint: a function of the call's arguments returning bytes
                (or str) that identify the request; a repeat with another
                fingerprint raises :class:`IdempotencyKeyMismatch`. Default:
                no check.
            scope: a function of the call's arguments returning the scope.
            trust_state: required (True) on a store with a shared ``state=``
                (0.5): results are pickled, and unpickling runs whatever code
                the record names, so anyone who can write to that Redis could
                run code in every process replaying from it. Pass True only
                when nothing but your own processes can write there (Redis
                ACLs on the key prefix, a private network). Default False.

        Raises (when decorating):
            ValueError: a shared-state store without ``trust_state=True``.

        Raises (from the decorated function):
            IdempotencyConflict: the same key is still running elsewhere.
            IdempotencyResultNotReplayable: (a subclass of
                IdempotencyConflict) the key already ran to completion but its
                result could not be stored.
            IdempotencyKeyMismatch: the key was used with another fingerprint.
            IdempotencyStoreFull: the store is full of in-flight keys.
            TypeError: the call does not bind to the function's signature, or
                the key is not a str.

        Example::

            store = mulligan.IdempotencyStore()

            @store.idempotent(key="request_id")
            def charge(amount: int, request_id: str) -> dict: ...

            charge(5, "r-1")               # runs
            charge(5, request_id="r-1")    # replays the first result

        .. versionadded:: 0.1.0
        """
        if not isinstance(key, str) and not callable(key):
            raise TypeError(f"key must be a parameter name or a callable, got {key!r}")
        if self._shared and trust_state is not True:
            raise ValueError(
                "mulligan.IdempotencyStore.idempotent: this store's state is shared (Redis) and "
                "results are pickled: unpickling a record runs the code it names, so whoever can "
                "write to that Redis could run code here. Pass trust_state=True if only your own "
                "processes can write to it (Redis ACLs), or store bytes through the HTTP "
                "middleware, which never unpickles"
            )
        return _Idempotent(self, key, fingerprint, scope).decorate


def _key_reader(
    key: Union[str, Callable[..., Optional[str]]], fn: Callable[..., Any]
) -> Callable[[tuple[Any, ...], dict[str, Any]], Any]:
    """Returns a function of (args, kwargs) giving the key of a call to fn."""
    if not isinstance(key, str):
        key_fn = key
        return lambda args, kwargs: key_fn(*args, **kwargs)
    name = key
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        # No introspectable signature (some builtins): keyword only.
        return lambda args, kwargs: kwargs.get(name)
    param = sig.parameters.get(name)
    if param is not None and param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
        default = None if param.default is param.empty else param.default

        def read_bound(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            # Raises TypeError (before anything is reserved) when the
            # call does not fit the signature, e.g. omits the key.
            return sig.bind(*args, **kwargs).arguments.get(name, default)

        return read_bound
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return lambda args, kwargs: kwargs.get(name)
    raise TypeError(
        f"@idempotent(key={name!r}): {getattr(fn, '__qualname__', fn)!r} has no "
        f"parameter {name!r} (and no **kwargs)"
    )


class _Idempotent:
    """What ``store.idempotent(...)`` returns the ``decorate`` method of: the
    options of one ``@store.idempotent``, and the steps of a decorated call
    (begin, settle a repeat, finish a first run)."""

    __slots__ = ("store", "key", "fingerprint", "scope")

    def __init__(
        self,
        store: IdempotencyStore,
        key: Union[str, Callable[..., Optional[str]]],
        fingerprint: Optional[Callable[..., Union[bytes, str]]],
        scope: Optional[Callable[..., str]],
    ) -> None:
        self.store = store
        self.key = key
        self.fingerprint = fingerprint
        self.scope = scope

    def begin(
        self,
        key_of: Callable[[tuple[Any, ...], dict[str, Any]], Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Optional[tuple[IdempotencyReservation, bytes]]:
        """Reserves the call's key; None when the call has no key (it runs as is)."""
        k = key_of(args, kwargs)
        if k is None:
            return None
        fingerprint, scope = self.fingerprint, self.scope
        fp: Union[bytes, str] = fingerprint(*args, **kwargs) if fingerprint else b""
        fp_bytes = fp.encode("utf-8") if isinstance(fp, str) else bytes(fp)
        s = scope(*args, **kwargs) if scope else ""
        return self.store.reserve(k, fp_bytes, scope=s), fp_bytes

    def settle(self, r: IdempotencyReservation) -> Any:
        """Answers a repeat: the stored result, or the conflict or mismatch error."""
        if r.state == "replay":
            headers = r.headers
            if headers and any(n == _NOT_REPLAYABLE for n, _ in headers):
                raise self._not_replayable(r)
            return pickle.loads(r.body)
        if r.state == "in_flight":
            raise IdempotencyConflict(
                f"a call with idempotency key {r.key!r} is still running; retry after "
                f"{format_seconds(r.retry_after)}",
                key=r.key,
                retry_after=r.retry_after,
            )
        raise IdempotencyKeyMismatch(
            f"idempotency key {r.key!r} was already used with different arguments", key=r.key
        )

    def finish(self, r: IdempotencyReservation, fp: bytes, result: Any) -> Any:
        """Stores the result of a call that returned; never releases the
        key, so that the call never runs twice."""
        # Warnings name the caller of the decorated function: stacklevel 3 is
        # this frame, the wrapper's, then the caller's.
        try:
            body = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as e:
            reason = (
                f"its return value ({type(result).__name__}) could not be pickled: "
                f"{type(e).__name__}: {e}"
            )
            self._store_not_replayable(r, fp, reason, lease_held=True)
            if not isinstance(e, Exception):
                raise
            warnings.warn(
                f"idempotency key {r.key!r}: {reason}; a repeat of this call will raise "
                "IdempotencyResultNotReplayable instead of running again",
                RuntimeWarning,
                stacklevel=3,
            )
            return result
        try:
            self.store.complete(r, body=body)
        except IdempotencyStoreFull as e:
            # The core released the key: mark it again with the small marker.
            reason = f"its pickled return value ({len(body)} bytes) was not stored: {e}"
            self._store_not_replayable(r, fp, reason, lease_held=False)
            warnings.warn(
                f"idempotency key {r.key!r}: {reason}; a repeat of this call will raise "
                "IdempotencyResultNotReplayable instead of running again",
                RuntimeWarning,
                stacklevel=3,
            )
        except ValueError as e:
            # The lease ran out while the function ran and another call
            # took the key over: nothing can be stored for this call.
            warnings.warn(
                f"idempotency key {r.key!r}: the result was not stored: {e}",
                RuntimeWarning,
                stacklevel=3,
            )
        return result

    def decorate(self, fn: F) -> F:
        """Returns `fn` (a function or a coroutine function) made idempotent."""
        key_of = _key_reader(self.key, fn)
        release = self.store.release
        begin, settle, finish = self.begin, self.settle, self.finish
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                begun = begin(key_of, args, kwargs)
                if begun is None:
                    return await cast(Callable[..., Awaitable[Any]], fn)(*args, **kwargs)
                r, fp = begun
                if r.state != "reserved":
                    return settle(r)
                try:
                    result = await cast(Callable[..., Awaitable[Any]], fn)(*args, **kwargs)
                except BaseException:
                    release(r)
                    raise
                return finish(r, fp, result)

            return cast(F, run_async)

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            begun = begin(key_of, args, kwargs)
            if begun is None:
                return fn(*args, **kwargs)
            r, fp = begun
            if r.state != "reserved":
                return settle(r)
            try:
                result = fn(*args, **kwargs)
            except BaseException:
                release(r)
                raise
            return finish(r, fp, result)

        return cast(F, run)

    def _store_not_replayable(
        self, r: IdempotencyReservation, fp: bytes, reason: str, *, lease_held: bool
    ) -> None:
        """Completes r's key with the not-replayable marker (see _NOT_REPLAYABLE).

        When the lease is not held any more because the core released the key
        (the result did not fit), the key is reserved again for the marker; a
        repeat that slipped in between runs the function (a narrow race).
        """
        body = json.dumps(
            {"completed_at": self.store._clock(), "reason": reason}, separators=(",", ":")
        ).encode("utf-8")
        marker = [(_NOT_REPLAYABLE, b"1")]
        if lease_held:
            try:
                self.store.complete(r, headers=marker, body=body)
                return
            except ValueError:
                return  # the lease was taken over: the key is someone else's now
            except IdempotencyStoreFull:
                pass  # the key was released: take it again below
        try:
            again = self.store.reserve(r.key, fp, scope=r.scope)
            if again.state == "reserved":
                self.store.complete(again, headers=marker, body=body)
        except (ValueError, IdempotencyStoreFull):
            pass

    def _not_replayable(self, r: IdempotencyReservation) -> IdempotencyResultNotReplayable:
        try:
            info = json.loads(r.body)
            reason = str(info["reason"])
            retry_after = max(0.0, float(info["completed_at"]) + self.store._ttl - self.store._clock())
        except (ValueError, KeyError, TypeError):
            reason, retry_after = "unknown", self.store._ttl
        return IdempotencyResultNotReplayable(
            f"a call with idempotency key {r.key!r} already completed, but its result is not "
            f"replayable ({reason}); it will not run again until the key expires in "
            f"{format_seconds(retry_after)}",
            key=r.key,
            retry_after=retry_after,
            reason=reason,
        )
