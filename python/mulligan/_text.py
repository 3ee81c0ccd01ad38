"""Small text helpers shared by every part: one copy each.

The Python twin of core/src/internal/ (ascii.h, format.h): RFC 9110 tokens,
ASCII case folding of field names, and seconds as error messages print them.
Pure Python; imports nothing from the package.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from typing import AnyStr

__all__ = ["fold", "format_seconds", "is_token"]

# tchar of RFC 9110 section 5.6.2: what a method or a field name is made of.
_TOKEN_CHARS = frozenset(
    "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)
# str.lower() folds non-ASCII letters too (the Kelvin sign U+212A becomes "k"),
# which field names, compared case-insensitively in ASCII only, must not do.
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def is_token(text: str) -> bool:
    """Returns True when ``text`` is a non-empty RFC 9110 token (section 5.6.2):
    the shape of an HTTP method and of a header field name."""
    return bool(text) and all(c in _TOKEN_CHARS for c in text)


def fold(name: AnyStr) -> AnyStr:
    """Returns ``name`` with ASCII letters lower-cased, and nothing else changed.

    Header field names are case-insensitive in ASCII only (RFC 9110 section
    5.1): compare ``fold(a) == fold(b)``, and key dictionaries by ``fold(name)``.
    Works on str and on bytes (whose ``lower`` is ASCII-only already).
    """
    if isinstance(name, bytes) or name.isascii():
        return name.lower()
    return name.translate(_ASCII_LOWER)


def format_seconds(seconds: float) -> str:
    """Returns a duration as messages print it: ``"1.5 s"``, ``"0.001 s"``, ``"inf s"``."""
    return f"{seconds:g} s"
