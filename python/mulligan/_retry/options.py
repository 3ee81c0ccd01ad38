"""The options of ``@mulligan.retry`` and ``mulligan.retrying``, validated and
compiled once, at decoration time, into a :class:`_Config`.

Every argument is checked with the helpers of :mod:`mulligan._validate` (one
error text per kind of argument); the numbers then go to the core, which
validates them again into an immutable ``_core.RetryPolicy`` (DESIGN.md
section 1: the policy is compiled once, not per call). A named policy
(``policy="payments"``) supplies the values a decorator does not give, and is
re-read on the failure path after :func:`mulligan.reload_config`.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import builtins
import contextvars
import logging
import sys
from typing import Any, Callable, Optional, TypedDict, Union

from .. import _core, _validate
from .._config import policies as _config
from .._telemetry import metrics as _metrics
from .._breaker.breaker import CircuitBreaker
from .._errors import BulkheadFullError, RateLimitedError
from .._answers import ThrottlingPredicate, is_throttling_answer

_LIMIT_REFUSALS = (BulkheadFullError, RateLimitedError)
from .._validate import UNSET as _UNSET, Seconds
from .hooks import RetryHook, RetryStatistics
from ..stop import Stop, StopContext
from ..wait import Wait

__all__ = ["ExceptionSpec", "HookSpec", "RetryOptions"]

#: What ``on=`` accepts: an exception type, a tuple of them, or a predicate
#: called with an :class:`Exception` that returns True to retry it.
ExceptionSpec = Union[
    type[BaseException], tuple[type[BaseException], ...], Callable[[Exception], bool]
]
#: A hook, or several hooks called in order.
HookSpec = Union[RetryHook, "tuple[RetryHook, ...]", "list[RetryHook]"]

# Never retried, never counted, whatever `on` or a predicate says (DESIGN.md
# section 4): they mean "stop now", not "this attempt failed".
_NEVER_RETRIED: tuple[type[BaseException], ...] = (KeyboardInterrupt, SystemExit, GeneratorExit)

# The default of `fallback=` (and of retry's positional slot): "none given".
_MISSING: Any = object()

# The owner named in every error message of the retry options.
_OWNER = "mulligan.retry"


# _never_retried's answer per exception type (the failure path asks it once or
# twice per attempt): True or False for a type whose instances all answer
# alike. Exception groups are judged per instance (by what they carry) and
# never cached; the cache stops growing at _NEVER_CACHE_MAX types (a program
# that makes exception classes on the fly then pays the full test).
_NEVER_BY_TYPE: dict[type, bool] = {}
_NEVER_CACHE_MAX = 1024


def _never_retried(exc: BaseException) -> bool:
    """Whether ``exc`` means "stop now": KeyboardInterrupt, SystemExit,
    GeneratorExit, asyncio.CancelledError, a bulkhead's or rate limiter's
    refusal, or an exception group carrying one of them. Thread-safe (the
    cache is a dict, changed under the GIL)."""
    kind = type(exc)
    try:
        known = _NEVER_BY_TYPE.get(kind)
    except Exception:  # noqa: BLE001 - a metaclass whose __hash__ raises or is None
        return _never_retried_uncached(exc, kind)
    if known is not None:
        return known
    return _never_retried_uncached(exc, kind)


def _never_retried_uncached(exc: BaseException, kind: type) -> bool:
    """_never_retried without the cache lookup; caches the answer when the
    type can be hashed (a metaclass may make it unhashable)."""
    group_type = getattr(builtins, "BaseExceptionGroup", None)
    answer = _never_retried_type(kind)
    if group_type is not None and issubclass(kind, group_type):
        # A group (TaskGroup, ExceptionGroup; Python 3.11+) that carries one
        # of them, e.g. a KeyboardInterrupt next to a task's failure, stops too.
        group = getattr(exc, "exceptions", None)
        return answer or (isinstance(group, tuple) and any(_never_retried(inner) for inner in group))
    # A type's bases are fixed when it is made, and a subclass of
    # asyncio.CancelledError can only be made once asyncio is imported, so
    # the answer for a type never changes.
    if len(_NEVER_BY_TYPE) < _NEVER_CACHE_MAX:
        try:
            _NEVER_BY_TYPE[kind] = answer
        except Exception:  # noqa: BLE001 - unhashable type: judged again next time
            pass
    return answer


def _never_retried_type(kind: type) -> bool:
    if issubclass(kind, _NEVER_RETRIED):
        return True
    # A bulkhead's or rate limiter's refusal is never retried (0.3).
    if issubclass(kind, _LIMIT_REFUSALS):
        return True
    # asyncio.CancelledError is a BaseException; it can only exist if asyncio
    # was imported, so don't import asyncio here just to test for it.
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and issubclass(kind, asyncio.CancelledError)


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
    wait: Optional[Wait]
    stop: Optional[Stop]
    min_delay: Seconds
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


def _check_hooks(name: str, value: Any) -> tuple[RetryHook, ...]:
    if value is None:
        return ()
    hooks = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    for hook in hooks:
        if not callable(hook):
            raise TypeError(
                f"mulligan.retry: {name} must be a callable or a list of them, got {hook!r}"
            )
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


# The options a composed wait= replaces, and the one stop= replaces.
_WAIT_REPLACES = ("backoff", "base_delay", "multiplier", "jitter", "jitter_fraction")


def _check_composed(given: dict[str, Any]) -> None:
    """Refuses a decorator that gives a composed wait (stop) and the options
    it replaces: one of them would be silently ignored."""
    if given.get("wait") is not None:
        clash = [k for k in _WAIT_REPLACES if k in given]
        if clash:
            raise TypeError(
                f"mulligan.retry: wait= replaces {', '.join(clash)}; give one or the other"
            )
    if given.get("stop") is not None and "attempts" in given:
        raise TypeError(
            "mulligan.retry: stop= replaces attempts=; write stop=stop.after_attempts(n) | ..."
        )


def _compile_composed(o: dict[str, Any]) -> tuple[Any, Any, tuple[Callable[[StopContext], Any], ...]]:
    """Returns the engine's wait and stop (or None) and the stop predicates."""
    wait, stop = o["wait"], o["stop"]
    if wait is not None and not isinstance(wait, Wait):
        raise TypeError(f"mulligan.retry: wait must be a mulligan.wait.Wait, got {wait!r}")
    if stop is not None and not isinstance(stop, Stop):
        raise TypeError(f"mulligan.retry: stop must be a mulligan.stop.Stop, got {stop!r}")
    predicates: list[Callable[[StopContext], Any]] = []
    engine_stop = stop._compile(predicates) if stop is not None else None
    return (wait._engine if wait is not None else None), engine_stop, tuple(predicates)


def _compile_policy(
    o: dict[str, Any],
) -> tuple[_core.RetryPolicy, Optional[float], float, tuple[Callable[[StopContext], Any], ...]]:
    """Returns (the core's RetryPolicy, its deadline, retry_after_max, the
    stop predicates) of the merged options ``o``: every number checked here,
    then by the core, which validates every value once and names the field
    in its ValueError. The deadline is the effective one: ``deadline=`` or a
    top-level ``stop.after_elapsed``."""
    deadline = _validate.seconds_or_none(_OWNER, "deadline", o["deadline"], positive=True)
    retry_after_max = _validate.seconds(_OWNER, "retry_after_max", o["retry_after_max"])
    wait, stop, predicates = _compile_composed(o)
    policy = _core.RetryPolicy(
        attempts=_validate.attempts(_OWNER, "attempts", o["attempts"]),
        backoff=_validate.name(_OWNER, "backoff", o["backoff"]),
        base_delay=_validate.seconds(_OWNER, "base_delay", o["base_delay"]),
        multiplier=_validate.number(_OWNER, "multiplier", o["multiplier"]),
        max_delay=_validate.seconds(_OWNER, "max_delay", o["max_delay"]),
        jitter=_validate.name(_OWNER, "jitter", o["jitter"]),
        jitter_fraction=_validate.probability(_OWNER, "jitter_fraction", o["jitter_fraction"]),
        deadline=deadline,
        retry_after_max=retry_after_max,
        clamp_retry_after=_validate.flag(_OWNER, "clamp_retry_after", o["clamp_retry_after"]),
        # Only a named policy sets these (the file's respect_retry_after and
        # per-kind counts).
        respect_retry_after=o.get("_extras", {}).get("respect_retry_after", True),
        **{k: v for k, v in o.get("_extras", {}).items() if k.endswith("_retries")},
        seed=_validate.integer_or_none(_OWNER, "seed", o["seed"], 0, 2**64 - 1, range_text="[0, 2**64)"),
        wait=wait,
        min_delay=_validate.seconds(_OWNER, "min_delay", o["min_delay"]),
        stop=stop,
    )
    return policy, policy.deadline, retry_after_max, predicates


class _TwoCounters:
    """The success counter of a policy with ``budget=``: ``tick()`` counts
    one in the metrics' and in the budget's ``_core.Counter``."""

    __slots__ = ("_metrics", "_budget")

    def __init__(self, metrics: Any, budget: Any) -> None:
        self._metrics = metrics
        self._budget = budget

    def tick(self) -> None:
        self._metrics.tick()
        self._budget.tick()


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
        "successes",
        "given",
        "policy_name",
        "generation",
        "breaker",
        "breaker_per_attempt",
        "fallback",
        "pipeline",
        "stop_predicates",
        "budget",
        "throttle",
        "throttle_judge",
    )

    def __init__(
        self,
        options: dict[str, Any],
        name: str,
        *,
        report: bool = True,
        is_throttling: Optional[ThrottlingPredicate] = None,
    ) -> None:
        """Validates and compiles ``options``; ``report=False`` only validates
        (no metrics are registered under ``name``). ``is_throttling`` judges
        which failures ``throttle=`` counts as overload answers (default
        :func:`is_throttling_answer`; the decorator checked it is callable)."""
        given = {k: v for k, v in options.items() if v is not _UNSET}
        # budget=None and throttle=None are the decorator's defaults: a named
        # policy's budget and throttle (0.4) fill them.
        for gate in ("budget", "throttle"):
            if gate in given and given[gate] is None:
                del given[gate]
        policy_name = _validate.name_or_none(_OWNER, "policy", given.pop("policy", None))
        unknown = set(given) - set(_DEFAULTS)
        if unknown:
            raise TypeError(f"mulligan.retry: unknown option(s) {sorted(unknown)}")
        _check_composed(given)
        o = dict(_DEFAULTS)
        if policy_name is not None:
            # The named policy's values, then what the decorator says.
            o.update(_config._resolve_retry_kwargs(policy_name))
            o["_extras"] = _config._resolve_retry_extras(policy_name)
            # The decorator's attempts= (backoff options) win over the
            # policy's composed stop (wait), which would replace them.
            if "attempts" in given and "stop" not in given:
                o["stop"] = None
            if any(k in given for k in _WAIT_REPLACES) and "wait" not in given:
                o["wait"] = None
        o.update(given)
        self.given = given
        self.policy_name: Optional[str] = policy_name
        self.generation = _config._generation
        self.options = o
        self.name = name
        self._set_callbacks(o)
        breaker = o["breaker"]
        if breaker is not None and not isinstance(breaker, CircuitBreaker):
            raise TypeError(
                f"mulligan.retry: breaker must be a mulligan.CircuitBreaker, got {breaker!r}"
            )
        self.breaker: Optional[CircuitBreaker] = breaker
        self.breaker_per_attempt = _validate.flag(_OWNER, "breaker_per_attempt", o["breaker_per_attempt"])
        self.raise_on_give_up = _validate.flag(_OWNER, "raise_on_give_up", o["raise_on_give_up"])
        self.fallback: Any = o["fallback"]
        self._set_gates(o)
        # Which failures the throttle counts as overload answers (0.5): the
        # engine counts every other answer as accepted by the backend.
        self.throttle_judge: Optional[ThrottlingPredicate] = (
            (is_throttling or is_throttling_answer) if self.throttle is not None else None
        )
        policy, deadline, retry_after_max, predicates = _compile_policy(o)
        self.stop_predicates: tuple[Callable[[StopContext], Any], ...] = predicates
        self.policy: _core.RetryPolicy = policy
        self.retry_after_max: float = retry_after_max
        self.timed = deadline is not None
        # Metrics under the callable's name: first-attempt successes tick a
        # Python counter (no native call); every other call reports through
        # the pipeline, which counts it once.
        if report:
            self.metrics = _metrics._metrics_for(name)
            counter = _metrics._success_counter(name)
            # A first-attempt success also earns for the budget: a second
            # counter, still no engine call.
            self.successes: Any = (
                counter if self.budget is None else _TwoCounters(counter, self.budget._successes)
            )
            self.tick: Callable[[], None] = self.successes.tick
        self.pipeline = self._make_pipeline(report)
        self.statistics: contextvars.ContextVar[Optional[RetryStatistics]] = contextvars.ContextVar(
            f"mulligan.statistics:{name}", default=None
        )

    def _make_pipeline(self, report: bool) -> Any:
        """The one composition every call of this configuration steps
        through (DESIGN.md section 2): retry, then the breaker, reporting to
        this callable's metrics."""
        return _core.Pipeline(
            self.policy,
            self.breaker._core if self.breaker is not None else None,
            self.breaker_per_attempt,
            self.metrics if report else None,
            self.budget._core if self.budget is not None else None,
            self.throttle._core if self.throttle is not None else None,
        )

    def _set_gates(self, o: dict[str, Any]) -> None:
        """Checks and sets ``budget=`` and ``throttle=`` (Added in 0.3.)."""
        from .._budget import AdaptiveThrottle, RetryBudget

        budget, throttle = o["budget"], o["throttle"]
        if budget is not None and not isinstance(budget, RetryBudget):
            raise TypeError(f"mulligan.retry: budget must be a mulligan.RetryBudget, got {budget!r}")
        if throttle is not None and not isinstance(throttle, AdaptiveThrottle):
            raise TypeError(
                f"mulligan.retry: throttle must be a mulligan.AdaptiveThrottle, got {throttle!r}"
            )
        self.budget: Optional[RetryBudget] = budget
        self.throttle: Optional[AdaptiveThrottle] = throttle

    def _set_callbacks(self, o: dict[str, Any]) -> None:
        """Checks and sets what decides retries (``on``, ``on_result``,
        ``delay_hint``) and the hooks."""
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
        self.delay_hint: Optional[Callable[[Any], Optional[float]]] = _validate.callable_or_none(
            _OWNER, "delay_hint", o["delay_hint"]
        )
        self.on_retry = _check_hooks("on_retry", o["on_retry"])
        self.on_give_up = _check_hooks("on_give_up", o["on_give_up"])

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
            self.stop_predicates = fresh.stop_predicates
            self.timed = fresh.timed
            self.retry_after_max = fresh.retry_after_max
            self.pipeline = self._make_pipeline(report=True)
        self.generation = generation

    def retryable_exception(self, exc: BaseException) -> bool:
        """Whether a caught exception is retryable (never true for the stop exceptions)."""
        if self.check is not None:
            return self.check(exc)
        return not _never_retried(exc)

    def stop_bits(self, attempt: int, elapsed: float, exc: Optional[BaseException], result: Any) -> int:
        """Runs the stop predicates (``mulligan.stop.when``) on a retryable
        failure: bit i set when predicate i says stop. Failure path only."""
        bits = 0
        if self.stop_predicates:
            context = StopContext(attempt, elapsed, exc, result)
            for i, predicate in enumerate(self.stop_predicates):
                if predicate(context):
                    bits |= 1 << i
        return bits

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
    "wait": None,
    "stop": None,
    "min_delay": 0.0,
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
    # Overload protection (Added in 0.3.)
    "budget": None,
    "throttle": None,
}

