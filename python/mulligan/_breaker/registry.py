"""Breakers by name: :class:`BreakerRegistry`, :data:`breakers`, :func:`circuit_breaker`.

The registry of core breakers is the C++ one (bounded, least recently used
idle breakers evicted); this module keeps one live :class:`CircuitBreaker`
per name on top of it, so every lookup of a name shares one state machine.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import inspect
import threading
import weakref
from typing import Any, Dict, Iterator, Optional

from .. import _core, _validate
from .breaker import CircuitBreaker, _core_kwargs, _matcher

__all__ = ["BreakerRegistry", "breakers", "circuit_breaker"]

_OWNER = "mulligan.BreakerRegistry"


class BreakerRegistry:
    """Breakers by name with one shared configuration (Polly's registry).

    :meth:`get` returns the breaker for a name, creating it on first use; a
    later lookup never resets or reconfigures it. The registry holds at most
    ``max_breakers`` core breakers: when full, the least recently used idle
    closed one no Python object refers to is evicted. Iterating yields the
    live breakers, most recently used first (for metrics).

    Args:
        max_breakers: the bound. Default 10,000.
        **options: the :class:`CircuitBreaker` options every breaker gets
            (``failure_on``, ``ignore_on`` and ``clock`` included).

    Thread-safety: thread-safe.

    .. versionadded:: 0.1.0
    """

    def __init__(self, *, max_breakers: int = 10000, **options: Any) -> None:
        self._max_breakers = _validate.integer(_OWNER, "max_breakers", max_breakers, 1, 2**63 - 1)
        self._configure(options)

    def _configure(self, options: Dict[str, Any]) -> None:
        options = dict(options)
        self._failure_on = options.pop("failure_on", Exception)
        self._ignore_on = options.pop("ignore_on", None)
        self._clock = options.pop("clock", None)
        _matcher(self._failure_on, "failure_on")
        _matcher(self._ignore_on, "ignore_on")
        defaults = inspect.signature(CircuitBreaker.__init__).parameters
        unknown = set(options) - set(defaults)
        if unknown:
            raise TypeError(f"unknown breaker options: {sorted(unknown)}")
        skip = ("self", "name", "failure_on", "ignore_on", "clock")
        core_options = {k: v.default for k, v in defaults.items() if k not in skip}
        core_options.update(options)
        self._options = options
        self._core = _core.BreakerRegistry(
            max_breakers=self._max_breakers, **_core_kwargs(_OWNER, **core_options)
        )
        self._lock = threading.Lock()
        self._live: "weakref.WeakValueDictionary[str, CircuitBreaker]" = (
            weakref.WeakValueDictionary()
        )

    def configure(self, *, max_breakers: Optional[int] = None, **options: Any) -> None:
        """Replaces the shared configuration (for breakers created later).

        Existing breakers are dropped from the registry: callers holding them
        keep them, and the next lookup of their name builds a new one.
        """
        with self._lock:
            if max_breakers is not None:
                self._max_breakers = _validate.integer(
                    _OWNER, "max_breakers", max_breakers, 1, 2**63 - 1
                )
            self._configure(options)

    def get(self, name: str) -> CircuitBreaker:
        """Returns the breaker named `name`, creating it when there is none.

        Raises:
            ValueError: `name` is empty.
            mulligan.MulliganError: the registry is full of breakers in use.
        """
        _validate.name(_OWNER, "name", name)
        with self._lock:
            breaker = self._live.get(name)
            if breaker is None:
                breaker = CircuitBreaker._wrap(
                    self._core.get(name), self._failure_on, self._ignore_on, self._clock
                )
                self._live[name] = breaker
            return breaker

    def find(self, name: str) -> Optional[CircuitBreaker]:
        """Returns the breaker named `name`, or None; never creates one."""
        with self._lock:
            breaker = self._live.get(name)
            if breaker is None:
                core = self._core.find(name)
                if core is None:
                    return None
                breaker = CircuitBreaker._wrap(core, self._failure_on, self._ignore_on, self._clock)
                self._live[name] = breaker
            return breaker

    def __iter__(self) -> Iterator[CircuitBreaker]:
        for name in self._core.names():
            breaker = self.find(name)
            if breaker is not None:
                yield breaker

    def __len__(self) -> int:
        return len(self._core)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._core.find(name) is not None


#: The process-wide registry used by :func:`circuit_breaker`.
breakers = BreakerRegistry()


def circuit_breaker(name: str) -> CircuitBreaker:
    """Returns the shared breaker `name` of :data:`mulligan.breakers`.

    Use it as a decorator (``@mulligan.circuit_breaker(name="db")``) or a
    context manager. Every use of one name gets the same breaker, built with
    the registry's shared configuration (set it with
    ``mulligan.breakers.configure(...)``); a new lookup never resets it.

    .. versionadded:: 0.1.0
    """
    return breakers.get(name)
