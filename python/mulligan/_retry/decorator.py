"""``@mulligan.retry``: the decorator, and the typed callable it returns.

The engine decides, the caller acts (DESIGN.md section 1): the policy is
validated and compiled by the C++ core once, at decoration time, into a
``_core.RetryPolicy``. A decorated call runs the user's function inside a plain
``try``/``return``; only when an attempt fails does the driver start a
``_core.RetrySession``, ask it what to do, call the hooks, log, and wait with
``time.sleep`` (``sync_driver``) or ``asyncio.sleep`` (``async_driver``);
``mulligan.retrying`` blocks (``block``) share that failure path (``call``).

The success path therefore allocates nothing, sets no context variable and
reads no global switch; with a deadline it reads the clock once (the budget is
measured from the start of the first attempt). Everything else -- testing
switches, statistics, hooks, logging -- lives on the failure path.

Statistics (``fn.statistics``) are described in ``hooks``.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import inspect
import sys
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Concatenate,
    Coroutine,
    Optional,
    ParamSpec,
    Protocol,
    TypeVar,
    overload,
)

from .._breaker.breaker import CircuitBreaker
from .._config import policies as _config
from .._limits import Bulkhead, RateLimiter, guard
from .._limits.adaptive import AdaptiveRate, adaptive_guard
from .._answers import ThrottlingPredicate, is_throttling_answer
from .._validate import UNSET as _UNSET, Seconds
from .async_driver import wrap_async
from .hooks import StatisticsView
from ..stop import Stop
from ..wait import Wait
from .options import _MISSING, _WAIT_REPLACES, ExceptionSpec, HookSpec, RetryOptions, _Config
from .sync_driver import wrap_sync

if TYPE_CHECKING:
    from .._budget import AdaptiveThrottle, RetryBudget

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:
        from typing_extensions import Unpack

__all__ = ["RetryDecorator", "RetryingCallable", "retry"]

P = ParamSpec("P")
P2 = ParamSpec("P2")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
T = TypeVar("T")


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


_LIMIT_KEYS = ("bulkhead", "rate_limiter", "rate_limit_per_attempt", "adaptive_rate", "is_throttling")
# (bulkhead, rate_limiter, rate_limit_per_attempt, adaptive_rate, is_throttling)
_Limits = tuple[Any, Any, bool, Any, Any]


def _split_limits(options: dict[str, Any]) -> tuple[dict[str, Any], _Limits]:
    """Takes the bulkhead/limiter options (0.3) and the adaptive rate (0.4)
    out of the retry options; a named policy's ``bulkhead``, ``rate_limiter``
    and ``adaptive_rate`` (0.4) fill the ones the decorator does not give."""
    rest = {k: v for k, v in options.items() if k not in _LIMIT_KEYS}
    bulkhead, limiter = options.get("bulkhead"), options.get("rate_limiter")
    adaptive = options.get("adaptive_rate")
    policy_name = options.get("policy")
    if isinstance(policy_name, str) and (bulkhead is None or limiter is None or adaptive is None):
        named = _config._resolve_limit_kwargs(policy_name)
        bulkhead = named["bulkhead"] if bulkhead is None else bulkhead
        limiter = named["rate_limiter"] if limiter is None else limiter
        adaptive = named.get("adaptive_rate") if adaptive is None else adaptive
    judge = options.get("is_throttling")
    limits = (bulkhead, limiter, bool(options.get("rate_limit_per_attempt", False)), adaptive, judge)
    guard(lambda: None, limits[0], limits[1])  # type checks, at decoration time
    if adaptive is not None and not isinstance(adaptive, AdaptiveRate):
        raise TypeError(f"mulligan.retry: adaptive_rate must be a mulligan.AdaptiveRate, got {adaptive!r}")
    if judge is not None and not callable(judge):
        raise TypeError(f"mulligan.retry: is_throttling must be callable, got {judge!r}")
    return rest, limits


def _limit_options(limits: _Limits) -> dict[str, Any]:
    return {"bulkhead": limits[0], "rate_limiter": limits[1], "rate_limit_per_attempt": limits[2],
            "adaptive_rate": limits[3], "is_throttling": limits[4]}


def _refusal_counter(cfg: _Config) -> Optional[Callable[[str], None]]:
    """Counts a refusal by the outer guard (bulkhead, per-call limiter) as a
    call of this policy that failed with no attempt, as the engine's pipeline
    counts its own refusals (0.4: mulligan_rejections_total)."""
    metrics = getattr(cfg, "metrics", None)
    if metrics is None:
        return None

    def count(reason: str) -> None:
        metrics.call_started()
        metrics.call_failed(0, 0.0, reason)

    return count


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
    options, limits = _split_limits(options)
    cfg = _Config(options, _name_of(fn), is_throttling=limits[4])
    # Strategy 2 (0.3): the bulkhead outside the retry loop (its slot is held
    # for the whole logical call), the limiter outside it too (once per
    # call), or around each attempt with rate_limit_per_attempt.
    bulkhead, limiter, per_attempt, adaptive, judge = limits
    inner = guard(fn, None, limiter) if limiter is not None and per_attempt else fn
    if adaptive is not None:
        # The adaptive rate (0.4) at attempt level, as the AWS SDKs do: a
        # token before each attempt, each answer recorded.
        inner = adaptive_guard(inner, adaptive, judge or is_throttling_answer, _refusal_counter(cfg))
    wrapper = wrap_async(inner, cfg) if _is_async(fn) else wrap_sync(inner, cfg)
    if bulkhead is not None or (limiter is not None and not per_attempt):
        wrapper = guard(wrapper, bulkhead, None if per_attempt else limiter, _refusal_counter(cfg))

    def retry_with(**overrides: Any) -> Any:
        merged = {**options, **_limit_options(limits), **overrides}
        # A variant's attempts= (backoff options) replace the original's
        # composed stop (wait), rather than clash with it.
        if "attempts" in overrides and "stop" not in overrides:
            merged["stop"] = _UNSET
        if any(k in overrides for k in _WAIT_REPLACES) and "wait" not in overrides:
            merged["wait"] = _UNSET
        return _decorate(fn, merged)

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
    breaker: Optional[CircuitBreaker] = None,
    breaker_per_attempt: bool = False,
    fallback: Any = _MISSING,
    budget: Optional[RetryBudget] = None,
    throttle: Optional[AdaptiveThrottle] = None,
    bulkhead: Optional[Bulkhead] = None,
    rate_limiter: Optional[RateLimiter] = None,
    rate_limit_per_attempt: bool = False,
    adaptive_rate: Optional[AdaptiveRate] = None,
    is_throttling: Optional[ThrottlingPredicate] = None,
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
        base_delay: base delay in seconds, in [0, 9.2e9] (the engine's clock
            holds about 292 years); 0 means no wait at every attempt. Default 0.2.
        multiplier: growth factor of the exponential backoff, any finite
            number >= 0; 0 means no wait at every attempt. Default 2.0.
        max_delay: cap in seconds on every wait, applied after jitter, in
            [0, 9.2e9]. Default 10.0.
        jitter: ``"none"``, ``"full"`` (default), ``"equal"`` or ``"proportional"``.
        jitter_fraction: f of proportional jitter (delay times uniform(1-f, 1+f)),
            in [0, 1]. Default 0.2.
        wait: a composed :mod:`mulligan.wait` (``wait.exponential(base=0.1)
            + wait.jitter(1)``) that replaces ``backoff``, ``base_delay``,
            ``multiplier``, ``jitter`` and ``jitter_fraction`` (giving both is a
            TypeError); ``min_delay`` and ``max_delay`` still clamp it.
            Default None (the backoff options decide).
        stop: a composed :mod:`mulligan.stop` condition
            (``stop.after_attempts(5) | stop.after_elapsed(30)``) that
            replaces ``attempts`` (giving both is a TypeError). ``stop.never``
            (unlimited attempts) needs a ``deadline`` or a bounding condition,
            else ValueError. Default None (``attempts`` decides).
        min_delay: the least wait of every backoff, in seconds, in [0,
            max_delay], applied after jitter (not to delay hints). Default 0.
            .. versionadded:: 0.2.0
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
        bulkhead: a :class:`mulligan.Bulkhead` (0.3): each logical call holds
            one of its slots from before the first attempt until it ends
            (every attempt and retry wait included), waiting in its FIFO
            queue when it is full; a refusal raises
            :class:`mulligan.BulkheadFullError`, never retried.
        rate_limiter: a :class:`mulligan.RateLimiter` (0.3), asked once per
            logical call (before the first attempt; the wait sleeps, a
            refusal raises :class:`mulligan.RateLimitedError`, never retried),
            or before every attempt with ``rate_limit_per_attempt=True``.
        rate_limit_per_attempt: see ``rate_limiter``. Default False.
        adaptive_rate: a :class:`mulligan.AdaptiveRate` (0.4, the AWS SDKs'
            adaptive mode), asked before every attempt, as the SDKs do: its
            wait sleeps (the drivers' sleep, or asyncio.sleep in a coroutine;
            both bounded by the rate's ``max_wait``), a refusal raises
            :class:`mulligan.RateLimitedError`, never retried. Every answered
            attempt is then recorded, throttled or not, as ``is_throttling``
            says. With a ``policy=`` naming an ``adaptive_rate``, that one
            unless this is given.
        is_throttling: ``f(exception_or_result) -> bool | None`` (0.4): True
            for a throttling answer, False for another answer, None for no
            answer (not recorded). It also tells ``throttle=`` (0.5) which
            failures are overload answers: those the backend did not accept
            (True); every other answered attempt counts as accepted. Default
            :func:`mulligan._answers.is_throttling_answer`: HTTP 429,
            503 with Retry-After (read from ``status_code``/``status``/
            ``response.status_code`` and ``headers``), gRPC
            RESOURCE_EXHAUSTED (``code()``) are throttling; transport
            failures (TransportError, ConnectionError, TimeoutError) are no
            answer; everything else, returned values included, is another
            answer.
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
        budget: a :class:`mulligan.RetryBudget` every retry must be granted
            by (the first attempt never asks it). A refused retry ends the
            call as a give-up would, with the last failure and stop reason
            ``"budget"``. Default None. .. versionadded:: 0.3.0
        throttle: a :class:`mulligan.AdaptiveThrottle` asked before every
            attempt; a local rejection raises :class:`mulligan.ThrottledError`
            (or returns the fallback), never retried. Each attempt is
            recorded: a failure ``is_throttling`` judges a throttling answer
            (HTTP 429, 503 with Retry-After, gRPC RESOURCE_EXHAUSTED, by
            default) is a request the backend did not accept; any other
            answer is accepted (the SRE book's "Handling Overload"). Default
            None. .. versionadded:: 0.3.0
            .. versionchanged:: 0.5.0 throttling answers count as not
               accepted (before, every answer counted as accepted).

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
        "breaker": breaker,
        "breaker_per_attempt": breaker_per_attempt,
        "fallback": fallback,
        "budget": budget,
        "throttle": throttle,
        "bulkhead": bulkhead,
        "rate_limiter": rate_limiter,
        "rate_limit_per_attempt": rate_limit_per_attempt,
        "adaptive_rate": adaptive_rate,
        "is_throttling": is_throttling,
    }
    _Config(_split_limits(options)[0], "<validation>", report=False)  # validate now, at decoration time
    return RetryDecorator(options)
