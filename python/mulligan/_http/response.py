"""The final response of an HTTP call: :class:`Response`.

Built from the native call's one tuple by :func:`_response_from` without
further calls into C++; the header block is split only when
:attr:`Response.headers` is first read (most responses are never looked into).

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import codecs
import json as _json
from typing import Any, Optional

from .._errors import HTTPStatusError
from .._redact import redact_url
from .._text import fold
from .headers import Headers, _split_header_block

__all__ = ["Response"]


def _charset(content_type: Optional[str]) -> str:
    if content_type:
        for param in content_type.split(";")[1:]:
            key, _, value = param.partition("=")
            if fold(key.strip()) == "charset":
                value = value.strip().strip('"').strip()
                try:
                    return codecs.lookup(value).name
                except LookupError:
                    break
    return "utf-8"


class Response:
    """The final response of an HTTP call, after any retries.

    Attributes:
        status_code: the HTTP status of the last attempt.
        headers: the last attempt's header fields (:class:`Headers`).
        content: the body, as bytes.
        attempts: attempts made (1 when the first succeeded).
        elapsed: seconds from the start of the first attempt to the end of the last.
        url: the URL of the final response, as sent: credentials in it
            (``user:password@``, an ``api_key=``) are kept, for code that
            uses it again. Messages mulligan builds show it through
            :func:`mulligan.redact_url`; do the same to log it.
        idempotency_key: the Idempotency-Key sent with every attempt, or None.
        stop_reason: why the retries stopped: ``"succeeded"``, ``"terminal"``
            (a non-retryable status such as 404), ``"attempts_exhausted"``,
            ``"deadline"``, ``"retry_after_too_long"`` or ``"not_replay_safe"``.
        hedge_winner: for a hedged request (``AsyncClient(hedge=...)``), the
            number of the copy whose response this is when it won (1: the
            first copy, 2: the first hedge...); 0 when the request was not
            hedged or no copy won: every copy failed, or a terminal answer
            (a 404) ended the hedged call, as gRPC A6's fatal statuses do.
            ``attempts`` counts the copies started. (Added in 0.6.)

    .. versionadded:: 0.1.0
    """

    __slots__ = (
        "_headers",
        "_raw",
        "attempts",
        "content",
        "elapsed",
        "hedge_winner",
        "idempotency_key",
        "status_code",
        "stop_reason",
        "url",
    )

    def __init__(
        self,
        status_code: int,
        headers: Headers,
        content: bytes,
        *,
        attempts: int = 1,
        elapsed: float = 0.0,
        url: str = "",
        idempotency_key: Optional[str] = None,
        stop_reason: str = "succeeded",
    ) -> None:
        self.status_code = status_code
        self._headers: Optional[Headers] = headers
        self._raw: Any = None
        self.content = content
        self.attempts = attempts
        self.elapsed = elapsed
        self.url = url
        self.idempotency_key = idempotency_key
        self.stop_reason = stop_reason
        self.hedge_winner = 0

    @property
    def headers(self) -> Headers:
        """The last attempt's header fields (:class:`Headers`)."""
        headers = self._headers
        if headers is None:
            # Split from the native header block on first use.
            headers = self._headers = Headers(_split_header_block(self._raw))
            self._raw = None
        return headers

    @headers.setter
    def headers(self, value: Headers) -> None:
        self._headers = value
        self._raw = None

    @property
    def ok(self) -> bool:
        """True when the status is below 400."""
        return self.status_code < 400

    @property
    def encoding(self) -> str:
        """The charset of Content-Type (normalised), default ``"utf-8"``."""
        return _charset(self.headers.get("content-type"))

    @property
    def text(self) -> str:
        """The body decoded with :attr:`encoding`; undecodable bytes become U+FFFD."""
        return self.content.decode(self.encoding, errors="replace")

    def json(self, **kwargs: Any) -> Any:
        """Returns the body parsed as JSON (``json.loads``; raises its errors)."""
        return _json.loads(self.content, **kwargs)

    def raise_for_status(self) -> None:
        """Raises :class:`mulligan.HTTPStatusError` when the status is 4xx or 5xx."""
        if self.status_code >= 400:
            kind = "client error" if self.status_code < 500 else "server error"
            raise HTTPStatusError(
                f"{self.status_code} {kind} for {redact_url(self.url)} after {self.attempts} "
                f"attempt{'s' if self.attempts != 1 else ''}",
                response=self,
            )

    def __repr__(self) -> str:
        return f"<Response [{self.status_code}] attempts={self.attempts}>"


def _response_from(raw: tuple[Any, ...]) -> Response:
    # The native call's one tuple: the scalars, the body, the header block
    # (split only when Response.headers is read) and whether the request's
    # fallback answers it (read by the clients, not kept).
    r = Response.__new__(Response)
    (
        r.status_code,
        r.content,
        r.attempts,
        r.elapsed,
        r.url,
        r.idempotency_key,
        r.stop_reason,
        r._raw,
        _,
    ) = raw
    r._headers = None
    r.hedge_winner = 0
    return r
