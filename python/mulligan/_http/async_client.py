"""``mulligan.AsyncClient``: the resilient HTTP client for asyncio.

The event loop drives libcurl's multi interface through the core's
``HttpAsyncEngine`` and the native ``HttpLoopDriver``: libcurl's sockets sit
in an epoll set of the driver's own, which the loop watches as one reader,
and libcurl's timer goes to ``loop.call_soon`` / ``call_at``; one callback
per loop iteration runs every ready transfer in C++. Many requests are in
flight on one thread and no thread is started per request.
The engine decides, the caller acts: when an attempt fails and the policy
says retry, the coroutine waits with ``asyncio.sleep`` (so cancellation
works at any point) and starts the next attempt. Method rules, Retry-After,
deadlines, breakers and errors are the sync client's.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import warnings
from collections.abc import Coroutine
from typing import Any, ClassVar, Optional, Union

from .. import _core, _validate
from .._errors import CircuitOpenError, TransportError
from .._retry.options import _never_retried
from .._retry.state import STATE
from .._telemetry import tracing as _tracing
from .._validate import UNSET as _UNSET
from .base import _ClientBase, _merge_named, _testing
from .events import _HttpRetryHook, _report_retry
from .hedged import hedging_policy, replay_safe, run_hedged
from .headers import HeadersInput
from .request import ParamsInput, _check_url
from .response import Response

__all__ = ["AsyncClient"]

_CLOSED_IN_FLIGHT = "this AsyncClient was closed while the request was in flight"


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class AsyncClient(_ClientBase):
    """A resilient asyncio HTTP client on libcurl's multi interface.

    Takes the same arguments as :class:`mulligan.Client`, and
    ``max_connections`` (int, default 100, as aiohttp and httpx; None for no
    cap): at most that many transfers (so connections in use) at once;
    requests beyond them wait in order for one to end. A request's attempt
    timeout starts when its transfer does (its deadline runs meanwhile), so
    waiting for a slot is never a connect timeout nor a breaker failure.
    One client belongs
    to one event loop (the loop of its first request; another loop gets
    RuntimeError); use ``async with`` or ``await client.aclose()`` to release
    its connections (a client dropped unclosed warns with ResourceWarning).
    ``on_retry`` may be a plain function or a coroutine function (awaited
    before the wait). The proxy variables are read at the first request,
    when the client's engine is made.

    ``hedge`` (0.6; default None: off) hedges replay-safe requests (GET,
    HEAD, OPTIONS, TRACE, PUT, DELETE, or any carrying an Idempotency-Key,
    the same key on every copy): a delay in seconds (two copies), or a
    mapping of ``delay`` (seconds; 0: every copy at once), ``max_attempts``
    (copies, the first included, 2..5, default 2) and ``quantile`` /
    ``quantile_window`` / ``quantile_min_samples`` (the delay becomes that
    quantile of recent winners' latencies, "The Tail at Scale"). Copy k+1
    starts ``delay`` after copy k, or at once when copy k fails retryably,
    unless its answer carried Retry-After (A6 pushback, 0.6): then not
    before that has passed, and a hint over ``retry_after_max`` stops new
    copies; the first response the client accepts (one that would not be retried)
    wins and the other copies are cancelled: their transfers are aborted
    and their connections closed. Every copy is one attempt of the client's
    pipeline (so the per-origin breaker admits and judges each, and an open
    breaker refuses a copy without sending it), and every extra copy needs a
    grant of the origin's retry budget (gRPC A6: the retry throttle limits
    hedges). A hedged request is not retried besides (its copies are its
    attempts). ``Response.attempts`` is the copies started and
    ``Response.hedge_winner`` the winning copy's number (1: the first).
    Per request, ``hedge=`` replaces the client's (None: not hedged).
    Bad ``hedge`` values raise ValueError or TypeError at construction,
    naming the field. Rules: gRPC A6 hedgingPolicy; hedging/hedging.h.

    Thread-safety: use a client from its loop's thread only.

    .. versionadded:: 0.1.0
    """

    _OWNER: ClassVar[str] = "mulligan.AsyncClient"

    def __init__(
        self,
        *,
        policy: Optional[str] = None,
        max_connections: Optional[int] = 100,
        hedge: Any = None,
        **kwargs: Any,
    ) -> None:
        _validate.integer_or_none(
            self._OWNER, "max_connections", max_connections, 1, _validate.INT_MAX,
            range_text="[1, 2**31 - 1] or None",
        )
        super().__init__(**_merge_named(self._OWNER, policy, kwargs))
        self._hedging: Any = hedging_policy(self._OWNER, hedge)
        # The engine is made on the first request (inside the running loop);
        # the options are checked now, by the rule Client's engine applies.
        _core.check_http_client_options(**self._native_args)
        self._native_args["max_connections"] = max_connections or 0
        self._driver: Any = None  # _core.HttpLoopDriver, made on the first request
        self._driver_thread = 0  # the thread of its loop
        self._waits: set[asyncio.Future[None]] = set()  # retries' backoff waits, for aclose

    def _get_driver(self) -> Any:
        loop = asyncio.get_running_loop()
        driver = self._driver
        if driver is None:
            if self._closed:
                raise RuntimeError("this client is closed")
            driver = _core.HttpLoopDriver(loop, **self._native_args)
            self._driver = driver
            self._driver_thread = threading.get_ident()
        elif driver.loop is not loop:
            raise RuntimeError("this AsyncClient is bound to another event loop")
        return driver

    async def aclose(self) -> None:
        """Closes the pool. Requests still in flight or waiting to retry raise
        RuntimeError ("this AsyncClient was closed while the request was in
        flight"). Idempotent."""
        self._closed = True
        driver, self._driver = self._driver, None
        if driver is not None:
            driver.close()
        for waiter in list(self._waits):
            if not waiter.done():
                waiter.set_exception(RuntimeError(_CLOSED_IN_FLIGHT))

    def __del__(self) -> None:
        # The loop's reader keeps the driver (and its connections) alive, so
        # an unclosed client would live as long as its loop: close it, and
        # say so, as aiohttp does for an unclosed session.
        driver = getattr(self, "_driver", None)
        if driver is None or driver.closed:
            return
        loop = driver.loop
        try:
            if loop.is_running() and threading.get_ident() != self._driver_thread:
                loop.call_soon_threadsafe(driver.close)  # the loop's thread closes it
            else:  # this thread's loop, or a stopped or closed one: nothing runs it
                driver.close()
        except RuntimeError:  # the loop closed meanwhile: close it here
            driver.close()
        # Closed first: a filter turning the warning into an error must not
        # keep the connections open.
        warnings.warn(f"unclosed {self!r}: use 'async with' or 'await client.aclose()'",
                      ResourceWarning, stacklevel=2)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    # The method helpers return a coroutine themselves (no extra frame): _bare's
    # without keywords, request()'s otherwise.
    async def request(
        self,
        method: str,
        url: str,
        *,
        params: ParamsInput = None,
        data: Union[bytes, bytearray, memoryview, str, None] = None,
        json: Any = None,
        headers: HeadersInput = None,
        idempotency_key: Union[str, bool, None] = None,
        attempts: Any = _UNSET,
        timeout: Any = _UNSET,
        deadline: Any = _UNSET,
        backoff: Any = _UNSET,
        base_delay: Any = _UNSET,
        max_delay: Any = _UNSET,
        retry_after_max: Any = _UNSET,
        retry_on: Any = _UNSET,
        multiplier: Any = _UNSET,
        jitter: Any = _UNSET,
        jitter_fraction: Any = _UNSET,
        follow_redirects: Optional[bool] = None,
        max_redirects: Optional[int] = None,
        strict: Optional[bool] = None,
        on_retry: Optional[_HttpRetryHook] = None,
        raise_on_give_up: bool = False,
        fallback: Any = _UNSET,
        hedge: Any = _UNSET,
    ) -> Response:
        """Sends one logical request; see :meth:`mulligan.Client.request`.

        Cancelling the task removes the transfer in flight (or ends the wait)
        at once. ``hedge`` (0.6) replaces the client's hedging for this
        request: None or False, not hedged; otherwise as the client's.
        """
        hedging = self._hedging if hedge is _UNSET else hedging_policy(self._OWNER, hedge)
        args = self._request_args(
            method, url, params, data, json, headers, idempotency_key,
            (attempts, timeout, deadline, backoff, base_delay, max_delay, retry_after_max, retry_on,
             multiplier, jitter, jitter_fraction),
            follow_redirects, max_redirects, strict, on_retry,
        )
        if hedging is not None and replay_safe(args[0], args[2], args[4]):
            return await self._hedged(hedging, args, raise_on_give_up, fallback)
        return await self._call(*args, raise_on_give_up, fallback)

    async def _hedged(
        self, hedging: Any, args: Any, raise_on_give_up: bool, fallback: Any
    ) -> Response:
        """Runs one hedged request (hedged.run_hedged) and ends it as _call
        ends a call: the response, the give-up report, or the fallback."""
        method, url = args[0], args[1]
        try:
            raw, winner = await run_hedged(self, hedging, args[:9], fallback is not _UNSET, _testing())
        except (TransportError, CircuitOpenError) as exc:
            return self._fall_back(method, url, exc, fallback)  # type: ignore[no-any-return]
        result = self._finish(raw, method, url, raise_on_give_up, fallback)
        if isinstance(result, Response):
            result.hedge_winner = winner
        return result  # type: ignore[no-any-return]

    async def _wait(self, loop: asyncio.AbstractEventLoop, delay: float) -> None:
        """Waits `delay` seconds before a retry, as asyncio.sleep does, but
        ends at once with RuntimeError when the client is closed meanwhile.
        On mulligan.testing's FakeClock the clock advances instead, and the
        wait only yields to the loop once."""
        clock = STATE.clock
        if clock is not None and delay > 0:
            clock.sleep(delay)
            delay = 0.0
        waiter = loop.create_future()
        timer = loop.call_later(delay, _resolve, waiter)
        self._waits.add(waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waits.discard(waiter)

    def _bare(self, method: str, url: str) -> Coroutine[Any, Any, Response]:
        """``request(method, url)`` with every keyword at its default, as one
        coroutine frame without request()'s argument handling: the hot path
        of ``await client.get(url)``. Same checks, results, logs and errors
        (the URL is checked when awaited, as request() does)."""
        if type(self).request is not _PLAIN_REQUEST or self._hedging is not None:
            # a subclass's or a mock's request(), or a hedging client
            return self.request(method, url)
        return self._call(
            method, url, self._default_headers, b"", None, self._default_policy,
            None, None, None, self._on_retry, False, _UNSET, check_url=True,
        )

    async def _call(
        self,
        method: str,
        url: str,
        pairs: list[tuple[str, bytes]],
        body: bytes,
        key: Optional[str],
        policy: Any,
        follow_redirects: Optional[bool],
        max_redirects: Optional[int],
        strict: Optional[bool],
        hook: Optional[_HttpRetryHook],
        raise_on_give_up: bool,
        fallback: Any,
        check_url: bool = False,
        trace: Optional[_tracing.CallTrace] = None,
    ) -> Response:
        """Runs one prepared call: attempts on the driver, waits between them
        with asyncio.sleep, the give-up report and the fallback; in its spans
        while tracing is on (``trace``: ``_telemetry.tracing``)."""
        if _tracing.SWITCH.tracer is not None and trace is None:
            trace = _tracing.http_call(method, url)
            if trace is not None:
                return await trace.run_async(  # type: ignore[no-any-return]
                    self._call, method, url, pairs, body, key, policy,
                    follow_redirects, max_redirects, strict, hook, raise_on_give_up, fallback,
                    check_url, trace,
                )
        if check_url:  # the short path: request() checked both already
            if self._closed:
                raise RuntimeError("this client is closed")
            _check_url(url)
        driver = self._get_driver()
        loop = driver.loop
        cap, no_wait, clock = _testing()
        try:
            fut = loop.create_future()
            if trace is not None:
                trace.start_attempt()
                pairs = trace.header_pairs(pairs)  # the first attempt's span context
            call: Optional[int] = driver.begin(
                fut, method, url, pairs, body, key, policy, follow_redirects, max_redirects, strict,
                fallback is not _UNSET, cap, no_wait, clock, self._breaker_key(method, url),
            )
            try:
                while True:
                    # None: the call is over; otherwise the retry's
                    # (attempt, delay, kind, status, from_retry_after).
                    info = await fut
                    if info is None:
                        break
                    if info[0] == 0:
                        # An admission wait (bulkhead queue, rate limiter
                        # slot): no attempt failed, no retry to report.
                        await self._wait(loop, info[1])
                        fut = loop.create_future()
                        driver.start(call, fut)
                        continue
                    if trace is not None:
                        trace.http_retry(info)
                    result = _report_retry(info, method, url, hook)
                    if inspect.isawaitable(result):
                        await result
                    await self._wait(loop, info[1])
                    fut = loop.create_future()
                    if trace is not None:
                        trace.start_attempt()
                        for name, value in trace.carrier().items():  # this attempt's context
                            driver.set_header(call, name, value)
                    driver.start(call, fut)
                done, call = call, None
                raw = driver.finish(done)
            except BaseException as left:
                if call is not None:
                    if _never_retried(left):
                        # The awaiting task was cancelled (or Ctrl-C): counted
                        # cancelled, never a failure (DESIGN.md), breaker and
                        # budget not charged.
                        driver.cancel_copy(call)
                    else:  # a hook raised or the client closed: abandoned, failed
                        driver.cancel(call)
                raise
        except (TransportError, CircuitOpenError) as exc:
            if trace is not None:
                trace.http_error(exc)
            return self._fall_back(method, url, exc, fallback)  # type: ignore[no-any-return]
        if trace is not None:
            trace.http_response(raw[0], raw[6], raw[2])
        return self._finish(raw, method, url, raise_on_give_up, fallback)  # type: ignore[no-any-return]

    def get(self, url: str, **kwargs: Any) -> Coroutine[Any, Any, Response]:
        """Sends a GET; see :meth:`request`."""
        return self.request("GET", url, **kwargs) if kwargs else self._bare("GET", url)

    def head(self, url: str, **kwargs: Any) -> Coroutine[Any, Any, Response]:
        """Sends a HEAD; see :meth:`request`."""
        return self.request("HEAD", url, **kwargs) if kwargs else self._bare("HEAD", url)

    def options(self, url: str, **kwargs: Any) -> Coroutine[Any, Any, Response]:
        """Sends an OPTIONS; see :meth:`request`."""
        return self.request("OPTIONS", url, **kwargs) if kwargs else self._bare("OPTIONS", url)

    def post(self, url: str, **kwargs: Any) -> Coroutine[Any, Any, Response]:
        """Sends a POST (retried only with an idempotency key); see :meth:`request`."""
        return self.request("POST", url, **kwargs) if kwargs else self._bare("POST", url)

    def put(self, url: str, **kwargs: Any) -> Coroutine[Any, Any, Response]:
        """Sends a PUT; see :meth:`request`."""
        return self.request("PUT", url, **kwargs) if kwargs else self._bare("PUT", url)

    def patch(self, url: str, **kwargs: Any) -> Coroutine[Any, Any, Response]:
        """Sends a PATCH (retried only with an idempotency key); see :meth:`request`."""
        return self.request("PATCH", url, **kwargs) if kwargs else self._bare("PATCH", url)

    def delete(self, url: str, **kwargs: Any) -> Coroutine[Any, Any, Response]:
        """Sends a DELETE; see :meth:`request`."""
        return self.request("DELETE", url, **kwargs) if kwargs else self._bare("DELETE", url)


# The short path (_bare) is taken only while request() is this one, so that a
# subclass overriding request() (or a test patching it) still sees every call.
_PLAIN_REQUEST = AsyncClient.request
