"""The mulligan exception hierarchy (pure Python; never imports ``_core``).

Everything mulligan raises on its own account derives from :class:`MulliganError`.
Bad configuration raises the built-in :class:`ValueError` or :class:`TypeError`,
and a decorated function that gives up re-raises the user's own last exception,
so these classes appear mainly around HTTP calls.

Every message that names a URL shows it as :func:`mulligan.redact_url` does
(user name, password and sensitive query values as ``[redacted]``), and none
quotes a header value: messages and ``repr`` are safe to log. The URL as sent
stays available to code only as ``response.url`` of :class:`RetriesExhausted`
and :class:`HTTPStatusError` (docs/security.md).

Every exception class of the package is defined here, and nowhere else. The
module imports nothing from the package: the native module builds instances
through :func:`_from_status`, imported at call time, so this module must stay
free of ``_core`` imports (or importing the package would be circular), and
the HTTP response that :class:`HTTPStatusError` and :class:`RetriesExhausted`
carry is described by the :class:`HTTPResponse` protocol instead of being
imported from ``_http`` (whose ``Response.raise_for_status`` raises
:class:`HTTPStatusError`, so each would import the other).

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional, Protocol

__all__ = [
    "AttemptOutcome",
    "AttemptTimeout",
    "CircuitOpenError",
    "ConnectTimeout",
    "ConnectionRefused",
    "ConnectionReset",
    "DeadlineExceeded",
    "DnsFailure",
    "HTTPResponse",
    "HTTPStatusError",
    "IdempotencyConflict",
    "IdempotencyKeyMismatch",
    "IdempotencyResultNotReplayable",
    "IdempotencyStoreFull",
    "InvalidURL",
    "MulliganError",
    "RetriesExhausted",
    "TlsError",
    "TransportError",
    "TruncatedResponse",
    "ThrottledError",
    # Added in 0.3 (limits):
    "BulkheadFullError",
    "RateLimitedError",
    # Added in 0.5 (outbox):
    "OutboxError",
]


class HTTPResponse(Protocol):
    """What an HTTP error carries: the members of :class:`mulligan.Response`.

    :class:`mulligan.Response` satisfies it (mypy checks that wherever one is
    passed to :class:`HTTPStatusError` or :class:`RetriesExhausted`), so code
    reading ``error.response.status_code`` or ``error.response.json()`` is
    typed without this module importing the HTTP client.
    """

    @property
    def status_code(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def content(self) -> bytes: ...
    @property
    def text(self) -> str: ...
    @property
    def attempts(self) -> int: ...
    @property
    def elapsed(self) -> float: ...
    @property
    def url(self) -> str: ...
    @property
    def idempotency_key(self) -> Optional[str]: ...
    @property
    def stop_reason(self) -> str: ...
    def json(self, **kwargs: Any) -> Any: ...


class MulliganError(Exception):
    """Base class of every exception mulligan defines."""


class TransportError(MulliganError):
    """An HTTP call failed without a usable response, after its retries.

    Attributes:
        kind: the failure kind of the last attempt, a stable snake_case name:
            ``"connection_refused"``, ``"connection_reset"``, ``"dns_failure"``,
            ``"connect_timeout"``, ``"timeout"``, ``"tls_error"``,
            ``"invalid_url"``, ``"truncated"`` or ``"transport"``.
        attempts: attempts made, including the first.
        message: the human-readable detail (its URL redacted).
        stop_reason: why the retries stopped (``"attempts_exhausted"``,
            ``"deadline"``, ``"terminal"``, ...), or None when unknown.
        elapsed: seconds from the start of the first attempt to the end of the
            last, or None when unknown.
        idempotency_key: the key sent with every attempt, or None.
    """

    def __init__(
        self,
        kind: str,
        attempts: int,
        message: str,
        *,
        stop_reason: Optional[str] = None,
        elapsed: Optional[float] = None,
        idempotency_key: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts
        self.message = message
        self.stop_reason = stop_reason
        self.elapsed = elapsed
        self.idempotency_key = idempotency_key

    def __str__(self) -> str:
        return f"{self.message} [{self.kind}]"

    def __reduce__(self) -> Any:
        # Keeps instances picklable despite the keyword-only attributes.
        return (
            _rebuild_transport_error,
            (type(self), self.kind, self.attempts, self.message, dict(self.__dict__)),
        )


def _rebuild_transport_error(
    cls: type[TransportError], kind: str, attempts: int, message: str, state: dict[str, Any]
) -> TransportError:
    exc = cls(kind, attempts, message)
    exc.__dict__.update(state)
    return exc


class ConnectionRefused(TransportError, ConnectionRefusedError):
    """Nothing listened at the address (ECONNREFUSED); nothing was sent.

    Also a built-in :class:`ConnectionRefusedError` (so ``ConnectionError``
    and ``OSError`` handlers see it, as with requests and httpx).
    """


class ConnectionReset(TransportError, ConnectionResetError):
    """The peer reset or closed the connection in the middle of the exchange.

    Also a built-in :class:`ConnectionResetError`.
    """


class TruncatedResponse(ConnectionReset):
    """The response ended early: the connection closed inside its header
    block, before its ``Content-Length`` body bytes, or inside its chunked
    body; or only an interim (1xx) response arrived. ``kind`` is
    ``"truncated"``.

    A partial response is never returned as a success. The request was sent,
    so it is retried only when replay-safe (an idempotent method, or a POST or
    PATCH with an idempotency key). A subclass of :class:`ConnectionReset`
    (the peer closed the connection too early), so ``except ConnectionReset``
    and ``except ConnectionError`` handlers see it.

    .. versionadded:: 0.2.0
    """


class DnsFailure(TransportError, ConnectionError):
    """The host name did not resolve. Also a built-in :class:`ConnectionError`."""


class ConnectTimeout(TransportError, TimeoutError):
    """The connection was not established within the connect timeout.

    Also a built-in :class:`TimeoutError`.
    """


class AttemptTimeout(TransportError, TimeoutError):
    """The last attempt did not finish within its timeout (``timeout=``).

    Also a built-in :class:`TimeoutError`, so ``except TimeoutError`` works.
    """


class DeadlineExceeded(TransportError, TimeoutError):
    """The call's deadline (``deadline=``) ended the retries after a failure.

    ``kind`` names the last attempt's failure. Also a built-in
    :class:`TimeoutError`.
    """


class TlsError(TransportError, ConnectionError):
    """The TLS handshake or certificate verification failed (not retried).

    Also a built-in :class:`ConnectionError` (as requests' SSLError is).
    """


class InvalidURL(TransportError, ValueError):
    """The URL was rejected by the transport (not retried).

    Also a :class:`ValueError`, like every other kind of bad input.
    """


class CircuitOpenError(MulliganError):
    """A circuit breaker refused the call: its dependency is considered down.

    Raised before the guarded function (or HTTP attempt) runs, so the call
    costs microseconds instead of a timeout. Never retried: a retry loop that
    meets it (the breaker is checked before every attempt) stops at once.

    Attributes:
        name: the name of the breaker that refused (for the HTTP client, the
            origin ``scheme://host:port``).
        key: the same as ``name`` (the registry key).
        retry_in: seconds until the breaker admits a probe again
            (``math.inf`` when it was forced open). For a half-open breaker
            whose probe slots are all taken it is an upper bound: the time
            until the oldest outstanding probe permit expires.
        attempts: attempts made before the breaker refused (0 when the first
            was refused, or when no retry loop was involved).

    .. versionadded:: 0.1.0
    """

    def __init__(
        self,
        message: str,
        *,
        name: Optional[str] = None,
        key: Optional[str] = None,
        retry_in: float = 0.0,
        attempts: int = 0,
    ) -> None:
        super().__init__(message)
        self.name = name if name is not None else (key or "")
        self.key = key if key is not None else name
        self.retry_in = retry_in
        self.attempts = attempts

    # A refusal of a breaker's guard (the decorator and `with breaker:`) is
    # raised by the native module without running __init__ and without
    # formatting its message (issue 19: the refusal is the hot path of an
    # outage): it sets name, key, retry_in and attempts, and `_pending`, the
    # breaker's _core.BreakerGuard. The message is made on its first read
    # (str(), repr(), args, pickling), from name and retry_in, exactly as the
    # core formats it, and `_pending` leaves the instance's __dict__.

    def _materialize(self) -> None:
        # `args` is set before `_pending` goes, so a thread reading the error
        # while another makes its message sees either `_pending` (and makes
        # the same message) or the message, never neither.
        pending = self.__dict__.get("_pending")
        if pending is not None:
            _BASE_ARGS.__set__(self, (pending.open_message(self.retry_in),))
            self.__dict__.pop("_pending", None)

    @property
    def args(self) -> tuple[Any, ...]:
        self._materialize()
        return _BASE_ARGS.__get__(self)  # type: ignore[no-any-return]

    @args.setter
    def args(self, value: Any) -> None:
        self.__dict__.pop("_pending", None)
        _BASE_ARGS.__set__(self, value)

    def __str__(self) -> str:
        self._materialize()
        return BaseException.__str__(self)

    def __repr__(self) -> str:
        self._materialize()
        return BaseException.__repr__(self)

    def __reduce__(self) -> Any:
        return (_rebuild_circuit_open, (str(self), dict(self.__dict__)))


# BaseException's own `args` (a getset descriptor), which CircuitOpenError's
# lazy `args` property reads and writes.
_BASE_ARGS: Any = BaseException.__dict__["args"]


def _rebuild_circuit_open(message: str, state: dict[str, Any]) -> CircuitOpenError:
    exc = CircuitOpenError(message)
    exc.__dict__.update(state)
    return exc


def _circuit_open(name: str, retry_in: float, message: str) -> CircuitOpenError:
    """Returns the error for a refused call (called by ``_core``)."""
    return CircuitOpenError(message, name=name, retry_in=retry_in)


class HTTPStatusError(MulliganError):
    """Raised by :meth:`Response.raise_for_status` for a 4xx or 5xx response.

    The message shows the URL redacted; ``response.url`` is the URL as sent.

    Attributes:
        response: the :class:`mulligan.Response`.
        status_code: its HTTP status.
    """

    def __init__(self, message: str, *, response: HTTPResponse) -> None:
        super().__init__(message)
        self.response = response
        self.status_code = response.status_code


@dataclass(frozen=True)
class AttemptOutcome:
    """What one attempt of a decorated function or block produced.

    Attributes:
        attempt: the attempt number, 1 for the first.
        exception: the exception the attempt raised, or None when it returned.
        result: the value the attempt returned (rejected by ``on_result``), or
            None when it raised.

    .. versionadded:: 0.1.0
    """

    __slots__ = ("attempt", "exception", "result")
    attempt: int
    exception: Optional[BaseException]
    result: Any


class RetriesExhausted(MulliganError):
    """The retries gave up; raised only when asked for (``raise_on_give_up=True``).

    By default a decorated function re-raises its own last exception and an
    HTTP call returns its last response; this class is for callers who prefer
    one exception type for "gave up". When raised by ``@mulligan.retry`` or
    ``mulligan.retrying``, ``__cause__`` is the last attempt's exception (None
    when the last attempt returned a value rejected by ``on_result``).

    Attributes:
        attempts: attempts made, including the first.
        stop_reason: why the retries stopped (``"attempts_exhausted"``,
            ``"deadline"``, ``"retry_after_too_long"``, ``"not_replay_safe"``).
        response: the last HTTP response, or None. The message shows the URL
            redacted; ``response.url`` is the URL as sent (credentials kept).
        outcomes: every attempt's :class:`AttemptOutcome`, first to last
            (empty for HTTP calls).

    .. versionchanged:: 0.1.0 ``outcomes`` added.
    """

    def __init__(
        self,
        message: str,
        *,
        attempts: int,
        stop_reason: str,
        response: Optional[HTTPResponse] = None,
        outcomes: tuple[AttemptOutcome, ...] = (),
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.stop_reason = stop_reason
        self.response = response
        self.outcomes = outcomes


class IdempotencyConflict(MulliganError):
    """Another call with the same idempotency key is still running (HTTP: 409).

    Attributes:
        key: the idempotency key.
        retry_after: seconds after which a retry may find the result.

    .. versionadded:: 0.1.0
    """

    def __init__(self, message: str, *, key: str, retry_after: float) -> None:
        super().__init__(message)
        self.key = key
        self.retry_after = retry_after


class IdempotencyResultNotReplayable(IdempotencyConflict):
    """A call with this idempotency key already ran to completion, but its
    return value could not be stored (it is not picklable, or too big for the
    store), so a repeat can neither replay it nor run the function again.

    Raised by functions decorated with :meth:`IdempotencyStore.idempotent`.
    A subclass of :class:`IdempotencyConflict`; ``retry_after`` is the time
    left until the entry expires (after which the key runs afresh).

    Attributes:
        key: the idempotency key.
        retry_after: seconds until the key is forgotten.
        reason: why the result was not stored.

    .. versionadded:: 0.1.0
    """

    def __init__(self, message: str, *, key: str, retry_after: float, reason: str) -> None:
        super().__init__(message, key=key, retry_after=retry_after)
        self.reason = reason


class IdempotencyKeyMismatch(MulliganError, ValueError):
    """The idempotency key was already used for a different request (HTTP: 422).

    Attributes:
        key: the idempotency key.

    .. versionadded:: 0.1.0
    """

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


class IdempotencyStoreFull(MulliganError):
    """The store is full of in-flight keys and cannot take a new one (HTTP: 503).

    .. versionadded:: 0.1.0
    """


class StateBackendUnavailable(MulliganError):
    """A shared state backend (Redis) could not be reached in time, or failed
    a command, and the operation failed closed: nothing was decided (HTTP
    middlewares answer 503 with ``Retry-After`` and do not run the handler).
    Retrying later may succeed. The message names the endpoint
    (``redis://host:port/db``, never a password) and the cause.

    .. versionadded:: 0.5.0
    """


class _UsageError(Exception):
    """A bad argument of the ``mulligan`` command found after argument parsing
    (an unreadable ``-d @file``, a malformed header or URL). Private to the
    command: ``main()`` turns it into a usage message and exit code 2."""


_KIND_CLASSES: dict[str, type[TransportError]] = {
    "connection_refused": ConnectionRefused,
    "connection_reset": ConnectionReset,
    "dns_failure": DnsFailure,
    "connect_timeout": ConnectTimeout,
    "timeout": AttemptTimeout,
    "tls_error": TlsError,
    "invalid_url": InvalidURL,
    "truncated": TruncatedResponse,
}

# mulligan::StatusCode values (equal to the C ABI's MULLIGAN_E_*; pinned).
class BulkheadFullError(MulliganError):
    """A bulkhead refused the call: all of its ``max_concurrent`` slots were
    busy, and its wait queue was full, absent, or the wait timed out (its
    ``max_wait``, or the call's deadline). Never retried.

    Attributes:
        name: the bulkhead's name.
        retry_in: always None (a bulkhead cannot tell when a slot frees).

    .. versionadded:: 0.3.0
    """

    def __init__(self, message: str, *, name: str = "") -> None:
        super().__init__(message)
        self.name = name
        self.retry_in: Optional[float] = None

    def __reduce__(self) -> Any:
        return (_rebuild_limit_error, (type(self), str(self), dict(self.__dict__)))


class RateLimitedError(MulliganError):
    """A rate limiter refused the call: its next slot for the key was further
    away than the limiter's ``max_wait`` (or the call's deadline). Never
    retried.

    Attributes:
        name: the rate limiter's name.
        key: the bucket's key ("" for the limiter's own bucket).
        retry_in: seconds until the key's next slot.

    .. versionadded:: 0.3.0
    """

    def __init__(self, message: str, *, name: str = "", key: str = "", retry_in: float = 0.0) -> None:
        super().__init__(message)
        self.name = name
        self.key = key
        self.retry_in = retry_in

    def __reduce__(self) -> Any:
        return (_rebuild_limit_error, (type(self), str(self), dict(self.__dict__)))


def _rebuild_limit_error(
    cls: type[BaseException], message: str, state: dict[str, Any]
) -> BaseException:
    exc = cls(message)
    exc.__dict__.update(state)
    return exc


_INVALID_ARGUMENT = 1
_DEADLINE_EXCEEDED = 6
_CIRCUIT_OPEN = 7
_TRANSPORT = 9
_TIMEOUT = 10
_THROTTLED = 12  # (Added in 0.3.)
_BULKHEAD_FULL = 13
_RATE_LIMITED = 14
_OUTBOX = 17  # (Added in 0.5.)
_STATE_UNAVAILABLE = 15  # (Added in 0.5.)


def _from_status(
    code: int,
    message: str,
    kind: Optional[str],
    attempts: Optional[int],
    stop_reason: Optional[str],
    elapsed: Optional[float],
    idempotency_key: Optional[str],
) -> BaseException:
    """Returns the exception for a non-OK core Status (called by ``_core``)."""
    if code == _INVALID_ARGUMENT:
        return ValueError(message)
    if code == _CIRCUIT_OPEN:
        return CircuitOpenError(message, attempts=attempts or 0)
    if code == _THROTTLED:
        return ThrottledError(message, attempts=attempts or 0)
    if code == _BULKHEAD_FULL:
        return BulkheadFullError(message)
    if code == _RATE_LIMITED:
        return RateLimitedError(message)
    if code == _OUTBOX:
        return OutboxError(message)
    if code == _STATE_UNAVAILABLE:
        return StateBackendUnavailable(message)
    if code in (_TRANSPORT, _TIMEOUT, _DEADLINE_EXCEEDED):
        if code == _DEADLINE_EXCEEDED:
            cls: type[TransportError] = DeadlineExceeded
        elif kind in _KIND_CLASSES:
            cls = _KIND_CLASSES[kind]
        elif code == _TIMEOUT:
            cls = AttemptTimeout
        else:
            cls = TransportError
        return cls(
            kind or ("timeout" if code == _TIMEOUT else "transport"),
            attempts or 0,
            message,
            stop_reason=stop_reason,
            elapsed=elapsed,
            idempotency_key=idempotency_key,
        )
    return MulliganError(message)


# --- The durable outbox (Added in 0.5.) --------------------------------------


class OutboxError(MulliganError):
    """The durable outbox (:class:`mulligan.Outbox`) could not do what was
    asked: its SQLite file is read-only, the disk or the outbox's
    ``max_size_bytes`` cap is full, the file is not an outbox, or a worker's
    lease was lost to another worker. The message names the database file and
    SQLite's own error text. An ``enqueue`` that raised this wrote nothing.

    .. versionadded:: 0.5.0
    """


# --- Overload protection: adaptive throttling (Added in 0.3.) ---------------


class ThrottledError(MulliganError):
    """Adaptive throttling (:class:`mulligan.AdaptiveThrottle`, the Google SRE
    book's client-side throttling) rejected the call locally: the dependency
    has been refusing requests (429/503, RESOURCE_EXHAUSTED/UNAVAILABLE) and
    this client sheds load before sending. Never retried.

    Attributes:
        name: the throttle's name ("" when unnamed).
        retry_in: None (a throttle gives no time; it rejects with a
            probability that falls as the dependency accepts again).
        attempts: attempts made before the rejection.

    .. versionadded:: 0.3.0
    """

    def __init__(self, message: str, *, name: str = "", attempts: int = 0) -> None:
        super().__init__(message)
        self.name = name
        self.retry_in: Optional[float] = None
        self.attempts = attempts

    def __reduce__(self) -> Any:
        return (_rebuild_throttled, (str(self), dict(self.__dict__)))


def _rebuild_throttled(message: str, state: dict[str, Any]) -> ThrottledError:
    exc = ThrottledError(message)
    exc.__dict__.update(state)
    return exc
