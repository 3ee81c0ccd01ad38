"""ASGI idempotency middleware (Starlette, FastAPI, any ASGI 3 app).

Example::

    from fastapi import FastAPI
    import mulligan

    store = mulligan.IdempotencyStore()
    app = FastAPI()
    app.add_middleware(mulligan.IdempotencyMiddleware, store=store, paths="/orders")

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Iterable, MutableMapping
from typing import Any, Callable, Optional, Union

from .._errors import IdempotencyStoreFull, StateBackendUnavailable
from .problems import (
    _answer,
    _complete_or_keep,
    _malformed_key,
    _missing_key,
    _release_quietly,
    _state_unavailable,
    _storable_headers,
    _store_full,
)
from .rules import PathRule, _Rules
from .store import IdempotencyStore, parse_idempotency_key, request_fingerprint

__all__ = ["IdempotencyMiddleware"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class IdempotencyMiddleware:
    """Runs each keyed unsafe request once; replays, 409s and 422s the repeats.

    For a request whose method and path match, the middleware reads the
    ``Idempotency-Key`` header (see :func:`mulligan.parse_idempotency_key`),
    buffers the body, fingerprints method, path, query and body (SHA-256), and
    asks the store: the first request runs the app and its response is stored
    (statuses 408, 429 and 5xx are not stored: the key is released so that the
    client's retry runs again); a repeat gets the stored response with
    ``Idempotent-Replayed: true``; a repeat while the first runs gets 409 with
    Retry-After; another request under the same key gets 422; a missing key on
    a ``required`` route or a malformed key gets 400. The app raising releases
    the key. Every error answer is RFC 9457 ``application/problem+json``.

    Responses are buffered in memory to be stored (the client still receives
    them as the app streams them).

    A store with a shared ``state=`` (Redis) blocks for a round trip (up to
    the state's ``timeout``) on every reserve, complete and release: those
    calls run in the event loop's default executor (``loop.run_in_executor``,
    added in 0.6), so the loop keeps serving other requests while Redis is
    slow. The in-memory store is called inline (a few microseconds, where a
    thread hop would cost more than the call). This needs an asyncio event
    loop (uvicorn, hypercorn's asyncio worker); a key reserved by a request
    cancelled while waiting for Redis is released as soon as the reserve
    returns.

    Args:
        app: the ASGI application.
        store: the :class:`mulligan.IdempotencyStore`.
        methods: methods handled. Default ``("POST", "PATCH")``.
        paths: None for all paths (default), a path prefix, a sequence of
            prefixes, or a predicate on the path.
        required: True when a matching request must carry a key (400
            otherwise), or a predicate ``(method, path) -> bool``. Default
            False: requests without a key pass through untouched.
        scope: a function of the ASGI scope returning the principal (e.g.
            the authenticated user), so one user's key never replays another
            user's response. Default: one shared scope.
        store_status: a predicate on the status saying whether a response is
            stored. Default: every status except 408, 429 and 5xx.

    .. versionadded:: 0.1.0
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        store: IdempotencyStore,
        methods: Iterable[str] = ("POST", "PATCH"),
        paths: PathRule = None,
        required: Union[bool, Callable[[str, str], bool]] = False,
        scope: Optional[Callable[[Scope], str]] = None,
        store_status: Optional[Callable[[int], bool]] = None,
    ) -> None:
        self.app = app
        self._rules = _Rules(store, methods, paths, required, scope, store_status)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        rules = self._rules
        if scope["type"] != "http" or not rules.applies(scope["method"], scope["path"]):
            await self.app(scope, receive, send)
            return
        method: str = scope["method"]
        path: str = scope["path"]
        raw: Optional[bytes] = None
        for name, value in scope["headers"]:
            if name == b"idempotency-key":
                if raw is not None:
                    await _send(send, _malformed_key("Idempotency-Key must be sent once."))
                    return
                raw = value
        if raw is None:
            if rules.required(method, path):
                await _send(send, _missing_key())
                return
            await self.app(scope, receive, send)
            return
        store = rules.store
        try:
            key = _parse(raw, store.max_key_length)
        except ValueError as e:
            await _send(send, _malformed_key(str(e)))
            return

        # The fingerprint needs the whole body before the app runs.
        body = await _read_body(receive)
        if body is None:
            return  # the client went away
        query: bytes = scope.get("query_string", b"")
        target = path + "?" + query.decode("latin-1") if query else path
        fingerprint = request_fingerprint(method, target, body)
        principal = rules.scope(scope) if rules.scope is not None else ""
        try:
            if store._shared:
                reservation = await _reserve_off_loop(store, key, fingerprint, principal)
            else:
                reservation = store.reserve(key, fingerprint, scope=principal)
        except StateBackendUnavailable:
            await _send(send, _state_unavailable())
            return
        except IdempotencyStoreFull as e:
            await _send(send, _store_full(str(e)))
            return
        if reservation.state != "reserved":
            await _send(send, _answer(reservation))
            return
        await self._run_once(scope, receive, send, body, reservation)

    async def _run_once(
        self, scope: Scope, receive: Receive, send: Send, body: bytes, reservation: Any
    ) -> None:
        """Runs the app for a reserved key, passing its response through to the
        client and storing it (or releasing the key) when it is complete."""
        store = self._rules.store
        store_status = self._rules.store_status
        replayed_body = False
        shared = store._shared

        async def replay_receive() -> Message:
            nonlocal replayed_body
            if not replayed_body:
                replayed_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        status = 0
        headers: list[tuple[bytes, bytes]] = []
        parts: list[bytes] = []
        settled = False

        async def capture(message: Message) -> None:
            nonlocal status, headers, settled
            kind = message["type"]
            if kind == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", ()))
            elif kind == "http.response.body" and not settled:
                parts.append(message.get("body", b""))
                if not message.get("more_body", False):
                    # Settled before the last bytes leave: a retry that races
                    # the end of this response must find it stored.
                    settled = True
                    if shared:
                        await _off_loop(_settle, store, reservation, store_status, status,
                                        headers, parts)
                    else:
                        _settle(store, reservation, store_status, status, headers, parts)
            await send(message)

        try:
            await self.app(scope, replay_receive, capture)
        except BaseException:
            if not settled:
                settled = True
                if shared:
                    # Not awaited: the task may be cancelled; the release
                    # still runs on the executor.
                    asyncio.get_running_loop().run_in_executor(
                        None, _release_quietly, store, reservation)
                else:
                    _release_quietly(store, reservation)
            raise
        if not settled:  # the app returned without a complete response
            if shared:
                await _off_loop(_release_quietly, store, reservation)
            else:
                _release_quietly(store, reservation)


async def _off_loop(fn: Callable[..., Any], *args: Any) -> Any:
    """Runs a blocking store call in the loop's default executor."""
    return await asyncio.get_running_loop().run_in_executor(None, functools.partial(fn, *args))


async def _reserve_off_loop(
    store: IdempotencyStore, key: str, fingerprint: bytes, principal: str
) -> Any:
    """store.reserve in the executor. If the request is cancelled while the
    reserve runs, the thread goes on; a key it reserved is then released
    (in the executor), so it is not held in flight until its lease ends."""
    loop = asyncio.get_running_loop()
    fut = loop.run_in_executor(
        None, functools.partial(store.reserve, key, fingerprint, scope=principal))
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        def release_late(done: "asyncio.Future[Any]") -> None:
            if done.cancelled() or done.exception() is not None:
                return
            if done.result().state == "reserved":
                loop.run_in_executor(None, _release_quietly, store, done.result())

        fut.add_done_callback(release_late)
        raise


async def _read_body(receive: Receive) -> Optional[bytes]:
    """The whole request body, or None when the client disconnected first."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _parse(raw: bytes, max_length: int) -> str:
    return parse_idempotency_key(raw.decode("latin-1"), max_length=max_length)


def _settle(
    store: IdempotencyStore,
    reservation: Any,
    store_status: Callable[[int], bool],
    status: int,
    headers: list[tuple[bytes, bytes]],
    parts: list[bytes],
) -> None:
    if store_status(status):
        try:
            _complete_or_keep(
                store, reservation, status, _storable_headers(headers), b"".join(parts)
            )
        except (IdempotencyStoreFull, ValueError):
            # Too big for the store (the key was released), the lease ran out
            # and another request took the key over, or the store refused the
            # response (a status or header it cannot replay, with the lease
            # still held): the response still goes to this client; only the
            # replay is lost. Free the key so that it is not blocked with 409s
            # until the lease expires (a taken-over lease refuses this too).
            _release_quietly(store, reservation)
    else:
        _release_quietly(store, reservation)


async def _send(send: Send, response: tuple[int, list[tuple[bytes, bytes]], bytes]) -> None:
    status, headers, body = response
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
