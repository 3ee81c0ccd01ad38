"""``mulligan.retrying()``: retries of a block of code, with ``for`` or ``async for``.

Each iteration of a :class:`RetryBlock` is one logical call: the loop yields
an :class:`Attempt`, whose ``with`` block records the outcome, and the loop
then asks the call (:class:`_Call`, the decorator's failure path) whether and
how long to wait. The sync loop waits with ``time.sleep``, the async one with
``asyncio.sleep`` (through :func:`async_driver.sleep`).

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from types import TracebackType
from typing import Any, Callable, Optional

from .. import _validate
from .._telemetry import tracing as _tracing
from .._validate import UNSET as _UNSET, Seconds
from .async_driver import sleep as async_sleep
from .call import _Call
from .hooks import StatisticsView
from ..stop import Stop
from ..wait import Wait
from .options import ExceptionSpec, HookSpec, _Config
from .state import STATE

__all__ = ["Attempt", "RetryBlock", "retrying"]


class Attempt:
    """One attempt of a :func:`retrying` block; use it as a context manager.

    ``with attempt:`` suppresses a retryable exception (the loop then waits
    and yields the next attempt) and lets any other exception propagate. To
    retry on a value, call :meth:`set_result` inside the block.

    Attributes:
        number: the attempt number, 1 for the first.
        waited: seconds waited between attempts before this one.

    .. versionadded:: 0.1.0
    """

    __slots__ = ("number", "waited", "_run", "_exception", "_result", "_has_result", "_failed")

    def __init__(self, run: _BlockRun, number: int, waited: float) -> None:
        self.number = number
        self.waited = waited
        self._run = run
        self._exception: Optional[BaseException] = None
        self._result: Any = None
        self._has_result = False
        self._failed = False

    def set_result(self, value: Any) -> None:
        """Records the block's value, checked by ``on_result`` when the block ends."""
        self._result = value
        self._has_result = True

    @property
    def result(self) -> Any:
        """The value given to :meth:`set_result` (None when none was)."""
        return self._result

    def __enter__(self) -> Attempt:
        trace = self._run.trace
        if trace is not None:
            trace.enter_attempt()
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool:
        suppress = self._judge(exc)
        trace = self._run.trace
        if trace is not None:
            trace.end_attempt(0, None if exc is None else _tracing.qualname(exc), exc)
            if exc is not None and not suppress:
                trace.end(exc)  # the exception leaves the loop: the call is over
        return suppress

    def _judge(self, exc: Optional[BaseException]) -> bool:
        """Records the block's outcome; True to suppress ``exc`` (retryable)."""
        cfg = self._run.cfg
        if exc is None:
            if self._has_result and cfg.rejects(self._result):
                self._failed = True
            return False
        if isinstance(exc, cfg.catch) and cfg.retryable_exception(exc) and STATE.active:
            self._exception = exc
            self._failed = True
            return True  # suppressed: the loop decides what happens next
        if self._run.call is not None:
            self._run.call.unretried(exc)
        return False

    def __repr__(self) -> str:
        return f"<Attempt number={self.number} waited={self.waited:g}>"


class _BlockRun:
    """The state of one iteration over a :class:`RetryBlock` (one logical call)."""

    __slots__ = ("cfg", "start", "call", "trace")

    def __init__(self, cfg: _Config) -> None:
        self.cfg = cfg
        self.start = STATE.now()
        self.call: Optional[_Call] = None
        self.trace = _tracing.begin_block(cfg.name)  # None unless tracing is on

    def after(self, attempt: Attempt) -> Optional[float]:
        """Returns the delay before the next attempt, or None when the loop is over.

        Raises the last exception (or RetriesExhausted) when the retries give up.
        """
        if not attempt._failed:
            if self.call is not None:
                self.call.succeeded()
            else:
                self.cfg.tick()
            return None
        if not STATE.active:  # only a rejected result gets here when inactive
            return None
        if self.call is None:
            self.call = _Call(self.cfg, self.start)
            self.call.trace = self.trace
        exc, result = attempt._exception, attempt._result
        delay = self.call.failed(exc, None if exc is not None else result)
        if delay is None:
            self.call.give_up(exc, None if exc is not None else result)
            return None
        return delay

    def waited(self) -> float:
        return 0.0 if self.call is None else self.call.waited

    def left(self, exc: BaseException) -> None:
        """Ends the run left by ``exc`` during a wait: a cancel or Ctrl-C
        counts it cancelled, anything else failed (_Call.left)."""
        if self.call is not None:
            self.call.left(exc)

    def end(self, exc: Optional[BaseException]) -> None:
        """Ends the run's span (tracing on), once."""
        if self.trace is not None:
            self.trace.end(exc)


class RetryBlock:
    """What :func:`retrying` returns: iterate it with ``for`` or ``async for``.

    Each iteration is one logical call with its own session, so one block may
    be iterated again, and from several threads or tasks at once.

    .. versionadded:: 0.1.0
    """

    __slots__ = ("_cfg",)

    def __init__(self, cfg: _Config) -> None:
        self._cfg = cfg

    @property
    def statistics(self) -> StatisticsView:
        """Like ``fn.statistics``: the last run in this context that failed at least once."""
        return StatisticsView(self._cfg.statistics)

    def __iter__(self) -> Iterator[Attempt]:
        run = _BlockRun(self._cfg)
        if run.trace is None:
            return _iterate(run)
        return _traced(run, _iterate(run))

    def __aiter__(self) -> AsyncIterator[Attempt]:
        run = _BlockRun(self._cfg)
        if run.trace is None:
            return _iterate_async(run)
        return _traced_async(run, _iterate_async(run))


def _iterate(run: _BlockRun) -> Iterator[Attempt]:
    """The ``for`` form of a :class:`RetryBlock`: waits with ``STATE.sleep``."""
    number = 1
    while True:
        attempt = Attempt(run, number, run.waited())
        yield attempt
        delay = run.after(attempt)
        if delay is None:
            return
        if delay > 0:
            try:
                STATE.sleep(delay)
            except BaseException as e:
                run.left(e)
                raise
        number += 1


def _traced(run: _BlockRun, attempts: Iterator[Attempt]) -> Iterator[Attempt]:
    """``attempts`` with the run's span ended when the loop ends."""
    try:
        yield from attempts
    except GeneratorExit:  # the loop was left early (break, return): not a failure
        run.end(None)
        raise
    except BaseException as e:
        run.end(e)
        raise
    run.end(None)


async def _traced_async(run: _BlockRun, attempts: AsyncIterator[Attempt]) -> AsyncIterator[Attempt]:
    """``attempts`` (async) with the run's span ended when the loop ends."""
    try:
        async for attempt in attempts:
            yield attempt
    except GeneratorExit:  # the loop was left early (break, return): not a failure
        run.end(None)
        raise
    except BaseException as e:
        run.end(e)
        raise
    run.end(None)


async def _iterate_async(run: _BlockRun) -> AsyncIterator[Attempt]:
    """The ``async for`` form of a :class:`RetryBlock`: waits with asyncio.sleep."""
    number = 1
    while True:
        attempt = Attempt(run, number, run.waited())
        yield attempt
        delay = run.after(attempt)
        if delay is None:
            return
        if delay > 0:
            try:
                await async_sleep(delay)
            except BaseException as e:
                run.left(e)
                raise
        number += 1


def retrying(
    *,
    on: Optional[ExceptionSpec] = None,
    on_result: Optional[Callable[[Any], bool]] = None,
    name: str = "block",
    attempts: int = _UNSET,
    deadline: Optional[Seconds] = _UNSET,
    backoff: str = _UNSET,
    base_delay: Seconds = _UNSET,
    multiplier: float = _UNSET,
    max_delay: Seconds = _UNSET,
    jitter: str = _UNSET,
    jitter_fraction: float = _UNSET,
    wait: Optional[Wait] = _UNSET,
    stop: Optional[Stop] = _UNSET,
    min_delay: Seconds = _UNSET,
    retry_after_max: Seconds = _UNSET,
    clamp_retry_after: bool = _UNSET,
    delay_hint: Optional[Callable[[Any], Optional[float]]] = None,
    on_retry: Optional[HookSpec] = None,
    on_give_up: Optional[HookSpec] = None,
    raise_on_give_up: bool = False,
    seed: Optional[int] = _UNSET,
    policy: Optional[str] = None,
) -> RetryBlock:
    """Retries a block of code, synchronously or in a coroutine.

    Example::

        for attempt in mulligan.retrying(on=ConnectionError, attempts=5):
            with attempt:
                data = fetch()

        async for attempt in mulligan.retrying(on=ConnectionError, deadline=10.0):
            with attempt:
                data = await fetch_async()

    The options are those of :func:`retry` (same defaults, same validation,
    same give-up behaviour: the last exception is raised from the loop), plus
    ``name``, the name hooks and logs use (default ``"block"``). The ``async
    for`` form waits with ``asyncio.sleep``. The deadline is measured from the
    start of the loop.

    .. versionadded:: 0.1.0
    """
    _validate.name("mulligan.retrying", "name", name)
    options: dict[str, Any] = {
        "on": on,
        "on_result": on_result,
        "attempts": attempts,
        "deadline": deadline,
        "backoff": backoff,
        "base_delay": base_delay,
        "multiplier": multiplier,
        "max_delay": max_delay,
        "jitter": jitter,
        "jitter_fraction": jitter_fraction,
        "wait": wait,
        "stop": stop,
        "min_delay": min_delay,
        "retry_after_max": retry_after_max,
        "clamp_retry_after": clamp_retry_after,
        "delay_hint": delay_hint,
        "on_retry": on_retry,
        "on_give_up": on_give_up,
        "raise_on_give_up": raise_on_give_up,
        "seed": seed,
        "policy": policy,
    }
    return RetryBlock(_Config(options, name))
