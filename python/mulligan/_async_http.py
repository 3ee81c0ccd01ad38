"""``mulligan.AsyncClient``: the resilient HTTP client for asyncio.

The event loop drives libcurl's multi interface (through the core's
``HttpAsyncEngine``): the loop watches the sockets libcurl asks for
(``loop.add_reader`` / ``add_writer``) and its timer (``loop.call_later``),
so many requests are in flight on one thread and no thread is started per
request. The engine decides, the caller acts: when an attempt fails and the
policy says retry, the coroutine waits with ``asyncio.sleep`` (so
cancellation works at any point) and starts the next attempt. Method rules,
Retry-After, deadlines, breakers and errors are the sync client's.

.. versionadded:: 0.2.0
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Coroutine
from typing import Any, Optional, Union

from . import _core, _metrics
from ._errors import CircuitOpenError, RetriesExhausted, TransportError
from ._http import (
    HeadersInput,
    ParamsInput,
    Response,
    RetryEvent,
    _HttpRetryHook,
    _UNSET,
    _GAVE_UP_REASONS,
    _ClientBase,
    _call_fallback,
    _log_give_up,
    _log_retry,
    _merge_named,
    _origin_label,
    _response_from,
)

__all__ = ["AsyncClient"]

_READ = 1
_WRITE = 2


class _LoopDriver:
    """Connects one HttpAsyncEngine to one event loop.

    Readers are dropped lazily: libcurl stops watching a kept-alive socket
    after every transfer and watches it again for the next one, so the reader
    stays registered until the socket is closed (the engine reports it,
    events -1) or it becomes readable while libcurl does not want it (the
    server closed the idle connection). That saves two epoll_ctl calls and a
    Handle per request. Writers, almost always ready, are dropped at once.
    """

    __slots__ = ("engine", "loop", "readers", "soon", "timer", "waiters", "wanted", "writers")

    def __init__(self, loop: asyncio.AbstractEventLoop, engine: Any) -> None:
        self.loop = loop
        self.engine = engine
        self.wanted: dict[int, int] = {}  # what libcurl watches
        self.readers: set[int] = set()  # fds with a reader on the loop
        self.writers: set[int] = set()
        self.timer: Optional[asyncio.TimerHandle] = None
        self.soon: Optional[asyncio.Handle] = None
        self.waiters: dict[int, asyncio.Future[Any]] = {}

    def apply(self, changed: tuple[list[tuple[int, int]], Optional[int], list[Any]]) -> None:
        changes, timer, events = changed
        if changes:
            loop = self.loop
            wanted = self.wanted
            readers = self.readers
            writers = self.writers
            for fd, ev in changes:
                if ev < 0:  # closed by libcurl: the number may come back
                    wanted.pop(fd, None)
                    if fd in writers:
                        writers.discard(fd)
                        loop.remove_writer(fd)
                    if fd in readers:
                        readers.discard(fd)
                        loop.remove_reader(fd)
                    continue
                wanted[fd] = ev
                if ev & _READ and fd not in readers:
                    readers.add(fd)
                    loop.add_reader(fd, self.on_readable, fd)
                if ev & _WRITE:
                    if fd not in writers:
                        writers.add(fd)
                        loop.add_writer(fd, self.on_writable, fd)
                elif fd in writers:
                    writers.discard(fd)
                    loop.remove_writer(fd)
        if timer is not None:
            # Timers are coalesced: firing early is harmless, since every
            # socket_action(-1) re-arms the timer with libcurl's deadline.
            # "Now" (after each new transfer) shares one call_soon; a later
            # deadline keeps a pending timer that fires no later than it.
            if timer == 0:
                if self.soon is None:
                    self.soon = self.loop.call_soon(self.on_soon)
            elif timer > 0:
                when = self.loop.time() + timer / 1000.0
                pending = self.timer
                if pending is None or pending.when() > when + 0.001:
                    if pending is not None:
                        pending.cancel()
                    self.timer = self.loop.call_at(when, self.on_timer)
        for event in events:
            fut = self.waiters.pop(event[0], None)
            if fut is not None and not fut.done():
                fut.set_result(event)

    def on_readable(self, fd: int) -> None:
        if not self.wanted.get(fd, 0) & _READ:
            # An idle socket libcurl does not watch became readable (the
            # peer closed it): stop watching; libcurl notices at next use.
            self.readers.discard(fd)
            self.loop.remove_reader(fd)
            return
        self.apply(self.engine.socket_action(fd, _READ))

    def on_writable(self, fd: int) -> None:
        self.apply(self.engine.socket_action(fd, _WRITE))

    def on_timer(self) -> None:
        self.timer = None
        self.apply(self.engine.socket_action(-1, 0))

    def on_soon(self) -> None:
        self.soon = None
        self.apply(self.engine.socket_action(-1, 0))

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.soon is not None:
            self.soon.cancel()
            self.soon = None
        for fd in self.readers:
            self.loop.remove_reader(fd)
        for fd in self.writers:
            self.loop.remove_writer(fd)
        self.readers.clear()
        self.writers.clear()
        self.wanted.clear()


class AsyncClient(_ClientBase):
    """A resilient asyncio HTTP client on libcurl's multi interface.

    Takes the same arguments as :class:`mulligan.Client`. One client belongs
    to one event loop (the loop of its first request); use ``async with`` or
    ``await client.aclose()`` to release its connections. ``on_retry`` may be
    a plain function or a coroutine function (awaited before the wait).

    .. versionadded:: 0.2.0
    """

    def __init__(self, *, policy: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(**_merge_named(policy, kwargs))
        self._driver: Optional[_LoopDriver] = None

    def _get_driver(self) -> _LoopDriver:
        loop = asyncio.get_running_loop()
        driver = self._driver
        if driver is None:
            if self._closed:
                raise RuntimeError("this client is closed")
            driver = _LoopDriver(loop, _core.HttpAsyncEngine(**self._native_args))
            self._driver = driver
        elif driver.loop is not loop:
            raise RuntimeError("this AsyncClient is bound to another event loop")
        return driver

    async def aclose(self) -> None:
        """Cancels nothing in flight by itself; closes the pool once idle. Idempotent."""
        self._closed = True
        driver, self._driver = self._driver, None
        if driver is not None:
            for fut in driver.waiters.values():
                if not fut.done():
                    fut.cancel()
            driver.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    # The method helpers return request()'s coroutine itself (no extra frame).
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
        follow_redirects: Optional[bool] = None,
        max_redirects: Optional[int] = None,
        strict: Optional[bool] = None,
        on_retry: Optional[_HttpRetryHook] = None,
        raise_on_give_up: bool = False,
        fallback: Any = _UNSET,
    ) -> Response:
        """Sends one logical request; see :meth:`mulligan.Client.request`.

        Cancelling the task removes the transfer in flight (or ends the wait)
        at once.
        """
        url, pairs, body, key = self._prepare(method, url, params, data, json, headers, idempotency_key)
        policy = self._request_policy(
            attempts, timeout, deadline, backoff, base_delay, max_delay, retry_after_max, retry_on
        )
        try:
            return await self._send(
                method, url, pairs, body, key, policy, follow_redirects, max_redirects, strict,
                on_retry, raise_on_give_up,
            )
        except (TransportError, CircuitOpenError, RetriesExhausted) as exc:
            if not isinstance(exc, RetriesExhausted):
                _log_give_up(method, url, getattr(exc, "attempts", 0),
                             getattr(exc, "stop_reason", None) or type(exc).__name__, str(exc))
            if fallback is _UNSET:
                raise
            _metrics._metrics_for(_origin_label(url)).fallback_used()
            return _call_fallback(fallback, exc)  # type: ignore[no-any-return]

    async def _send(
        self,
        method: str,
        url: str,
        pairs: Any,
        body: bytes,
        key: Optional[str],
        policy: Any,
        follow_redirects: Optional[bool],
        max_redirects: Optional[int],
        strict: Optional[bool],
        on_retry: Optional[_HttpRetryHook],
        raise_on_give_up: bool,
    ) -> Response:
        hook = on_retry if on_retry is not None else self._on_retry
        driver = self._get_driver()
        engine = driver.engine
        loop = driver.loop
        call: Optional[int] = engine.begin(
            method, url, pairs, body, key, policy, follow_redirects, max_redirects, strict
        )
        assert call is not None
        try:
            while True:
                fut = loop.create_future()
                driver.waiters[call] = fut
                driver.apply(engine.start(call))
                _, retry, info = await fut
                if not retry:
                    break
                event = RetryEvent(info[0], info[1], info[2], info[3], info[4], method, url)
                _log_retry(event)
                if hook is not None:
                    result = hook(event)
                    if inspect.isawaitable(result):
                        await result
                await asyncio.sleep(info[1])
            done, call = call, None
            raw = engine.finish(done)
        finally:
            if call is not None:
                driver.waiters.pop(call, None)
                if self._driver is driver:
                    driver.apply(engine.cancel(call))
        response = _response_from(raw)
        if response.stop_reason in _GAVE_UP_REASONS:
            _log_give_up(method, url, response.attempts, response.stop_reason,
                         f"last status {response.status_code}")
            if raise_on_give_up:
                raise self._gave_up(method, url, response)
        return response

    def get(self, url: str, **kwargs: Any) -> Coroutine[Any, Any, Response]:
        """Sends a GET; see :meth:`request`."""
        return self.request("GET", url, **kwargs)

    def head(self, url: str, **kwargs: Any) -> Coroutine[Any, Any, Response]:
        """Sends a HEAD; see :meth:`request`."""
        return self.request("HEAD", url, **kwargs)

    def options(self, url: str, **kwargs: Any) -> Coroutine[Any, Any, Response]:
        """Sends an OPTIONS; see :meth:`request`."""
        return self.request("OPTIONS", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> Coroutine[Any, Any, Response]:
        """Sends a POST (retried only with an idempotency key); see :meth:`request`."""
        return self.request("POST", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> Coroutine[Any, Any, Response]:
        """Sends a PUT; see :meth:`request`."""
        return self.request("PUT", url, **kwargs)

    def patch(self, url: str, **kwargs: Any) -> Coroutine[Any, Any, Response]:
        """Sends a PATCH (retried only with an idempotency key); see :meth:`request`."""
        return self.request("PATCH", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> Coroutine[Any, Any, Response]:
        """Sends a DELETE; see :meth:`request`."""
        return self.request("DELETE", url, **kwargs)
