"""Request preparation shared by both clients: every argument checked, the URL,
the query, the body, the idempotency key, the engine policy.

Everything here runs before anything is sent, so bad input raises
TypeError or ValueError and no request leaves the process.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import warnings

import functools
import json as _json
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any, Optional, Union

from .. import _core, _validate
from .._redact import redact_url
from .._text import fold, is_token

__all__ = ["ParamsInput"]

ParamsInput = Union[Mapping[str, Any], Iterable[tuple[str, Any]], str, None]
# Methods sent as given, without the token check and upper-casing of others.
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
    # Each message quotes the URL masked (mulligan.redact_url), and none
    # quotes urllib's: it names the port text or the netloc, where a password
    # with a raw '/' ("user:pa/ss@host") ends up.
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        raise ValueError(
            f"malformed URL {redact_url(url)!r}: contains whitespace or control characters"
        )
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        raise ValueError(
            f"malformed URL {redact_url(url)!r}: a malformed host (IPv6 brackets or characters)"
        ) from None
    try:
        parts.port  # noqa: B018 -- raises ValueError for a non-numeric or out-of-range port
    except ValueError:
        raise ValueError(
            f"malformed URL {redact_url(url)!r}: the port is not a number in [0, 65535]"
        ) from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(f"malformed URL {redact_url(url)!r}: the scheme must be http or https")
    if not parts.hostname:
        raise ValueError(f"malformed URL {redact_url(url)!r}: no host")
    return url


def _checked_method(method: Any) -> str:
    """An HTTP method other than the common upper-case ones, upper-cased as
    requests and httpx do (``"get"`` sends GET). Raises TypeError for a
    non-str and ValueError for anything but a token (RFC 9110 section 9)."""
    if not isinstance(method, str):
        raise TypeError(f"method must be a str, got {type(method).__name__}")
    if not is_token(method):
        raise ValueError(f"invalid HTTP method {method!r}")
    return method.upper()


def _check_switches(
    owner: str,
    follow_redirects: Optional[bool],
    max_redirects: Optional[int],
    strict: Optional[bool],
) -> None:
    """Checks a request's follow_redirects / max_redirects / strict overrides
    (None: the client's setting); TypeError for a wrong type, ValueError for
    max_redirects outside [0, 1000]."""
    _validate.flag_or_none(owner, "follow_redirects", follow_redirects)
    _validate.flag_or_none(owner, "strict", strict)
    _validate.integer_or_none(owner, "max_redirects", max_redirects, 0, 1000, range_text="[0, 1000]")


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
    multiplier: float = 2.0,
    jitter: str = "full",
    jitter_fraction: float = 0.2,
    composed: Optional[tuple[Any, float, Any, tuple[Optional[int], ...]]] = None,
) -> Any:
    # Policies are immutable and validated by the core: build each once.
    # `composed`: the client's engine wait, min_delay and engine stop.
    wait, min_delay, stop, kinds = (
        composed if composed is not None else (None, 0.0, None, (None, None, None, None))
    )
    return _core.RetryPolicy(
        wait=wait,
        min_delay=min_delay,
        stop=stop,
        connect_retries=kinds[0],
        read_retries=kinds[1],
        status_retries=kinds[2],
        other_retries=kinds[3],
        attempts=attempts,
        backoff=backoff,
        base_delay=base_delay,
        multiplier=multiplier,
        max_delay=max_delay,
        jitter=jitter,
        jitter_fraction=jitter_fraction,
        attempt_timeout=timeout,
        deadline=deadline,
        retry_after_max=retry_after_max,
        retryable_statuses=None if retry_on is None else list(retry_on),
    )


def _encode_body(
    data: Any, json: Any, pairs: list[tuple[str, bytes]]
) -> bytes:
    """The request body of ``data=`` (bytes or str, sent as UTF-8) or ``json=``
    (which also adds ``Content-Type: application/json`` to ``pairs`` unless
    they hold one)."""
    if data is not None and json is not None:
        raise ValueError("pass data= or json=, not both")
    if json is not None:
        if not any(fold(name) == "content-type" for name, _ in pairs):
            pairs.append(("Content-Type", b"application/json"))
        # allow_nan=False: NaN and the infinities are no JSON (RFC 8259 section
        # 6); ValueError here, before anything is sent.
        return _json.dumps(
            json, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode("utf-8")
    if data is None:
        return b""
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"data must be bytes or str, got {type(data).__name__}")


def _idempotency_key(idempotency_key: Union[str, bool, None]) -> Optional[str]:
    """The key sent with every attempt: True draws a UUID v4, a str is sent as
    given, None and False send none."""
    if idempotency_key is True:
        return _core.new_idempotency_key()
    if idempotency_key is None or idempotency_key is False:
        return None
    if isinstance(idempotency_key, str):
        return idempotency_key
    raise TypeError(
        f"idempotency_key must be a str, True or None, got {type(idempotency_key).__name__}"
    )


def _breaker_args(owner: str, breaker: Any, per_attempt: bool = False) -> dict[str, Any]:
    """The native client's per-origin breaker arguments of ``breaker=`` and
    ``breaker_per_attempt=``. The mapping's ``"per_attempt"`` is the 0.1
    spelling of ``breaker_per_attempt`` (one name for the switch in every
    layer): still honoured, with a DeprecationWarning."""
    per_attempt = _validate.flag(owner, "breaker_per_attempt", per_attempt)
    if breaker is None or breaker is False:
        return {}
    if breaker is True:
        breaker = {}
    if not isinstance(breaker, Mapping):
        raise TypeError(f"breaker must be a bool or a mapping, got {type(breaker).__name__}")
    known = {"failure_threshold", "reset_timeout", "per_attempt", "key", "_options"}
    unknown = set(breaker) - known
    if unknown:
        raise ValueError(f"unknown breaker options: {sorted(unknown)}")
    # "_options": every option of a named breaker of the configuration file
    # (mulligan.BreakerConfig.breaker_kwargs()), set by Client(policy=...).
    options = breaker.get("_options")
    if options is not None:
        return {
            **_breaker_key_args(owner, breaker.get("key", "origin")),
            "breaker_options": dict(options),
            "breaker_per_attempt": per_attempt or _deprecated_per_attempt(owner, breaker),
        }
    return {
        **_breaker_key_args(owner, breaker.get("key", "origin")),
        "breaker_failure_threshold": _validate.integer(
            owner, 'breaker["failure_threshold"]', breaker.get("failure_threshold", 5), 0, _validate.INT_MAX
        ),
        "breaker_reset_timeout": _validate.seconds(
            owner, 'breaker["reset_timeout"]', breaker.get("reset_timeout", 30.0), positive=True
        ),
        "breaker_per_attempt": per_attempt or _deprecated_per_attempt(owner, breaker),
    }


def _breaker_key_args(owner: str, key: Any) -> dict[str, Any]:
    """The native arguments of ``breaker={"key": ...}``: what a request's
    breaker is keyed by (the engine's BreakerKeyOptions, so the sync and async
    clients share it).

    - ``"origin"`` (the default): ``scheme://host:port``;
    - ``"host"``: the host name, lower case;
    - ``"path"``: the origin and the path (no query): one breaker per URL;
    - a list or tuple of path templates (``["/users/{id}", "/files/{p...}"]``):
      the origin and the first template that matches the path, else the
      origin; ``{name}`` matches one non-empty segment, a last ``{name...}``
      one or more, anything else itself;
    - a callable ``key(method, url) -> str | None``: its result (None or ""
      means the origin), computed on the calling thread before the request
      starts (never on the engine's threads).

    The metrics stay by origin whatever the key. Bad templates raise
    ValueError when the client is built.
    """
    if isinstance(key, str):
        if key not in ("origin", "host", "path"):
            raise ValueError(
                f'{owner}: breaker["key"] must be "origin", "host", "path", a list of path '
                f"templates or a callable, got {key!r}"
            )
        return {"breaker_key": key}
    if isinstance(key, (list, tuple)):
        templates = list(key)
        if not templates or not all(isinstance(t, str) for t in templates):
            raise TypeError(f'{owner}: breaker["key"] templates must be a non-empty list of str')
        return {"breaker_key": "path_template", "breaker_key_templates": templates}
    if callable(key):
        return {"_breaker_key_fn": key}
    raise TypeError(
        f'{owner}: breaker["key"] must be a str, a list of path templates or a callable, '
        f"got {type(key).__name__}"
    )


def _breaker_key_of(owner: str, fn: Any, method: str, url: str) -> str:
    """A key function's result for one request ("" means the origin)."""
    key = fn(method, url)
    if key is None:
        return ""
    if not isinstance(key, str):
        raise TypeError(f'{owner}: breaker["key"] returned {type(key).__name__}, expected str or None')
    return key


def _deprecated_per_attempt(owner: str, breaker: Mapping[str, Any]) -> bool:
    if "per_attempt" not in breaker:
        return False
    warnings.warn(
        f'{owner}: breaker={{"per_attempt": ...}} is deprecated; pass breaker_per_attempt=... '
        "(the name of this switch in every mulligan front door)",
        DeprecationWarning,
        stacklevel=5,
    )
    return _validate.flag(owner, 'breaker["per_attempt"]', breaker["per_attempt"])
