"""mulligan for aiohttp: a client middleware (aiohttp >= 3.12) with mulligan's retries.

::

    import aiohttp
    from mulligan.adapters.aiohttp import Middleware

    retries = Middleware(attempts=4, breaker=True)
    async with aiohttp.ClientSession(middlewares=(retries,)) as session:
        async with session.get("https://api.example.com/orders") as r:
            body = await r.read()

Needs aiohttp 3.12 or later (``pip install 'mulligan[aiohttp]'``); without
it, importing this module raises ImportError naming the extra.

Each attempt is one call of the next handler of aiohttp's middleware chain
(a connection and the response head), so the session's ``ClientTimeout``
still bounds the whole logical call (its ``total`` spans every attempt and
wait); ``timeout=`` bounds each attempt (trimmed to the deadline). A
response that will be retried is read and released first. The body of the
response returned is read by you after the middleware returns, so a body
that fails while being read is not retried. A request body that cannot be
sent twice (an async iterator) makes the request unsafe to replay once sent.

Exception mapping: when the retries give up on a transport failure, the last
attempt's own aiohttp exception is raised (``aiohttp.ClientConnectorError``,
``aiohttp.ServerDisconnectedError``, ``aiohttp.SocketTimeoutError``...) with
a note ``mulligan: gave up after N attempts (reason)``; an attempt cut by
``timeout=`` raises ``asyncio.TimeoutError`` (also ``TimeoutError``); a
give-up on a retryable status returns the last response (with
``raise_on_give_up=True``, :class:`RetriesExhausted`, an
``aiohttp.ClientResponseError``); an open breaker raises
:class:`CircuitOpenError`, both a ``mulligan.CircuitOpenError`` and an
``aiohttp.ClientError``, without sending anything.

.. versionadded:: 0.3.0
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Optional

try:
    import aiohttp
    import aiohttp.payload
    from aiohttp import ClientHandlerType, ClientRequest, ClientResponse
except ImportError as _missing:  # pragma: no cover - exercised without aiohttp 3.12+
    raise ImportError(
        "mulligan.adapters.aiohttp needs aiohttp 3.12 or later: pip install 'mulligan[aiohttp]'"
    ) from _missing

from .. import _errors
from .._adapter.flow import IDEMPOTENT_METHODS, AdapterConfig, RequestCall, new_key
from .._retry.async_driver import sleep as async_sleep

__all__ = ["CircuitOpenError", "Middleware", "RetriesExhausted"]


class CircuitOpenError(_errors.CircuitOpenError, aiohttp.ClientError):
    """The origin's circuit breaker refused the request; nothing was sent.

    Both a :class:`mulligan.CircuitOpenError` (``.key`` the origin,
    ``.retry_in`` seconds until the next probe, ``.attempts``) and an
    ``aiohttp.ClientError``. Never retried.

    .. versionadded:: 0.3.0
    """


class RetriesExhausted(_errors.RetriesExhausted, aiohttp.ClientResponseError):
    """The retries gave up on a retryable status (raised only with
    ``raise_on_give_up=True``; the fallback receives it too).

    Both a :class:`mulligan.RetriesExhausted` (``.attempts``,
    ``.stop_reason``, ``.response``: the last ``aiohttp.ClientResponse``,
    read and released) and an ``aiohttp.ClientResponseError`` (``.status``,
    ``.request_info``, ``.headers``), what ``raise_for_status`` raises.

    .. versionadded:: 0.3.0
    """

    def __init__(self, message: str, *, attempts: int, stop_reason: str, response: Any = None) -> None:
        aiohttp.ClientResponseError.__init__(
            self, response.request_info, response.history, status=response.status,
            message=message, headers=response.headers,
        )
        self.attempts = attempts
        self.stop_reason = stop_reason
        self.response = response
        self.outcomes = ()


def _kind(exc: BaseException) -> Optional[str]:
    """The engine's failure kind of an exception an attempt raised; None for
    one that is no transport failure (a bad URL): terminal, raised as it is."""
    if isinstance(exc, (aiohttp.InvalidURL, aiohttp.ClientResponseError)):
        return None
    if isinstance(exc, (aiohttp.ClientConnectorCertificateError, aiohttp.ClientSSLError)):
        return "tls_error"
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return "dns_failure"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return "connection_refused"  # nothing was sent
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return "connect_timeout"
    if isinstance(exc, (aiohttp.ServerTimeoutError, asyncio.TimeoutError)):
        return "timeout"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return "truncated"
    if isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)):
        return "connection_reset"
    if isinstance(exc, aiohttp.ClientError):
        return "transport"
    return None


async def _drain(response: ClientResponse) -> None:
    """Reads and releases a response that will not be returned."""
    try:
        await response.read()
    except aiohttp.ClientError:
        pass
    finally:
        response.release()


class Middleware:
    """An aiohttp client middleware whose retries are mulligan's.

    Pass it to ``aiohttp.ClientSession(middlewares=(Middleware(...),))`` (or
    to one request's ``middlewares=``). Every decision is the engine's, as
    for :class:`mulligan.Client`: the retried failures and statuses (408,
    429, 500, 502, 503, 504), the backoff, Retry-After, the deadline, the
    method rules and the Idempotency-Key rule, the breakers per origin, the
    metrics by origin and the fallback. Waits are ``asyncio.sleep``
    (cancelling the task cancels the wait at once), or mulligan.testing's
    FakeClock; a coroutine ``on_retry`` hook is awaited.

    Thread-safety: the options are immutable; one instance may serve many
    sessions and event loops.

    Args:
        attempts, timeout, deadline, backoff, base_delay, multiplier,
            max_delay, jitter, jitter_fraction, wait, stop, min_delay,
            connect_retries, read_retries, status_retries, other_retries,
            retry_after_max, retry_on, strict, method_rule, allowed_methods,
            breaker, breaker_per_attempt, on_retry, idempotency_key,
            fallback, raise_on_give_up: as for
            :class:`mulligan.adapters.requests.Adapter` (and
            :class:`mulligan.Client`): durations in seconds or
            ``datetime.timedelta``; ``timeout`` bounds each attempt
            (``asyncio.TimeoutError`` when it cuts one); a fallback returns
            an ``aiohttp.ClientResponse`` or any value your code expects.

    Raises:
        ValueError, TypeError: a bad option, naming it (at construction).

    .. versionadded:: 0.3.0
    """

    def __init__(self, **options: Any) -> None:
        self._cfg = AdapterConfig("mulligan.adapters.aiohttp.Middleware", **options)

    async def __call__(self, request: ClientRequest, handler: ClientHandlerType) -> ClientResponse:
        """Sends ``request`` as one logical call through ``handler`` (the
        rest of the chain).

        Returns:
            The final response (also a 4xx/5xx one), or the fallback's answer.

        Raises:
            aiohttp.ClientError: the last attempt's own exception when the
                retries gave up on it, or a terminal one at once.
            asyncio.TimeoutError: ``timeout=`` cut the last attempt.
            CircuitOpenError: the origin's breaker is open (nothing sent).
            RetriesExhausted: with ``raise_on_give_up=True`` only.
        """
        cfg = self._cfg
        method = request.method
        key: Optional[str] = request.headers.get("Idempotency-Key")
        if key is None and cfg.idempotency_key and method not in IDEMPOTENT_METHODS:
            key = new_key()
            request.headers["Idempotency-Key"] = key
        replayable = not isinstance(request.body, aiohttp.payload.AsyncIterablePayload)
        call = cfg.begin(method, str(request.url), key, replayable, request.headers)
        return await _run(call, request, handler)  # type: ignore[no-any-return]


async def _run(call: RequestCall, request: ClientRequest, handler: ClientHandlerType) -> Any:
    last: Optional[BaseException] = None
    in_flight = 0
    try:
        while True:
            if not call.admit():
                return call.refused(CircuitOpenError, last)
            if call.trace is not None:  # the attempt's trace context
                call.inject(request.headers)
            bound = call.bound
            in_flight = 1
            try:
                if bound is None:
                    response = await handler(request)
                else:
                    response = await asyncio.wait_for(handler(request), bound)
            except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
                in_flight = 0
                kind = _kind(exc)
                if kind is None:
                    call.terminal()
                    raise
                decision = call.error(kind)
                if not decision.retry:
                    return call.gave_up_on_error(decision, exc)
                last = exc
            else:
                in_flight = 0
                decision = call.response(response.status, response.headers.get("Retry-After"))
                if not decision.retry:
                    if decision.use_fallback or call.cfg.raise_on_give_up:
                        await _drain(response)
                    return call.gave_up_on_status(decision, response, RetriesExhausted)
                await _drain(response)
                last = None
            hooked = call.report(decision)
            if inspect.isawaitable(hooked):
                await hooked
            if decision.delay > 0:
                await async_sleep(decision.delay)
    except BaseException:
        call.abandon(in_flight)  # nothing once the call has ended
        raise
