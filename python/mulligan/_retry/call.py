"""One logical call on the failure path: :class:`_Call`, shared by both drivers.

A decorated call enters here only when its first attempt has failed (or
before it, when a breaker must be asked). Every decision is the core
pipeline's (DESIGN.md section 2): the call is a ``_core.Call`` of the
configuration's ``_core.Pipeline``, which classifies nothing on its own but
decides, from each attempt's outcome, whether to retry and after what
delay, records the breaker's result, counts the metrics and says when the
fallback answers. This module only turns attempts into outcomes, calls the
hooks, logs, and ends the call: raises the last exception (with a note),
raises RetriesExhausted, returns a rejected result, or the fallback's
value. The sync and async drivers (``sync_driver``, ``async_driver``)
differ only in how they wait.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import datetime
import math
from logging import WARNING as _WARNING
from typing import Any, Optional

from .. import _core
from .._telemetry import tracing as _tracing
from .._errors import AttemptOutcome, CircuitOpenError, RetriesExhausted, ThrottledError, _circuit_open
from .._text import format_seconds
from .fallback import call_fallback
from .hooks import LOGGER as _LOGGER, RetryDetails, RetryStatistics, log_give_up, log_retry
from .options import _MISSING, _Config, _never_retried
from .state import STATE

__all__: list[str] = []

# Built once: the outcomes the drivers hand to the pipeline.
_RETRYABLE_FAILURE = _core.Outcome.failure(True)
_TERMINAL_FAILURE = _core.Outcome.failure(False)
_SUCCESS = _core.Outcome.success()

# The largest delay hint handed to the engine (its Duration holds ~9.2e9 s);
# anything longer is "too long" to every policy anyway.
_MAX_HINT = 9.0e9


class _Fallback:
    """A fallback's value travelling out of the retry loop."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _attempt_cap() -> int:
    """mulligan.testing's cap on attempts for a call beginning now: 1 with
    retries off, ``attempts`` in testing mode, else 0 (the policy's)."""
    state = STATE
    if not state.active:
        return 1
    return state.testing_attempts if state.testing else 0


def begin(cfg: _Config, start: float) -> Any:
    """Begins a ``_core.Call`` of ``cfg``'s pipeline at ``start`` under
    mulligan.testing's switches (the attempt cap, no waits)."""
    return cfg.pipeline.begin(start, cfg.fallback is not _MISSING, _attempt_cap(), STATE.testing)


def start_guarded(cfg: _Config, start: Optional[float]) -> Any:
    """Begins a call whose breaker must admit the first attempt: the
    ``_core.Call``, admitted or refused (``.refused``)."""
    if cfg.policy_name is not None:
        cfg.refresh()
    return cfg.pipeline.start(
        STATE.now() if start is None else start, cfg.fallback is not _MISSING, _attempt_cap(),
        STATE.testing,
    )


def _is_overload(cfg: _Config, exc: Optional[BaseException], result: Any) -> bool:
    """Whether ``throttle=`` must count this failure as an overload answer
    (0.5): its judge (``is_throttling=``, default
    :func:`mulligan._answers.is_throttling_answer`) said True. Without
    a throttle, never (the judge is not called)."""
    judge = cfg.throttle_judge
    return judge is not None and judge(exc if exc is not None else result) is True


def terminal_outcome(cfg: _Config, exc: BaseException) -> Any:
    """The outcome of an attempt that raised ``exc``, which the policy does
    not retry: terminal, and an overload answer when the throttle's judge
    says so (a 429 the caller chose not to retry still was not accepted)."""
    if _is_overload(cfg, exc, None):
        return _core.Outcome.failure(False, None, 0, True)
    return _TERMINAL_FAILURE


def end_unretried(cfg: _Config, core: Any, exc: BaseException) -> None:
    """Ends ``core`` (a guarded call's first attempt) on an exception the
    policy does not retry: a stop exception cancels it (counted cancelled,
    never failed: DESIGN.md), any other is a terminal outcome."""
    if _never_retried(exc):
        core.cancel(STATE.now(), 1)
    else:
        core.record(terminal_outcome(cfg, exc), STATE.now())


def first_failure(
    cfg: _Config, exc: Optional[BaseException], result: Any, start: Optional[float], core: Any
) -> Optional["_Call"]:
    """What both drivers do when a first attempt failed with ``exc`` (or a
    rejected ``result``): returns the :class:`_Call` that retries it, or None
    when the failure must propagate as it is (then ``exc`` is raised, or
    ``result`` returned, by the caller): a stop exception (KeyboardInterrupt,
    SystemExit, GeneratorExit, CancelledError) cancels the call (unjudged,
    counted cancelled, not failed), and
    with retries off (mulligan.testing.set_active(False)) the attempt is
    recorded (for a breaker) without hooks, notes or logs."""
    if exc is not None and _never_retried(exc):
        if core is not None:
            core.cancel(STATE.now(), 1)
        return None
    if cfg.budget is not None:
        cfg.budget._flush()  # the successes counted since, before the failure
    if not STATE.active:
        if core is not None:
            core.record(_RETRYABLE_FAILURE, STATE.now())
        return None
    return _Call(cfg, start, core)


def refusal(core: Any, attempts: int) -> Any:
    """The CircuitOpenError of a call its breaker refused after ``attempts``
    attempts (ThrottledError when adaptive throttling rejected it)."""
    if core.refusal_reason == "throttled":
        return ThrottledError(core.refusal_message, name=core.throttle_name, attempts=attempts)
    refused = _circuit_open(core.breaker_name, core.retry_in, core.refusal_message)
    refused.attempts = attempts
    return refused


def refused_first_attempt(cfg: _Config, core: Any) -> Any:
    """Ends a call whose breaker refused its first attempt: the fallback's
    answer, or the CircuitOpenError. The pipeline counted the failed call."""
    refused = refusal(core, 0)
    if core.use_fallback:
        return call_fallback(cfg.fallback, refused)
    raise refused


def _add_note(exc: BaseException, note: str) -> None:
    add_note = getattr(exc, "add_note", None)  # Python 3.11+
    if add_note is not None:
        add_note(note)


class _Call:
    """The failure-path state of one logical call (sync or async driver).

    Created when the first attempt has failed (``core`` None: the call begins
    then) or, with a breaker, from the call begun before the first attempt;
    never shared between calls.
    """

    __slots__ = (
        "cfg", "core", "start", "attempt", "waited", "outcomes", "hint", "reason", "done",
        "use_fallback", "guarded", "trace",
    )

    def __init__(self, cfg: _Config, start: Optional[float], core: Any = None) -> None:
        self.cfg = cfg
        if core is None:
            if cfg.policy_name is not None:
                cfg.refresh()
            if start is None:
                # No deadline: the success path did not read the clock, so the
                # call (and `elapsed`) starts when the first attempt failed.
                start = STATE.now()
            core = begin(cfg, start)
        elif start is None:
            start = core.start
        self.core = core
        self.start = start
        self.guarded = cfg.breaker is not None or cfg.throttle is not None
        self.attempt = 1  # the attempt that is running or just failed
        self.waited = 0.0
        self.outcomes: Optional[list[AttemptOutcome]] = [] if cfg.raise_on_give_up or cfg.fallback is not _MISSING else None
        self.hint: Optional[float] = None
        self.reason = "attempts_exhausted"
        self.done = False
        self.use_fallback = False
        # The call's spans (mulligan.otel tracing), or None: a retrying()
        # block sets its own after construction.
        self.trace: Optional[_tracing.CallTrace] = _tracing.CURRENT.get()

    def failed(self, exc: Optional[BaseException], result: Any) -> Optional[float]:
        """Records a failed attempt; returns the delay before the next one, or None to stop.

        Calls the hooks and logs. When it returns None the call is over: the
        caller then calls :meth:`give_up`.
        """
        cfg = self.cfg
        if self.outcomes is not None:
            self.outcomes.append(AttemptOutcome(self.attempt, exc, result))
        hint: Optional[float] = None
        if cfg.delay_hint is not None:
            hint = _sanitize_hint(cfg.delay_hint(exc if exc is not None else result))
        self.hint = hint
        now = STATE.now()
        # The engine decides; the predicates' answers travel with the failure.
        bits = cfg.stop_bits(self.attempt, now - self.start, exc, result) if cfg.stop_predicates else 0
        overload = cfg.throttle_judge is not None and _is_overload(cfg, exc, result)
        if hint is None and not bits and not overload:
            outcome = _RETRYABLE_FAILURE
        else:
            outcome = _core.Outcome.failure(True, hint, bits, overload)
        # One crossing: the Decision's fields as a tuple (no Decision built).
        decided: tuple[bool, float, Optional[str], bool] = self.core.decide(outcome, now)
        retry, delay, reason, use_fallback = decided
        hooks = cfg.on_retry if retry else cfg.on_give_up
        # The details are built only for someone to read them: a hook, or
        # the mulligan logger at WARNING (log_retry/log_give_up ask the same).
        details: Optional[RetryDetails] = None
        if hooks or _LOGGER.isEnabledFor(_WARNING):
            details = RetryDetails(
                name=cfg.name,
                attempt=self.attempt,
                delay=delay,
                exception=exc,
                result=result,
                elapsed=now - self.start,
                time_left=self.core.time_left(now) if cfg.timed else None,
                waited=self.waited,
                stop_reason=reason,
                from_delay_hint=hint is not None and (retry or reason == "retry_after_too_long"),
            )
        if retry:
            if details is not None:
                log_retry(details)
                for hook in hooks:
                    hook(details)
            self.waited += delay
            self.attempt += 1
            if self.trace is not None:
                self.trace.retry_scheduled(delay)
            return delay
        assert reason is not None
        self.reason = reason
        self.use_fallback = use_fallback
        if details is not None:
            log_give_up(details)
        self.finish(reason)
        if details is not None:
            for hook in hooks:
                hook(details)
        return None

    def give_up(self, exc: Optional[BaseException], result: Any) -> Any:
        """Ends a call whose retries gave up: the fallback's value (when the
        pipeline says it answers), or raises, or returns a rejected result."""
        reason = self.reason
        n = self.attempt
        note = f"mulligan: gave up after {n} attempt{'' if n == 1 else 's'} ({reason})"
        if reason == "retry_after_too_long" and self.hint is not None:
            note = (
                f"mulligan: gave up after {n} attempt{'' if n == 1 else 's'} (retry_after_too_long:"
                f" the delay hint of {format_seconds(self.hint)} exceeds retry_after_max"
                f" {format_seconds(self.cfg.retry_after_max)})"
            )
        if self.use_fallback:
            # The fallback answers the last failure: the exception, or, for a
            # rejected result, a RetriesExhausted carrying every attempt.
            if exc is None:
                exc = self._exhausted(note)
            else:
                _add_note(exc, note)
            return call_fallback(self.cfg.fallback, exc)
        if self.cfg.raise_on_give_up:
            raise self._exhausted(note) from exc
        if exc is not None:
            _add_note(exc, note)
            raise exc
        return result

    def _exhausted(self, note: str) -> RetriesExhausted:
        return RetriesExhausted(
            f"{self.cfg.name}: {note}",
            attempts=self.attempt,
            stop_reason=self.reason,
            outcomes=tuple(self.outcomes or ()),
        )

    def admit(self, exc: Optional[BaseException]) -> Optional[_Fallback]:
        """Asks the pipeline before the next attempt (only a breaker can say no).

        Returns None when the attempt may run. When the breaker refuses, the
        call ends: returns the fallback's value wrapped in ``_Fallback``, or
        raises CircuitOpenError (chained to the last failure).
        """
        if not self.guarded or self.core.admit(STATE.now()):
            return None
        refused = refusal(self.core, self.attempt - 1)
        self.attempt -= 1  # the refused attempt never ran: statistics count the attempts made
        self.finish(self.core.refusal_reason)
        if self.core.use_fallback:
            return _Fallback(call_fallback(self.cfg.fallback, refused))
        raise refused from exc

    def retryable(self, exc: BaseException) -> bool:
        """Whether the exception an attempt raised (one ``on=`` names) is a
        retryable failure. When it is not, the call ends here: the attempt
        is recorded as terminal (it frees a probe slot and counts as neither
        success nor failure in the breaker) and the caller re-raises it."""
        if self.cfg.retryable_exception(exc):
            return True
        self.unretried(exc)
        return False

    def unretried(self, exc: BaseException) -> None:
        """Ends the call on an exception the policy does not retry, which the
        caller re-raises: a stop exception (KeyboardInterrupt, CancelledError)
        cancels the call; any other is a terminal outcome."""
        if _never_retried(exc):
            self.interrupted()
        else:
            self.core.record(terminal_outcome(self.cfg, exc), STATE.now())
            self.finish("terminal")

    def rejected(self, result: Any) -> bool:
        """Whether a returned value must be retried (``on_result``); when it
        is accepted, the call ends here as a success."""
        if self.cfg.rejects(result):
            return True
        self.succeeded()
        return False

    def succeeded(self) -> None:
        """Ends the call with the attempt that succeeded."""
        self.core.record(_SUCCESS, STATE.now())
        self.finish("succeeded")

    def interrupted(self) -> None:
        """Ends a call whose attempt was stopped (KeyboardInterrupt, a
        cancelled task): the attempt counts as made, its breaker permit is
        freed unjudged, the budget is not told, and the call counts as
        cancelled, not failed (DESIGN.md: a stop exception is never counted
        as a failure)."""
        self.cancel(in_flight=1)

    def cancel(self, in_flight: int = 0) -> None:
        """Ends a call its caller cancelled (a stop exception: a cancelled
        task or wait, KeyboardInterrupt, SystemExit, GeneratorExit): what it
        holds is freed unjudged (Call::Cancel) and the metrics count it under
        ``cancelled``, neither success nor failure; ``in_flight`` 1 when an
        attempt was running. Does nothing once the call ended. (Added in 0.6.)"""
        self.core.cancel(STATE.now(), in_flight)
        if not self.done:
            self.finish("terminal")

    def abandon(self, in_flight: int = 0) -> None:
        """Ends a call left by an exception that is not an attempt's failure
        nor a cancel (a hook that raised): counted as a terminal failure;
        ``in_flight`` 1 when an attempt was running."""
        self.core.abandon(STATE.now(), in_flight)
        if not self.done:
            self.finish("terminal")

    def left(self, exc: BaseException, in_flight: int = 0) -> None:
        """Ends a call left by ``exc``, raised outside an attempt (a wait, a
        hook): cancelled when ``exc`` is a stop exception (a cancelled wait,
        Ctrl-C), else abandoned as a failure. (Added in 0.6.)"""
        if _never_retried(exc):
            self.cancel(in_flight)
        else:
            self.abandon(in_flight)

    def finish(self, reason: str) -> None:
        """Publishes the call's statistics (once)."""
        if self.done:
            return
        self.done = True
        if self.trace is not None:
            self.trace.finished(reason, self.attempt)
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
    try:
        seconds = float(hint)
    except OverflowError:  # an int past float's range (2**2000): as long as 1e300
        seconds = math.inf if hint > 0 else -math.inf
    if math.isnan(seconds) or seconds < 0:
        # Like an invalid Retry-After ("-5", RFC 9110 section 10.2.3): absent,
        # so the backoff applies.
        return None
    return min(seconds, _MAX_HINT)
