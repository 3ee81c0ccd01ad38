"""Argument checks: one helper per kind of argument, each with one error text.

Every front door (``@retry``, ``retrying``, :class:`CircuitBreaker` and the
registry, the HTTP clients, :class:`IdempotencyStore`, the configuration
loader, :mod:`mulligan.testing`) checks its arguments with these, so the same
mistake reads the same everywhere::

    mulligan.retry: deadline must be a number of seconds or a datetime.timedelta, got 'x'
    mulligan.IdempotencyStore: ttl must be > 0 seconds, got -1

Each helper takes ``owner`` (the front door, e.g. ``"mulligan.retry"``) and
``field`` (the argument as the caller spelled it), raises :class:`TypeError`
for a value of the wrong type and :class:`ValueError` for one out of range,
and returns the value normalised (durations as float seconds). Ranges that
depend on several fields at once (``max_reset_timeout >= reset_timeout``)
stay with the core, which checks every option again and names the field.

Pure Python; imports nothing from the package.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import datetime
import math
import numbers
from typing import Any, Callable, Optional, Union

__all__ = [
    "INT_MAX",
    "UNSET",
    "Seconds",
    "attempts",
    "callable_or_none",
    "flag",
    "flag_or_none",
    "function",
    "integer",
    "integer_or_none",
    "name",
    "name_or_none",
    "number",
    "percentage",
    "probability",
    "seconds",
    "seconds_or_none",
]

#: A duration argument: seconds (an int or a float) or a datetime.timedelta.
Seconds = Union[float, datetime.timedelta]

#: The largest count the core takes (a C int): attempts, thresholds, sizes.
INT_MAX = 2**31 - 1


class _Unset:
    """The default of an argument that was not given: "use the policy's (or
    the client's) value". Its repr keeps signatures readable in help()."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<default>"


#: The one "not given" sentinel of every front door.
UNSET: Any = _Unset()


def _or_none(optional: bool) -> str:
    return " or None" if optional else ""


# -- durations -------------------------------------------------------------------


def _seconds(owner: str, field: str, value: Any, positive: bool, optional: bool) -> float:
    if isinstance(value, datetime.timedelta):
        result = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{owner}: {field} must be a number of seconds or a datetime.timedelta"
            f"{_or_none(optional)}, got {value!r}"
        )
    else:
        result = float(value)
    if not math.isfinite(result):
        raise ValueError(f"{owner}: {field} must be a finite number of seconds, got {value!r}")
    if positive and not result > 0:
        raise ValueError(f"{owner}: {field} must be > 0 seconds, got {value!r}")
    if result < 0:
        raise ValueError(f"{owner}: {field} must be >= 0 seconds, got {value!r}")
    return result


def seconds(owner: str, field: str, value: Any, *, positive: bool = False) -> float:
    """Returns a duration argument as float seconds.

    Accepts an int, a float (any :class:`numbers.Real`) or a
    :class:`datetime.timedelta`. Rejects bool (TypeError: ``True`` is no
    duration), NaN and infinities, negatives, and with ``positive`` zero too
    (ValueError).
    """
    return _seconds(owner, field, value, positive, False)


def seconds_or_none(owner: str, field: str, value: Any, *, positive: bool = False) -> Optional[float]:
    """Like :func:`seconds`, with None meaning "none" (no deadline, no timeout)."""
    if value is None:
        return None
    return _seconds(owner, field, value, positive, True)


# -- numbers ---------------------------------------------------------------------


def _integer(
    owner: str,
    field: str,
    value: Any,
    minimum: int,
    maximum: int,
    range_text: Optional[str],
    optional: bool,
) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}: {field} must be an int{_or_none(optional)}, got {value!r}")
    if minimum <= value <= maximum:
        return value
    if range_text is not None:
        raise ValueError(f"{owner}: {field} must be in {range_text}, got {value}")
    if value < minimum:
        raise ValueError(f"{owner}: {field} must be >= {minimum}, got {value}")
    raise ValueError(f"{owner}: {field} must be <= {maximum}, got {value}")


def integer(
    owner: str,
    field: str,
    value: Any,
    minimum: int,
    maximum: int,
    *,
    range_text: Optional[str] = None,
) -> int:
    """Returns an int argument in [minimum, maximum] (bool is refused).

    Out of range, the ValueError says the bound crossed (``must be >= 1``,
    ``must be <= 1024``), or, with ``range_text`` (e.g. ``"[0, 2**64)"``),
    the whole range as the field's documentation spells it.
    """
    return _integer(owner, field, value, minimum, maximum, range_text, False)


def integer_or_none(
    owner: str,
    field: str,
    value: Any,
    minimum: int,
    maximum: int,
    *,
    range_text: Optional[str] = None,
) -> Optional[int]:
    """Like :func:`integer`, with None allowed (and returned)."""
    if value is None:
        return None
    return _integer(owner, field, value, minimum, maximum, range_text, True)


def attempts(owner: str, field: str, value: Any) -> int:
    """Returns a number of attempts (the first included): an int in [1, INT_MAX]."""
    return _integer(owner, field, value, 1, INT_MAX, f"[1, {INT_MAX}]", False)


def number(owner: str, field: str, value: Any) -> float:
    """Returns a real-number argument (a multiplier, a factor) as a float.

    Only the type is checked here (bool is refused); the core checks the
    field's range and names it.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {field} must be a number, got {value!r}")
    return float(value)


def probability(owner: str, field: str, value: Any) -> float:
    """Returns a fraction argument in [0, 1] as a float (NaN is refused)."""
    result = number(owner, field, value)
    if not 0.0 <= result <= 1.0:
        raise ValueError(f"{owner}: {field} must be in [0, 1], got {value!r}")
    return result


def percentage(owner: str, field: str, value: Any) -> float:
    """Returns a percentage argument in (0, 100] as a float (NaN is refused)."""
    result = number(owner, field, value)
    if not 0.0 < result <= 100.0:
        raise ValueError(f"{owner}: {field} must be in (0, 100], got {value!r}")
    return result


# -- flags, names, callables ---------------------------------------------------------


def flag(owner: str, field: str, value: Any) -> bool:
    """Returns a bool argument; anything else (1, "yes") is a TypeError."""
    if not isinstance(value, bool):
        raise TypeError(f"{owner}: {field} must be a bool, got {value!r}")
    return value


def flag_or_none(owner: str, field: str, value: Any) -> Optional[bool]:
    """Like :func:`flag`, with None meaning "the default"."""
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"{owner}: {field} must be a bool or None, got {value!r}")
    return value


def name(owner: str, field: str, value: Any) -> str:
    """Returns a str argument: a name (of a breaker, a policy, a block) or a
    keyword such as a backoff kind, which the core then checks."""
    if not isinstance(value, str):
        raise TypeError(f"{owner}: {field} must be a str, got {value!r}")
    return value


def name_or_none(owner: str, field: str, value: Any) -> Optional[str]:
    """Like :func:`name`, with None allowed (and returned)."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{owner}: {field} must be a str or None, got {value!r}")
    return value


def function(owner: str, field: str, value: Any) -> Callable[..., Any]:
    """Returns a callable argument (a clock, a hook, a listener)."""
    if not callable(value):
        raise TypeError(f"{owner}: {field} must be a callable, got {value!r}")
    return value  # type: ignore[no-any-return]


def callable_or_none(owner: str, field: str, value: Any) -> Optional[Callable[..., Any]]:
    """Like :func:`function`, with None meaning "none"."""
    if value is not None and not callable(value):
        raise TypeError(f"{owner}: {field} must be a callable or None, got {value!r}")
    return value  # type: ignore[no-any-return]
