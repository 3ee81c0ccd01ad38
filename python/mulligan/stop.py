"""Composable stop conditions for ``@mulligan.retry(stop=...)`` and ``mulligan.retrying``.

Conditions combine with ``|`` (stop when either says stop; tenacity's
``stop_any``) and ``&`` (stop when both do; ``stop_all``)::

    from mulligan import stop

    @mulligan.retry(on=ConnectionError, stop=stop.after_attempts(10) | stop.after_elapsed(30))
    def fetch() -> bytes: ...

A condition replaces ``attempts=``. It compiles, at decoration time, into the
engine's stop expression (``core/include/mulligan/retry/stop.h``); the engine
decides after every retryable failure. Only :func:`when` runs Python code: its
predicate is called on the failure path, before the engine decides, and its
answer is handed to the engine with the failure.

==================================  ============================================
``after_attempts(n)``               stop once n attempts were made (the first
                                    included): ``attempts=n``
``after_elapsed(seconds)``          stop when the call has run ``seconds``, or
                                    when the next wait would reach them; at the
                                    top of the condition it is also the call's
                                    deadline (it trims attempt timeouts)
``never``                           unlimited attempts; refused at decoration
                                    unless ``after_attempts``, ``after_elapsed``
                                    or ``deadline=`` bounds them
``when(predicate)``                 stop when ``predicate(StopContext)`` is true
==================================  ============================================

The stop reason of a call is ``attempts_exhausted``, ``deadline`` or
``stop_condition`` (for :func:`when`), from the condition that stopped it.

.. versionadded:: 0.2.0
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

from . import _core, _validate
from ._validate import Seconds

__all__ = [
    "Stop", "StopContext", "after_attempt", "after_attempts", "after_delay", "after_elapsed",
    "never", "when",
]

_OWNER = "mulligan.stop"


@dataclasses.dataclass(frozen=True)
class StopContext:
    """What a :func:`when` predicate sees after a retryable failure.

    Attributes:
        attempt: the attempt that just failed (1 for the first).
        elapsed: seconds since the call started.
        exception: the exception it raised, or None for a rejected result.
        result: the rejected result (``on_result``), or None.
    """

    __slots__ = ("attempt", "elapsed", "exception", "result")
    attempt: int
    elapsed: float
    exception: Optional[BaseException]
    result: Any


class Stop:
    """A composed stop condition: immutable and shareable. Build one with
    the factories of this module, combine with ``|`` and ``&``, and pass it
    as ``stop=`` to :func:`mulligan.retry` or :func:`mulligan.retrying`.
    """

    __slots__ = ("_kind", "_value", "_terms", "_text")

    def __init__(self, kind: str, value: Any, terms: tuple[Stop, ...], text: str) -> None:
        # Private: use the factories.
        self._kind = kind
        self._value = value
        self._terms = terms
        self._text = text

    def _combine(self, other: Stop, kind: str, op: str) -> Stop:
        terms: list[Stop] = []
        texts: list[str] = []
        for s in (self, other):
            if s._kind == kind:
                terms.extend(s._terms)
            else:
                terms.append(s)
            texts.append(s._text if s._kind in (kind, "leaf") else f"({s._text})")
        return Stop(kind, None, tuple(terms), op.join(texts))

    def __or__(self, other: object) -> Stop:
        if not isinstance(other, Stop):
            return NotImplemented
        return self._combine(other, "any", " | ")

    def __and__(self, other: object) -> Stop:
        if not isinstance(other, Stop):
            return NotImplemented
        return self._combine(other, "all", " & ")

    def __repr__(self) -> str:
        return f"<mulligan.stop {self._text}>"

    def _compile(self, predicates: list[Callable[[StopContext], Any]]) -> Any:
        """Returns the _core.Stop of this condition; appends each :func:`when`
        predicate to ``predicates`` (its slot is its index)."""
        kind, value = self._kind, self._value
        if kind == "engine":  # read back from a config file's policy
            return value
        if kind == "any":
            return _core.Stop.any([t._compile(predicates) for t in self._terms])
        if kind == "all":
            return _core.Stop.all([t._compile(predicates) for t in self._terms])
        name, arg = value
        if name == "when":
            if len(predicates) >= _core.MAX_STOP_PREDICATES:
                raise ValueError(
                    f"{_OWNER}: a stop condition holds at most {_core.MAX_STOP_PREDICATES} "
                    "when() predicates"
                )
            predicates.append(arg)
            return _core.Stop.predicate(len(predicates) - 1)
        if name == "after_attempts":
            return _core.Stop.after_attempts(arg)
        if name == "after_elapsed":
            return _core.Stop.after_elapsed(arg)
        return _core.Stop.never()


def _from_engine(engine: Any) -> Stop:
    """Wraps the engine's stop condition of a loaded policy (no predicates)."""
    return Stop("engine", engine, (), str(engine))


def _leaf(name: str, arg: Any, text: str) -> Stop:
    return Stop("leaf", (name, arg), (), text)


def after_attempts(attempts: int) -> Stop:
    """Stops once ``attempts`` attempts were made, the first included
    (tenacity's ``stop_after_attempt``).

    Raises:
        TypeError, ValueError: ``attempts`` is not an int >= 1.
    """
    n = _validate.attempts(_OWNER, "after_attempts", attempts)
    return _leaf("after_attempts", n, f"after_attempts({n})")


def after_elapsed(seconds: Seconds) -> Stop:
    """Stops when the call has run ``seconds`` (from the start of its first
    attempt), or when the next wait would reach them: no attempt starts at
    or after that point (tenacity's ``stop_before_delay``; DESIGN.md
    section 5's deadline rule).

    Raises:
        TypeError, ValueError: ``seconds`` is not a duration > 0.
    """
    s = _validate.seconds(_OWNER, "after_elapsed", seconds, positive=True)
    return _leaf("after_elapsed", s, f"after_elapsed({s:g})")


def when(predicate: Callable[[StopContext], Any]) -> Stop:
    """Stops when ``predicate(StopContext(...))`` returns a true value.

    The predicate runs on the failure path only, after each retryable
    failure and before the engine decides; an exception it raises
    propagates (the call ends with it). A predicate alone never bounds the
    attempts: combine it with ``after_attempts`` or ``after_elapsed`` (or
    give ``deadline=``).

    Raises:
        TypeError: ``predicate`` is not callable.
    """
    fn = _validate.function(_OWNER, "when", predicate)
    return _leaf("when", fn, f"when({getattr(fn, '__name__', 'predicate')})")


#: Unlimited attempts (tenacity's ``stop_never``); the decorator refuses it
#: unless a deadline or another condition bounds it.
never: Stop = _leaf("never", None, "never")

#: tenacity's spellings (STYLE.md's example): ``after_attempt`` is
#: :func:`after_attempts`; ``after_delay`` is :func:`after_elapsed`, which
#: also stops when the next wait would cross the limit (tenacity's
#: ``stop_before_delay``; its ``stop_after_delay`` would start one more
#: attempt past it).
after_attempt = after_attempts
after_delay = after_elapsed
