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
from typing import Any, Dict, Iterator, List, Optional, Tuple

from .. import _core, _validate
from .breaker import CircuitBreaker, _core_kwargs, _matcher

__all__ = ["BreakerRegistry", "breakers", "circuit_breaker"]

_OWNER = "mulligan.BreakerRegistry"

# The options a breaker takes besides its name, with their defaults.
_PARAMETERS = {
    k: v.default
    for k, v in inspect.signature(CircuitBreaker.__init__).parameters.items()
    # state/poll_interval (0.6): sharing through Redis is per breaker, not
    # a registry option yet.
    if k not in ("self", "name", "state", "poll_interval")
}
# Those that are not the core's (kept by the Python wrapper).
_PYTHON_ONLY = ("failure_on", "ignore_on", "clock")


def _normalized(options: Dict[str, Any]) -> Dict[str, Any]:
    """Every option of a breaker configured with `options` (defaults filled
    in, durations as float seconds, so ``timedelta(seconds=1)`` equals
    ``1.0``); raises TypeError for an unknown option and ValueError or
    TypeError for a bad value, as CircuitBreaker would."""
    unknown = set(options) - set(_PARAMETERS)
    if unknown:
        raise TypeError(f"unknown breaker options: {sorted(unknown)}")
    full = dict(_PARAMETERS)
    full.update(options)
    core = {k: v for k, v in full.items() if k not in _PYTHON_ONLY}
    normalized = _core_kwargs(_OWNER, **core)
    for k in _PYTHON_ONLY:
        normalized[k] = full[k]
    return normalized


def _differences(a: Dict[str, Any], b: Dict[str, Any]) -> List[str]:
    """The option names whose values differ (compared with ==), with both
    values: ``["failure_threshold (3 != 5)"]``."""
    return [f"{k} ({a[k]!r} != {b[k]!r})" for k in sorted(a) if a[k] != b[k]]


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

    A name can also get its own configuration with :meth:`get_or_create`
    (``circuit_breaker(name, **options)``); such breakers are held for the
    registry's lifetime and never evicted.

    Configuration is fixed once breakers are in use: :meth:`configure`
    raises while any breaker of the shared configuration is referenced, and
    assigning an attribute raises :class:`AttributeError`, so a name never
    has two live breakers and a change never silently does nothing.

    Thread-safety: thread-safe.

    .. versionadded:: 0.1.0
    """

    _max_breakers: int

    def __init__(self, *, max_breakers: int = 10000, **options: Any) -> None:
        self._lock = threading.Lock()
        self._named: Dict[str, Tuple[CircuitBreaker, Dict[str, Any]]] = {}
        self._live: "weakref.WeakValueDictionary[str, CircuitBreaker]" = (
            weakref.WeakValueDictionary()
        )
        self._set_max_breakers(max_breakers)
        self._configure(options)

    def _set_max_breakers(self, max_breakers: int) -> None:
        object.__setattr__(
            self,
            "_max_breakers",
            _validate.integer(_OWNER, "max_breakers", max_breakers, 1, 2**63 - 1),
        )

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        raise AttributeError(
            f"{_OWNER}.{name} cannot be set: change the shared configuration with "
            "configure(...), or give one name its own with get_or_create(name, ...)"
        )

    def _configure(self, options: Dict[str, Any]) -> None:
        normalized = _normalized(options)
        _matcher(normalized["failure_on"], "failure_on")
        _matcher(normalized["ignore_on"], "ignore_on")
        _validate.callable_or_none(_OWNER, "clock", normalized["clock"])
        core_options = {k: v for k, v in normalized.items() if k not in _PYTHON_ONLY}
        core = _core.BreakerRegistry(max_breakers=self._max_breakers, **core_options)
        self._failure_on = normalized["failure_on"]
        self._ignore_on = normalized["ignore_on"]
        self._clock = normalized["clock"]
        self._options = dict(options)
        self._shared = normalized
        self._core = core
        self._live = weakref.WeakValueDictionary()

    def configure(self, *, max_breakers: Optional[int] = None, **options: Any) -> None:
        """Replaces the shared configuration (the options of
        :class:`CircuitBreaker`; unset ones take their defaults).

        It takes effect for every name of the shared configuration: the
        breakers the registry holds that nobody references are dropped (their
        state and counts with them), and the next lookup of their name builds
        a breaker with the new configuration. Names given their own
        configuration by :meth:`get_or_create` keep it.

        Raises:
            RuntimeError: a breaker of the shared configuration is still
                referenced (a decorated function, a variable); replacing the
                configuration then would leave two live breakers under its
                name, one of them with the old configuration. The message
                names them. Configure before the first lookup.
            TypeError: an unknown option.
            ValueError: a bad value (nothing is changed).

        .. versionchanged:: 0.2.0
           Raises instead of leaving the breakers in use behind.
        """
        with self._lock:
            in_use = sorted(self._live.keys())
            if in_use:
                raise RuntimeError(
                    f"{_OWNER}.configure(): breakers in use: {in_use}; replacing the "
                    "configuration would leave two live breakers under each of these names. "
                    "Configure before the first lookup, or give a name its own configuration "
                    "with circuit_breaker(name, **options)"
                )
            previous = self._max_breakers
            if max_breakers is not None:
                self._set_max_breakers(max_breakers)
            try:
                self._configure(options)
            except BaseException:
                object.__setattr__(self, "_max_breakers", previous)
                raise

    def get_or_create(self, name: str, **options: Any) -> CircuitBreaker:
        """Returns the breaker named `name`, creating it with `options` (the
        options of :class:`CircuitBreaker`, unset ones at their defaults) when
        there is none.

        A second call for the same name must ask for the same configuration:
        options are compared after defaults are filled in and durations are
        converted to seconds (``timedelta(seconds=30)`` equals ``30.0``), and
        ``failure_on``, ``ignore_on`` and ``clock`` with ``==``. A name that
        already has a breaker of the registry's shared configuration is
        compared with that configuration. Breakers created here are held for
        the registry's lifetime (never evicted) and appear in iteration.

        Raises:
            ValueError: `name` is empty, an option is out of range, or the
                name already has a breaker with a different configuration
                (the message names each differing option and both values).
            TypeError: an unknown option or a wrong type.

        .. versionadded:: 0.2.0
        """
        _validate.name(_OWNER, "name", name)
        wanted = _normalized(options)
        breaker: Optional[CircuitBreaker]
        with self._lock:
            held = self._named.get(name)
            if held is not None:
                breaker, configured = held
            else:
                breaker = self._live.get(name)
                if breaker is None:
                    core = self._core.find(name)
                    if core is not None:
                        breaker = CircuitBreaker._wrap(
                            core, self._failure_on, self._ignore_on, self._clock
                        )
                        self._live[name] = breaker
                configured = self._shared
            if breaker is not None:
                diff = _differences(wanted, configured)
                if diff:
                    raise ValueError(
                        f"circuit breaker {name!r} already exists with a different "
                        f"configuration: {', '.join(diff)} (requested != existing)"
                    )
                return breaker
            created = CircuitBreaker(name, **options)
            self._named[name] = (created, wanted)
            return created

    def get(self, name: str) -> CircuitBreaker:
        """Returns the breaker named `name`, creating it when there is none.

        Raises:
            ValueError: `name` is empty.
            mulligan.MulliganError: the registry is full of breakers in use.
        """
        _validate.name(_OWNER, "name", name)
        with self._lock:
            held = self._named.get(name)
            if held is not None:
                return held[0]
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
            held = self._named.get(name)
            if held is not None:
                return held[0]
            breaker = self._live.get(name)
            if breaker is None:
                core = self._core.find(name)
                if core is None:
                    return None
                breaker = CircuitBreaker._wrap(core, self._failure_on, self._ignore_on, self._clock)
                self._live[name] = breaker
            return breaker

    def __iter__(self) -> Iterator[CircuitBreaker]:
        with self._lock:
            named = [b for b, _ in self._named.values()]
        yield from named
        for name in self._core.names():
            breaker = self.find(name)
            if breaker is not None:
                yield breaker

    def __len__(self) -> int:
        return len(self._core) + len(self._named)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        return name in self._named or self._core.find(name) is not None


#: The process-wide registry used by :func:`circuit_breaker`.
breakers = BreakerRegistry()


def circuit_breaker(name: str, **options: Any) -> CircuitBreaker:
    """Returns the shared breaker `name` of :data:`mulligan.breakers`.

    Use it as a decorator (``@mulligan.circuit_breaker(name="db")``) or a
    context manager. Every use of one name gets the same breaker; a new
    lookup never resets it.

    Without options the breaker has the registry's shared configuration (set
    it with ``mulligan.breakers.configure(...)``), or the configuration the
    name was first given. With options (those of :class:`CircuitBreaker`:
    ``circuit_breaker("db", failure_threshold=3, reset_timeout=10.0)``) it is
    get-or-create: the first call builds the breaker with them, and a later
    call with a different configuration raises ValueError naming the
    differing options (:meth:`BreakerRegistry.get_or_create`), as Polly's
    registry refuses a second builder for one key.

    Raises:
        ValueError: an empty name, a bad option value, or a configuration
            that conflicts with the existing breaker of that name.
        TypeError: an unknown option.

    .. versionadded:: 0.1.0
    .. versionchanged:: 0.2.0 ``**options``.
    """
    if options:
        return breakers.get_or_create(name, **options)
    return breakers.get(name)
