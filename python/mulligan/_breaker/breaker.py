"""The circuit breaker: :class:`CircuitBreaker` and :class:`BreakerTransition`.

A breaker fails fast while a dependency is down (DESIGN.md section 4): after
``failure_threshold`` consecutive failures (or a failure rate over a sliding
window) it opens and refuses calls with :class:`mulligan.CircuitOpenError`;
after ``reset_timeout`` it lets ``half_open_max_calls`` probes through, and
closes or reopens on their results. The state machine is the C++ core's; this
module only acquires a permit before the call and records the result after it::

    import mulligan

    db = mulligan.CircuitBreaker("db", failure_threshold=3, reset_timeout=10.0)

    @db
    def query(sql: str) -> list[Row]: ...

    @mulligan.circuit_breaker(name="payments")   # shared, by name
    async def charge(amount: int) -> Receipt: ...

    with db:                                      # or `async with db:`
        run_block()

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import inspect
import logging
import threading
import weakref
from time import monotonic as _monotonic
from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Dict,
    Optional,
    Tuple,
    Type,
    TypeVar,
    Union,
    cast,
)

from .. import _core, _validate
from .._state.redis import LOGGER as STATE_LOGGER
from .._state.redis import RedisState, _core_state
from .._validate import Seconds
from .events import BreakerCallEvent, BreakerTrip

__all__ = ["BreakerTransition", "CircuitBreaker"]

LOGGER = logging.getLogger("mulligan")

F = TypeVar("F", bound=Callable[..., Any])
ExceptionFilter = Union[
    Type[BaseException], Tuple[Type[BaseException], ...], Callable[[BaseException], bool]
]

# Never counted, whatever failure_on says (DESIGN.md section 4): the caller
# went away, not the dependency. asyncio.CancelledError is a BaseException.
_NEVER_COUNTED = (KeyboardInterrupt, SystemExit, GeneratorExit, asyncio.CancelledError)
# Timeouts always count as failures (unless ignore_on names them).
_TIMEOUTS = (TimeoutError, asyncio.TimeoutError)

_SUCCESS, _FAILURE, _IGNORED = 0, 1, 2

_OWNER = "mulligan.CircuitBreaker"

# The permits of the `with breaker:` / `async with breaker:` blocks open in a
# thread or task are kept by the native base class, _core.BreakerBase
# (bindings/python/bind_breaker_block.cc): one module-level context variable
# for every breaker (a variable per breaker stayed reachable after the
# registry evicted the breaker, about 200 bytes each, without bound), holding
# a native stack per thread and per asyncio task, innermost block last. Its
# __enter__/__exit__ are native, so a block costs about what the decorator
# costs (issue 19).


@dataclass(frozen=True)
class BreakerTransition:
    """A state change of a breaker, as given to listeners.

    Attributes:
        name: the breaker's name.
        from_state: the state before, one of ``"closed"``, ``"open"``,
            ``"half_open"``, ``"forced_open"``, ``"disabled"``, ``"metrics_only"``.
        to_state: the state after.
        reason: why: ``"failure_threshold"``, ``"failure_rate"``,
            ``"slow_call_rate"``, ``"reset_timeout_elapsed"``,
            ``"probe_succeeded"``, ``"probe_failed"``, ``"half_open_timeout"``,
            ``"forced_open"``, ``"forced_open_until"``, ``"half_open"``,
            ``"disabled"``, ``"metrics_only"``, ``"reset"``,
            ``"metrics_only:<condition>"`` for the trip a metrics-only
            breaker would have made, or ``"shared_open"`` /
            ``"shared_close"`` for a transition another process's breaker
            made (``state=``; added in 0.6.0).
        at: the breaker clock's reading (monotonic seconds) of the call that
            made the transition.

    .. versionadded:: 0.1.0
    """

    __slots__ = ("name", "from_state", "to_state", "reason", "at")
    name: str
    from_state: str
    to_state: str
    reason: str
    at: float


def _matcher(value: Optional[ExceptionFilter], field: str) -> Callable[[BaseException], bool]:
    if value is None:
        return lambda exc: False
    if isinstance(value, type) and issubclass(value, BaseException):
        return lambda exc: isinstance(exc, value)
    if isinstance(value, tuple):
        for item in value:
            if not (isinstance(item, type) and issubclass(item, BaseException)):
                raise TypeError(f"{field} must hold exception types, got {item!r}")
        return lambda exc: isinstance(exc, value)
    if callable(value):
        return cast(Callable[[BaseException], bool], value)
    raise TypeError(f"{field} must be an exception type, a tuple of them or a predicate")


def _core_kwargs(
    owner: str,
    *,
    failure_threshold: int,
    window: Optional[str],
    window_size: int,
    window_duration: Seconds,
    window_buckets: int,
    failure_rate_threshold: float,
    minimum_calls: int,
    slow_call_duration: Optional[Seconds],
    slow_call_rate_threshold: float,
    reset_timeout: Seconds,
    reset_timeout_multiplier: float,
    max_reset_timeout: Seconds,
    half_open_max_calls: int,
    permit_timeout: Seconds,
    max_half_open_duration: Optional[Seconds] = None,
) -> Dict[str, Any]:
    """The core breaker's keyword arguments, each checked by its kind (``owner``
    names the front door in the errors). Ranges that depend on the window or
    on other fields are the core's to check (it names the field)."""
    v = _validate

    def count(field: str, value: Any) -> int:
        # Every count fits the core's C int; its exact range is the core's.
        return v.integer(owner, field, value, 0, v.INT_MAX)

    return dict(
        failure_threshold=count("failure_threshold", failure_threshold),
        window="none" if window is None else v.name(owner, "window", window),
        window_size=count("window_size", window_size),
        window_duration=v.seconds(owner, "window_duration", window_duration, positive=True),
        window_buckets=count("window_buckets", window_buckets),
        failure_rate_threshold=v.percentage(owner, "failure_rate_threshold", failure_rate_threshold),
        minimum_calls=count("minimum_calls", minimum_calls),
        slow_call_duration=v.seconds_or_none(
            owner, "slow_call_duration", slow_call_duration, positive=True
        ),
        slow_call_rate_threshold=v.percentage(
            owner, "slow_call_rate_threshold", slow_call_rate_threshold
        ),
        reset_timeout=v.seconds(owner, "reset_timeout", reset_timeout, positive=True),
        reset_timeout_multiplier=v.number(owner, "reset_timeout_multiplier", reset_timeout_multiplier),
        max_reset_timeout=v.seconds(owner, "max_reset_timeout", max_reset_timeout),
        half_open_max_calls=count("half_open_max_calls", half_open_max_calls),
        permit_timeout=v.seconds(owner, "permit_timeout", permit_timeout, positive=True),
        max_half_open_duration=v.seconds_or_none(
            owner, "max_half_open_duration", max_half_open_duration, positive=True
        ),
    )


def _log_transition(t: BreakerTransition) -> None:
    level = logging.WARNING if t.to_state in ("open", "forced_open") else logging.INFO
    if LOGGER.isEnabledFor(level):
        LOGGER.log(
            level,
            "mulligan: circuit breaker %r %s -> %s (%s)",
            t.name,
            t.from_state,
            t.to_state,
            t.reason,
            extra={
                "mulligan_event": "breaker_transition",
                "mulligan_breaker": t.name,
                "mulligan_from_state": t.from_state,
                "mulligan_to_state": t.to_state,
                "mulligan_reason": t.reason,
                "mulligan_at": t.at,
            },
        )


def _make_hook(owner: "CircuitBreaker") -> Callable[[str, str, str, str, float], None]:
    # A weak reference: the core breaker holds this hook, and a strong one
    # would make a cycle through C++ that the garbage collector cannot see.
    ref = weakref.ref(owner)

    def hook(name: str, from_state: str, to_state: str, reason: str, at: float) -> None:
        transition = BreakerTransition(name, from_state, to_state, reason, at)
        try:
            _log_transition(transition)
        except Exception:  # a broken logging handler must not break the call
            pass
        breaker = ref()
        if breaker is None:
            return
        for listener in tuple(breaker._listeners):
            try:
                listener(transition)
            except Exception:
                # Never let a listener's exception reach the caller (or C++).
                LOGGER.exception(
                    "mulligan: circuit breaker %r listener %r raised",
                    name,
                    listener,
                    extra={"mulligan_event": "breaker_listener_error", "mulligan_breaker": name},
                )

    return hook


def _make_call_hook(owner: "CircuitBreaker") -> Callable[[str, str, str, float, bool, float], None]:
    ref = weakref.ref(owner)  # as in _make_hook: no cycle through C++

    def hook(name: str, kind: str, state: str, duration: float, stale: bool, at: float) -> None:
        breaker = ref()
        if breaker is None:
            return
        event = BreakerCallEvent(name, kind, state, duration, stale, at)
        for listener in tuple(breaker._call_listeners):
            try:
                listener(event)
            except Exception:
                LOGGER.exception(
                    "mulligan: circuit breaker %r call listener %r raised",
                    name,
                    listener,
                    extra={"mulligan_event": "breaker_listener_error", "mulligan_breaker": name},
                )

    return hook


def _make_sharing_hook(name: str) -> Callable[[bool, str], None]:
    """The on_sharing callable of a shared breaker: one log line on the
    ``mulligan.state`` logger when sharing stops or cannot start (WARNING,
    with the cause, which holds no secret) or starts or resumes (INFO)."""

    def hook(shared: bool, cause: str) -> None:
        if shared:
            STATE_LOGGER.info(
                "mulligan: circuit breaker %r is shared through Redis", name,
                extra={"mulligan_event": "breaker_sharing", "mulligan_breaker": name,
                       "mulligan_shared": True},
            )
        else:
            STATE_LOGGER.warning(
                "mulligan: circuit breaker %r serves from local state alone: %s", name, cause,
                extra={"mulligan_event": "breaker_sharing", "mulligan_breaker": name,
                       "mulligan_shared": False, "mulligan_cause": cause},
            )

    return hook


# Shared breakers alive: their threads are stopped at exit, before the
# interpreter finalizes (a thread must not wait for the GIL then).
_SHARED: "weakref.WeakSet[CircuitBreaker]" = weakref.WeakSet()


@atexit.register
def _close_shared() -> None:
    for breaker in list(_SHARED):
        breaker.close_sharing()


# The options of CircuitBreaker(...): assigning one of them to a built breaker
# is refused with a message that says how to change it.
_OPTION_NAMES = frozenset(
    (
        "failure_threshold window window_size window_duration window_buckets "
        "failure_rate_threshold minimum_calls slow_call_duration slow_call_rate_threshold "
        "reset_timeout reset_timeout_multiplier max_reset_timeout half_open_max_calls "
        "permit_timeout failure_on ignore_on clock state poll_interval"
    ).split()
)


class CircuitBreaker(_core.BreakerBase):
    """A circuit breaker for one dependency; a decorator and a context manager.

    Decorate a function or a coroutine function (``@breaker``), or guard a
    block (``with breaker:`` / ``async with breaker:``). Before each call the
    breaker is asked for a permit; when it refuses,
    :class:`mulligan.CircuitOpenError` is raised without running the call.
    After the call its result is recorded:

    - a return is a success;
    - an exception matching ``ignore_on`` is ignored (neither success nor
      failure; it frees a half-open probe slot);
    - a timeout (:class:`TimeoutError`, :class:`asyncio.TimeoutError`) is a
      failure;
    - an exception matching ``failure_on`` is a failure;
    - any other exception is ignored, and so are KeyboardInterrupt,
      SystemExit, GeneratorExit and asyncio.CancelledError, always.

    For a coroutine function the result is that of the awaited call: an
    exception raised inside the coroutine counts.

    Args:
        name: the breaker's name, used in errors, logs and listener events:
            non-empty, without control characters (CR, LF, TAB...: they
            would forge log lines; ValueError). Default ``"default"``.
        failure_threshold: consecutive failures that open the breaker
            (0 disables this condition; then a window is required). Default 5.
        window: ``None`` (default), ``"count"`` (the last ``window_size``
            calls) or ``"time"`` (the calls of the last ``window_duration``
            seconds, in ``window_buckets`` buckets): trip when the failure
            rate reaches ``failure_rate_threshold`` percent (default 50) once
            ``minimum_calls`` (default 10) are in the window.
        window_size: default 100. window_duration: default 60 s.
        window_buckets: default 10.
        slow_call_duration: calls lasting at least this many seconds are slow;
            trip when the slow rate reaches ``slow_call_rate_threshold``
            percent (default 100). Requires a window. Default None.
        reset_timeout: seconds the breaker stays open before probing.
            Default 30 s.
        reset_timeout_multiplier: growth of the open period on repeated trips
            (default 1, no growth), capped at ``max_reset_timeout`` (300 s).
        half_open_max_calls: probes admitted at once when half-open, and the
            successes that close it. Default 1.
        permit_timeout: a probe permit never recorded stops holding its slot
            after this many seconds. Default 60 s.
        max_half_open_duration: seconds a breaker may stay half-open; one
            that has not closed by then reopens (reason
            ``"half_open_timeout"``), its open period starting at that instant
            (resilience4j's ``maxWaitDurationInHalfOpenState``). Default None:
            no limit.
        failure_on: what counts as a failure: an exception type, a tuple of
            types, or a predicate on the exception. Default :class:`Exception`.
        ignore_on: exceptions that never count (terminal ones, such as a 404
            error), as for ``failure_on``. Default None.
        clock: a callable returning monotonic seconds (for tests, e.g.
            ``mulligan.testing.FakeClock().monotonic``). Default None: the
            core reads the monotonic clock itself (the same clock as
            :func:`time.monotonic`), which is the fast path.
        state: a :class:`mulligan.RedisState` to share this breaker through:
            every breaker of the same ``name`` on the same Redis and prefix,
            in any process, opens when one trips and closes when one's probe
            succeeds. Calls are still served by the local breaker (no Redis
            round trip per call); transitions are written and received by
            two background threads, typically within a millisecond on one
            host. While Redis is unreachable the breaker serves from its own
            state alone, logs a warning on the ``mulligan.state`` logger
            (``mulligan_event`` ``"breaker_sharing"``; also when Redis is
            unreachable from the start), sets the gauge
            ``mulligan_shared_state_fallback{part="breaker"}`` to 1, and
            catches up when Redis is back (an INFO line, the gauge 0). Open
            periods cross processes as Unix milliseconds (hosts' clocks
            must agree). Not combinable with ``clock``. Default None: a
            breaker of this process only. See :meth:`sharing_health`.
        poll_interval: with ``state``: seconds between reads of the shared
            key while the subscription is down (the staleness bound then),
            in [0.01, 3600]. Default None: 1.0 with ``state``. Given
            without ``state`` it raises ValueError (changed in 0.6: it was
            silently ignored).

    Raises:
        ValueError: an option is out of range (the message names it).
        TypeError: an option has the wrong type.

    Configuration is fixed at construction: assigning an option
    (``breaker.failure_threshold = 2``) raises :class:`AttributeError`, as
    does assigning any other public attribute, instead of being silently
    ignored. A live state machine cannot take a new configuration atomically
    without losing its window and the permits in flight, and the decorated
    functions hold its hot path; build a new breaker instead (or configure
    :data:`mulligan.breakers` before the first lookup). This follows
    resilience4j, whose CircuitBreakerConfig is immutable; pybreaker's
    settable ``fail_max`` is the behaviour this refuses.

    Thread-safety: one breaker may guard calls from many threads and tasks.

    .. versionadded:: 0.1.0
    .. versionchanged:: 0.2.0
       Assigning a public attribute raises :class:`AttributeError`.
    .. versionchanged:: 0.6.0
       ``state=`` shares the breaker through Redis.
    """

    # The sharing through Redis (state=...), or None. (Added in 0.6.)
    _sharing: Optional["_core.RedisSharedBreaker"]

    def __init__(
        self,
        name: str = "default",
        *,
        failure_threshold: int = 5,
        window: Optional[str] = None,
        window_size: int = 100,
        window_duration: Seconds = 60.0,
        window_buckets: int = 10,
        failure_rate_threshold: float = 50.0,
        minimum_calls: int = 10,
        slow_call_duration: Optional[Seconds] = None,
        slow_call_rate_threshold: float = 100.0,
        reset_timeout: Seconds = 30.0,
        reset_timeout_multiplier: float = 1.0,
        max_reset_timeout: Seconds = 300.0,
        half_open_max_calls: int = 1,
        permit_timeout: Seconds = 60.0,
        max_half_open_duration: Optional[Seconds] = None,
        failure_on: ExceptionFilter = Exception,
        ignore_on: Optional[ExceptionFilter] = None,
        clock: Optional[Callable[[], float]] = None,
        state: Optional["RedisState"] = None,
        poll_interval: Optional[Seconds] = None,
    ) -> None:
        _validate.name(_OWNER, "name", name)
        if not name:
            # Python breakers are always named (default "default"); the core
            # refuses control characters (CircuitBreakerOptions::name).
            raise ValueError(f"{_OWNER}: name must not be empty")
        kwargs = _core_kwargs(
            _OWNER,
            failure_threshold=failure_threshold,
            window=window,
            window_size=window_size,
            window_duration=window_duration,
            window_buckets=window_buckets,
            failure_rate_threshold=failure_rate_threshold,
            minimum_calls=minimum_calls,
            slow_call_duration=slow_call_duration,
            slow_call_rate_threshold=slow_call_rate_threshold,
            reset_timeout=reset_timeout,
            reset_timeout_multiplier=reset_timeout_multiplier,
            max_reset_timeout=max_reset_timeout,
            half_open_max_calls=half_open_max_calls,
            permit_timeout=permit_timeout,
            max_half_open_duration=max_half_open_duration,
        )
        core_state = _core_state(state, _OWNER)
        if poll_interval is not None and core_state is None:
            # Config errors raise at construction: without state= the option
            # would be silently ignored.
            raise ValueError(
                f"{_OWNER}: poll_interval needs state= (it is the read interval of the "
                "shared key while the Redis subscription is down)"
            )
        poll = _validate.seconds(
            _OWNER, "poll_interval", 1.0 if poll_interval is None else poll_interval,
            positive=True,
        )
        if core_state is not None and clock is not None:
            raise ValueError(
                f"{_OWNER}: state and clock cannot be combined: shared open periods are "
                "placed on the monotonic clock (time.monotonic)"
            )
        self._init(_core.CircuitBreaker(name, **kwargs), failure_on, ignore_on, clock)
        if core_state is not None:
            try:
                self._sharing = _core.RedisSharedBreaker(
                    core_state, self._core, poll_interval=poll,
                    on_sharing=_make_sharing_hook(name),
                )
            except ValueError as e:
                raise ValueError(f"{_OWNER}: {e}") from None
            _SHARED.add(self)

    @classmethod
    def _wrap(
        cls,
        core: Any,
        failure_on: ExceptionFilter = Exception,
        ignore_on: Optional[ExceptionFilter] = None,
        clock: Optional[Callable[[], float]] = None,
    ) -> "CircuitBreaker":
        self = cls.__new__(cls)
        self._init(core, failure_on, ignore_on, clock)
        return self

    def _init(
        self,
        core: Any,
        failure_on: ExceptionFilter,
        ignore_on: Optional[ExceptionFilter],
        clock: Optional[Callable[[], float]],
    ) -> None:
        _validate.callable_or_none(_OWNER, "clock", clock)
        self._core = core
        self._guard = core.guard()
        self._clock = clock
        self._failure_on = _matcher(failure_on, "failure_on")
        self._ignore_on = _matcher(ignore_on, "ignore_on")
        self._listeners: list[Callable[[BreakerTransition], Any]] = []
        self._call_listeners: list[Callable[[BreakerCallEvent], Any]] = []
        self._lock = threading.Lock()
        self._sharing = None
        self._bind(self._guard, clock)
        core.set_hook(_make_hook(self))

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        if name in _OPTION_NAMES:
            raise AttributeError(
                f"{_OWNER}.{name} cannot be changed on a built breaker (its configuration is "
                f"fixed when it is built): build a new CircuitBreaker({name}=...), or set it "
                "with mulligan.breakers.configure(...) before the first lookup"
            )
        raise AttributeError(f"{_OWNER} has no settable attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{_OWNER} attributes cannot be deleted ({name!r})")

    # -- the acquire/record hooks of the decorator and `with` ----------------

    def _now(self) -> Optional[float]:
        clock = self._clock
        return None if clock is None else clock()

    def _acquire(self, now: Optional[float] = None) -> Any:
        """Returns a permit for one call, or raises CircuitOpenError.

        ``now`` is monotonic seconds; None reads the breaker's clock.
        """
        if now is None and self._clock is not None:
            now = self._clock()
        return self._guard.acquire(now)

    def _classify(self, exc: Optional[BaseException]) -> int:
        """Returns 0 (success), 1 (failure) or 2 (ignored) for a call's end."""
        if exc is None:
            return _SUCCESS
        if isinstance(exc, _NEVER_COUNTED) or self._ignore_on(exc):
            return _IGNORED
        if isinstance(exc, _TIMEOUTS) or self._failure_on(exc):
            return _FAILURE
        return _IGNORED

    def _record(self, permit: Any, result: int, now: Optional[float] = None) -> None:
        """Records a permit's result: 0 success, 1 failure, 2 ignored."""
        if now is None and self._clock is not None:
            now = self._clock()
        guard = self._guard
        if result == _SUCCESS:
            guard.success(permit, now)
        elif result == _FAILURE:
            guard.failure(permit, now)
        else:
            guard.ignored(permit, now)

    def _record_exception(self, permit: Any, exc: Optional[BaseException]) -> None:
        self._record(permit, self._classify(exc))

    # -- decorator ---------------------------------------------------------

    def __call__(self, fn: F) -> F:
        """Guards `fn` (a function or a coroutine function) with this breaker."""
        if not callable(fn):
            raise TypeError(f"CircuitBreaker decorates callables, got {fn!r}")
        if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            raise TypeError(
                "a circuit breaker cannot decorate a generator function: "
                "guard the code that consumes it instead"
            )
        guard = self._guard
        acquire = guard.acquire
        success = guard.success
        record_exception = self._record_exception
        clock = self._clock

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                permit = acquire(None if clock is None else clock())
                try:
                    result = await fn(*args, **kwargs)
                except BaseException as exc:
                    record_exception(permit, exc)
                    raise
                success(permit, None if clock is None else clock())
                return result

            async_wrapper.breaker = self  # type: ignore[attr-defined]
            return cast(F, async_wrapper)

        if clock is None:
            # The hot path: two raw native calls around the user's call.
            @functools.wraps(fn)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                permit = acquire()
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:
                    record_exception(permit, exc)
                    raise
                success(permit)
                return result

        else:

            @functools.wraps(fn)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                permit = acquire(clock())
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:
                    record_exception(permit, exc)
                    raise
                success(permit, clock())
                return result

        wrapper.breaker = self  # type: ignore[attr-defined]
        return cast(F, wrapper)

    # -- context manager ---------------------------------------------------

    # __enter__ and __exit__ are _core.BreakerBase's (native): __enter__
    # acquires a permit (CircuitOpenError when refused) and returns the
    # breaker; __exit__ records the block's result for this breaker's
    # innermost block open in the same thread or task (a success, or
    # _classify(exc)) and never suppresses the exception; RuntimeError when
    # no block of this breaker is open there.

    async def __aenter__(self) -> "CircuitBreaker":
        return self.__enter__()

    async def __aexit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> None:
        self.__exit__(exc_type, exc, tb)

    # -- state, counts, manual control ----------------------------------------

    @property
    def name(self) -> str:
        """The breaker's name."""
        return cast(str, self._core.name)

    @property
    def state(self) -> str:
        """The state now: ``"closed"``, ``"open"``, ``"half_open"``,
        ``"forced_open"``, ``"disabled"`` or ``"metrics_only"``.

        An open breaker whose reset timeout has elapsed reads ``"half_open"``.
        """
        return cast(str, self._core.state(self._now()))

    @property
    def time_until_probe(self) -> float:
        """Seconds until a call may be admitted: 0.0 when one would be now,
        ``math.inf`` when forced open."""
        return cast(float, self._core.time_until_probe(self._now()))

    @property
    def counts(self) -> Dict[str, Any]:
        """Counters for metrics: ``calls``, ``successes``, ``failures``,
        ``ignored``, ``slow``, ``rejected``, ``consecutive_failures``,
        ``window_calls``, ``window_failure_rate``, ``window_slow_rate``
        (rates in percent), and ``stale``: results that arrived with a permit
        from before a transition (or a probe after its permit timeout), which
        changed no state and are in no other counter. Cumulative since
        creation or the last reset.

        .. versionchanged:: 0.2.0 ``stale``.
        """
        return cast(Dict[str, Any], self._core.counts(self._now()))

    @property
    def last_trip(self) -> Optional[BreakerTrip]:
        """The figures of the last opening (the window's calls, failure rate
        and slow-call rate, and the consecutive failures, just before the
        transition cleared them), or None when it has not opened since it was
        built or reset. Kept after it closes again.

        .. versionadded:: 0.2.0
        """
        trip = self._core.last_trip()
        return None if trip is None else BreakerTrip._from_core(trip)

    @property
    def metrics_name(self) -> str:
        """The name this breaker's metrics are reported under (in
        :func:`mulligan.metrics_json` and the Prometheus text): its name, or
        ``"<name>#2"``, ``"<name>#3"``, ... when another live breaker already
        reports under it, so one metrics name never mixes two breakers.

        .. versionadded:: 0.2.0
        """
        return cast(str, self._core.reported_name)

    @property
    def options(self) -> Dict[str, Any]:
        """The breaker's configuration (durations in seconds)."""
        return cast(Dict[str, Any], self._core.options())

    def force_open(
        self, duration: Optional[Seconds] = None, *, until: Optional[float] = None
    ) -> None:
        """Refuses every call: until :meth:`reset` (or another manual state)
        when called without arguments (state ``"forced_open"``); or for
        `duration` seconds (a number or :class:`datetime.timedelta`), or until
        the breaker's clock reads `until` (monotonic seconds, as
        :func:`time.monotonic` or the injected clock), after which it turns
        half-open and probes as after a trip (state ``"open"`` meanwhile,
        transition reason ``"forced_open_until"``; pybreaker's ``open()``
        followed by its reset timeout). A timed open is not a trip: the reset
        timeout's growth restarts and :attr:`last_trip` is kept.

        Raises:
            TypeError: both `duration` and `until` given, or a wrong type.
            ValueError: `duration` is not > 0, or `until` is not after now
                (nothing changes then).

        .. versionchanged:: 0.2.0 `duration` and `until`.
        """
        if duration is not None and until is not None:
            raise TypeError(f"{_OWNER}.force_open() takes duration or until, not both")
        now = self._now()
        if duration is None and until is None:
            self._core.force_open(now)
            return
        if until is None:
            seconds = _validate.seconds(_OWNER, "duration", duration, positive=True)
            start = now if now is not None else _monotonic()
            until = start + seconds
            now = start
        else:
            until = _validate.number(_OWNER, "until", until)
        self._core.force_open_until(until, now)

    def half_open(self) -> None:
        """Switches to half-open at once, from any state: the next calls
        are probes (``half_open_max_calls`` at a time) that close or reopen
        it (resilience4j's ``transitionToHalfOpenState``). Listeners hear
        reason ``"half_open"``. Does nothing when already half-open.

        .. versionadded:: 0.2.0
        """
        self._core.half_open(self._now())

    def disable(self) -> None:
        """Admits every call and keeps counting, but never trips."""
        self._core.disable(self._now())

    def metrics_only(self) -> None:
        """Admits every call; reports (logs, listeners) the trips it would make."""
        self._core.metrics_only(self._now())

    def reset(self) -> None:
        """Returns to closed and clears every counter."""
        self._core.reset(self._now())

    # -- listeners -----------------------------------------------------------

    def add_listener(
        self, listener: Callable[[BreakerTransition], Any]
    ) -> Callable[[BreakerTransition], Any]:
        """Calls ``listener(transition)`` on every state change; returns it.

        Listeners run with the GIL on the thread whose call made the
        transition, after the breaker's lock is released. An exception from
        a listener is logged on the ``mulligan`` logger and swallowed.
        """
        _validate.function(_OWNER, "listener", listener)
        with self._lock:
            self._listeners = self._listeners + [listener]
        return listener

    def remove_listener(self, listener: Callable[[BreakerTransition], Any]) -> bool:
        """Removes a listener; returns False when it was not added."""
        with self._lock:
            if listener not in self._listeners:
                return False
            listeners = list(self._listeners)
            listeners.remove(listener)
            self._listeners = listeners
        return True

    def add_call_listener(
        self, listener: Callable[[BreakerCallEvent], Any]
    ) -> Callable[[BreakerCallEvent], Any]:
        """Calls ``listener(event)`` for every call: each recorded result
        (``"success"``, ``"failure"``, ``"ignored"``; stale ones flagged) and
        each refusal (``"rejected"``), resilience4j's per-call events.
        Returns the listener.

        Listeners run with the GIL on the thread of the call, after the
        breaker's lock is released and after the transition listeners of the
        same call. An exception from a listener is logged on the ``mulligan``
        logger and swallowed. Without call listeners a call pays nothing for
        them; with one, every guarded call pays a Python call.

        .. versionadded:: 0.2.0
        """
        _validate.function(_OWNER, "listener", listener)
        with self._lock:
            first = not self._call_listeners
            self._call_listeners = self._call_listeners + [listener]
            if first:
                self._core.set_call_hook(_make_call_hook(self))
        return listener

    def remove_call_listener(self, listener: Callable[[BreakerCallEvent], Any]) -> bool:
        """Removes a call listener; returns False when it was not added.

        .. versionadded:: 0.2.0
        """
        with self._lock:
            if listener not in self._call_listeners:
                return False
            listeners = list(self._call_listeners)
            listeners.remove(listener)
            self._call_listeners = listeners
            if not listeners:
                self._core.set_call_hook(None)
        return True

    def sharing_health(self) -> Optional[Dict[str, Any]]:
        """How the sharing through Redis fares, or None for a breaker without
        ``state``: ``{"shared": bool, "subscribed": bool, "epoch": int,
        "published": int, "publish_failures": int, "dropped": int,
        "applied": int, "reads": int, "resubscriptions": int,
        "last_error": str, "writer_id": str}``. ``shared`` False means the
        breaker serves from its local state alone (Redis unreachable, or a
        write failed); ``last_error`` says why, without any secret.

        .. versionadded:: 0.6.0
        """
        sharing = self._sharing
        return None if sharing is None else sharing.health()

    def close_sharing(self) -> None:
        """Stops sharing through Redis (joins the two threads, at most one
        Redis command timeout); the breaker keeps serving locally. Idempotent;
        nothing for a breaker without ``state``. Called at interpreter exit.

        .. versionadded:: 0.6.0
        """
        sharing = self._sharing
        if sharing is not None:
            sharing.close()
            self._sharing = None

    def __repr__(self) -> str:
        return f"<mulligan.CircuitBreaker {self.name!r} {self.state}>"
