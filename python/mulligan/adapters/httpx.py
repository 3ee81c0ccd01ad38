"""mulligan for httpx: a sync and an async transport with mulligan's retries.

::

    import httpx
    from mulligan.adapters.httpx import AsyncTransport, Transport

    client = httpx.Client(transport=Transport(attempts=4, breaker=True))
    r = client.get("https://api.example.com/orders")

    async with httpx.AsyncClient(transport=AsyncTransport(attempts=4)) as client:
        r = await client.get("https://api.example.com/orders")

Each wraps httpx's own ``HTTPTransport`` / ``AsyncHTTPTransport`` (made with
their defaults, ``retries=0``), or any transport you pass
(``Transport(httpx.HTTPTransport(http2=True), ...)``). Needs httpx
(``pip install 'mulligan[httpx]'``); without it, importing this module
raises ImportError naming the extra.

What is retried: an attempt ends when the wrapped transport returns the
response head, which is when the status and Retry-After are judged. A
response that will be retried is read and closed first (its connection
goes back to the pool). The body of the response returned is read by the
client after the transport returns (or by you, with ``stream()``), so a
body that fails while being read is not retried (httpx's own transport
``retries=`` retries connection failures only). A request body of bytes is
sent again as is; a seekable file body (``content=open(path, "rb")``,
``content=io.BytesIO(...)``) is rewound to where it stood when the call
began and sent again, as requests and urllib3 rewind a body (urllib3's
``body_pos``) (0.6; before, it was sent once). A body that cannot be sent
twice (a generator, an async iterator, a pipe) makes the request unsafe to
replay once sent.

Exception mapping: when the retries give up on a transport failure, the last
attempt's own httpx exception is raised (``httpx.ConnectError``,
``httpx.ReadTimeout``...) with a note ``mulligan: gave up after N attempts
(reason)``; a give-up on a retryable status returns the last response (with
``raise_on_give_up=True``, :class:`RetriesExhausted`, an
``httpx.HTTPStatusError``); an open breaker raises :class:`CircuitOpenError`,
both a ``mulligan.CircuitOpenError`` and an ``httpx.TransportError``, without
sending anything.

.. versionadded:: 0.3.0
"""

from __future__ import annotations

import inspect
import socket
import ssl
from typing import Any, Optional

try:
    import httpx
except ImportError as _missing:  # pragma: no cover - exercised without httpx
    raise ImportError("mulligan.adapters.httpx needs httpx: pip install 'mulligan[httpx]'") from _missing

from .. import _errors
from .._adapter.flow import IDEMPOTENT_METHODS, AdapterConfig, RequestCall, new_key, sleep, trimmed
from .._retry.async_driver import sleep as async_sleep

__all__ = ["AsyncTransport", "CircuitOpenError", "RetriesExhausted", "Transport"]


class CircuitOpenError(_errors.CircuitOpenError, httpx.TransportError):
    """The origin's circuit breaker refused the request; nothing was sent.

    Both a :class:`mulligan.CircuitOpenError` (``.key`` the origin,
    ``.retry_in`` seconds until the next probe, ``.attempts``) and an
    ``httpx.TransportError`` (``.request`` is the refused request). Never
    retried.

    .. versionadded:: 0.3.0
    """


class RetriesExhausted(_errors.RetriesExhausted, httpx.HTTPStatusError):  # type: ignore[misc]
    """The retries gave up on a retryable status (raised only with
    ``raise_on_give_up=True``; the fallback receives it too).

    Both a :class:`mulligan.RetriesExhausted` (``.attempts``,
    ``.stop_reason``) and an ``httpx.HTTPStatusError`` (``.request``,
    ``.response``: the last ``httpx.Response``, read and closed).

    .. versionadded:: 0.3.0
    """

    def __init__(self, message: str, *, attempts: int, stop_reason: str, response: Any = None) -> None:
        Exception.__init__(self, message)
        self.attempts = attempts
        self.stop_reason = stop_reason
        self.response = response
        self.request = response.request
        self.outcomes = ()


def _caused_by(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> bool:
    seen = 0
    cur: Optional[BaseException] = exc
    while cur is not None and seen < 16:
        if isinstance(cur, kinds):
            return True
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return False


def _kind(exc: httpx.TransportError) -> Optional[str]:
    """The engine's failure kind of an exception the wrapped transport
    raised; None for one that is no transport failure (an unsupported
    scheme, a request httpx itself refuses): terminal, raised as it is."""
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.LocalProtocolError)):
        return None
    if isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout)):
        return "connect_timeout"  # nothing was sent
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.ConnectError):
        if _caused_by(exc, (ssl.SSLError, ssl.CertificateError)):
            return "tls_error"
        if _caused_by(exc, (socket.gaierror,)):
            return "dns_failure"
        return "connection_refused"  # nothing was sent
    if isinstance(exc, httpx.ProxyError):
        return "transport"
    if isinstance(exc, (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)):
        return "connection_reset"
    return "transport"


def _field(headers: httpx.Headers, lower: bytes, name: str) -> Optional[str]:
    """The value of the header field ``name`` (``lower``: its lower-case
    bytes), or None. httpx's Headers keeps (raw name, lower-case name, value)
    triples in ``_list``; scanning it for an absent field skips
    ``Headers.get``'s KeyError (raised and caught for every absent field:
    Idempotency-Key and Retry-After mostly are). A present field, or Headers
    without that list, is read with ``get`` (httpx's decoding and joining)."""
    fields = getattr(headers, "_list", None)
    if type(fields) is list:
        for item in fields:
            if item[1] == lower:
                return headers.get(name)  # type: ignore[no-any-return]
        return None
    return headers.get(name)  # type: ignore[no-any-return]


def _file_body(request: httpx.Request) -> tuple[Any, int]:
    """(the file, its start position) of a request whose body is a seekable
    file object (``content=open(...)``, ``content=io.BytesIO(...)``: httpx
    streams it with ``read()``), else (None, -1). The position is the
    file's ``tell()`` when the call begins, as urllib3 records ``body_pos``
    and requests ``_body_position``; a file whose ``seekable()`` is not True
    (a pipe, a socket) or whose ``tell()`` fails is no seekable body."""
    body: Any = getattr(request.stream, "_stream", None)  # httpx's IteratorByteStream
    seekable = getattr(body, "seekable", None)
    if not callable(getattr(body, "read", None)) or not callable(seekable):
        return None, -1
    if inspect.iscoroutinefunction(seekable):  # an async file (aiofiles, anyio): sent once
        return None, -1
    try:
        if seekable() is not True:
            return None, -1
        position = body.tell()
    except (AttributeError, OSError, ValueError):
        return None, -1
    return (body, position) if isinstance(position, int) else (None, -1)


def _begin(cfg: AdapterConfig, request: httpx.Request) -> tuple[RequestCall, Any, int]:
    """Begins the call of ``request``: (the call, the seekable file body or
    None, its start position). A body is replayable when it is bytes
    (httpx's ByteStream) or a seekable file, rewound before each retry; any
    other stream (a generator, an async iterator) is sent once."""
    method = request.method
    key = _field(request.headers, b"idempotency-key", "Idempotency-Key")
    if key is None and cfg.idempotency_key and method not in IDEMPOTENT_METHODS:
        key = new_key()
        request.headers["Idempotency-Key"] = key
    if isinstance(request.stream, httpx.ByteStream):
        body, position, replayable = None, -1, True
    else:
        body, position = _file_body(request)
        replayable = body is not None
    return cfg.begin(method, str(request.url), key, replayable, request.headers), body, position


def _bound(request: httpx.Request, bound: Optional[float]) -> None:
    """Trims the request's httpx timeouts to the engine's attempt bound."""
    if bound is None:
        return
    given = request.extensions.get("timeout") or {}
    request.extensions = {
        **request.extensions,
        "timeout": {k: trimmed(given.get(k), bound) for k in ("connect", "read", "write", "pool")},
    }


def _refusal(call: RequestCall, request: httpx.Request, cause: Optional[BaseException]) -> Any:
    try:
        return call.refused(CircuitOpenError, cause)
    except CircuitOpenError as exc:
        exc.request = request
        raise




class Transport(httpx.BaseTransport):
    """An httpx transport whose retries are mulligan's (``httpx.Client(transport=...)``).

    Every decision is the engine's, as for :class:`mulligan.Client`: the
    retried failures and statuses (408, 429, 500, 502, 503, 504), the
    backoff, Retry-After, the deadline, the method rules and the
    Idempotency-Key rule, the breakers per origin, the metrics by origin and
    the fallback. Waits use ``time.sleep`` (mulligan.testing's FakeClock
    replaces it).

    Thread-safety: as safe to share between threads as the wrapped
    transport (httpx's is); the options are immutable.

    Args:
        transport: the transport each attempt goes through. Default: httpx's
            own, made with its defaults.
        attempts, timeout, deadline, backoff, base_delay, multiplier,
            max_delay, jitter, jitter_fraction, wait, stop, min_delay,
            connect_retries, read_retries, status_retries, other_retries,
            retry_after_max, retry_on, strict, method_rule, allowed_methods,
            breaker, breaker_per_attempt, on_retry, idempotency_key,
            fallback, raise_on_give_up: as for
            :class:`mulligan.adapters.requests.Adapter` (and
            :class:`mulligan.Client`): durations in seconds or
            ``datetime.timedelta``; ``timeout`` bounds each attempt on top of
            the client's httpx timeouts (the smaller wins; trimmed to the
            deadline); a fallback returns an ``httpx.Response``.

    Raises:
        ValueError, TypeError: a bad option, naming it (at construction).

    .. versionadded:: 0.3.0
    """

    def __init__(self, transport: Optional[httpx.BaseTransport] = None, **options: Any) -> None:
        self._cfg = AdapterConfig("mulligan.adapters.httpx.Transport", **options)
        self._transport = transport if transport is not None else httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Sends ``request`` as one logical call (see the class).

        Returns:
            The final response (also a 4xx/5xx one), or the fallback's answer.

        Raises:
            httpx.TransportError: the last attempt's own exception when the
                retries gave up on it, or a terminal one at once.
            CircuitOpenError: the origin's breaker is open (nothing sent).
            RetriesExhausted: with ``raise_on_give_up=True`` only.
        """
        call, body, position = _begin(self._cfg, request)
        last: Optional[BaseException] = None
        in_flight = 0
        try:
            while True:
                if not call.admit():
                    return _refusal(call, request, last)  # type: ignore[no-any-return]
                if call.trace is not None:  # the attempt's trace context
                    call.inject(request.headers)
                if body is not None and call.attempts:
                    body.seek(position)  # a file body, sent again from its start
                _bound(request, call.bound)
                in_flight = 1
                try:
                    response = self._transport.handle_request(request)
                except httpx.TransportError as exc:
                    in_flight = 0
                    kind = _kind(exc)
                    if kind is None:
                        call.terminal()
                        raise
                    decision = call.error(kind)
                    if not decision.retry:
                        return call.gave_up_on_error(decision, exc)  # type: ignore[no-any-return]
                    last = exc
                else:
                    in_flight = 0
                    retry_after = _field(response.headers, b"retry-after", "Retry-After")
                    decision = call.response(response.status_code, retry_after)
                    if not decision.retry:
                        response.request = request
                        if decision.use_fallback or call.cfg.raise_on_give_up:
                            _drain(response)
                        return call.gave_up_on_status(decision, response, RetriesExhausted)  # type: ignore[no-any-return]
                    _drain(response)
                    last = None
                call.report(decision)
                sleep(decision.delay)
        except BaseException:
            call.abandon(in_flight)  # nothing once the call has ended
            raise

    def close(self) -> None:
        """Closes the wrapped transport."""
        self._transport.close()


def _drain(response: httpx.Response) -> None:
    """Reads and closes a response that will not be returned."""
    try:
        response.read()
    except httpx.HTTPError:
        pass
    finally:
        response.close()


async def _adrain(response: httpx.Response) -> None:
    try:
        await response.aread()
    except httpx.HTTPError:
        pass
    finally:
        await response.aclose()


class AsyncTransport(httpx.AsyncBaseTransport):
    """The asyncio twin of :class:`Transport` (``httpx.AsyncClient(transport=...)``).

    The same decisions; waits are ``asyncio.sleep`` (cancelling the task
    cancels the wait at once), or mulligan.testing's FakeClock. A coroutine
    ``on_retry`` hook is awaited.

    Thread-safety: one event loop, like the wrapped transport.

    Args:
        transport: the transport each attempt goes through. Default: httpx's
            own ``AsyncHTTPTransport``, made with its defaults.
        options: the keyword arguments of :class:`Transport`.

    Raises:
        ValueError, TypeError: a bad option, naming it (at construction).

    .. versionadded:: 0.3.0
    """

    def __init__(self, transport: Optional[httpx.AsyncBaseTransport] = None, **options: Any) -> None:
        self._cfg = AdapterConfig("mulligan.adapters.httpx.AsyncTransport", **options)
        self._transport = transport if transport is not None else httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Sends ``request`` as one logical call; see :meth:`Transport.handle_request`."""
        call, body, position = _begin(self._cfg, request)
        last: Optional[BaseException] = None
        in_flight = 0
        try:
            while True:
                if not call.admit():
                    return _refusal(call, request, last)  # type: ignore[no-any-return]
                if call.trace is not None:  # the attempt's trace context
                    call.inject(request.headers)
                if body is not None and call.attempts:
                    body.seek(position)  # a file body, sent again from its start
                _bound(request, call.bound)
                in_flight = 1
                try:
                    response = await self._transport.handle_async_request(request)
                except httpx.TransportError as exc:
                    in_flight = 0
                    kind = _kind(exc)
                    if kind is None:
                        call.terminal()
                        raise
                    decision = call.error(kind)
                    if not decision.retry:
                        return call.gave_up_on_error(decision, exc)  # type: ignore[no-any-return]
                    last = exc
                else:
                    in_flight = 0
                    retry_after = _field(response.headers, b"retry-after", "Retry-After")
                    decision = call.response(response.status_code, retry_after)
                    if not decision.retry:
                        response.request = request
                        if decision.use_fallback or call.cfg.raise_on_give_up:
                            await _adrain(response)
                        return call.gave_up_on_status(decision, response, RetriesExhausted)  # type: ignore[no-any-return]
                    await _adrain(response)
                    last = None
                hooked = call.report(decision)
                if inspect.isawaitable(hooked):
                    await hooked
                if decision.delay > 0:
                    await async_sleep(decision.delay)
        except BaseException:
            call.abandon(in_flight)  # nothing once the call has ended
            raise

    async def aclose(self) -> None:
        """Closes the wrapped transport."""
        await self._transport.aclose()
