"""Composable waits for ``@mulligan.retry(wait=...)`` and ``mulligan.retrying``.

Each factory returns a :class:`Wait`; waits add up with ``+`` (tenacity's
``wait_a + wait_b``), and :func:`chain` picks one per retry::

    from mulligan import wait

    @mulligan.retry(on=ConnectionError, wait=wait.exponential(base=0.1, max=5) + wait.jitter(1))
    def fetch() -> bytes: ...

Nothing here computes a delay: a wait compiles, at decoration time, into the
engine's wait expression (``core/include/mulligan/retry/wait.h``), which the
engine evaluates with the policy's seeded generator, so a C, C++ or config
file policy with the same terms waits exactly as long. The policy then
clamps the whole value to ``[min_delay, max_delay]`` of the decorator
(defaults 0 and 10 s), after every jitter term. With n = retries already
made (0 before the first retry), in seconds:

==========================================  ======================================
``constant(d)``                             d
``linear(start, increment, max=None)``      min(start + increment * n, max)
``exponential(base, multiplier, max=None)`` min(base * multiplier ** n, max)
``uniform(min, max)``                       a uniform draw in [min, max)
``jitter(max)``                             a uniform draw in [0, max), to add
``a + b``                                   a + b (draws in the order written)
``chain(a, b, c)``                          a before retry 1, b before retry 2,
                                            c before every later retry
==========================================  ======================================

Peers: tenacity's ``wait_fixed``, ``wait_incrementing(start, increment, max)``,
``wait_exponential(multiplier=m, exp_base=b, max=x)`` (here
``exponential(base=m, multiplier=b, max=x)``: mulligan counts n from 0, so
the first wait is ``base``), ``wait_random(min, max)``, ``wait_chain``;
urllib3's ``backoff_jitter`` (``+ wait.jitter(j)``); stamina's
``wait_initial``, ``wait_exp_base``, ``wait_max``, ``wait_jitter``.

Every duration is float seconds or a :class:`datetime.timedelta`.

.. versionadded:: 0.2.0
"""

from __future__ import annotations

from typing import Any, Optional

from . import _core, _validate
from ._validate import Seconds

__all__ = ["Wait", "chain", "constant", "exponential", "jitter", "linear", "uniform"]

_OWNER = "mulligan.wait"


def _fmt(seconds: float) -> str:
    return f"{seconds:g}"


class Wait:
    """A composed wait: immutable, hashable by identity, shareable between
    decorators and threads. Build one with the factories of this module and
    combine them with ``+``; pass it as ``wait=`` to :func:`mulligan.retry`
    or :func:`mulligan.retrying`.
    """

    __slots__ = ("_engine", "_text")

    def __init__(self, engine: Any, text: str) -> None:
        # Private: use the factories. `engine` is the compiled _core.Wait.
        self._engine = engine
        self._text = text

    def __add__(self, other: object) -> Wait:
        if not isinstance(other, Wait):
            return NotImplemented
        return Wait(_core.Wait.sum([self._engine, other._engine]), f"{self._text} + {other._text}")

    def __radd__(self, other: object) -> Wait:
        # sum([wait.constant(1), wait.jitter(1)]) starts from 0.
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        return NotImplemented

    def __repr__(self) -> str:
        return f"<mulligan.wait {self._text}>"


def _from_engine(engine: Any) -> Wait:
    """Wraps the engine's wait of a loaded policy."""
    return Wait(engine, str(engine))


def _engine_of(value: Any, field: str) -> Any:
    if not isinstance(value, Wait):
        raise TypeError(f"{_OWNER}: {field} must be a mulligan.wait.Wait, got {value!r}")
    return value._engine


def constant(seconds: Seconds) -> Wait:
    """Returns a wait of ``seconds`` before every retry (tenacity's ``wait_fixed``).

    Raises:
        TypeError, ValueError: ``seconds`` is not a duration >= 0.
    """
    d = _validate.seconds(_OWNER, "constant", seconds)
    return Wait(_core.Wait.constant(d), f"constant({_fmt(d)})")


def linear(start: Seconds = 0.0, increment: Seconds = 1.0, max: Optional[Seconds] = None) -> Wait:
    """Returns ``start + increment * n`` seconds, at most ``max`` (tenacity's
    ``wait_incrementing``; n = retries already made).

    Args:
        start: the first wait, seconds >= 0 (default 0).
        increment: added per retry, seconds >= 0 (default 1).
        max: this term's own cap, seconds >= 0, or None (default): only the
            policy's max_delay caps it.

    Raises:
        TypeError, ValueError: an argument is not a duration >= 0.
    """
    s = _validate.seconds(_OWNER, "linear start", start)
    i = _validate.seconds(_OWNER, "linear increment", increment)
    m = _validate.seconds_or_none(_OWNER, "linear max", max)
    cap = "" if m is None else f", max={_fmt(m)}"
    return Wait(_core.Wait.linear(s, i, m), f"linear({_fmt(s)}, {_fmt(i)}{cap})")


def exponential(base: Seconds = 0.2, multiplier: float = 2.0, max: Optional[Seconds] = None) -> Wait:
    """Returns ``base * multiplier ** n`` seconds, at most ``max``.

    base 0 or multiplier 0 means no wait at every n (DESIGN.md section 5).

    Args:
        base: the first wait, seconds >= 0 (default 0.2, as ``base_delay``).
        multiplier: the growth per retry, finite and >= 0 (default 2).
        max: this term's own cap (before any jitter added to it), seconds
            >= 0, or None (default): only the policy's max_delay caps it.

    Raises:
        TypeError, ValueError: an argument is out of its range.
    """
    b = _validate.seconds(_OWNER, "exponential base", base)
    mult = _validate.number(_OWNER, "exponential multiplier", multiplier)
    if not 0.0 <= mult < float("inf"):
        raise ValueError(f"{_OWNER}: exponential multiplier must be a finite number >= 0, got {multiplier!r}")
    m = _validate.seconds_or_none(_OWNER, "exponential max", max)
    cap = "" if m is None else f", max={_fmt(m)}"
    return Wait(_core.Wait.exponential(b, mult, m), f"exponential({_fmt(b)}, {mult:g}{cap})")


def uniform(min: Seconds, max: Seconds) -> Wait:
    """Returns a uniform random wait in ``[min, max)`` seconds, drawn afresh
    before every retry (tenacity's ``wait_random``).

    Raises:
        TypeError, ValueError: a bound is not a duration >= 0, or max < min.
    """
    low = _validate.seconds(_OWNER, "uniform min", min)
    high = _validate.seconds(_OWNER, "uniform max", max)
    if high < low:
        raise ValueError(f"{_OWNER}: uniform max must be >= min, got min {low!r} and max {high!r}")
    return Wait(_core.Wait.uniform(low, high), f"uniform({_fmt(low)}, {_fmt(high)})")


def jitter(max: Seconds) -> Wait:
    """Returns a uniform random wait in ``[0, max)`` seconds, meant to be
    added to another wait (urllib3's ``backoff_jitter``, stamina's
    ``wait_jitter``; tenacity's ``wait_exponential_jitter`` is
    ``exponential(...) + jitter(...)``).

    Raises:
        TypeError, ValueError: ``max`` is not a duration >= 0.
    """
    m = _validate.seconds(_OWNER, "jitter max", max)
    return Wait(_core.Wait.jitter(m), f"jitter({_fmt(m)})")


def chain(*waits: Wait) -> Wait:
    """Returns the first wait before retry 1, the second before retry 2, ...,
    and the last before every later retry (tenacity's ``wait_chain``). A
    chosen wait still sees the call's n (an exponential third term starts at
    ``base * multiplier ** 2``).

    Raises:
        TypeError: an argument is not a Wait. ValueError: no wait given, or
        more than 64.
    """
    if not waits:
        raise ValueError(f"{_OWNER}: chain needs at least one wait")
    if len(waits) > 64:
        raise ValueError(f"{_OWNER}: chain holds at most 64 waits, got {len(waits)}")
    engines = [_engine_of(w, f"chain argument {i + 1}") for i, w in enumerate(waits)]
    return Wait(_core.Wait.chain(engines), "chain(" + ", ".join(w._text for w in waits) + ")")
