"""WSGI idempotency middleware (Flask, Django, any PEP 3333 app).

Example::

    from flask import Flask
    import mulligan

    store = mulligan.IdempotencyStore()
    app = Flask(__name__)
    app.wsgi_app = mulligan.WSGIIdempotencyMiddleware(app.wsgi_app, store=store)

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import io
from http import HTTPStatus
from collections.abc import Iterable
from types import TracebackType
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

__all__ = ["WSGIIdempotencyMiddleware"]

Environ = dict[str, Any]
ExcInfo = tuple[type[BaseException], BaseException, Optional[TracebackType]]
StartResponse = Callable[..., Callable[[bytes], Any]]
WSGIApp = Callable[[Environ, StartResponse], Iterable[bytes]]

_REASONS = {
    200: "OK",
    400: "Bad Request",
    409: "Conflict",
    422: "Unprocessable Content",
    503: "Service Unavailable",
}


class WSGIIdempotencyMiddleware:
    """The WSGI twin of :class:`mulligan.IdempotencyMiddleware`: same rules,
    same answers, same arguments, except that ``scope`` receives the WSGI
    ``environ``.

    The app's response is collected in full (its iterable is consumed and
    closed) before it is stored and sent, so that a retry never finds a
    half-sent response; streaming responses are therefore buffered.

    .. versionadded:: 0.1.0
    """

    def __init__(
        self,
        app: WSGIApp,
        *,
        store: IdempotencyStore,
        methods: Iterable[str] = ("POST", "PATCH"),
        paths: PathRule = None,
        required: Union[bool, Callable[[str, str], bool]] = False,
        scope: Optional[Callable[[Environ], str]] = None,
        store_status: Optional[Callable[[int], bool]] = None,
    ) -> None:
        self.app = app
        self._rules = _Rules(store, methods, paths, required, scope, store_status)

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        rules = self._rules
        method: str = environ.get("REQUEST_METHOD", "GET")
        path: str = environ.get("PATH_INFO", "") or "/"
        if not rules.applies(method, path):
            return self.app(environ, start_response)
        raw: Optional[str] = environ.get("HTTP_IDEMPOTENCY_KEY")
        if raw is None:
            if rules.required(method, path):
                return _respond(start_response, _missing_key())
            return self.app(environ, start_response)
        store = rules.store
        try:
            key = parse_idempotency_key(raw, max_length=store.max_key_length)
        except ValueError as e:
            return _respond(start_response, _malformed_key(str(e)))

        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        stream = environ.get("wsgi.input")
        body = stream.read(length) if stream is not None and length > 0 else b""
        environ["wsgi.input"] = io.BytesIO(body)
        query: str = environ.get("QUERY_STRING", "")
        target = path + "?" + query if query else path
        fingerprint = request_fingerprint(method, target, body)
        principal = rules.scope(environ) if rules.scope is not None else ""
        try:
            reservation = store.reserve(key, fingerprint, scope=principal)
        except StateBackendUnavailable:
            return _respond(start_response, _state_unavailable())
        except IdempotencyStoreFull as e:
            return _respond(start_response, _store_full(str(e)))
        if reservation.state != "reserved":
            status, headers, out = _answer(reservation)
            return _respond(start_response, (status, headers, out))

        return self._run_once(environ, start_response, reservation)

    def _run_once(
        self, environ: Environ, start_response: StartResponse, reservation: Any
    ) -> list[bytes]:
        """Runs the app for a reserved key, collects its whole response, stores
        it (or releases the key) and sends it."""
        store = self._rules.store
        captured: dict[str, Any] = {}
        parts: list[bytes] = []

        def capture(
            status: str, headers: list[tuple[str, str]], exc_info: Optional[ExcInfo] = None
        ) -> Callable[[bytes], Any]:
            captured["status"] = status
            captured["headers"] = headers
            return parts.append

        try:
            result = self.app(environ, capture)
            try:
                parts.extend(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        except BaseException:
            _release_quietly(store, reservation)
            raise
        if "status" not in captured:
            _release_quietly(store, reservation)
            raise RuntimeError("the WSGI application returned without calling start_response")
        status_line: str = captured["status"]
        str_headers: list[tuple[str, str]] = captured["headers"]
        out = b"".join(parts)
        _settle(store, reservation, self._rules.store_status, status_line, str_headers, out)
        start_response(status_line, str_headers)
        return [out]


def _settle(
    store: IdempotencyStore,
    reservation: Any,
    store_status: Callable[[int], bool],
    status_line: str,
    str_headers: list[tuple[str, str]],
    out: bytes,
) -> None:
    """Stores a complete response, or releases the key (see asgi._settle)."""
    code = int(status_line.split(" ", 1)[0])
    if not store_status(code):
        _release_quietly(store, reservation)
        return
    try:
        _complete_or_keep(
            store,
            reservation,
            code,
            _storable_headers((n.encode("latin-1"), v.encode("latin-1")) for n, v in str_headers),
            out,
        )
    except (IdempotencyStoreFull, ValueError):
        # Not stored (see asgi._settle); the client still gets it, and
        # the key is freed rather than blocked until the lease expires.
        _release_quietly(store, reservation)


def _respond(
    start_response: StartResponse, response: tuple[int, list[tuple[bytes, bytes]], bytes]
) -> list[bytes]:
    status, headers, body = response
    reason = _REASONS.get(status)
    if reason is None:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Unknown"
    start_response(
        f"{status} {reason}",
        [(n.decode("latin-1"), v.decode("latin-1")) for n, v in headers],
    )
    return [body]

