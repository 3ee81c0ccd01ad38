"""Bulkheads and rate limiters: :class:`mulligan.Bulkhead` and
:class:`mulligan.RateLimiter` (DESIGN.md sections 2 and 5).

Both are thin shells over the core's objects (``_core.Bulkhead``,
``_core.RateLimiter``, core/include/mulligan/limits/): the core counts the
slots, keeps the FIFO queue and does the GCRA arithmetic; this module only
waits, the Python way: a sync caller blocks on its ticket (the GIL released),
and a coroutine awaits a future that the releasing thread resolves through
``loop.call_soon_threadsafe``, so the event loop never blocks. A cancelled
waiter leaves the queue; a slot handed to it at that very moment goes on to
the next waiter.

.. versionadded:: 0.3.0
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import inspect
import math
from typing import Any, Callable, Optional, TypeVar, Union

from .. import _core
from .._config import policies as _config_policies
from .._errors import BulkheadFullError, RateLimitedError
from .._retry.async_driver import sleep as _async_sleep
from .._retry.state import STATE
from .._state.redis import LOGGER as _STATE_LOG
from .._state.redis import RedisState, _core_state

__all__ = ["Bulkhead", "RateLimiter"]

F = TypeVar("F", bound=Callable[..., Any])
Seconds = Union[float, int, datetime.timedelta]


def _seconds(value: Optional[Seconds], field: str) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{field} must be seconds (float, int or timedelta) or None, got {value!r}")
    seconds = float(value)
    if math.isnan(seconds) or seconds < 0:
        raise ValueError(f"{field} must be >= 0 seconds, got {value!r}")
    return seconds


def _resolve(fut: "asyncio.Future[None]") -> None:
    if not fut.done():
        fut.set_result(None)


class Bulkhead:
    """At most ``max_concurrent`` calls in flight at once.

    Beyond that a caller waits in a FIFO queue of at most ``max_queue``
    callers, for at most ``max_wait`` seconds (None: until a slot frees), or
    is refused with :class:`mulligan.BulkheadFullError` (never retried). A
    released slot goes to the oldest waiter.

    Use it as a context manager (``with bulkhead:`` / ``async with
    bulkhead:``), as a decorator (``@bulkhead``, sync or async), or through
    ``@mulligan.retry(bulkhead=...)``, where the slot is held for the whole
    logical call, every attempt and wait included.

    Args:
        max_concurrent: calls in flight at most, >= 1.
        name: for error texts and metrics.
        max_queue: callers that may wait, >= 0 (0: refuse at once when full).
        max_wait: the longest wait in the queue, in seconds (float, int or
            timedelta); None waits until a slot frees.

    Raises:
        ValueError: a bad number (``max_concurrent < 1``, ``max_queue < 0``,
            a negative ``max_wait``), naming the field.

    Thread-safety: one bulkhead may be shared by any threads and event loops.

    .. versionadded:: 0.3.0
    """

    __slots__ = ("_core",)

    def __init__(
        self,
        max_concurrent: int,
        *,
        name: str = "",
        max_queue: int = 0,
        max_wait: Optional[Seconds] = None,
    ) -> None:
        if isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int):
            raise TypeError(f"max_concurrent must be an int, got {max_concurrent!r}")
        if isinstance(max_queue, bool) or not isinstance(max_queue, int):
            raise TypeError(f"max_queue must be an int, got {max_queue!r}")
        self._core = _core.Bulkhead(name, max_concurrent, max_queue, _seconds(max_wait, "max_wait"))
        _core.metrics_track(self._core)  # exported by the metrics (0.4)

    @classmethod
    def _from_core(cls, core: Any) -> "Bulkhead":
        """Private: wraps an engine object the configuration registry built
        (shared by name, mulligan.load_config's "bulkheads" section)."""
        self = cls.__new__(cls)
        self._core = core
        return self

    @property
    def name(self) -> str:
        return str(self._core.name)

    @property
    def max_concurrent(self) -> int:
        return int(self._core.max_concurrent)

    @property
    def in_flight(self) -> int:
        """Slots held now."""
        return int(self._core.in_flight)

    @property
    def queued(self) -> int:
        """Callers waiting now."""
        return int(self._core.queued)

    def _refused(self) -> BulkheadFullError:
        return BulkheadFullError(self._core.full_message, name=self.name)

    def _bound(self, timeout: Optional[Seconds]) -> Optional[float]:
        own = self._core.max_wait
        given = _seconds(timeout, "timeout")
        if own is None:
            return given
        return own if given is None else min(own, given)

    def acquire(self, timeout: Optional[Seconds] = None) -> None:
        """Takes a slot, waiting (blocking this thread) in the queue for at
        most min(``timeout``, ``max_wait``) seconds. Raises BulkheadFullError
        when refused. Pair every acquire with one :meth:`release`."""
        core = self._core
        if core.try_acquire():
            return
        bound = self._bound(timeout)
        if self._core.max_queue == 0 or bound == 0:
            core.count_full()
            raise self._refused()
        ticket = core.enqueue()
        if ticket is None:
            raise self._refused()
        try:
            granted = ticket.wait(bound)
        except BaseException:
            ticket.cancel()
            raise
        if not granted:
            ticket.cancel()  # a slot granted at this moment goes on
            core.count_timeout()
            raise self._refused()

    async def acquire_async(self, timeout: Optional[Seconds] = None) -> None:
        """:meth:`acquire` for coroutines: waits without blocking the event
        loop; cancelling the task leaves the queue."""
        core = self._core
        if core.try_acquire():
            return
        bound = self._bound(timeout)
        if self._core.max_queue == 0 or bound == 0:
            core.count_full()
            raise self._refused()
        ticket = core.enqueue()
        if ticket is None:
            raise self._refused()
        if ticket.granted:
            return
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        ticket.set_on_grant(lambda: loop.call_soon_threadsafe(_resolve, fut))
        try:
            if bound is None:
                await fut
            else:
                await asyncio.wait_for(fut, bound)
        except asyncio.TimeoutError:
            ticket.cancel()
            core.count_timeout()
            raise self._refused() from None
        except BaseException:
            ticket.cancel()  # cancelled: frees the place, or hands the slot on
            raise

    def release(self) -> None:
        """Frees a slot this caller holds (the oldest waiter gets it).

        Raises:
            RuntimeError: no slot is held (a release without an acquire);
                nothing changes, so a stray release cannot admit one call
                more than ``max_concurrent``.
        """
        if not self._core.release():
            raise RuntimeError(
                f"mulligan.Bulkhead({self.name!r}): release() without a held slot (in_flight is 0)"
            )

    def __enter__(self) -> "Bulkhead":
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._core.release()

    async def __aenter__(self) -> "Bulkhead":
        await self.acquire_async()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._core.release()

    def __call__(self, fn: F) -> F:
        """Decorates a function or coroutine function: each call holds a slot."""
        return _guard(fn, self, None)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return (
            f"Bulkhead(name={self.name!r}, max_concurrent={self.max_concurrent}, "
            f"in_flight={self.in_flight}, queued={self.queued})"
        )


class RateLimiter:
    """At most ``rate`` calls per second per key, with bursts of ``burst``
    (GCRA, the Generic Cell Rate Algorithm: see
    core/include/mulligan/limits/rate_limiter.h for the arithmetic).

    A call that is early waits for its slot (reserved, so waiters are served
    in order and spaced exactly ``1 / rate`` apart), for at most
    ``max_wait`` seconds (None: as long as needed); a longer wait is refused
    with :class:`mulligan.RateLimitedError` carrying ``retry_in``. Waits use
    ``time.sleep`` / ``asyncio.sleep`` (or the installed
    ``mulligan.testing.FakeClock``).

    Use it as ``with limiter:``, ``async with limiter:``, ``@limiter``, or
    ``@mulligan.retry(rate_limiter=...)`` (asked once per logical call; with
    ``rate_limit_per_attempt=True`` before every attempt).

    Shared (``state=``, added in 0.6): the cells live in Redis, so ``rate``
    and ``burst`` hold across every process and machine that uses the same
    ``state`` prefix and ``name`` (they must agree on rate and burst). Each
    acquire is one Lua script call (one round trip, the GIL released; a
    coroutine runs it in the loop's default executor so the event loop never
    waits on Redis). Time is the caller's clock mapped to Unix time (see
    core/include/mulligan/limits/redis_rate_limiter.h). When Redis is down,
    slow or refusing, each call is decided by this process alone at
    ``fallback_rate`` (default ``rate``: without Redis a process cannot know
    how many others run; set ``rate / N`` to never exceed the rate), a
    warning is logged on the ``mulligan`` logger when that starts and an
    info line when Redis decides again, and :attr:`fallbacks` counts them.
    Nothing raises because Redis is down.

    Args:
        rate: calls per second, > 0.
        burst: calls that may go at once from idle, >= 1 (default 1).
        name: for error texts and metrics.
        max_wait: the longest wait for a slot, in seconds; 0 never waits.
        penalize_retry_after: :meth:`penalize` (and the HTTP clients, on a 429
            or 503 with Retry-After) holds every call to the key until then.
        state: a :class:`mulligan.RedisState` to share the limit across
            processes, or None (default: this process only). Requires a
            non-empty ``name``. (Added in 0.6.)
        fallback_rate: calls per second this process admits on its own
            while ``state`` is unreachable, > 0; None (default) means
            ``rate``. Only with ``state``. (Added in 0.6.)

    Raises:
        ValueError: ``rate <= 0``, ``burst < 1``, a negative ``max_wait``,
            ``fallback_rate <= 0``, ``fallback_rate`` without ``state``
            (changed in 0.6: refused, it would be ignored), an empty
            ``name`` with ``state``, naming the field.
        TypeError: ``state`` is not a :class:`mulligan.RedisState`.

    Thread-safety: one limiter may be shared by any threads and event loops.

    .. versionadded:: 0.3.0
    """

    __slots__ = ("_core", "_state", "_falling_back")

    def __init__(
        self,
        rate: float,
        *,
        burst: float = 1.0,
        name: str = "",
        max_wait: Optional[Seconds] = None,
        penalize_retry_after: bool = False,
        state: Optional[RedisState] = None,
        fallback_rate: Optional[float] = None,
    ) -> None:
        for field, value in (("rate", rate), ("burst", burst), ("fallback_rate", fallback_rate)):
            if value is None and field == "fallback_rate":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{field} must be a number, got {value!r}")
        core_state = _core_state(state, "mulligan.RateLimiter")
        if fallback_rate is not None and core_state is None:
            raise ValueError("mulligan.RateLimiter: fallback_rate needs state= (it is the "
                             "rate while the shared state is unreachable)")
        self._core = _core.RateLimiter(
            name, float(rate), float(burst), _seconds(max_wait, "max_wait"),
            bool(penalize_retry_after), state=core_state,
            fallback_rate=None if fallback_rate is None else float(fallback_rate),
        )
        self._state = state
        self._falling_back = False
        _core.metrics_track(self._core)  # exported by the metrics (0.4)

    @classmethod
    def _from_core(cls, core: Any, state: Optional[RedisState] = None) -> "RateLimiter":
        """Private: wraps an engine object the configuration registry built
        (shared by name, mulligan.load_config's "rate_limiters" section);
        ``state`` is the RedisState of its cells for an entry with
        ``"shared": true`` (0.6), so its Redis calls leave the event loop and
        its fallbacks are logged as for ``RateLimiter(state=...)``."""
        self = cls.__new__(cls)
        self._core = core
        self._state = state if core.shared else None
        self._falling_back = False
        return self

    @property
    def name(self) -> str:
        return str(self._core.name)

    @property
    def rate(self) -> float:
        return float(self._core.rate)

    @property
    def burst(self) -> float:
        return float(self._core.burst)

    @property
    def shared(self) -> bool:
        """True when the cells live in a shared ``state`` (Redis). (Added in 0.6.)"""
        return bool(self._core.shared)

    @property
    def fallbacks(self) -> int:
        """Calls decided locally because ``state`` was unreachable. (Added in 0.6.)"""
        return int(self._core.fallbacks)

    def reserve(self, key: str = "", max_wait: Optional[Seconds] = None) -> float:
        """Reserves the next slot for ``key`` now: returns the seconds to wait
        before using it (0.0: now). Raises RateLimitedError (``retry_in``)
        when the wait would exceed min(``max_wait``, the limiter's). On a
        shared limiter this is one Redis round trip (blocking, the GIL
        released)."""
        bound = _seconds(max_wait, "max_wait")
        if self._state is None:
            admitted, wait, retry_in = self._core.acquire(key, STATE.now(), bound)
        else:
            admitted, wait, retry_in, fallback = self._core.acquire_detail(key, STATE.now(), bound)
            if fallback is not self._falling_back:
                self._note_fallback(fallback)
        if not admitted:
            raise self._limited(key, retry_in)
        return float(wait)

    def _note_fallback(self, fallback: bool) -> None:
        """Logs the start and the end of a fallback to local decisions."""
        self._falling_back = fallback
        assert self._state is not None
        if fallback:
            _STATE_LOG.warning(
                "mulligan.RateLimiter %r: %s is unreachable (%s); deciding locally at %g/s "
                "until it answers", self.name, self._state.endpoint,
                self._state.health()["last_error"] or "no reply", self._fallback_rate(),
                extra={"mulligan_event": "rate_limiter_sharing", "mulligan_rate_limiter": self.name,
                       "mulligan_shared": False},
            )
        else:
            _STATE_LOG.info(
                "mulligan.RateLimiter %r: %s answers again; the limit is shared again",
                self.name, self._state.endpoint,
                extra={"mulligan_event": "rate_limiter_sharing", "mulligan_rate_limiter": self.name,
                       "mulligan_shared": True},
            )

    def _fallback_rate(self) -> float:
        fallback = self._core.fallback_rate
        return float(self.rate if fallback is None else fallback)

    def _limited(self, key: str, retry_in: float) -> RateLimitedError:
        return RateLimitedError(
            self._core.limited_message(retry_in), name=self.name, key=key, retry_in=retry_in
        )

    def acquire(self, key: str = "", max_wait: Optional[Seconds] = None) -> None:
        """Waits (blocking) for the next slot of ``key``; see :meth:`reserve`."""
        wait = self.reserve(key, max_wait)
        if wait > 0:
            STATE.sleep(wait)

    async def acquire_async(self, key: str = "", max_wait: Optional[Seconds] = None) -> None:
        """:meth:`acquire` for coroutines (asyncio.sleep: cancellable). On a
        shared limiter the reservation runs in the loop's default executor,
        so the loop keeps running while Redis answers (or times out)."""
        if self._state is None:
            wait = self.reserve(key, max_wait)
        else:
            loop = asyncio.get_running_loop()
            wait = await loop.run_in_executor(None, functools.partial(self.reserve, key, max_wait))
        if wait > 0:
            await _async_sleep(wait)

    def penalize(self, retry_after: Seconds, key: str = "") -> None:
        """Holds every call to ``key`` for ``retry_after`` seconds from now
        (a 429's or 503's Retry-After)."""
        seconds = _seconds(retry_after, "retry_after")
        assert seconds is not None
        self._core.penalize(key, STATE.now() + seconds)

    def __enter__(self) -> "RateLimiter":
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    async def __aenter__(self) -> "RateLimiter":
        await self.acquire_async()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None

    def __call__(self, fn: F) -> F:
        """Decorates a function or coroutine function: each call takes a slot."""
        return _guard(fn, None, self)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"RateLimiter(name={self.name!r}, rate={self.rate}, burst={self.burst})"


def _refused(on_refused: Optional[Callable[[str], None]], reason: str) -> None:
    """Reports a refusal (the stop reason's name) to the decorator's metrics (0.4)."""
    if on_refused is not None:
        on_refused(reason)


def _guard(
    fn: Callable[..., Any],
    bulkhead: Optional[Bulkhead],
    limiter: Optional[RateLimiter],
    on_refused: Optional[Callable[[str], None]] = None,
) -> Callable[..., Any]:
    """Wraps ``fn`` so that each call holds a bulkhead slot (outermost) and
    takes a limiter slot, in the pipeline's order (DESIGN.md section 2)."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                if bulkhead is not None:
                    await bulkhead.acquire_async()
            except BulkheadFullError:
                _refused(on_refused, "bulkhead_full")
                raise
            try:
                if limiter is not None:
                    try:
                        await limiter.acquire_async()
                    except RateLimitedError:
                        _refused(on_refused, "rate_limited")
                        raise
                return await fn(*args, **kwargs)
            finally:
                if bulkhead is not None:
                    bulkhead._core.release()

        return async_guarded

    # The sync hot paths bind the native methods once, here: looking them up
    # on every call would build a bound-method object per call (issue 14's
    # goal: a guard costs at most 2x the breaker decorator, which does the
    # same).
    if bulkhead is not None and limiter is None:
        try_acquire = bulkhead._core.try_acquire
        release = bulkhead._core.release

        @functools.wraps(fn)
        def bulkhead_guarded(*args: Any, **kwargs: Any) -> Any:
            # The uncontended path: one try_acquire and one release.
            if not try_acquire():
                try:
                    bulkhead.acquire()
                except BulkheadFullError:
                    _refused(on_refused, "bulkhead_full")
                    raise
            try:
                return fn(*args, **kwargs)
            finally:
                release()

        return bulkhead_guarded

    if bulkhead is None and limiter is not None and limiter._state is None:
        acquire_now = limiter._core.acquire_now
        state = STATE  # its `now` changes when a FakeClock is installed: read per call

        @functools.wraps(fn)
        def limiter_guarded(*args: Any, **kwargs: Any) -> Any:
            # One native call: the slot of key "" now (reserved when
            # admitted); None when it may go at once, which builds nothing.
            slow = acquire_now(state.now())
            if slow is not None:
                admitted, wait, retry_in = slow
                if not admitted:
                    _refused(on_refused, "rate_limited")
                    raise limiter._limited("", retry_in)
                state.sleep(wait)
            return fn(*args, **kwargs)

        return limiter_guarded

    if bulkhead is None and limiter is not None:
        # Shared (0.6): the round trip dwarfs a lookup; reserve() also logs
        # a fallback to local decisions.
        @functools.wraps(fn)
        def shared_guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                limiter.acquire()
            except RateLimitedError:
                _refused(on_refused, "rate_limited")
                raise
            return fn(*args, **kwargs)

        return shared_guarded

    assert bulkhead is not None and limiter is not None
    both_release = bulkhead._core.release

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            bulkhead.acquire()
        except BulkheadFullError:
            _refused(on_refused, "bulkhead_full")
            raise
        try:
            try:
                limiter.acquire()
            except RateLimitedError:
                _refused(on_refused, "rate_limited")
                raise
            return fn(*args, **kwargs)
        finally:
            both_release()

    return guarded


def guard(
    fn: Callable[..., Any],
    bulkhead: Optional[Bulkhead],
    limiter: Optional[RateLimiter],
    on_refused: Optional[Callable[[str], None]] = None,
) -> Callable[..., Any]:
    """The decorator's hook (``@mulligan.retry(bulkhead=..., rate_limiter=...)``).
    ``on_refused(reason)`` is told of each refusal ("bulkhead_full",
    "rate_limited") before the error propagates (0.4: the policy's metrics)."""
    if bulkhead is not None and not isinstance(bulkhead, Bulkhead):
        raise TypeError(f"bulkhead must be a mulligan.Bulkhead, got {bulkhead!r}")
    if limiter is not None and not isinstance(limiter, RateLimiter):
        raise TypeError(f"rate_limiter must be a mulligan.RateLimiter, got {limiter!r}")
    if bulkhead is None and limiter is None:
        return fn
    return _guard(fn, bulkhead, limiter, on_refused)


# Configuration files name bulkheads and limiters (issue 14): the registry of
# mulligan._config wraps the engine objects it builds with these. Registered
# from here because this module imports the retry drivers, which import the
# configuration module (the reverse import would be a cycle).
_config_policies._PART_WRAPPERS["bulkhead"] = Bulkhead._from_core
_config_policies._PART_WRAPPERS["rate_limiter"] = RateLimiter._from_core
