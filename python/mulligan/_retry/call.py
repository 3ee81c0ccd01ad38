"""One logical call on the failure path: :class:`_Call`, shared by both drivers.

A decorated call enters here only when its first attempt has failed. The
call begins a ``_core.RetrySession``, feeds it every failed attempt and gets
back the delay before the next one or the reason to stop; it consults the
breaker before each retry, calls the hooks, logs, counts metrics, and on
give-up raises the last exception (with a note), raises RetriesExhausted, or
returns the fallback's value. The sync and async drivers (``sync_driver``,
``async_driver``) differ only in how they wait.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import datetime
import math
from typing import Any, Optional

from .. import _core
from .._errors import AttemptOutcome, CircuitOpenError, RetriesExhausted
from .._text import format_seconds
from .fallback import call_fallback
from .hooks import RetryDetails, RetryStatistics, log_give_up, log_retry
from .options import _MISSING, _Config
from .state import STATE

__all__: list[str] = []

# Built once: an exception or result judged retryable, without a delay hint.
_RETRYABLE_FAILURE = _core.Outcome.failure(True)

# The largest delay hint handed to the engine (its Duration holds ~9.2e9 s);
# anything longer is "too long" to every policy anyway.
_MAX_HINT = 9.0e9


# Results reported to a breaker (CircuitBreaker._after_attempt): a retryable
# failure is a failure, a terminal error (a non-matching exception) is ignored.
_BREAKER_SUCCESS = 0
_BREAKER_FAILURE = 1
_BREAKER_IGNORED = 2


class _Fallback:
    """A fallback's value travelling out of the retry loop."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _refused_first_attempt(cfg: _Config, refused: CircuitOpenError) -> Any:
    """Ends a call whose breaker refused its first attempt: the fallback's
    answer, or the CircuitOpenError raised again. Counted as a failed call."""
    cfg.metrics.call_started()
    cfg.metrics.call_failed(0, 0.0, "terminal")
    if cfg.fallback is _MISSING:
        raise refused
    cfg.metrics.fallback_used()
    return call_fallback(cfg.fallback, refused)


def _add_note(exc: BaseException, note: str) -> None:
    add_note = getattr(exc, "add_note", None)  # Python 3.11+
    if add_note is not None:
        add_note(note)


class _Call:
    """The failure-path state of one logical call (sync or async driver).

    Created when the first attempt has failed; never shared between calls.
    """

    __slots__ = (
        "cfg", "session", "start", "attempt", "waited", "outcomes", "hint", "reason", "waiting",
        "done", "permit",
    )

    def __init__(self, cfg: _Config, start: Optional[float], permit: Any = None) -> None:
        self.cfg = cfg
        # The breaker permit of the attempt that is running or just failed.
        self.permit = permit
        if cfg.policy_name is not None:
            cfg.refresh()
        if start is None:
            # No deadline: the success path did not read the clock, so the
            # session (and `elapsed`) starts when the first attempt failed.
            start = STATE.now()
        self.start = start
        self.session = cfg.policy.begin(start)
        self.attempt = 1  # the attempt that is running or just failed
        self.waited = 0.0
        self.outcomes: Optional[list[AttemptOutcome]] = [] if cfg.raise_on_give_up else None
        self.hint: Optional[float] = None
        self.reason = "attempts_exhausted"
        self.waiting = False  # a retry is scheduled and its wait has not ended
        self.done = False
        cfg.metrics.call_started()

    def failed(self, exc: Optional[BaseException], result: Any) -> Optional[float]:
        """Records a failed attempt; returns the delay before the next one, or None to stop.

        Calls the hooks and logs. When it returns None the call is over: the
        caller then calls :meth:`give_up`.
        """
        cfg = self.cfg
        state = STATE
        if self.outcomes is not None:
            self.outcomes.append(AttemptOutcome(self.attempt, exc, result))
        hint: Optional[float] = None
        outcome = _RETRYABLE_FAILURE
        if cfg.delay_hint is not None:
            hint = _sanitize_hint(cfg.delay_hint(exc if exc is not None else result))
            if hint is not None:
                outcome = _core.Outcome.failure(True, hint)
        self.hint = hint
        now = state.now()
        decision = self.session.on_outcome(outcome, now)
        retry = decision.retry
        delay = decision.delay
        reason: Optional[str] = None if retry else decision.reason
        if state.testing:
            # No waits, and at most `testing_attempts` attempts.
            delay = 0.0
            if retry and self.attempt >= state.testing_attempts:
                retry, reason = False, "attempts_exhausted"
        if retry or not decision.retry:
            cfg.metrics.attempt_failed(self.attempt, outcome, decision, now - self.start)
            self.waiting = retry
        if cfg.breaker is not None:
            # A retryable failure is a breaker failure; one result per logical
            # call unless breaker_per_attempt (see CircuitBreaker._after_attempt).
            self.breaker_result(_BREAKER_FAILURE, final=not retry)
        time_left = self.session.time_left(now) if cfg.timed else None
        details = RetryDetails(
            name=cfg.name,
            attempt=self.attempt,
            delay=delay if retry else 0.0,
            exception=exc,
            result=result,
            elapsed=now - self.start,
            time_left=time_left,
            waited=self.waited,
            stop_reason=reason,
            from_delay_hint=hint is not None and (retry or reason == "retry_after_too_long"),
        )
        if retry:
            log_retry(details)
            for hook in cfg.on_retry:
                hook(details)
            self.waited += delay
            self.attempt += 1
            return delay
        assert reason is not None
        self.reason = reason
        log_give_up(details)
        self.finish(reason)
        for hook in cfg.on_give_up:
            hook(details)
        return None

    def give_up(self, exc: Optional[BaseException], result: Any) -> Any:
        """Ends a call whose retries gave up: raises, or returns a rejected result."""
        reason = self.reason
        n = self.attempt
        note = f"mulligan: gave up after {n} attempt{'' if n == 1 else 's'} ({reason})"
        if reason == "retry_after_too_long" and self.hint is not None:
            note = (
                f"mulligan: gave up after {n} attempt{'' if n == 1 else 's'} (retry_after_too_long:"
                f" the delay hint of {format_seconds(self.hint)} exceeds retry_after_max"
                f" {format_seconds(self.cfg.retry_after_max)})"
            )
        if exc is not None and self.cfg.fallback is not _MISSING:
            _add_note(exc, note)
            return self.use_fallback(exc)
        if self.cfg.raise_on_give_up:
            raise RetriesExhausted(
                f"{self.cfg.name}: {note}",
                attempts=n,
                stop_reason=reason,
                outcomes=tuple(self.outcomes or ()),
            ) from exc
        if exc is not None:
            _add_note(exc, note)
            raise exc
        return result

    def breaker_result(self, result: int, *, final: bool) -> None:
        """Reports the attempt under ``self.permit`` to the breaker (if any)."""
        breaker = self.cfg.breaker
        if breaker is not None and self.permit is not None:
            permit, self.permit = self.permit, None
            breaker._after_attempt(
                permit, result, final=final, per_attempt=self.cfg.breaker_per_attempt
            )

    def next_permit(self, exc: Optional[BaseException]) -> Any:
        """Acquires the breaker before the next attempt.

        Returns None when there is no breaker. When the breaker refuses, the
        call ends: returns the fallback's value wrapped in ``_Fallback``, or
        raises CircuitOpenError (chained to the last failure).
        """
        breaker = self.cfg.breaker
        if breaker is None:
            return None
        try:
            self.permit = breaker._acquire()
        except CircuitOpenError as refused:
            refused.attempts = self.attempt - 1
            self.finish("terminal")
            if self.cfg.fallback is not _MISSING:
                return _Fallback(self.use_fallback(refused))
            raise refused from exc
        return None

    def use_fallback(self, exc: BaseException) -> Any:
        """Returns the fallback's answer to a call that finally failed with ``exc``."""
        self.cfg.metrics.fallback_used()
        return call_fallback(self.cfg.fallback, exc)

    def wait_over(self) -> None:
        """Ends the wait before a retry (also when the wait was interrupted)."""
        if self.waiting:
            self.waiting = False
            self.cfg.metrics.retry_wait_ended()

    def abandon(self) -> None:
        """Ends a call left by an exception that is not an attempt's failure
        (a cancelled wait, KeyboardInterrupt): counted as a terminal failure."""
        self.wait_over()
        self.breaker_result(_BREAKER_IGNORED, final=True)
        if not self.done:
            self.finish("terminal")

    def finish(self, reason: str) -> None:
        """Records the end of the call in the metrics and publishes its statistics."""
        if self.done:
            return
        self.done = True
        self.wait_over()
        elapsed = STATE.now() - self.start
        if reason == "succeeded":
            self.cfg.metrics.call_succeeded(self.attempt, elapsed)
        else:
            self.cfg.metrics.call_failed(self.attempt, elapsed, reason)
        self.cfg.statistics.set(
            RetryStatistics(
                name=self.cfg.name,
                attempts=self.attempt,
                waited=self.waited,
                elapsed=STATE.now() - self.start,
                stop_reason=reason,
            )
        )


def _sanitize_hint(hint: Any) -> Optional[float]:
    if hint is None:
        return None
    if isinstance(hint, datetime.timedelta):
        hint = hint.total_seconds()
    if isinstance(hint, bool) or not isinstance(hint, (int, float)):
        raise TypeError(f"mulligan.retry: delay_hint must return seconds or None, got {hint!r}")
    seconds = float(hint)
    if math.isnan(seconds) or seconds < 0:
        # Like an invalid Retry-After ("-5", RFC 9110 section 10.2.3): absent,
        # so the backoff applies.
        return None
    return min(seconds, _MAX_HINT)
