"""Testing helpers: turn retries off, make them instant, fake the clock.

Example::

    import mulligan.testing

    def test_gives_up_fast() -> None:
        with mulligan.testing.set_testing(True, attempts=2):
            ...  # at most 2 attempts per call, no waits

    def test_deadline() -> None:
        with mulligan.testing.FakeClock() as clock:
            ...  # waits advance clock.monotonic() instantly
        assert clock.sleeps == [1.0, 2.0]

The switches are process-wide and are read by the retry drivers only after an
attempt has failed, so they cost successful calls nothing. They are not meant
to be flipped while other threads are retrying.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import asyncio
import threading
import time
from types import TracebackType
from typing import Optional

from . import _core, _validate
from ._retry.state import STATE

__all__ = ["FakeClock", "set_active", "set_clock", "set_testing"]


class _Restore:
    """Returned by the setters: the change is already made; ``with`` undoes it on exit.

    Each restores only the switches its setter changed, so nested ``with``
    blocks of different setters unwind independently.
    """

    __slots__ = ("_saved",)

    def __init__(self, *names: str) -> None:
        self._saved = {name: getattr(STATE, name) for name in names}

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        for name, value in self._saved.items():
            if name == "clock":
                STATE.set_clock(value)
            else:
                setattr(STATE, name, value)


def set_active(active: bool) -> _Restore:
    """Turns all retries on or off (default on).

    When off, the first failure of any decorated function or ``retrying``
    block propagates unchanged (no note, no hooks, no logging).

    Works as a function, and as a context manager that restores the previous
    state on exit: ``with mulligan.testing.set_active(False): ...``.

    .. versionadded:: 0.1.0
    """
    _validate.flag("mulligan.testing.set_active", "active", active)
    restore = _Restore("active")
    STATE.active = active
    return restore


def set_testing(testing: bool, *, attempts: int = 1) -> _Restore:
    """Turns testing mode on or off: no waits, and at most ``attempts`` attempts.

    ``attempts`` caps every policy's attempts (a policy with fewer keeps its
    own); the default 1 makes the first failure give up (with the usual note,
    hooks and logging). Works as a function and as a context manager that
    restores the previous state on exit.

    Raises:
        ValueError: ``attempts < 1``.

    .. versionadded:: 0.1.0
    """
    _validate.flag("mulligan.testing.set_testing", "testing", testing)
    _validate.attempts("mulligan.testing.set_testing", "attempts", attempts)
    restore = _Restore("testing", "testing_attempts")
    STATE.testing = testing
    STATE.testing_attempts = attempts
    return restore


def set_clock(clock: Optional[FakeClock]) -> _Restore:
    """Makes the retry drivers read and wait on `clock` (None: real time again).

    Works as a function and as a context manager; ``with FakeClock() as c:``
    is the short form.

    .. versionadded:: 0.1.0
    """
    if clock is not None and not isinstance(clock, FakeClock):
        raise TypeError(f"set_clock: expected a mulligan.testing.FakeClock or None, got {clock!r}")
    restore = _Restore("clock")
    STATE.set_clock(clock)
    return restore


class FakeClock:
    """A monotonic clock that only moves when slept on or advanced.

    Installed (``with FakeClock() as clock:`` or :func:`set_clock`), it is the
    clock of every front door: the retry decorators and blocks, the HTTP
    clients (``mulligan.get``, :class:`mulligan.Client`,
    :class:`mulligan.AsyncClient`) and the command. Deadlines and elapsed
    times are measured on it, and every wait between attempts -- ``time.sleep``
    in the sync drivers, ``asyncio.sleep`` in the async ones -- advances it at
    once instead of waiting. The async wait still yields to the event loop
    once, so other tasks run and cancellation is delivered. An HTTP attempt's
    transfer still takes real time (the clock does not move during it).

    The C++ engine reads the same time: the clock keeps a ``_core.FakeClock``
    in step with its own reading, handed to the HTTP clients per request, and
    its wall-clock reading (for Retry-After dates) starts at the real time
    when the clock is made.

    Thread-safe. The event loop, ``time`` and ``asyncio`` are not patched.

    Args:
        start: the initial reading of :meth:`monotonic`, in seconds. Default 1000.0.

    Attributes:
        sleeps: every wait made through the clock, in seconds, in order.

    .. versionadded:: 0.1.0
    """

    def __init__(self, start: float = 1000.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()
        self.sleeps: list[float] = []
        self._restore: Optional[_Restore] = None
        # The engine's view of this clock (moved with it, under the lock).
        self._native = _core.FakeClock(self._now, time.time())

    def monotonic(self) -> float:
        """Returns the current reading, in seconds."""
        return self._now

    def advance(self, seconds: float) -> None:
        """Moves the clock forward by `seconds`; not recorded in :attr:`sleeps`.

        Raises:
            TypeError: `seconds` is not a number (or a datetime.timedelta).
            ValueError: `seconds` is negative, NaN or infinite, or would move
                the clock past what the engine's clock holds (about 9.2e9 s);
                the clock is left unchanged.

        .. versionchanged:: 0.2.0 bad values raise before anything moves
           (a negative value was ignored).
        """
        delta = _validate.seconds("FakeClock.advance", "seconds", seconds)
        with self._lock:
            self._move(delta)

    def sleep(self, seconds: float) -> None:
        """Advances the clock by `seconds` at once and records the wait.

        Raises:
            TypeError, ValueError: as :meth:`advance`; nothing is recorded and
                the clock is left unchanged.

        .. versionchanged:: 0.2.0 bad values (NaN included) raise before
           anything changes.
        """
        delta = _validate.seconds("FakeClock.sleep", "seconds", seconds)
        with self._lock:
            self._move(delta)
            self.sleeps.append(delta)

    def _move(self, delta: float) -> None:
        # The engine's clock first: it refuses a reading it cannot hold, and
        # then neither reading has moved. Under the lock.
        if delta > 0:
            self._native.advance(delta)
            self._now += delta

    async def async_sleep(self, seconds: float) -> None:
        """Like :meth:`sleep`, then yields to the event loop once."""
        self.sleep(seconds)
        await asyncio.sleep(0)

    @property
    def slept(self) -> float:
        """Total seconds slept through the clock."""
        return sum(self.sleeps)

    def __enter__(self) -> FakeClock:
        self._restore = set_clock(self)
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        restore, self._restore = self._restore, None
        if restore is not None:
            restore.__exit__(exc_type, exc, tb)

    def __repr__(self) -> str:
        return f"<FakeClock monotonic={self._now:g} slept={self.slept:g}>"
