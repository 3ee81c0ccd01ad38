"""The AWS SDKs' "adaptive" client send rate (:class:`AdaptiveRate`), over
the core's ``mulligan/limits/adaptive_rate.h``.

.. versionadded:: 0.4.0
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional

from .. import _core
from .._config import policies as _config_policies
from .._errors import RateLimitedError
from .._retry.async_driver import sleep as _async_sleep
from .._retry.state import STATE
from . import Seconds, _seconds
from .._answers import ThrottlingPredicate, is_throttling_answer

__all__ = ["AdaptiveRate", "is_throttling_answer"]


def _number(field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"AdaptiveRate: {field} must be a number, got {value!r}")
    return float(value)


class AdaptiveRate:
    """A client-side send rate that backs off on throttling answers, as the
    AWS SDKs' ``adaptive`` retry mode does (the SDKs' retry behavior spec;
    botocore's ``retries/adaptive.py``): a token bucket whose fill rate a
    CUBIC controller sets. Each answer is recorded (:meth:`record`); a
    throttling answer (HTTP 429, 503 with Retry-After, gRPC
    RESOURCE_EXHAUSTED) sets the rate to ``beta`` times the measured send
    rate and enables the bucket; successes grow it back along CUBIC's curve
    ``scale_constant * (t - K)**3 + W_max`` (RFC 9438 section 4.2). Until the
    first throttling answer every request goes at once.

    Args:
        name: the name in metrics and errors (printable ASCII, <= 200 bytes).
        beta: CUBIC's decrease factor, in (0, 1). Default 0.7 (the spec's).
        scale_constant: CUBIC's C, > 0. Default 0.4.
        smoothing: the measured rate's weight of its newest 0.5 s bucket, in
            (0, 1]. Default 0.8.
        bucket: the measuring bucket in seconds, > 0. Default 0.5.
        min_fill_rate: the rate's floor in requests per second, > 0.
            Default 0.5.
        max_rate_scale: a new rate is at most this times the measured rate,
            >= 1. Default 2.
        max_wait: the longest :meth:`acquire` waits (seconds); None: no bound.

    Raises:
        ValueError: a bad option, naming the field.
        TypeError: an option of the wrong type.

    Thread-safety: safe to share between threads and event loops.

    .. versionadded:: 0.4.0
    """

    __slots__ = ("_core", "__weakref__")

    def __init__(
        self,
        *,
        name: str = "",
        beta: float = 0.7,
        scale_constant: float = 0.4,
        smoothing: float = 0.8,
        bucket: Seconds = 0.5,
        min_fill_rate: float = 0.5,
        max_rate_scale: float = 2.0,
        max_wait: Optional[Seconds] = None,
    ) -> None:
        if not isinstance(name, str):
            raise TypeError(f"AdaptiveRate: name must be a str, got {name!r}")
        bucket_seconds = _seconds(bucket, "bucket")
        self._core = _core.AdaptiveRate(
            name,
            STATE.now(),
            _number("beta", beta),
            _number("scale_constant", scale_constant),
            _number("smoothing", smoothing),
            0.0 if bucket_seconds is None else bucket_seconds,
            _number("min_fill_rate", min_fill_rate),
            _number("max_rate_scale", max_rate_scale),
            _seconds(max_wait, "max_wait"),
        )
        _core.metrics_track(self._core)

    @classmethod
    def _from_core(cls, core: Any) -> "AdaptiveRate":
        """Private: wraps an engine object the configuration registry built
        (shared by name, mulligan.load_config's "adaptive_rates" section, 0.5)."""
        self = cls.__new__(cls)
        self._core = core
        return self

    @property
    def name(self) -> str:
        return str(self._core.name)

    def reserve(self, max_wait: Optional[Seconds] = None) -> float:
        """Takes the next token now; returns the seconds to wait before
        sending (0.0: now). Raises :class:`mulligan.RateLimitedError` (with
        ``retry_in``) when the wait would exceed min(``max_wait``, the
        rate's own)."""
        admitted, wait, retry_in = self._core.acquire(STATE.now(), _seconds(max_wait, "max_wait"))
        if not admitted:
            raise RateLimitedError(
                f"adaptive rate {self.name!r}: next token in {retry_in:.3f} s",
                name=self.name,
                key="",
                retry_in=retry_in,
            )
        return float(wait)

    def acquire(self, max_wait: Optional[Seconds] = None) -> None:
        """Waits (blocking) for the next token; see :meth:`reserve`."""
        wait = self.reserve(max_wait)
        if wait > 0:
            STATE.sleep(wait)

    async def acquire_async(self, max_wait: Optional[Seconds] = None) -> None:
        """:meth:`acquire` for coroutines (asyncio.sleep: cancellable)."""
        wait = self.reserve(max_wait)
        if wait > 0:
            await _async_sleep(wait)

    def record(self, throttled: bool) -> None:
        """Records one answer now: ``throttled`` for a throttling answer."""
        if not isinstance(throttled, bool):
            raise TypeError(f"AdaptiveRate.record: throttled must be a bool, got {throttled!r}")
        self._core.record(throttled, STATE.now())

    def state(self) -> dict[str, Any]:
        """The controller now: ``enabled``, ``fill_rate``, ``max_capacity``,
        ``capacity`` (tokens), ``measured_rate`` (requests per second),
        ``last_max_rate`` (CUBIC's W_max), ``time_window`` (K, seconds),
        ``calculated_rate`` (the last CUBIC output)."""
        return dict(self._core.state(STATE.now()))

    @property
    def throttles(self) -> int:
        """Throttling answers recorded."""
        return int(self._core.throttles)

    def __repr__(self) -> str:
        return f"<mulligan.AdaptiveRate name={self.name!r}>"


def _record(rate: AdaptiveRate, judge: ThrottlingPredicate, value: Any) -> None:
    verdict = judge(value)
    if verdict is not None:
        rate.record(bool(verdict))


def adaptive_guard(
    fn: Callable[..., Any],
    rate: AdaptiveRate,
    judge: ThrottlingPredicate,
    on_refused: Optional[Callable[[str], None]] = None,
) -> Callable[..., Any]:
    """Wraps one attempt of ``fn`` (``@retry(adaptive_rate=)``, 0.4): takes a
    token of ``rate`` before it (a wait sleeps with the drivers' sleep or
    asyncio.sleep, both on the fake clock under mulligan.testing; a refusal
    raises RateLimitedError after ``on_refused("rate_limited")``), then
    records the attempt's exception or returned value as ``judge`` says."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_attempt(*args: Any, **kwargs: Any) -> Any:
            try:
                await rate.acquire_async()
            except RateLimitedError:
                if on_refused is not None:
                    on_refused("rate_limited")
                raise
            try:
                result = await fn(*args, **kwargs)
            except Exception as error:  # (not cancellation: no answer)
                _record(rate, judge, error)
                raise
            _record(rate, judge, result)
            return result

        return async_attempt

    @functools.wraps(fn)
    def attempt(*args: Any, **kwargs: Any) -> Any:
        try:
            rate.acquire()
        except RateLimitedError:
            if on_refused is not None:
                on_refused("rate_limited")
            raise
        try:
            result = fn(*args, **kwargs)
        except Exception as error:  # (not KeyboardInterrupt: no answer)
            _record(rate, judge, error)
            raise
        _record(rate, judge, result)
        return result

    return attempt


# Configuration files name adaptive rates (0.5): the registry of
# mulligan._config wraps the engine objects it builds with this (registered
# from here, as mulligan._limits registers Bulkhead and RateLimiter).
_config_policies._PART_WRAPPERS["adaptive_rate"] = AdaptiveRate._from_core
