"""What mulligan renders never shows a credential: URLs and header values, masked.

The one place the package masks, and the Python side of
core/include/mulligan/http/redact.h: URLs go through the engine's
``RedactUrl`` (so the C ABI's error texts, the exceptions the engine builds
and everything rendered here mask alike), under the engine's process-wide
rules. Used by the HTTP clients' logs and :class:`RetryEvent`
(``_http.events``), the messages of the errors they raise (``_http.base``,
``_http.response``, ``_http.request``), the repr of :class:`Headers`
(``_http.headers``) and the command's output (``_cli``).

Masked: a URL's userinfo -- the user name as well as the password, since a
token is often the user name (``https://<token>@host``) -- and the values of
the query (and fragment) parameters the rules name; the values of the
header fields Authorization, Proxy-Authorization, Cookie and Set-Cookie,
plus those the rules name. Each becomes ``"[redacted]"``.

.. versionadded:: 0.2.0
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable
from typing import Any, ClassVar, Optional

from . import _core
from ._text import fold, is_token

__all__ = [
    "MARKER",
    "RedactionRules",
    "is_sensitive_header",
    "redact_url",
    "redaction",
    "set_redaction",
]

_OWNER = "mulligan.set_redaction"

#: What replaces a masked value: ``"[redacted]"``.
MARKER: str = _core.REDACTED

# The header fields masked whatever the rules say, folded; plus the rules'
# extra ones. Replaced whole (never mutated) by set_redaction, so a reader
# needs no lock.
_ALWAYS: tuple[str, ...] = tuple(_core.always_sensitive_headers())
_masked_headers: frozenset[str] = frozenset(_ALWAYS)
_lock = threading.Lock()


@dataclasses.dataclass(frozen=True)
class RedactionRules:
    """What mulligan masks besides a URL's userinfo (which it always masks).

    Attributes:
        query_params: the query (and fragment) parameters whose values are
            masked, compared ASCII case-insensitively after percent-decoding.
        extra_headers: header fields masked besides the four in
            ``ALWAYS_MASKED_HEADERS``, compared ASCII case-insensitively.

    Class attributes:
        DEFAULT_QUERY_PARAMS: the default ``query_params``: ``access_token``,
            ``refresh_token``, ``id_token``, ``client_secret``, ``api_key``,
            ``apikey``, ``key``, ``token``, ``private_token``, ``auth``,
            ``password``, ``secret``, ``signature``, ``sig``,
            ``x-amz-signature``, ``x-amz-security-token``,
            ``x-goog-signature`` (docs/security.md says why each is there).
        ALWAYS_MASKED_HEADERS: ``authorization``, ``proxy-authorization``,
            ``cookie``, ``set-cookie``.

    .. versionadded:: 0.2.0
    """

    DEFAULT_QUERY_PARAMS: ClassVar[tuple[str, ...]] = tuple(_core.default_sensitive_query_params())
    ALWAYS_MASKED_HEADERS: ClassVar[tuple[str, ...]] = _ALWAYS

    query_params: tuple[str, ...] = DEFAULT_QUERY_PARAMS
    extra_headers: tuple[str, ...] = ()


def redact_url(url: str) -> str:
    """Returns ``url`` as mulligan renders it in messages, logs and output.

    The userinfo (``user:password@``, or a lone ``token@``) and the value of
    every query or fragment parameter the rules name (``api_key``, ``token``,
    ``sig`` ... by default; see :func:`set_redaction`) become
    ``"[redacted]"``; the rest is unchanged. Any text is accepted, malformed
    URLs included (they are what error messages quote most). Use it when you
    log a URL yourself, e.g. ``Response.url`` (which keeps the URL as sent).

    Example::

        >>> mulligan.redact_url("https://user:s3cr3t@api.example/v1?api_key=k&q=1")
        'https://[redacted]@api.example/v1?api_key=[redacted]&q=1'

    Raises:
        TypeError: ``url`` is not a str.

    Thread-safety: safe from any thread.

    .. versionadded:: 0.2.0
    """
    if not isinstance(url, str):
        raise TypeError(f"mulligan.redact_url: url must be a str, got {type(url).__name__}")
    if "@" not in url and "?" not in url and "#" not in url:
        return url  # nothing that could hide a credential
    # "surrogatepass": any str crosses, and comes back exactly (the engine
    # only replaces spans between ASCII delimiters).
    masked: bytes = _core.redact_url(url.encode("utf-8", "surrogatepass"))
    return masked.decode("utf-8", "surrogatepass")


def is_sensitive_header(name: str) -> bool:
    """Returns True when the values of header field ``name`` must never be
    shown (the four always masked, or one of the rules' extra headers)."""
    return fold(name) in _masked_headers


def redaction() -> RedactionRules:
    """Returns the rules in force (the defaults until :func:`set_redaction`).

    .. versionadded:: 0.2.0
    """
    query_params, extra_headers = _core.redaction_rules()
    return RedactionRules(tuple(query_params), tuple(extra_headers))


def _names(field: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Iterable):
        raise TypeError(f"{_OWNER}: {field} must be an iterable of str, got {value!r}")
    names = tuple(value)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{_OWNER}: {field} entries must be str, got {type(name).__name__}")
    return names


def _encodable(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def set_redaction(
    *, query_params: Optional[Iterable[str]] = None, extra_headers: Iterable[str] = ()
) -> RedactionRules:
    """Sets what mulligan masks, process-wide, in every layer.

    The rules govern everything that renders a URL or headers: the
    exceptions of the HTTP clients and the command, their log records
    (message and ``extra`` fields), :class:`RetryEvent`, ``Headers``' repr,
    :func:`redact_url` and the C ABI's error texts. A URL's userinfo and the
    header fields Authorization, Proxy-Authorization, Cookie and Set-Cookie
    are masked whatever the rules say. The requests themselves are sent
    unchanged. Each call sets both lists; ``set_redaction()`` restores the
    defaults.

    Example, adding to the defaults::

        mulligan.set_redaction(
            query_params=(*mulligan.RedactionRules.DEFAULT_QUERY_PARAMS, "session"),
            extra_headers=("X-Api-Key",),
        )

    Args:
        query_params: the query (and fragment) parameters whose values are
            masked, compared ASCII case-insensitively after percent-decoding;
            None (the default) for ``RedactionRules.DEFAULT_QUERY_PARAMS``.
            Each must be a non-empty str without control characters.
        extra_headers: header fields masked besides the four always masked;
            each must be a field name (an RFC 9110 token). Default none.

    Returns:
        The rules that were in force before (to restore them later).

    Raises:
        TypeError: a list that is not an iterable of str (a bare str included).
        ValueError: an empty name, a parameter name with a control character,
            or a header name that is not a token. The rules stay as they were.

    Thread-safety: safe from any thread; renderings on other threads see the
    old rules or the new ones.

    .. versionadded:: 0.2.0
    """
    global _masked_headers
    params = RedactionRules.DEFAULT_QUERY_PARAMS if query_params is None else _names(
        "query_params", query_params
    )
    headers = _names("extra_headers", extra_headers)
    for i, name in enumerate(params):
        if not name or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
            what = "is empty" if not name else "contains a control character"
            raise ValueError(f"{_OWNER}: query_params[{i}] {what}")
        if not _encodable(name):
            raise ValueError(f"{_OWNER}: query_params[{i}] is not valid Unicode (a lone surrogate)")
    for name in headers:
        if not is_token(name):
            raise ValueError(f"{_OWNER}: extra_headers entry {name!r} is not a header field name")
    with _lock:
        previous = redaction()
        _core.set_redaction_rules(list(params), list(headers))
        _masked_headers = frozenset(_ALWAYS) | frozenset(fold(h) for h in headers)
    return previous
