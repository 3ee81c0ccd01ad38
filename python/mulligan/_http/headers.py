"""Header fields: the response's :class:`Headers` view, the checks of request
headers, and the values of two fields (Retry-After, Idempotency-Key).

Field names compare case-insensitively in ASCII (RFC 9110 section 5.1,
``_text.fold``); names are RFC 9110 tokens (``_text.is_token``).

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Optional, Union

from .. import _core
from .._redact import MARKER, is_sensitive_header
from .._text import fold, is_token

__all__ = ["Headers", "HeadersInput", "new_idempotency_key", "parse_retry_after"]

HeadersInput = Union[Mapping[str, str], Iterable[tuple[str, str]], None]

# Characters that would let a value smuggle another header or end the head.
_FORBIDDEN_IN_VALUE = ("\r", "\n", "\0")
# Framing fields the client sets itself (the core rejects them too); a
# caller's value would disagree with the body actually sent and leave the
# server waiting for bytes that never come.
_MANAGED_HEADERS = frozenset(("content-length", "transfer-encoding", "te", "upgrade"))


def new_idempotency_key() -> str:
    """Returns a fresh idempotency key: a random (version 4) UUID, lower case.

    Drawn from the operating system's CSPRNG by the core.

    .. versionadded:: 0.1.0
    """
    return _core.new_idempotency_key()


def parse_retry_after(value: str, now: Optional[float] = None) -> Optional[float]:
    """Returns the delay in seconds a ``Retry-After`` value asks for.

    Accepts delay-seconds (``"120"``) and the three HTTP-date forms of RFC 9110
    section 5.6.7 (IMF-fixdate, RFC 850, asctime), plus the lenient date forms
    that real servers send and urllib3's ``Retry.parse_retry_after`` accepts
    (through :func:`email.utils.parsedate_tz`), where section 5.6.7 asks
    recipients to be robust: ``UTC``, ``UT`` or ``Z`` for ``GMT`` and numeric
    offsets (``+0100``), any letter case, a one-digit day, no day name, no
    seconds, runs of spaces and tabs, ``06-Nov-1994``, and a two-digit year
    in the fixdate form; docs/retry-after.md lists each one. Unlike urllib3, a
    date without a zone (other than asctime, which is GMT) and zone names such
    as ``EST`` are refused (the backoff applies) rather than guessed. The
    result never depends on the machine's time zone. A date in the past gives
    ``0.0``; a value too large for the clock gives ``math.inf``.

    Thread-safety: a pure function, safe from any thread.

    Args:
        value: the header field value.
        now: the Unix time the response was received (``time.time()``);
            default: now.

    Returns:
        The delay in seconds, or None when the value is invalid (``"-5"``,
        ``"0.5"``, ``"1m0s"``, ``""``).

    Raises:
        TypeError: ``value`` is not a str.

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

    Its repr masks the values of Authorization, Proxy-Authorization, Cookie,
    Set-Cookie and of the headers :func:`mulligan.set_redaction` names, as
    ``"[redacted]"``, so that logging a response's headers leaks no
    credential; reading a field returns its value.

    .. versionchanged:: 0.2.0 the repr masks sensitive values.
    """

    __slots__ = ("_fields", "_index_cache")

    def __init__(
        self, fields: Union[Mapping[str, str], Iterable[tuple[str, str]]] = ()
    ) -> None:
        """Builds the view of `fields`: a mapping of names to values, or
        (name, value) pairs in order (a name may repeat), as httpx and
        requests accept.

        Raises:
            TypeError: `fields` is neither, an item is not a pair, or a name
                or value is not a str (the value is not quoted: it may hold a
                credential).

        .. versionchanged:: 0.2.0 accepts a mapping; other shapes raise
           TypeError here rather than on first use.
        """
        bad_shape = TypeError(
            "Headers: fields must be a mapping or (name, value) pairs, "
            f"got {type(fields).__name__}"
        )
        if isinstance(fields, (str, bytes)):  # iterable, but never pairs
            raise bad_shape
        pairs = fields.items() if isinstance(fields, Mapping) else fields
        try:
            items: tuple[object, ...] = tuple(pairs)
        except TypeError:
            raise bad_shape from None
        for item in items:
            if not (isinstance(item, (tuple, list)) and len(item) == 2
                    and isinstance(item[0], str) and isinstance(item[1], str)):
                shape = (f"a {len(item)}-item {type(item).__name__}"
                         if isinstance(item, (tuple, list)) else f"a {type(item).__name__}")
                raise TypeError(
                    f"Headers: each field must be a (name, value) pair of str, got {shape}"
                )
        self._fields: tuple[tuple[str, str], ...] = tuple(
            (item[0], item[1]) for item in items  # type: ignore[index]
        )
        # Built on first use: most responses are never looked into.
        self._index_cache: Optional[dict[str, tuple[str, list[str]]]] = None

    @property
    def _index(self) -> dict[str, tuple[str, list[str]]]:
        index = self._index_cache
        if index is None:
            index = {}
            for name, value in self._fields:
                key = fold(name)
                entry = index.get(key)
                if entry is None:
                    index[key] = (name, [value])
                else:
                    entry[1].append(value)
            self._index_cache = index
        return index

    def __getitem__(self, name: str) -> str:
        if not isinstance(name, str):
            raise KeyError(name)
        entry = self._index.get(fold(name))
        if entry is None:
            raise KeyError(name)
        return ", ".join(entry[1])

    def get_all(self, name: str) -> list[str]:
        """Returns every value of the field `name`, in order (empty if absent)."""
        entry = self._index.get(fold(name)) if isinstance(name, str) else None
        return list(entry[1]) if entry else []

    def items_raw(self) -> list[tuple[str, str]]:
        """Returns the fields exactly as received: (name, value) pairs in order."""
        return list(self._fields)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and fold(name) in self._index

    def __iter__(self) -> Iterator[str]:
        return (entry[0] for entry in self._index.values())

    def __len__(self) -> int:
        return len(self._index)

    def __repr__(self) -> str:
        shown = [(n, MARKER if is_sensitive_header(n) else v) for n, v in self._fields]
        return f"Headers({shown!r})"


def _split_header_block(block: bytes) -> list[tuple[str, str]]:
    """The (name, value) fields of the engine's header block: ``name:value``
    lines, each ended by a line feed, decoded as ISO-8859-1 (as http.client
    does: nothing a server sends can fail to decode)."""
    fields = []
    for line in block.decode("latin-1").split("\n")[:-1]:
        name, _, value = line.partition(":")
        fields.append((name, value))
    return fields


def _check_headers(headers: HeadersInput) -> list[tuple[str, bytes]]:
    """Request header fields as (name, ISO-8859-1 bytes) pairs, each checked:
    TypeError for a non-str name or value, ValueError for a name that is not
    a token, a field the client manages, or a value with CR, LF or NUL."""
    if headers is None:
        return []
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    out: list[tuple[str, bytes]] = []
    for pair in pairs:
        try:
            name, value = pair
        except (TypeError, ValueError):
            # Not quoted: the malformed item may hold a credential.
            raise TypeError(
                f"headers must be a mapping or (name, value) pairs, got a {type(pair).__name__}"
                + (f" of {len(pair)} items" if isinstance(pair, (tuple, list)) else "")
            ) from None
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(
                f"header names and values must be str, got {type(name).__name__}: "
                f"{type(value).__name__} for {name!r}"
            )
        if not is_token(name):
            raise ValueError(f"invalid header name {name!r}")
        if fold(name) in _MANAGED_HEADERS:
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
