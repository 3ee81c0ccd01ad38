"""Retry budgets and adaptive throttling (:class:`RetryBudget`,
:class:`AdaptiveThrottle`), over the core's ``mulligan/budget/``.

A budget is shared by every decorated function given the same object; a
name makes it process-wide: a constructor called again with a name in use
and the same kind and options returns the first object, and with other
options raises ValueError naming them (as ``mulligan.circuit_breaker`` does
for breakers; since 0.4, before which the first options silently won). Successes that needed no retry
are counted on the hot path without a call into the engine (``tick()`` of a
``_core.Counter``, a raw C method, atomic under the GIL) and handed to the
engine when the budget is next asked (a failure, :meth:`RetryBudget.tokens`):
the ordering approximation of DESIGN.md section 2, documented in
``core/include/mulligan/budget/budget.h``.

.. versionadded:: 0.3.0
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional

import weakref

from .. import _core, _validate
from .._retry.state import STATE
from .._telemetry import metrics as _metrics

__all__ = ["AdaptiveThrottle", "RetryBudget"]

_lock = threading.Lock()
_budgets: dict[str, tuple["RetryBudget", tuple[Any, ...]]] = {}
_throttles: dict[str, tuple["AdaptiveThrottle", tuple[Any, ...]]] = {}
# The most an int64 engine field holds.
_INT64_MAX = 2**63 - 1


def _conflict(owner: str, name: str, had: tuple[Any, ...], asked: tuple[Any, ...]) -> ValueError:
    """The error for a name already in use with other options: ``had`` and
    ``asked`` are (kind, ((field, value), ...))."""
    if had[0] != asked[0]:
        return ValueError(f"{owner}: {name!r} is already a {had[0]} budget, asked for a {asked[0]} one")
    old, new = dict(had[1]), dict(asked[1])
    diff = ", ".join(f"{k}={old[k]!r} (asked {new[k]!r})" for k in old if old[k] != new[k])
    return ValueError(f"{owner}: {name!r} already exists with other options: {diff}")


def _real(owner: str, field: str, value: Any) -> float:
    """A real-number option (bool and str refused: TypeError naming it)."""
    return _validate.number(owner, field, value)


def _int(owner: str, field: str, value: Any) -> int:
    """An int option in the engine's int64 range (bool, str and floats
    refused: TypeError; out of range: ValueError naming it). The core
    checks the field's own range."""
    return _validate.integer(owner, field, value, -_INT64_MAX, _INT64_MAX, range_text="int64")
_live_budgets: "weakref.WeakSet[RetryBudget]" = weakref.WeakSet()


def _flush_budgets() -> None:
    """Hands every live budget's hot-path successes to the engine."""
    for budget in list(_live_budgets):
        budget._flush()


_metrics._add_flusher(_flush_budgets)


class RetryBudget:
    """A retry budget: how many retries calls may make, shared by every
    function (and client) that holds it. The first attempt of a call is never
    refused; a refused retry ends the call with its last failure (raised or
    returned as a give-up after the last attempt would be) and stop reason
    ``"budget"``. Build one with a constructor per kind:

    * :meth:`token_bucket` (gRPC A6 ``retryThrottling``),
    * :meth:`quota` (the AWS SDKs' standard-mode retry quota, 2020 numbers),
    * :meth:`ratio` (Finagle's ``RetryBudget``, Envoy's ``retry_budget``).

    Thread-safety: safe to share between threads and event loops.

    .. versionadded:: 0.3.0
    """

    __slots__ = ("_core", "_successes", "_flushed", "__weakref__")

    def __init__(self, core: Any) -> None:
        """Private: use a constructor per kind."""
        self._core = core
        # The hot-path successes (the retry decorator's first-attempt
        # successes tick it), handed to the engine by _flush.
        self._successes = _core.Counter()
        self._flushed = 0
        # Exported by the metrics (0.4); their reads flush the hot-path ticks.
        _core.metrics_track(core)
        _live_budgets.add(self)

    @staticmethod
    def _named(name: str, key: tuple[Any, ...], make: Callable[[], Any]) -> "RetryBudget":
        """The budget named ``name`` (a new one when unnamed): ``key`` is
        (kind, ((field, value), ...)); another key under a name in use
        raises ValueError naming what differs."""
        if not isinstance(name, str):
            raise TypeError(f"RetryBudget: name must be a str, got {name!r}")
        if not name:
            return RetryBudget(make())
        with _lock:
            entry = _budgets.get(name)
            if entry is None:
                budget = RetryBudget(make())
                _budgets[name] = (budget, key)
                return budget
            if entry[1] != key:
                raise _conflict("mulligan.RetryBudget", name, entry[1], key)
            return entry[0]

    @classmethod
    def token_bucket(
        cls, max_tokens: float = 100.0, token_ratio: float = 0.5, *, name: str = ""
    ) -> "RetryBudget":
        """gRPC A6 ``retryThrottling``: tokens start at ``max_tokens`` (in (0,
        1000]); a retryable failure takes 1, a success adds ``token_ratio``
        (>= 0.001; 3 decimal places kept), clamped to [0, max_tokens]; a retry
        is allowed only while tokens > max_tokens / 2. ValueError names a bad
        field."""
        owner = "mulligan.RetryBudget.token_bucket"
        m, r = _real(owner, "max_tokens", max_tokens), _real(owner, "token_ratio", token_ratio)
        key = ("token_bucket", (("max_tokens", m), ("token_ratio", r)))
        return cls._named(name, key, lambda: _core.RetryBudget.token_bucket(m, r, name))

    @classmethod
    def quota(
        cls,
        capacity: int = 500,
        retry_cost: int = 5,
        timeout_cost: int = 10,
        throttling_cost: int = 5,
        no_retry_increment: int = 1,
        *,
        name: str = "",
    ) -> "RetryBudget":
        """The AWS SDKs' standard retry mode quota (2020 numbers, the default
        of botocore, the Java SDK v2, aws-sdk-js-v3 and aws-sdk-go-v2): a
        retry takes ``retry_cost``, after a timeout ``timeout_cost``, after a
        throttling answer (429, 503) ``throttling_cost``; refused when less
        capacity is left; a success refunds its last retry's cost, or adds
        ``no_retry_increment`` when it needed none. The 2026 revision (opt-in
        through AWS_NEW_RETRIES_2026): ``retry_cost=14, timeout_cost=14,
        throttling_cost=5``. ``capacity`` > 0, costs >= 0."""
        owner = "mulligan.RetryBudget.quota"
        fields = (("capacity", capacity), ("retry_cost", retry_cost), ("timeout_cost", timeout_cost),
                  ("throttling_cost", throttling_cost), ("no_retry_increment", no_retry_increment))
        values = tuple((f, _int(owner, f, v)) for f, v in fields)
        cap, retry, timeout, throttling, no_retry = (v for _, v in values)
        return cls._named(name, ("quota", values), lambda: _core.RetryBudget.quota(
            cap, retry, timeout, throttling, no_retry, name))

    @classmethod
    def ratio(
        cls,
        ttl: float = 10.0,
        percent: float = 0.2,
        min_retries_per_second: float = 10.0,
        *,
        name: str = "",
    ) -> "RetryBudget":
        """Finagle's ``RetryBudget``: retries at most ``percent`` (in [0, 1])
        of the calls seen in the last ``ttl`` seconds (in [1, 60]), plus a
        floor of ``min_retries_per_second`` (>= 0)."""
        owner = "mulligan.RetryBudget.ratio"
        tl = _validate.seconds(owner, "ttl", ttl)
        pc = _real(owner, "percent", percent)
        floor = _real(owner, "min_retries_per_second", min_retries_per_second)
        key = ("ratio", (("ttl", tl), ("percent", pc), ("min_retries_per_second", floor)))
        return cls._named(name, key, lambda: _core.RetryBudget.ratio(tl, pc, floor, name, STATE.now()))

    def _flush(self) -> None:
        """Hands the successes counted since the last flush to the engine."""
        total = self._successes.value
        if total > self._flushed:
            self._core.add_successes(total - self._flushed)
            self._flushed = total

    def tokens(self) -> float:
        """The room left now: tokens (token bucket), capacity (quota), or
        retries available (ratio)."""
        self._flush()
        return float(self._core.tokens(STATE.now()))

    @property
    def kind(self) -> str:
        """``"token_bucket"``, ``"quota"`` or ``"ratio"``."""
        return str(self._core.kind)

    @property
    def name(self) -> str:
        return str(self._core.name)

    @property
    def refused(self) -> int:
        """Retries refused so far."""
        return int(self._core.refused)

    @property
    def allowed(self) -> int:
        """Retries granted so far."""
        return int(self._core.allowed)

    def __repr__(self) -> str:
        return f"<mulligan.RetryBudget {self.kind} name={self.name!r}>"


class AdaptiveThrottle:
    """Client-side adaptive throttling (Google SRE book, "Handling
    Overload"): over the last ``window`` seconds (default 120) the client
    counts requests (every attempt, retries and its own rejections included)
    and accepts (every answer that is not an overload answer: a 429 or 503,
    gRPC RESOURCE_EXHAUSTED or UNAVAILABLE, a refused connection), and
    rejects a new attempt locally with probability
    ``max(0, (requests - k * accepts) / (requests + 1))``. ``k`` >= 1
    (default 2). A rejection raises :class:`mulligan.ThrottledError` (never
    retried). ``seed`` makes the draws reproducible.

    Thread-safety: safe to share between threads and event loops.

    .. versionadded:: 0.3.0
    """

    __slots__ = ("_core", "__weakref__")
    _core: Any

    def __new__(
        cls, window: float = 120.0, k: float = 2.0, *, seed: Optional[int] = None, name: str = ""
    ) -> "AdaptiveThrottle":
        if not isinstance(name, str):
            raise TypeError(f"AdaptiveThrottle: name must be a str, got {name!r}")
        owner = "mulligan.AdaptiveThrottle"
        w = _validate.seconds(owner, "window", window)
        kk = _real(owner, "k", k)
        if seed is not None:
            seed = _validate.integer(owner, "seed", seed, 0, 2**64 - 1, range_text="[0, 2**64)")
        key = ("throttle", (("window", w), ("k", kk), ("seed", seed)))
        with _lock:
            entry = _throttles.get(name) if name else None
            if entry is not None:
                if entry[1] != key:
                    raise _conflict(owner, name, entry[1], key)
                return entry[0]
            self = super().__new__(cls)
            self._core = _core.AdaptiveThrottle(w, kk, seed, name)
            _core.metrics_track(self._core)
            if name:
                _throttles[name] = (self, key)
            return self

    def probability(self) -> float:
        """The rejection probability now."""
        return float(self._core.probability(STATE.now()))

    @property
    def name(self) -> str:
        return str(self._core.name)

    @property
    def rejected(self) -> int:
        """Attempts rejected so far."""
        return int(self._core.rejected)

    def __repr__(self) -> str:
        return f"<mulligan.AdaptiveThrottle name={self.name!r}>"


def _clear() -> None:
    """Forgets every named budget and throttle (mulligan.testing)."""
    with _lock:
        _budgets.clear()
        _throttles.clear()
