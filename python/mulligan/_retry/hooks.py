"""What retry hooks receive, the hook protocol, call statistics and logging.

Statistics (``fn.statistics``, :class:`StatisticsView`): each decorated
function owns a ``contextvars.ContextVar``. A call that needed the engine (at
least one failed attempt) stores a frozen :class:`RetryStatistics` in it when
it ends, so the value is per thread and per asyncio task: concurrent calls
never share or reset each other's counts. Because the success path must stay
free of allocations and context-variable writes, a call that succeeds at its
first attempt does *not* update it.

Everything here is built on the failure path only: a call that succeeds at
its first attempt creates none of these objects.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import contextvars
import logging
from dataclasses import dataclass
from typing import Any, Optional, Protocol

__all__ = ["LOGGER", "RetryDetails", "RetryHook", "RetryStatistics", "StatisticsView"]

#: Every retry and every give-up is logged here at WARNING.
LOGGER = logging.getLogger("mulligan")
# A library adds no handler but NullHandler (the logging HOWTO, "Configuring
# Logging for a Library"): the application decides where retries are logged,
# and an unconfigured program does not get them on stderr.
LOGGER.addHandler(logging.NullHandler())


@dataclass(frozen=True, slots=True)
class RetryDetails:
    """One failed attempt, as seen by ``on_retry`` and ``on_give_up`` hooks.

    Attributes:
        name: the qualified name of the decorated callable, or the ``name``
            given to :func:`mulligan.retrying` (default ``"block"``).
        attempt: the number of the attempt that just failed, 1 for the first.
        delay: seconds the driver waits before the next attempt (0.0 in
            ``on_give_up``, and 0.0 under ``mulligan.testing.set_testing``).
        exception: the exception the attempt raised, or None when it returned
            a value that ``on_result`` rejected.
        result: that returned value, or None when the attempt raised.
        elapsed: seconds since the first attempt started.
        time_left: seconds left before the deadline, or None without one.
        waited: seconds already waited between attempts of this call (the
            coming ``delay`` not included).
        stop_reason: None in ``on_retry``; in ``on_give_up`` why the retries
            stopped: ``"attempts_exhausted"``, ``"deadline"``,
            ``"retry_after_too_long"`` or ``"stop_condition"`` (a
            ``mulligan.stop.when`` predicate).
        from_delay_hint: True when ``delay`` (or the stop) came from the
            ``delay_hint`` callable rather than the backoff.

    .. versionadded:: 0.1.0
    """

    name: str
    attempt: int
    delay: float
    exception: Optional[BaseException]
    result: Any
    elapsed: float
    time_left: Optional[float]
    waited: float
    stop_reason: Optional[str]
    from_delay_hint: bool


@dataclass(frozen=True, slots=True)
class RetryStatistics:
    """How one logical call went (``fn.statistics.last``, ``Attempt.statistics``).

    Attributes:
        name: as in :class:`RetryDetails`.
        attempts: attempts made, including the first.
        waited: total seconds waited between attempts.
        elapsed: seconds from the start of the first attempt to the end of
            the last.
        stop_reason: ``"succeeded"``, ``"terminal"`` (an attempt raised an
            exception that is not retried), ``"attempts_exhausted"``,
            ``"deadline"``, ``"retry_after_too_long"`` or ``"stop_condition"``.

    .. versionadded:: 0.1.0
    """

    name: str
    attempts: int
    waited: float
    elapsed: float
    stop_reason: str

    @property
    def retries(self) -> int:
        """Attempts after the first."""
        return self.attempts - 1


class StatisticsView:
    """``fn.statistics``: the statistics of calls made in the current context.

    A context is a thread, or an asyncio task (which starts from a copy of its
    creator's context). Calls in other threads or tasks never show here.

    .. versionadded:: 0.1.0
    """

    __slots__ = ("_var",)

    def __init__(self, var: contextvars.ContextVar[Optional[RetryStatistics]]) -> None:
        self._var = var

    @property
    def last(self) -> Optional[RetryStatistics]:
        """The most recent call in this context that had at least one failed attempt.

        A call that succeeds at its first attempt is not recorded (keeping the
        success path free of allocations), so after such a call this still
        shows the earlier one; use :meth:`clear` first to tell them apart.
        None when there was no such call.
        """
        return self._var.get()

    def clear(self) -> None:
        """Forgets the recorded call, in this context only."""
        self._var.set(None)

    def __repr__(self) -> str:
        return f"<StatisticsView last={self._var.get()!r}>"


class RetryHook(Protocol):
    """A callable given as ``on_retry=`` or ``on_give_up=``.

    It runs in the caller's thread (or task), synchronously, before the wait
    (``on_retry``) or before the final exception is raised (``on_give_up``).
    An exception it raises propagates to the caller and ends the call.

    .. versionadded:: 0.1.0
    """

    def __call__(self, details: RetryDetails, /) -> None: ...


def _describe(details: RetryDetails) -> str:
    if details.exception is not None:
        return f"{type(details.exception).__name__}: {details.exception}"
    return f"rejected result {details.result!r}"


def log_retry(details: RetryDetails) -> None:
    """Logs one retry at WARNING with structured fields (``extra=``)."""
    if LOGGER.isEnabledFor(logging.WARNING):
        LOGGER.warning(
            "mulligan: %s attempt %d failed (%s); retrying in %.3f s",
            details.name,
            details.attempt,
            _describe(details),
            details.delay,
            extra={
                "mulligan_callable": details.name,
                "mulligan_attempt": details.attempt,
                "mulligan_delay": details.delay,
                "mulligan_elapsed": details.elapsed,
                "mulligan_time_left": details.time_left,
                "mulligan_error": None
                if details.exception is None
                else type(details.exception).__name__,
            },
        )


def log_give_up(details: RetryDetails) -> None:
    """Logs one give-up at WARNING with structured fields (``extra=``)."""
    if LOGGER.isEnabledFor(logging.WARNING):
        LOGGER.warning(
            "mulligan: %s gave up after %d attempt%s (%s): %s",
            details.name,
            details.attempt,
            "" if details.attempt == 1 else "s",
            details.stop_reason,
            _describe(details),
            extra={
                "mulligan_callable": details.name,
                "mulligan_attempt": details.attempt,
                "mulligan_stop_reason": details.stop_reason,
                "mulligan_elapsed": details.elapsed,
                "mulligan_error": None
                if details.exception is None
                else type(details.exception).__name__,
            },
        )
