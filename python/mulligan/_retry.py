"""``@mulligan.retry`` and ``mulligan.retrying``: the retry drivers for Python.

The engine decides, the caller acts (DESIGN.md section 1): the policy is
validated and compiled by the C++ core once, at decoration time, into a
``_core.RetryPolicy``. A decorated call runs the user's function inside a plain
``try``/``return``; only when an attempt fails does the driver start a
``_core.RetrySession``, ask it what to do, call the hooks, log, and wait with
``time.sleep`` (this module) or ``asyncio.sleep`` (``_asyncio.py``).

The success path therefore allocates nothing, sets no context variable and
reads no global switch; with a deadline it reads the clock once (the budget is
measured from the start of the first attempt). Everything else -- testing
switches, statistics, hooks, logging -- lives on the failure path.

Statistics (``fn.statistics``): each decorated function owns a
``contextvars.ContextVar``. A call that needed the engine (at least one failed
attempt) stores a frozen :class:`RetryStatistics` in it when it ends, so the
value is per thread and per asyncio task: concurrent calls never share or
reset each other's counts. Because the success path must stay free of
allocations and context-variable writes, a call that succeeds at its first
attempt does *not* update it: ``fn.statistics.last`` is the most recent call
*in this context that failed at least once* (None if there was none, or since
``fn.statistics.clear()``). Hooks receive exact per-attempt details.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import builtins
import contextvars
import datetime
import functools
import inspect
import logging
import math
import sys
from collections.abc import AsyncIterator, Iterator
from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Concatenate,
    Coroutine,
    Optional,
    ParamSpec,
    Protocol,
    TypedDict,
    TypeVar,
    Union,
    overload,
)

from . import _config, _core, _metrics
from ._state import STATE
from ._circuit import CircuitBreaker
from ._errors import AttemptOutcome, CircuitOpenError, RetriesExhausted
from ._hooks import RetryDetails, RetryHook, RetryStatistics, log_give_up, log_retry

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:
        from typing_extensions import Unpack

__all__ = [
    "Attempt",
    "ExceptionSpec",
    "RetryBlock",
    "RetryDecorator",
    "RetryingCallable",
    "StatisticsView",
    "retry",
    "retrying",
]

P = ParamSpec("P")
P2 = ParamSpec("P2")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
T = TypeVar("T")

#: What ``on=`` accepts: an exception type, a tuple of them, or a predicate
#: called with an :class:`Exception` that returns True to retry it.
ExceptionSpec = Union[
    type[BaseException], tuple[type[BaseException], ...], Callable[[Exception], bool]
]
#: A hook, or several hooks called in order.
HookSpec = Union[RetryHook, "tuple[RetryHook, ...]", "list[RetryHook]"]
Seconds = Union[float, datetime.timedelta]

# Never retried, never counted, whatever `on` or a predicate says (DESIGN.md
# section 4): they mean "stop now", not "this attempt failed".
_NEVER_RETRIED: tuple[type[BaseException], ...] = (KeyboardInterrupt, SystemExit, GeneratorExit)

# Built once: an exception or result judged retryable, without a delay hint.
_RETRYABLE_FAILURE = _core.Outcome.failure(True)

# The largest delay hint handed to the engine (its Duration holds ~9.2e9 s);
# anything longer is "too long" to every policy anyway.
_MAX_HINT = 9.0e9

_MISSING: Any = object()


class _Unset:
    """The default of every stop/wait argument: "not given", so that values of
    a named policy (``policy="payments"``) apply unless overridden."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<default>"


_UNSET: Any = _Unset()

# The engine counts attempts in a C int.
_MAX_ATTEMPTS = 2**31 - 1

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


def _call_fallback(fallback: Any, exc: BaseException) -> Any:
    """A callable fallback is called with the final exception; any other value is returned.

    An exception the fallback raises is chained to the final one (``__cause__``),
    so the original failure stays in the traceback.
    """
    if not callable(fallback):
        return fallback
    try:
        return fallback(exc)
    except Exception as fallback_error:
        if fallback_error is not exc and fallback_error.__cause__ is None:
            raise fallback_error from exc
        raise


def _refused_first_attempt(cfg: "_Config", refused: CircuitOpenError) -> Any:
    """Ends a call whose breaker refused its first attempt: the fallback's
    answer, or the CircuitOpenError raised again. Counted as a failed call."""
    cfg.metrics.call_started()
    cfg.metrics.call_failed(0, 0.0, "terminal")
    if cfg.fallback is _MISSING:
        raise refused
    cfg.metrics.fallback_used()
    return _call_fallback(cfg.fallback, refused)


def _never_retried(exc: BaseException) -> bool:
    if isinstance(exc, _NEVER_RETRIED):
        return True
    # asyncio.CancelledError is a BaseException; it can only exist if asyncio
    # was imported, so don't import asyncio here just to test for it.
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None and isinstance(exc, asyncio.CancelledError):
        return True
    # A group (TaskGroup, ExceptionGroup; Python 3.11+) that carries one of
    # them, e.g. a KeyboardInterrupt next to a task's failure, stops too.
    group = getattr(exc, "exceptions", None)
    if isinstance(group, tuple) and isinstance(exc, getattr(builtins, "BaseExceptionGroup", ())):
        return any(_never_retried(inner) for inner in group)
    return False


def _add_note(exc: BaseException, note: str) -> None:
    add_note = getattr(exc, "add_note", None)  # Python 3.11+
    if add_note is not None:
        add_note(note)


class RetryOptions(TypedDict, total=False):
    """The keyword arguments of :func:`retry`, for ``fn.retry_with(**options)``."""

    on: Optional[ExceptionSpec]
    on_result: Optional[Callable[[Any], bool]]
    attempts: int
    deadline: Optional[Seconds]
    backoff: str
    base_delay: Seconds
    multiplier: float
    max_delay: Seconds
    jitter: str
    jitter_fraction: float
    retry_after_max: Seconds
    clamp_retry_after: bool
    delay_hint: Optional[Callable[[Any], Optional[float]]]
    on_retry: Optional[HookSpec]
    on_give_up: Optional[HookSpec]
    raise_on_give_up: bool
    seed: Optional[int]
    policy: Optional[str]
    breaker: Optional[CircuitBreaker]
    breaker_per_attempt: bool
    fallback: Any


# -- configuration, compiled once ------------------------------------------------


def _seconds(name: str, value: Any, *, optional: bool = False) -> Optional[float]:
    if value is None and optional:
        return None
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"mulligan.retry: {name} must be a number of seconds or a datetime.timedelta, "
            f"got {value!r}"
        )
    return float(value)


def _hooks(name: str, value: Any) -> tuple[RetryHook, ...]:
    if value is None:
        return ()
    hooks = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    for hook in hooks:
        if not callable(hook):
            raise TypeError(f"mulligan.retry: {name} must be a callable or a list of them, got {hook!r}")
    return hooks


def _compile_on(
    on: Any,
) -> tuple[Union[type[BaseException], tuple[type[BaseException], ...]], Optional[Callable[[Any], bool]]]:
    """Returns (what the wrapper's except clause catches, exception predicate)."""
    if on is None:
        return (), None  # `except ()` catches nothing
    if isinstance(on, type):
        if issubclass(on, BaseException):
            return on, None
        raise TypeError(
            f"mulligan.retry: on= must be an exception type, a tuple of them or a predicate, "
            f"got the class {on!r}"
        )
    if isinstance(on, tuple):
        if not on:
            raise TypeError("mulligan.retry: on= must name at least one exception type")
        for t in on:
            if not (isinstance(t, type) and issubclass(t, BaseException)):
                raise TypeError(
                    f"mulligan.retry: a tuple given as on= must hold exception types only, got {t!r}"
                )
        return on, None
    if callable(on):
        predicate: Callable[[Any], bool] = on

        # A predicate sees Exception subclasses only: KeyboardInterrupt,
        # SystemExit, GeneratorExit and CancelledError are BaseExceptions and
        # are never retried whatever it would say.
        def check(exc: BaseException) -> bool:
            return not _never_retried(exc) and bool(predicate(exc))

        return Exception, check
    raise TypeError(
        f"mulligan.retry: on= must be an exception type, a tuple of them or a predicate, got {on!r}"
    )


class _Config:
    """A validated retry configuration; immutable and shared by every call."""

    __slots__ = (
        "options",
        "policy",
        "catch",
        "check",
        "on_result",
        "delay_hint",
        "on_retry",
        "on_give_up",
        "raise_on_give_up",
        "timed",
        "retry_after_max",
        "statistics",
        "name",
        "metrics",
        "tick",
        "given",
        "policy_name",
        "generation",
        "breaker",
        "breaker_per_attempt",
        "fallback",
    )

    def __init__(self, options: dict[str, Any], name: str, *, report: bool = True) -> None:
        """Validates and compiles ``options``; ``report=False`` only validates
        (no metrics are registered under ``name``)."""
        given = {k: v for k, v in options.items() if v is not _UNSET}
        policy_name = given.pop("policy", None)
        unknown = set(given) - set(_DEFAULTS)
        if unknown:
            raise TypeError(f"mulligan.retry: unknown option(s) {sorted(unknown)}")
        o = dict(_DEFAULTS)
        if policy_name is not None:
            if not isinstance(policy_name, str):
                raise TypeError(f"mulligan.retry: policy must be a str, got {policy_name!r}")
            # The named policy's values, then what the decorator says.
            o.update(_config._resolve_retry_kwargs(policy_name))
        o.update(given)
        breaker = o["breaker"]
        if breaker is not None and not isinstance(breaker, CircuitBreaker):
            raise TypeError(
                f"mulligan.retry: breaker must be a mulligan.CircuitBreaker, got {breaker!r}"
            )
        self.breaker: Optional[CircuitBreaker] = breaker
        if not isinstance(o["breaker_per_attempt"], bool):
            raise TypeError(
                f"mulligan.retry: breaker_per_attempt must be a bool, got {o['breaker_per_attempt']!r}"
            )
        self.breaker_per_attempt: bool = o["breaker_per_attempt"]
        self.fallback: Any = o["fallback"]
        self.given = given
        self.policy_name: Optional[str] = policy_name
        self.generation = _config._generation
        self.options = o
        self.name = name
        if o["on"] is None and o["on_result"] is None:
            raise TypeError(
                "mulligan.retry() missing required keyword argument: 'on' (or 'on_result'); "
                "name the exceptions to retry, e.g. @mulligan.retry(on=ConnectionError)"
            )
        self.catch, self.check = _compile_on(o["on"])
        on_result = o["on_result"]
        if on_result is not None and (
            not callable(on_result) or (isinstance(on_result, type) and issubclass(on_result, BaseException))
        ):
            raise TypeError(f"mulligan.retry: on_result must be a predicate, got {on_result!r}")
        self.on_result: Optional[Callable[[Any], bool]] = on_result
        delay_hint = o["delay_hint"]
        if delay_hint is not None and not callable(delay_hint):
            raise TypeError(f"mulligan.retry: delay_hint must be a callable, got {delay_hint!r}")
        self.delay_hint: Optional[Callable[[Any], Optional[float]]] = delay_hint
        self.on_retry = _hooks("on_retry", o["on_retry"])
        self.on_give_up = _hooks("on_give_up", o["on_give_up"])
        for flag in ("raise_on_give_up", "clamp_retry_after"):
            if not isinstance(o[flag], bool):
                raise TypeError(f"mulligan.retry: {flag} must be a bool, got {o[flag]!r}")
        self.raise_on_give_up: bool = o["raise_on_give_up"]
        for name_ in ("backoff", "jitter"):
            if not isinstance(o[name_], str):
                raise TypeError(f"mulligan.retry: {name_} must be a str, got {o[name_]!r}")
        attempts = o["attempts"]
        if isinstance(attempts, bool) or not isinstance(attempts, int):
            raise TypeError(f"mulligan.retry: attempts must be an int, got {attempts!r}")
        if not 1 <= attempts <= _MAX_ATTEMPTS:
            raise ValueError(
                f"mulligan.retry: attempts must be in [1, {_MAX_ATTEMPTS}], got {attempts}"
            )
        for name_ in ("multiplier", "jitter_fraction"):
            v = o[name_]
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"mulligan.retry: {name_} must be a number, got {v!r}")
        seed = o["seed"]
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"mulligan.retry: seed must be an int or None, got {seed!r}")
        if seed is not None and not 0 <= seed < 2**64:
            raise ValueError(f"mulligan.retry: seed must be in [0, 2**64), got {seed}")
        deadline = _seconds("deadline", o["deadline"], optional=True)
        retry_after_max = _seconds("retry_after_max", o["retry_after_max"])
        assert retry_after_max is not None
        self.retry_after_max = retry_after_max
        # The core validates every value once, here; ValueError names the field.
        self.policy = _core.RetryPolicy(
            attempts=attempts,
            backoff=o["backoff"],
            base_delay=_seconds("base_delay", o["base_delay"]),  # type: ignore[arg-type]
            multiplier=float(o["multiplier"]),
            max_delay=_seconds("max_delay", o["max_delay"]),  # type: ignore[arg-type]
            jitter=o["jitter"],
            jitter_fraction=float(o["jitter_fraction"]),
            deadline=deadline,
            retry_after_max=retry_after_max,
            clamp_retry_after=o["clamp_retry_after"],
            seed=seed,
        )
        self.timed = deadline is not None
        # Metrics under the callable's name: first-attempt successes tick a
        # Python counter (no native call); the failure path reports to the engine.
        if report:
            self.metrics = _metrics._metrics_for(name)
            self.tick = _metrics._success_ticker(name)
        self.statistics: contextvars.ContextVar[Optional[RetryStatistics]] = contextvars.ContextVar(
            f"mulligan.statistics:{name}", default=None
        )

    def refresh(self) -> None:
        """Rebuilds the engine policy after the named policy was reloaded.

        Called on the failure path only. A reload that made the policy invalid
        for this decorator keeps the previous one (and the error is logged).
        """
        generation = _config._generation
        if self.policy_name is None or generation == self.generation:
            return
        try:
            fresh = _Config({**self.given, "policy": self.policy_name}, self.name, report=False)
        except (TypeError, ValueError) as exc:
            logging.getLogger("mulligan").error(
                "mulligan: keeping the previous retry policy of %s: reloaded policy %r is invalid: %s",
                self.name, self.policy_name, exc,
            )
        else:
            self.policy = fresh.policy
            self.timed = fresh.timed
            self.retry_after_max = fresh.retry_after_max
        self.generation = generation

    def retryable_exception(self, exc: BaseException) -> bool:
        """Whether a caught exception is retryable (never true for the stop exceptions)."""
        if self.check is not None:
            return self.check(exc)
        return not _never_retried(exc)

    def rejects(self, result: Any) -> bool:
        """Whether a returned value must be retried (``on_result``)."""
        return self.on_result is not None and bool(self.on_result(result))


_DEFAULTS: dict[str, Any] = {
    "on": None,
    "on_result": None,
    "attempts": 3,
    "deadline": None,
    "backoff": "exponential",
    "base_delay": 0.2,
    "multiplier": 2.0,
    "max_delay": 10.0,
    "jitter": "full",
    "jitter_fraction": 0.2,
    "retry_after_max": 60.0,
    "clamp_retry_after": False,
    "delay_hint": None,
    "on_retry": None,
    "on_give_up": None,
    "raise_on_give_up": False,
    "seed": None,
    "breaker": None,
    "breaker_per_attempt": False,
    "fallback": _MISSING,
}


# -- one logical call, on the failure path -------------------------------------


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
                f" the delay hint of {self.hint:g} s exceeds retry_after_max {self.cfg.retry_after_max:g} s)"
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
        return _call_fallback(self.cfg.fallback, exc)

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


def _run_sync(
    cfg: _Config,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    exc: Optional[BaseException],
    result: Any,
    start: Optional[float],
    permit: Any = None,
) -> Any:
    """The sync slow path: the first attempt failed with `exc` (or a rejected `result`).

    ``permit`` is the breaker permit the first attempt ran under (with ``breaker=``).
    """
    if exc is not None and _never_retried(exc):
        if permit is not None:
            cfg.breaker._after_attempt(permit, _BREAKER_IGNORED, final=True)  # type: ignore[union-attr]
        raise exc
    state = STATE
    if not state.active:
        if permit is not None:
            failed = _BREAKER_FAILURE if exc is not None else _BREAKER_SUCCESS
            cfg.breaker._after_attempt(permit, failed, final=True)  # type: ignore[union-attr]
        if exc is not None:
            raise exc
        return result
    call = _Call(cfg, start, permit)
    catch = cfg.catch
    try:
        while True:
            delay = call.failed(exc, result)
            if delay is None:
                return call.give_up(exc, result)
            if delay > 0:
                state.sleep(delay)
            call.wait_over()
            refused = call.next_permit(exc)
            if refused is not None:
                return refused.value
            try:
                result = fn(*args, **kwargs)
            except catch as e:
                if not cfg.retryable_exception(e):
                    call.breaker_result(_BREAKER_IGNORED, final=True)
                    call.finish("terminal")
                    raise
                exc, result = e, None
            except BaseException:
                call.breaker_result(_BREAKER_IGNORED, final=True)
                call.finish("terminal")
                raise
            else:
                if not cfg.rejects(result):
                    call.breaker_result(_BREAKER_SUCCESS, final=True)
                    call.finish("succeeded")
                    return result
                exc = None
    except BaseException:
        call.abandon()
        raise


# -- the decorator ----------------------------------------------------------------


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


class RetryingCallable(Protocol[P, R_co]):
    """The type of a function decorated with ``@mulligan.retry``.

    It is called exactly like the function it wraps (same parameters, same
    return type; a coroutine function stays a coroutine function) and adds
    :attr:`statistics` and :meth:`retry_with`.

    .. versionadded:: 0.1.0
    """

    __name__: str
    __qualname__: str
    __wrapped__: Callable[..., Any]

    @property
    def statistics(self) -> StatisticsView: ...

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...

    def retry_with(self, **options: Unpack[RetryOptions]) -> RetryingCallable[P, R_co]:
        """Returns the same function decorated with these options changed."""
        ...

    # Binding as a method: `obj.method(...)` drops the `self` parameter.
    @overload
    def __get__(self, instance: None, owner: Optional[type[Any]] = None, /) -> RetryingCallable[P, R_co]: ...
    @overload
    def __get__(
        self: RetryingCallable[Concatenate[T, P2], R_co],
        instance: T,
        owner: Optional[type[Any]] = None,
        /,
    ) -> Callable[P2, R_co]: ...


def _is_async(fn: Any) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # an object with `async def __call__`
    return not inspect.isfunction(fn) and call is not None and inspect.iscoroutinefunction(call)


def _name_of(fn: Any) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return name if isinstance(name, str) else repr(fn)


def _wrap_sync(fn: Callable[..., Any], cfg: _Config) -> Callable[..., Any]:
    catch = cfg.catch
    if cfg.breaker is not None:
        return _wrap_sync_with_breaker(fn, cfg)
    if cfg.check is None and cfg.on_result is None and not cfg.timed:
        # The common case, kept minimal: exception types, no deadline.
        tick = cfg.tick

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                result = fn(*args, **kwargs)
            except catch as e:
                exc = e
            else:
                tick()
                return result
            return _run_sync(cfg, fn, args, kwargs, exc, None, None)

        return wrapper

    state = STATE
    tick = cfg.tick
    if cfg.check is None and cfg.on_result is None:
        # Exception types with a deadline: one clock read per call.
        @functools.wraps(fn)
        def timed_wrapper(*args: Any, **kwargs: Any) -> Any:
            start = state.now()
            try:
                result = fn(*args, **kwargs)
            except catch as e:
                exc = e
            else:
                tick()
                return result
            return _run_sync(cfg, fn, args, kwargs, exc, None, start)

        return timed_wrapper

    check = cfg.check
    on_result = cfg.on_result
    timed = cfg.timed

    @functools.wraps(fn)
    def general_wrapper(*args: Any, **kwargs: Any) -> Any:
        # With a deadline the session must start when the first attempt did,
        # which costs one clock read per call; only deadline users pay it.
        start = state.now() if timed else None
        try:
            result = fn(*args, **kwargs)
        except catch as e:
            if check is not None and not check(e):
                raise
            exc = e
        else:
            if on_result is None or not on_result(result):
                tick()
                return result
            return _run_sync(cfg, fn, args, kwargs, None, result, start)
        return _run_sync(cfg, fn, args, kwargs, exc, None, start)

    return general_wrapper


def _wrap_sync_with_breaker(fn: Callable[..., Any], cfg: _Config) -> Callable[..., Any]:
    """The sync wrapper with ``breaker=``: the breaker is checked before every
    attempt, so an open breaker ends the call at once with CircuitOpenError
    (or the fallback) and never runs ``fn``."""
    breaker = cfg.breaker
    assert breaker is not None
    catch = cfg.catch
    check = cfg.check
    on_result = cfg.on_result
    timed = cfg.timed
    tick = cfg.tick
    state = STATE

    @functools.wraps(fn)
    def breaker_wrapper(*args: Any, **kwargs: Any) -> Any:
        start = state.now() if timed else None
        try:
            permit = breaker._acquire()
        except CircuitOpenError as refused:
            return _refused_first_attempt(cfg, refused)
        try:
            result = fn(*args, **kwargs)
        except catch as e:
            if check is not None and not check(e):
                breaker._after_attempt(permit, _BREAKER_IGNORED, final=True)
                raise
            exc = e
        except BaseException:
            breaker._after_attempt(permit, _BREAKER_IGNORED, final=True)
            raise
        else:
            if on_result is None or not on_result(result):
                breaker._after_attempt(permit, _BREAKER_SUCCESS, final=True)
                tick()
                return result
            return _run_sync(cfg, fn, args, kwargs, None, result, start, permit)
        return _run_sync(cfg, fn, args, kwargs, exc, None, start, permit)

    return breaker_wrapper


def _decorate(fn: Any, options: dict[str, Any]) -> Any:
    if isinstance(fn, (classmethod, staticmethod)):
        # @retry above @classmethod/@staticmethod: wrap the function inside.
        return type(fn)(_decorate(fn.__func__, options))
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise TypeError(
            f"mulligan.retry cannot decorate the generator function {_name_of(fn)!r}: "
            "a generator's failures happen while it is iterated, after the call returned; "
            "retry the code that consumes it instead"
        )
    if not callable(fn):
        raise TypeError(f"mulligan.retry: cannot decorate non-callable {fn!r}")
    cfg = _Config(options, _name_of(fn))
    if _is_async(fn):
        from ._asyncio import wrap_async

        wrapper = wrap_async(fn, cfg)
    else:
        wrapper = _wrap_sync(fn, cfg)

    def retry_with(**overrides: Any) -> Any:
        return _decorate(fn, {**options, **overrides})

    wrapper.retry_with = retry_with  # type: ignore[attr-defined]
    wrapper.statistics = StatisticsView(cfg.statistics)  # type: ignore[attr-defined]
    wrapper.retry_policy = cfg.policy  # type: ignore[attr-defined]
    return wrapper


class RetryDecorator:
    """What :func:`retry` returns: apply it to a function, method or coroutine function.

    .. versionadded:: 0.1.0
    """

    __slots__ = ("_options",)

    def __init__(self, options: dict[str, Any]) -> None:
        self._options = options

    @overload
    def __call__(
        self, fn: Callable[P, Coroutine[Any, Any, R]]
    ) -> RetryingCallable[P, Coroutine[Any, Any, R]]: ...
    @overload
    def __call__(self, fn: Callable[P, R]) -> RetryingCallable[P, R]: ...
    def __call__(self, fn: Any) -> Any:
        return _decorate(fn, self._options)


def retry(
    _fn: Any = _MISSING,
    /,
    *,
    on: Optional[ExceptionSpec] = None,
    on_result: Optional[Callable[[Any], bool]] = None,
    attempts: int = _UNSET,
    deadline: Optional[Seconds] = _UNSET,
    backoff: str = _UNSET,
    base_delay: Seconds = _UNSET,
    multiplier: float = _UNSET,
    max_delay: Seconds = _UNSET,
    jitter: str = _UNSET,
    jitter_fraction: float = _UNSET,
    retry_after_max: Seconds = _UNSET,
    clamp_retry_after: bool = _UNSET,
    delay_hint: Optional[Callable[[Any], Optional[float]]] = None,
    on_retry: Optional[HookSpec] = None,
    on_give_up: Optional[HookSpec] = None,
    raise_on_give_up: bool = False,
    seed: Optional[int] = _UNSET,
    policy: Optional[str] = None,
    breaker: Optional[CircuitBreaker] = None,
    breaker_per_attempt: bool = False,
    fallback: Any = _MISSING,
) -> RetryDecorator:
    """Retries a function, method or coroutine function when an attempt fails.

    Example::

        @mulligan.retry(on=ConnectionError, attempts=5, deadline=30.0)
        def fetch() -> bytes: ...

        @mulligan.retry(on=lambda e: getattr(e, "status", 0) >= 500)
        async def call_api() -> dict[str, object]: ...

    The wrapper keeps ``__name__``, ``__doc__``, ``__wrapped__`` and the
    signature; a coroutine function's wrapper is a coroutine function that
    waits with ``asyncio.sleep`` (cancelling the task cancels the wait). It
    works on methods, and above or below ``@classmethod``/``@staticmethod``.
    It has ``fn.retry_with(**options)`` (a variant with options changed) and
    ``fn.statistics`` (see :class:`StatisticsView`).

    When the retries give up, the *last* exception is re-raised unchanged
    (same object) with a note such as
    ``"mulligan: gave up after 3 attempts (attempts_exhausted)"`` on Python
    3.11+; when the last attempt returned a value rejected by ``on_result``,
    that value is returned. With ``raise_on_give_up=True``,
    :class:`mulligan.RetriesExhausted` is raised instead, carrying every
    attempt's outcome, with the last exception as ``__cause__``. An exception
    that is not retryable propagates at once, unchanged.
    :class:`KeyboardInterrupt`, :class:`SystemExit`, :class:`GeneratorExit`
    and ``asyncio.CancelledError`` are never retried nor counted, even with
    ``on=BaseException`` or a predicate.

    Every retry and give-up is logged on the ``mulligan`` logger at WARNING
    (structured fields ``mulligan_callable``, ``mulligan_attempt``,
    ``mulligan_delay``, ... in ``extra``).

    Args:
        on: keyword only: an exception type, a tuple of types, or a predicate
            called with the :class:`Exception` that returns True to retry it.
            At least one of ``on`` and ``on_result`` is required.
        on_result: a predicate called with each returned value; True retries.
        attempts: total attempts including the first; >= 1. Default 3.
        deadline: total budget (float seconds or timedelta) from the start of
            the first attempt; no attempt starts if its wait would reach it.
            Default None (no deadline).
        backoff: ``"constant"``, ``"linear"``, ``"exponential"`` (default) or
            ``"decorrelated"``.
        base_delay: base delay in seconds, >= 0. Default 0.2.
        multiplier: growth factor of the exponential backoff, >= 0. Default 2.0.
        max_delay: cap in seconds on every wait, applied after jitter, >= 0.
            Default 10.0.
        jitter: ``"none"``, ``"full"`` (default), ``"equal"`` or ``"proportional"``.
        jitter_fraction: f of proportional jitter (delay times uniform(1-f, 1+f)),
            in [0, 1]. Default 0.2.
        retry_after_max: the longest delay hint honoured, in seconds. Default 60.
        clamp_retry_after: False (default): a longer hint stops the retries at
            once (reason ``"retry_after_too_long"``); True: wait
            ``retry_after_max`` instead.
        delay_hint: called with each retryable exception (or rejected result);
            a number of seconds replaces the backoff delay like a Retry-After
            header (``retry_after_max`` and ``deadline`` apply); None keeps the
            backoff.
        on_retry: a :class:`RetryHook` (or a list of them) called with a
            :class:`RetryDetails` before each wait.
        on_give_up: hook(s) called with a :class:`RetryDetails` when the
            retries give up, before the exception is raised.
        raise_on_give_up: raise :class:`mulligan.RetriesExhausted` on give-up.
        seed: seed of the jitter generator, for reproducible waits. Default
            None (a fresh seed per call).
        policy: the name of a policy loaded with :func:`mulligan.load_config`
            (or from the file named by ``MULLIGAN_CONFIG``); its attempts,
            deadline, backoff, delays, jitter, retry_after_max and seed apply
            wherever this call does not give them. After
            :func:`mulligan.reload_config` the new values apply from the next
            failure on; a call already retrying keeps the policy it started
            with. ValueError for an unknown name.
        breaker: a :class:`mulligan.CircuitBreaker` checked before every
            attempt. When it refuses, the call ends at once with
            :class:`mulligan.CircuitOpenError` (never retried; ``.attempts``
            says how many attempts ran; chained to the last failure) without
            running the function. By default one result per logical call is
            recorded: success, failure (gave up on retryable errors), or
            ignored (a terminal error); a half-open probe records its own
            result at once, so a failed probe reopens the breaker and the
            retry is refused (the rule of the C++ ``RetryCall``).
        breaker_per_attempt: record every attempt in the breaker instead.
        fallback: returned instead of raising when the call finally fails
            (gave up, or refused by the breaker). A callable is called with
            the final exception and its return value is returned; any other
            object is returned as is. Counted in the ``fallbacks`` metric.

    Returns:
        A :class:`RetryDecorator`.

    Raises:
        TypeError: neither ``on`` nor ``on_result``; a wrong type; the
            decorator used without parentheses; decorating a generator or
            async generator function.
        ValueError: a bad number (``attempts < 1``, negative, NaN or infinite
            delays, ``jitter_fraction`` outside [0, 1]) or an unknown
            backoff/jitter name, at decoration time.

    .. versionadded:: 0.1.0
    """
    if _fn is not _MISSING:
        if isinstance(_fn, type) and issubclass(_fn, BaseException):
            raise TypeError(
                "mulligan.retry takes the exception types as a keyword: "
                f"@mulligan.retry(on={_fn.__name__})"
            )
        raise TypeError(
            "@mulligan.retry must be called with an on= argument naming the exceptions "
            "to retry, e.g. @mulligan.retry(on=ConnectionError); it cannot be used "
            "without parentheses"
        )
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
        "retry_after_max": retry_after_max,
        "clamp_retry_after": clamp_retry_after,
        "delay_hint": delay_hint,
        "on_retry": on_retry,
        "on_give_up": on_give_up,
        "raise_on_give_up": raise_on_give_up,
        "seed": seed,
        "policy": policy,
        "breaker": breaker,
        "breaker_per_attempt": breaker_per_attempt,
        "fallback": fallback,
    }
    _Config(options, "<validation>", report=False)  # validate now, at decoration time
    return RetryDecorator(options)


# -- code blocks: mulligan.retrying() ------------------------------------------


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
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool:
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
            self._run.call.finish("terminal")
        return False

    def __repr__(self) -> str:
        return f"<Attempt number={self.number} waited={self.waited:g}>"


class _BlockRun:
    """The state of one iteration over a :class:`RetryBlock` (one logical call)."""

    __slots__ = ("cfg", "start", "call")

    def __init__(self, cfg: _Config) -> None:
        self.cfg = cfg
        self.start = STATE.now()
        self.call: Optional[_Call] = None

    def after(self, attempt: Attempt) -> Optional[float]:
        """Returns the delay before the next attempt, or None when the loop is over.

        Raises the last exception (or RetriesExhausted) when the retries give up.
        """
        if not attempt._failed:
            if self.call is not None:
                self.call.finish("succeeded")
            else:
                self.cfg.tick()
            return None
        if not STATE.active:  # only a rejected result gets here when inactive
            return None
        if self.call is None:
            self.call = _Call(self.cfg, self.start)
        exc, result = attempt._exception, attempt._result
        delay = self.call.failed(exc, None if exc is not None else result)
        if delay is None:
            self.call.give_up(exc, None if exc is not None else result)
            return None
        return delay

    def waited(self) -> float:
        return 0.0 if self.call is None else self.call.waited

    def wait_over(self) -> None:
        if self.call is not None:
            self.call.wait_over()

    def abandon(self) -> None:
        if self.call is not None:
            self.call.abandon()


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
                except BaseException:
                    run.abandon()
                    raise
            run.wait_over()
            number += 1

    def __aiter__(self) -> AsyncIterator[Attempt]:
        from ._asyncio import iterate_async

        return iterate_async(_BlockRun(self._cfg))


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
    if not isinstance(name, str):
        raise TypeError(f"mulligan.retrying: name must be a str, got {name!r}")
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
