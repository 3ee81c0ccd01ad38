"""The resilient HTTP client: ``mulligan.get``, ``mulligan.post``, ``mulligan.request``.

The retry loop runs in the C++ core on libcurl with the GIL released: the
method rules of RFC 9110 (POST and PATCH are retried only with an idempotency
key), Retry-After, per-attempt timeouts and the deadline all come from the
engine. This module validates input, builds policies and wraps the result in a
:class:`Response`.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import codecs
import dataclasses
import datetime
import functools
import json as _json
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Optional, Union

from . import _core, _metrics
from ._errors import CircuitOpenError, HTTPStatusError, RetriesExhausted, TransportError

__all__ = [
    "Client",
    "Headers",
    "Response",
    "RetryEvent",
    "delete",
    "get",
    "head",
    "new_idempotency_key",
    "options",
    "parse_retry_after",
    "patch",
    "post",
    "put",
    "request",
]

# A duration argument: seconds (int or float) or a datetime.timedelta.
_Seconds = Union[float, datetime.timedelta]
HeadersInput = Union[Mapping[str, str], Iterable[tuple[str, str]], None]

_USER_AGENT = "mulligan-python"
# Characters that would let a value smuggle another header or end the head.
_FORBIDDEN_IN_VALUE = ("\r", "\n", "\0")
# Framing fields the client sets itself (the core rejects them too); a
# caller's value would disagree with the body actually sent and leave the
# server waiting for bytes that never come.
_MANAGED_HEADERS = frozenset(("content-length", "transfer-encoding", "te", "upgrade"))
_MAX_ATTEMPTS = 2**31 - 1
_TOKEN_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def new_idempotency_key() -> str:
    """Returns a fresh idempotency key: a random (version 4) UUID, lower case.

    Drawn from the operating system's CSPRNG by the core.

    .. versionadded:: 0.1.0
    """
    return _core.new_idempotency_key()


def parse_retry_after(value: str, now: Optional[float] = None) -> Optional[float]:
    """Returns the delay in seconds a ``Retry-After`` value asks for.

    Accepts delay-seconds (``"120"``) and the three HTTP-date forms of RFC 9110
    section 5.6.7 (IMF-fixdate, RFC 850, asctime), always in GMT whatever the
    local time zone. A date in the past gives ``0.0``; a value too large for the
    clock gives ``math.inf``.

    Args:
        value: the header field value.
        now: the Unix time the response was received (``time.time()``);
            default: now.

    Returns:
        The delay in seconds, or None when the value is invalid (``"-5"``,
        ``"0.5"``, ``"1m0s"``, ``""``).

    .. versionadded:: 0.1.0
    """
    if not isinstance(value, str):
        raise TypeError(f"parse_retry_after: value must be a str, got {type(value).__name__}")
    return _core.parse_retry_after(value, time.time() if now is None else float(now))


class Headers(Mapping[str, str]):
    """A read-only, case-insensitive view of response header fields.

    ``headers["content-type"]`` and ``headers["Content-Type"]`` are the same.
    A field received several times reads as its values joined with ``", "``
    (RFC 9110 section 5.3); use :meth:`get_all` for the separate values (as
    ``Set-Cookie`` requires). Iteration yields each name once, in the case and
    order first received.
    """

    __slots__ = ("_fields", "_index_cache")

    def __init__(self, fields: Iterable[tuple[str, str]] = ()) -> None:
        self._fields: tuple[tuple[str, str], ...] = tuple(fields)
        # Built on first use: most responses are never looked into.
        self._index_cache: Optional[dict[str, tuple[str, list[str]]]] = None

    @property
    def _index(self) -> dict[str, tuple[str, list[str]]]:
        index = self._index_cache
        if index is None:
            index = {}
            for name, value in self._fields:
                entry = index.get(name.lower())
                if entry is None:
                    index[name.lower()] = (name, [value])
                else:
                    entry[1].append(value)
            self._index_cache = index
        return index

    def __getitem__(self, name: str) -> str:
        if not isinstance(name, str):
            raise KeyError(name)
        entry = self._index.get(name.lower())
        if entry is None:
            raise KeyError(name)
        return ", ".join(entry[1])

    def get_all(self, name: str) -> list[str]:
        """Returns every value of the field `name`, in order (empty if absent)."""
        entry = self._index.get(name.lower()) if isinstance(name, str) else None
        return list(entry[1]) if entry else []

    def items_raw(self) -> list[tuple[str, str]]:
        """Returns the fields exactly as received: (name, value) pairs in order."""
        return list(self._fields)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._index

    def __iter__(self) -> Iterator[str]:
        return (entry[0] for entry in self._index.values())

    def __len__(self) -> int:
        return len(self._index)

    def __repr__(self) -> str:
        return f"Headers({list(self._fields)!r})"


def _charset(content_type: Optional[str]) -> str:
    if content_type:
        for param in content_type.split(";")[1:]:
            key, _, value = param.partition("=")
            if key.strip().lower() == "charset":
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
        url: the URL of the final response.
        idempotency_key: the Idempotency-Key sent with every attempt, or None.
        stop_reason: why the retries stopped: ``"succeeded"``, ``"terminal"``
            (a non-retryable status such as 404), ``"attempts_exhausted"``,
            ``"deadline"``, ``"retry_after_too_long"`` or ``"not_replay_safe"``.

    .. versionadded:: 0.1.0
    """

    __slots__ = (
        "_headers",
        "_raw",
        "attempts",
        "content",
        "elapsed",
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
                f"{self.status_code} {kind} for {self.url} after {self.attempts} "
                f"attempt{'s' if self.attempts != 1 else ''}",
                response=self,
            )

    def __repr__(self) -> str:
        return f"<Response [{self.status_code}] attempts={self.attempts}>"


def _split_header_block(block: bytes) -> list[tuple[str, str]]:
    """The (name, value) fields of the engine's header block: ``name:value``
    lines, each ended by a line feed, decoded as ISO-8859-1 (as http.client
    does: nothing a server sends can fail to decode)."""
    fields = []
    for line in block.decode("latin-1").split("\n")[:-1]:
        name, _, value = line.partition(":")
        fields.append((name, value))
    return fields


@functools.lru_cache(maxsize=1024)
def _check_url_cached(url: str) -> str:
    return _check_url_uncached(url)


def _check_url(url: Any) -> str:
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, got {type(url).__name__}")
    # Valid URLs are remembered (a bad one raises and is not cached).
    return _check_url_cached(url)


def _check_url_uncached(url: Any) -> str:
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, got {type(url).__name__}")
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        raise ValueError(f"malformed URL {url!r}: contains whitespace or control characters")
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a non-numeric or out-of-range port
    except ValueError as exc:  # urllib's message does not name the URL
        raise ValueError(f"malformed URL {url!r}: {exc}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(f"malformed URL {url!r}: the scheme must be http or https")
    if not parts.hostname:
        raise ValueError(f"malformed URL {url!r}: no host")
    return url


def _checked_method(method: Any) -> str:
    """An HTTP method other than the common upper-case ones, upper-cased as
    requests and httpx do (``"get"`` sends GET). Raises TypeError for a
    non-str and ValueError for anything but a token (RFC 9110 section 9)."""
    if not isinstance(method, str):
        raise TypeError(f"method must be a str, got {type(method).__name__}")
    if not method or not all(c in _TOKEN_CHARS for c in method):
        raise ValueError(f"invalid HTTP method {method!r}")
    return method.upper()


def _check_switches(
    follow_redirects: Optional[bool], max_redirects: Optional[int], strict: Optional[bool]
) -> None:
    """Checks a request's follow_redirects / max_redirects / strict overrides
    (None: the client's setting); TypeError for a wrong type, ValueError for
    max_redirects outside [0, 1000]."""
    for name, value in (("follow_redirects", follow_redirects), ("strict", strict)):
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool or None, got {value!r}")
    if max_redirects is not None:
        if isinstance(max_redirects, bool) or not isinstance(max_redirects, int):
            raise TypeError(f"max_redirects must be an int or None, got {max_redirects!r}")
        if not 0 <= max_redirects <= 1000:
            raise ValueError(f"max_redirects must be in [0, 1000], got {max_redirects}")


def _check_headers(headers: HeadersInput) -> list[tuple[str, bytes]]:
    if headers is None:
        return []
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    out: list[tuple[str, bytes]] = []
    for pair in pairs:
        try:
            name, value = pair
        except (TypeError, ValueError):
            raise TypeError(f"headers must be a mapping or (name, value) pairs, got {pair!r}") from None
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(
                f"header names and values must be str, got {type(name).__name__}: "
                f"{type(value).__name__} for {name!r}"
            )
        if not name or not all(c in _TOKEN_CHARS for c in name):
            raise ValueError(f"invalid header name {name!r}")
        if name.lower() in _MANAGED_HEADERS:
            raise ValueError(
                f"header {name!r} is managed by the client and must not be set "
                "(Content-Length, Transfer-Encoding, TE and Upgrade are not accepted)"
            )
        if any(c in value for c in _FORBIDDEN_IN_VALUE):
            raise ValueError(f"invalid header value for {name!r}: contains CR, LF or NUL")
        try:
            encoded = value.encode("latin-1")
        except UnicodeEncodeError:
            raise ValueError(
                f"header value for {name!r} is not ISO-8859-1 text; encode it first"
            ) from None
        out.append((name, encoded))
    return out


def _seconds(
    name: str, value: Any, *, optional: bool = False, positive: bool = False
) -> Optional[float]:
    """A duration argument as float seconds: an int, a float or a
    datetime.timedelta. With ``positive``, 0 and below raise ValueError
    naming the argument as the caller spelled it."""
    if value is None and optional:
        return None
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"{name} must be a number of seconds or a datetime.timedelta"
            f"{' or None' if optional else ''}, got {value!r}"
        )
    else:
        seconds = float(value)
    if positive and not seconds > 0:
        raise ValueError(f"{name} must be > 0 seconds, got {value!r}")
    return seconds


def _retry_on(value: Any) -> Optional[tuple[int, ...]]:
    """retry_on as a tuple of HTTP statuses in [400, 599], or None for the default."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Iterable):
        raise TypeError(f"retry_on must be an iterable of int HTTP statuses, got {value!r}")
    statuses = tuple(value)
    for status in statuses:
        if isinstance(status, bool) or not isinstance(status, int):
            raise TypeError(f"retry_on entries must be int HTTP statuses, got {status!r}")
        if not 400 <= status <= 599:
            raise ValueError(
                f"retry_on entries must be error statuses in [400, 599], got {status}"
            )
    return statuses


@functools.lru_cache(maxsize=64)
def _policy(
    attempts: int,
    timeout: Optional[float],
    deadline: Optional[float],
    backoff: str,
    base_delay: float,
    max_delay: float,
    retry_after_max: float,
    retry_on: Optional[tuple[int, ...]],
) -> Any:
    # Policies are immutable and validated by the core: build each once.
    return _core.RetryPolicy(
        attempts=attempts,
        backoff=backoff,
        base_delay=base_delay,
        max_delay=max_delay,
        attempt_timeout=timeout,
        deadline=deadline,
        retry_after_max=retry_after_max,
        retryable_statuses=None if retry_on is None else list(retry_on),
    )


@dataclasses.dataclass(frozen=True)
class RetryEvent:
    """What an ``on_retry`` hook is told before each wait.

    Attributes:
        attempt: the attempt that just failed (1 for the first).
        delay: seconds the client waits before the next attempt.
        kind: the failure kind (``"connection_refused"``, ``"timeout"``, ...),
            or None when the attempt got an HTTP response.
        status: that response's HTTP status, or 0.
        from_retry_after: True when the delay came from a Retry-After header.
        method: the request's method.
        url: the request's URL.

    .. versionadded:: 0.1.0
    """

    __slots__ = ("attempt", "delay", "kind", "status", "from_retry_after", "method", "url")

    attempt: int
    delay: float
    kind: Optional[str]
    status: int
    from_retry_after: bool
    method: str
    url: str


_HttpRetryHook = Callable[[RetryEvent], Any]

_logger = logging.getLogger("mulligan")


def _log_retry(event: RetryEvent) -> None:
    """Logs one scheduled HTTP retry on the ``mulligan`` logger (WARNING)."""
    if not _logger.isEnabledFor(logging.WARNING):
        return
    what = event.kind if event.kind is not None else f"HTTP {event.status}"
    _logger.warning(
        "mulligan: %s %s attempt %d failed (%s); retrying in %.3f s%s",
        event.method, event.url, event.attempt, what, event.delay,
        " (Retry-After)" if event.from_retry_after else "",
        extra={
            "mulligan_event": "retry_scheduled",
            "mulligan_method": event.method,
            "mulligan_url": event.url,
            "mulligan_attempt": event.attempt,
            "mulligan_delay": event.delay,
            "mulligan_error_kind": event.kind,
            "mulligan_http_status": event.status,
            "mulligan_from_retry_after": event.from_retry_after,
        },
    )


def _report_retry(
    info: tuple[int, float, Optional[str], int, bool],
    method: str,
    url: str,
    hook: Optional[_HttpRetryHook],
) -> Any:
    """Reports one scheduled retry: builds its :class:`RetryEvent` from the
    engine's ``info`` (attempt, delay, kind, status, from_retry_after), logs
    it and runs ``hook`` (if any), returning what the hook returned (an
    awaitable for a coroutine hook). Called by the native client only when a
    retry happens, so a request that succeeds builds no callback at all."""
    event = RetryEvent(info[0], info[1], info[2], info[3], info[4], method, url)
    _log_retry(event)
    return hook(event) if hook is not None else None


def _log_give_up(method: str, url: str, attempts: int, reason: str, what: str) -> None:
    """Logs an HTTP call whose retries gave up (WARNING)."""
    _logger.warning(
        "mulligan: %s %s gave up after %d attempt%s (%s): %s",
        method, url, attempts, "" if attempts == 1 else "s", reason, what,
        extra={
            "mulligan_event": "gave_up",
            "mulligan_method": method,
            "mulligan_url": url,
            "mulligan_attempts": attempts,
            "mulligan_stop_reason": reason,
        },
    )


_GAVE_UP_REASONS = frozenset(("attempts_exhausted", "deadline", "retry_after_too_long"))


def _call_fallback(fallback: Any, exc: BaseException) -> Any:
    """A callable fallback is called with the final exception; any other value is returned.

    An exception the fallback raises is chained to the final one (``__cause__``),
    so the original failure stays in the traceback.
    """
    if not callable(fallback):
        return fallback
    try:
        return fallback(exc)
    except Exception as fallback_error:
        if fallback_error is not exc and fallback_error.__cause__ is None:
            raise fallback_error from exc
        raise


def _origin_label(url: str) -> str:
    """The metrics label of a request: its origin, as the engine reports it."""
    origin: Optional[str] = _core.http_origin(url)
    return origin if origin is not None else url


def _merge_named(policy: Optional[str], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Client keyword arguments: a named client or policy from the
    configuration (mulligan.load_config), then what the caller passed."""
    if policy is None:
        return kwargs
    if not isinstance(policy, str):
        raise TypeError(f"policy must be a str, got {type(policy).__name__}")
    from . import _config

    named = _config._resolve_client_kwargs(policy)
    breaker = named.pop("breaker", None)
    if breaker is not None and "breaker" not in kwargs:
        # The per-origin breakers take the named breaker's trip threshold and
        # reset timeout (their other options are those of per-origin breakers).
        named["breaker"] = {
            "failure_threshold": breaker.get("failure_threshold", 5),
            "reset_timeout": breaker.get("reset_timeout", 30.0),
        }
    if "verify" in kwargs:
        named.pop("verify_tls", None)
    if named.get("user_agent") is None:
        named.pop("user_agent", None)
    return {**named, **kwargs}
ParamsInput = Union[Mapping[str, Any], Iterable[tuple[str, Any]], str, None]
_UNSET: Any = object()
_COMMON_METHODS = frozenset(("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"))


def _with_params(url: str, params: ParamsInput) -> str:
    if params is None:
        return url
    if isinstance(params, str):
        query = params.lstrip("?")
    else:
        items = params.items() if isinstance(params, Mapping) else params
        query = urllib.parse.urlencode(
            [(k, v) for k, v in items if v is not None], doseq=True
        )
    if not query:
        return url
    base, sep, fragment = url.partition("#")
    joiner = "&" if "?" in base and not base.endswith(("?", "&")) else ("" if base.endswith(("?", "&")) else "?")
    return base + joiner + query + (sep + fragment if sep else "")


def _response_from(raw: tuple[Any, ...]) -> Response:
    # The native call's one tuple: the scalars, the body and the header
    # block, which is split only when Response.headers is read.
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
    ) = raw
    r._headers = None
    return r


def _breaker_args(breaker: Any) -> dict[str, Any]:
    if breaker is None or breaker is False:
        return {}
    if breaker is True:
        breaker = {}
    if not isinstance(breaker, Mapping):
        raise TypeError(f"breaker must be a bool or a mapping, got {type(breaker).__name__}")
    unknown = set(breaker) - {"failure_threshold", "reset_timeout", "per_attempt"}
    if unknown:
        raise ValueError(f"unknown breaker options: {sorted(unknown)}")
    return {
        "breaker_failure_threshold": int(breaker.get("failure_threshold", 5)),
        "breaker_reset_timeout": float(breaker.get("reset_timeout", 30.0)),
        "breaker_per_attempt": bool(breaker.get("per_attempt", False)),
    }


class _ClientBase:
    """The configuration and request preparation shared by Client and AsyncClient."""

    def __init__(
        self,
        *,
        verify: Union[bool, str] = True,
        verify_tls: Optional[bool] = None,
        connect_timeout: _Seconds = 10.0,
        timeout: Optional[_Seconds] = 30.0,
        attempts: int = 3,
        deadline: Optional[_Seconds] = None,
        backoff: str = "exponential",
        base_delay: _Seconds = 0.2,
        max_delay: _Seconds = 10.0,
        retry_after_max: _Seconds = 60.0,
        retry_on: Optional[Iterable[int]] = None,
        follow_redirects: bool = False,
        max_redirects: int = 10,
        strict: bool = False,
        on_retry: Optional[_HttpRetryHook] = None,
        breaker: Union[bool, Mapping[str, Any], None] = None,
        headers: HeadersInput = None,
        user_agent: str = _USER_AGENT,
    ) -> None:
        if verify_tls is not None:
            verify = bool(verify_tls)
        if isinstance(verify, str):
            ca_bundle, verify_flag = verify, True
        elif isinstance(verify, bool):
            ca_bundle, verify_flag = "", verify
        else:
            raise TypeError(f"verify must be a bool or a CA bundle path, got {type(verify).__name__}")
        if on_retry is not None and not callable(on_retry):
            raise TypeError("on_retry must be callable")
        self._defaults: dict[str, Any] = {
            "timeout": timeout,
            "attempts": attempts,
            "deadline": deadline,
            "backoff": backoff,
            "base_delay": base_delay,
            "max_delay": max_delay,
            "retry_after_max": retry_after_max,
            "retry_on": retry_on,
        }
        self._on_retry = on_retry
        self._default_headers = _check_headers(headers)
        # Validates the defaults now rather than at the first request.
        self._default_policy: Any = None
        self._default_policy = self._policy_for({})
        self._native_args: dict[str, Any] = dict(
            attempt_timeout=30.0,
            connect_timeout=_seconds("connect_timeout", connect_timeout, positive=True),
            verify_tls=verify_flag,
            user_agent=user_agent,
            follow_redirects=bool(follow_redirects),
            max_redirects=int(max_redirects),
            ca_bundle=ca_bundle,
            strict=bool(strict),
            **_breaker_args(breaker),
        )
        self._closed = False

    def _request_policy(
        self,
        attempts: Any,
        timeout: Any,
        deadline: Any,
        backoff: Any,
        base_delay: Any,
        max_delay: Any,
        retry_after_max: Any,
        retry_on: Any,
    ) -> Any:
        """The engine policy of one request: the client's own when the request
        overrides nothing (no dict is built on that common path)."""
        if (
            attempts is _UNSET
            and timeout is _UNSET
            and deadline is _UNSET
            and backoff is _UNSET
            and base_delay is _UNSET
            and max_delay is _UNSET
            and retry_after_max is _UNSET
            and retry_on is _UNSET
        ):
            return self._default_policy
        return self._policy_for(
            {
                "attempts": attempts,
                "timeout": timeout,
                "deadline": deadline,
                "backoff": backoff,
                "base_delay": base_delay,
                "max_delay": max_delay,
                "retry_after_max": retry_after_max,
                "retry_on": retry_on,
            }
        )

    def _policy_for(self, overrides: dict[str, Any]) -> Any:
        if self._default_policy is not None and all(v is _UNSET for v in overrides.values()):
            return self._default_policy
        o = {k: (overrides[k] if overrides.get(k, _UNSET) is not _UNSET else v) for k, v in self._defaults.items()}
        attempts = o["attempts"]
        if isinstance(attempts, bool) or not isinstance(attempts, int):
            raise TypeError(f"attempts must be an int, got {attempts!r}")
        if not 1 <= attempts <= _MAX_ATTEMPTS:
            raise ValueError(f"attempts must be in [1, {_MAX_ATTEMPTS}], got {attempts}")
        backoff = o["backoff"]
        if not isinstance(backoff, str):
            raise TypeError(f"backoff must be a str, got {backoff!r}")
        return _policy(
            attempts,
            _seconds("timeout", o["timeout"], optional=True, positive=True),
            _seconds("deadline", o["deadline"], optional=True, positive=True),
            backoff,
            _seconds("base_delay", o["base_delay"]),
            _seconds("max_delay", o["max_delay"]),
            _seconds("retry_after_max", o["retry_after_max"]),
            _retry_on(o["retry_on"]),
        )

    def _prepare(
        self,
        method: str,
        url: str,
        params: ParamsInput,
        data: Any,
        json: Any,
        headers: HeadersInput,
        idempotency_key: Union[str, bool, None],
    ) -> tuple[str, list[tuple[str, bytes]], bytes, Optional[str]]:
        if self._closed:
            raise RuntimeError("this client is closed")
        _check_url(url)
        if (
            params is None and headers is None and data is None and json is None
            and idempotency_key is None and not self._default_headers
        ):
            return url, [], b"", None  # the common bare request
        if params is not None:
            url = _with_params(url, params)
        pairs = _check_headers(headers)
        if self._default_headers:
            given = {name.lower() for name, _ in pairs}
            pairs = [p for p in self._default_headers if p[0].lower() not in given] + pairs
        if data is not None and json is not None:
            raise ValueError("pass data= or json=, not both")
        if json is not None:
            body = _json.dumps(json, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
            if not any(name.lower() == "content-type" for name, _ in pairs):
                pairs.append(("Content-Type", b"application/json"))
        elif data is None:
            body = b""
        elif isinstance(data, str):
            body = data.encode("utf-8")
        elif isinstance(data, (bytes, bytearray, memoryview)):
            body = bytes(data)
        else:
            raise TypeError(f"data must be bytes or str, got {type(data).__name__}")
        if idempotency_key is True:
            key: Optional[str] = _core.new_idempotency_key()
        elif idempotency_key is None or idempotency_key is False:
            key = None
        elif isinstance(idempotency_key, str):
            key = idempotency_key
        else:
            raise TypeError(
                f"idempotency_key must be a str, True or None, got {type(idempotency_key).__name__}"
            )
        return url, pairs, body, key

    @staticmethod
    def _gave_up(method: str, url: str, response: Response) -> RetriesExhausted:
        return RetriesExhausted(
            f"gave up on {method} {url} after {response.attempts} attempt"
            f"{'s' if response.attempts != 1 else ''} ({response.stop_reason}): "
            f"last status {response.status_code}",
            attempts=response.attempts,
            stop_reason=response.stop_reason,
            response=response,
        )

    @classmethod
    def _report_give_up(
        cls, method: str, url: str, response: Response, raise_on_give_up: bool
    ) -> None:
        """Logs a response whose retries gave up on a retryable status;
        raises :class:`RetriesExhausted` for it when ``raise_on_give_up``."""
        _log_give_up(method, url, response.attempts, response.stop_reason,
                     f"last status {response.status_code}")
        if raise_on_give_up:
            raise cls._gave_up(method, url, response)

    @staticmethod
    def _fall_back(method: str, url: str, exc: BaseException, fallback: Any) -> Any:
        """Handles a call that finally failed with ``exc`` (a TransportError,
        CircuitOpenError or RetriesExhausted, which is logged already): logs
        it, then returns the fallback's value, or re-raises ``exc`` (with its
        traceback) when there is no fallback. Called from the except clause."""
        if not isinstance(exc, RetriesExhausted):
            _log_give_up(method, url, getattr(exc, "attempts", 0),
                         getattr(exc, "stop_reason", None) or type(exc).__name__, str(exc))
        if fallback is _UNSET:
            raise exc
        _metrics._metrics_for(_origin_label(url)).fallback_used()
        return _call_fallback(fallback, exc)


class Client(_ClientBase):
    """A resilient HTTP client with a pool of kept-alive connections.

    Safe to share between threads; use it as a context manager (or call
    :meth:`close`) to release the pool. The module-level :func:`get`,
    :func:`post` and :func:`request` use one default client, created on first
    use. Every retry setting below is a default that each request may
    override with the keyword of the same name. Every duration is seconds
    (int or float) or a :class:`datetime.timedelta`; other types (a str)
    raise TypeError.

    Args:
        verify: verify TLS certificates and host names (default True); False
            to skip verification, or the path of a PEM CA bundle to use
            instead of the system's. Proxies come from the usual environment
            variables (``http_proxy``, ``https_proxy``, ``all_proxy``,
            ``no_proxy``); when none is set as the client is created, it uses
            no proxy and does not look again (as httpx does).
        verify_tls: the 0.1 spelling of ``verify`` (a bool).
        connect_timeout: seconds allowed to establish a connection. Default 10.0.
        timeout: seconds allowed for each attempt (trimmed to the deadline).
            Default 30.0.
        attempts: total attempts including the first, in [1, 2**31 - 1]. Default 3.
        deadline: total seconds for a whole call, retries included. Default None.
        backoff: ``"exponential"`` (default), ``"constant"``, ``"linear"``
            or ``"decorrelated"``; full jitter.
        base_delay: base of the backoff, seconds. Default 0.2.
        max_delay: cap on each wait, seconds. Default 10.0.
        retry_after_max: longest Retry-After honoured, seconds. Default 60.0.
        retry_on: the retryable HTTP statuses, an iterable of ints in
            [400, 599] (a str raises TypeError). Default 408, 429, 500, 502,
            503, 504.
        follow_redirects: follow 3xx redirects. Default False.
        max_redirects: the most redirects followed (then a terminal error). Default 10.
        strict: retry only GET, HEAD and OPTIONS once bytes were sent.
            Default False.
        on_retry: called with a :class:`RetryEvent` before each wait.
        breaker: per-origin circuit breakers: True for the defaults
            (5 consecutive failed calls open it for 30 s), or a mapping with
            ``failure_threshold``, ``reset_timeout`` (seconds) and
            ``per_attempt``. An open breaker raises
            :class:`mulligan.CircuitOpenError` at once. Default None (off).
        headers: default headers of every request. Content-Length,
            Transfer-Encoding, TE and Upgrade are set by the client itself
            and raise ValueError here and in a request's ``headers``.
        user_agent: the User-Agent sent when a request sets none.
        policy: the name of a client (or policy) loaded with
            :func:`mulligan.load_config`: its timeouts, TLS setting, user
            agent, retry policy and breaker threshold become this client's
            defaults; arguments given here override them. ValueError for an
            unknown name.

    .. versionadded:: 0.1.0
    """

    def __init__(self, *, policy: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(**_merge_named(policy, kwargs))
        self._client: Any = _core.HttpClient(**self._native_args)

    def close(self) -> None:
        """Closes the connection pool; later requests raise RuntimeError. Idempotent."""
        self._closed = True
        self._client = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def request(
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
        """Sends one logical request, retrying per the engine's rules.

        GET, HEAD, OPTIONS, TRACE, PUT and DELETE are retried on transport
        errors and on 408, 429, 500, 502, 503 and 504; POST and PATCH only with
        an idempotency key (or when the connection was refused, as nothing was
        sent). Retry-After is honoured up to ``retry_after_max`` seconds. The
        GIL is released for the whole call.

        Args:
            method: the HTTP method, e.g. ``"GET"``.
            url: an absolute http:// or https:// URL.
            params: query parameters (a mapping, pairs or a str) appended to
                the URL, form-encoded; None values are dropped.
            data: the body, bytes or str (sent as UTF-8).
            json: a value sent as a JSON body with ``Content-Type:
                application/json`` (unless headers set one). Not with ``data``.
            headers: a mapping or (name, value) pairs of str.
            idempotency_key: True to generate a UUID v4, a str to use as given,
                None/False for none. Sent unchanged on every attempt.
            attempts, timeout, deadline, backoff, base_delay, max_delay,
            retry_after_max, retry_on, follow_redirects, max_redirects,
            strict: override the client's settings for this request.
            on_retry: replaces the client's hook for this request. It runs
                with the GIL held before each wait; if it raises, the retries
                stop at once and its exception propagates from this call.
            raise_on_give_up: raise :class:`mulligan.RetriesExhausted` instead
                of returning the last response when the retries give up on a
                retryable status. Default False.
            fallback: returned instead of raising when the call finally fails
                (a transport error, a timeout, an open circuit, or
                RetriesExhausted with ``raise_on_give_up``). A callable is
                called with the exception and its result returned; any other
                object is returned as is. Counted in the origin's
                ``fallbacks`` metric.

        Every retry is logged on the ``mulligan`` logger at WARNING (with
        ``extra`` fields ``mulligan_method``, ``mulligan_url``,
        ``mulligan_attempt``, ``mulligan_delay`` ...), and so is a give-up.

        Returns:
            The final :class:`Response` (also for 4xx/5xx statuses), or the
            fallback's value.

        Raises:
            ValueError: malformed URL, header or argument (before any request).
            TypeError: arguments of the wrong type (non-str header, ...).
            RuntimeError: the client is closed.
            mulligan.TransportError: the last attempt failed without a response;
                subclasses by ``kind`` (``ConnectionRefused``, ``AttemptTimeout``,
                ``DeadlineExceeded``, ...), with ``.kind`` and ``.attempts``.
            mulligan.CircuitOpenError: the origin's breaker is open.
            mulligan.RetriesExhausted: only with ``raise_on_give_up=True``.
        """
        if method not in _COMMON_METHODS:
            method = _checked_method(method)
        if follow_redirects is not None or max_redirects is not None or strict is not None:
            _check_switches(follow_redirects, max_redirects, strict)
        url, pairs, body, key = self._prepare(method, url, params, data, json, headers, idempotency_key)
        policy = self._request_policy(
            attempts, timeout, deadline, backoff, base_delay, max_delay, retry_after_max, retry_on
        )
        client = self._client
        if client is None:
            raise RuntimeError("this client is closed")
        try:
            raw = client.request(
                method, url, pairs, body, key, policy, follow_redirects, max_redirects, strict,
                on_retry if on_retry is not None else self._on_retry,
            )
            response = _response_from(raw)
            if response.stop_reason in _GAVE_UP_REASONS:
                self._report_give_up(method, url, response, raise_on_give_up)
            return response
        except (TransportError, CircuitOpenError, RetriesExhausted) as exc:
            return self._fall_back(method, url, exc, fallback)  # type: ignore[no-any-return]

    def _bare(self, method: str, url: str) -> Response:
        """``request(method, url)`` with every keyword at its default, minus
        request()'s argument handling: ``client.get(url)`` is the hot path
        (a fifth of the Python time per call). Same checks, results, logs
        and errors as request(), which a test compares."""
        client = self._client
        if client is None or self._default_headers or type(self).request is not _PLAIN_REQUEST:
            # Closed, headers to merge, or a subclass's (or a mock's) request().
            return self.request(method, url)
        _check_url(url)
        try:
            response = _response_from(client.request(
                method, url, [], b"", None, self._default_policy, None, None, None,
                self._on_retry,
            ))
        except (TransportError, CircuitOpenError, RetriesExhausted) as exc:
            return self._fall_back(method, url, exc, _UNSET)  # type: ignore[no-any-return]
        if response.stop_reason in _GAVE_UP_REASONS:
            self._report_give_up(method, url, response, False)
        return response

    def get(self, url: str, **kwargs: Any) -> Response:
        """Sends a GET; see :meth:`request` for the keyword arguments."""
        return self.request("GET", url, **kwargs) if kwargs else self._bare("GET", url)

    def head(self, url: str, **kwargs: Any) -> Response:
        """Sends a HEAD; see :meth:`request`."""
        return self.request("HEAD", url, **kwargs) if kwargs else self._bare("HEAD", url)

    def options(self, url: str, **kwargs: Any) -> Response:
        """Sends an OPTIONS; see :meth:`request`."""
        return self.request("OPTIONS", url, **kwargs) if kwargs else self._bare("OPTIONS", url)

    def post(self, url: str, **kwargs: Any) -> Response:
        """Sends a POST (retried only with an idempotency key); see :meth:`request`."""
        return self.request("POST", url, **kwargs) if kwargs else self._bare("POST", url)

    def put(self, url: str, **kwargs: Any) -> Response:
        """Sends a PUT; see :meth:`request`."""
        return self.request("PUT", url, **kwargs) if kwargs else self._bare("PUT", url)

    def patch(self, url: str, **kwargs: Any) -> Response:
        """Sends a PATCH (retried only with an idempotency key); see :meth:`request`."""
        return self.request("PATCH", url, **kwargs) if kwargs else self._bare("PATCH", url)

    def delete(self, url: str, **kwargs: Any) -> Response:
        """Sends a DELETE; see :meth:`request`."""
        return self.request("DELETE", url, **kwargs) if kwargs else self._bare("DELETE", url)


# The short path (Client._bare) is taken only while request() is this one, so
# that a subclass overriding request() (or a test patching it) sees every call.
_PLAIN_REQUEST = Client.request

_default_client: Optional[Client] = None
_default_lock = threading.Lock()


def _client() -> Client:
    global _default_client
    client = _default_client
    if client is None:
        with _default_lock:
            if _default_client is None:
                _default_client = Client()
            client = _default_client
    return client


def request(method: str, url: str, **kwargs: Any) -> Response:
    """Sends a request with the default client; see :meth:`Client.request`.

    .. versionadded:: 0.1.0
    """
    return _client().request(method, url, **kwargs)


def get(url: str, **kwargs: Any) -> Response:
    """Sends a GET with the default client; see :meth:`Client.request`.

    .. versionadded:: 0.1.0
    """
    return _client().get(url, **kwargs)


def head(url: str, **kwargs: Any) -> Response:
    """Sends a HEAD with the default client; see :meth:`Client.request`."""
    return _client().head(url, **kwargs)


def post(url: str, **kwargs: Any) -> Response:
    """Sends a POST with the default client; see :meth:`Client.request`.

    A POST is retried only with ``idempotency_key=`` (True or a str), or when
    the connection was refused.

    .. versionadded:: 0.1.0
    """
    return _client().post(url, **kwargs)


def options(url: str, **kwargs: Any) -> Response:
    """Sends an OPTIONS with the default client; see :meth:`Client.request`."""
    return _client().options(url, **kwargs)


def put(url: str, **kwargs: Any) -> Response:
    """Sends a PUT with the default client; see :meth:`Client.request`."""
    return _client().put(url, **kwargs)


def patch(url: str, **kwargs: Any) -> Response:
    """Sends a PATCH (retried only with an idempotency key); see :meth:`Client.request`."""
    return _client().patch(url, **kwargs)


def delete(url: str, **kwargs: Any) -> Response:
    """Sends a DELETE with the default client; see :meth:`Client.request`."""
    return _client().delete(url, **kwargs)
