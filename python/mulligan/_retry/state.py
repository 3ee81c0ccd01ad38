"""Process-wide switches of the retry drivers (set through :mod:`mulligan.testing`).

Every front door reads it: the retry drivers on the failure path only (after
an attempt has failed, so the switches cost a successful call nothing), and
the HTTP clients and the command when they begin a request, handing the
switches to the pipeline (the attempt cap, no waits) and the fake clock to the
engine. The one exception is
``STATE.now``: a decorated function with a deadline reads it before its first
attempt, because the budget is measured from the first attempt's start.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional, Protocol

__all__ = ["STATE", "Clock"]


class Clock(Protocol):
    """What the drivers need of a fake clock (:class:`mulligan.testing.FakeClock`).

    Declared here, not imported from :mod:`mulligan.testing`, because that
    module sets these switches: the dependency points from testing to here.
    """

    # The engine's view of the same clock (a _core.FakeClock), which the HTTP
    # clients hand to the C++ engine per request.
    _native: Any

    def monotonic(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...
    async def async_sleep(self, seconds: float) -> None: ...


def _real_sleep(seconds: float) -> None:
    # Looked up per call (not bound at import) so that tests which patch
    # time.sleep see every wait the sync driver makes.
    time.sleep(seconds)


class _State:
    """The switches. One instance, :data:`STATE`; mutated only by mulligan.testing."""

    __slots__ = ("active", "testing", "testing_attempts", "clock", "native_clock", "now", "sleep")

    def __init__(self) -> None:
        # False: no retries at all; an attempt's failure propagates at once.
        self.active: bool = True
        # True: no waits, and at most `testing_attempts` attempts per call.
        self.testing: bool = False
        self.testing_attempts: int = 1
        # A FakeClock installed by mulligan.testing, or None for real time.
        self.clock: Optional[Clock] = None
        # Its _core.FakeClock (None for real time): what the C++ front doors
        # (the HTTP clients) read and wait on.
        self.native_clock: Any = None
        # The monotonic clock and the blocking sleep of the drivers.
        self.now: Callable[[], float] = time.monotonic
        self.sleep: Callable[[float], None] = _real_sleep

    def set_clock(self, clock: Optional[Clock]) -> None:
        self.clock = clock
        if clock is None:
            self.native_clock = None
            self.now = time.monotonic
            self.sleep = _real_sleep
        else:
            self.native_clock = clock._native
            self.now = clock.monotonic
            self.sleep = clock.sleep


STATE = _State()
