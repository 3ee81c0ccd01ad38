"""``@mulligan.retry``: retries for plain synchronous functions.

The engine decides, the caller acts (DESIGN.md section 1): the policy is
validated and compiled by the C++ core once, at decoration time; a decorated
call runs the user's function inside a plain ``try``/``return`` and enters the
engine only when an attempt raises one of the ``on`` exceptions. A call that
succeeds allocates nothing and never touches ``_core``.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import functools
import inspect
import sys
import time
from typing import Any, Callable, Optional, TypeVar, Union, overload

from . import _core

__all__ = ["retry"]

F = TypeVar("F", bound=Callable[..., Any])
ExceptionTypes = Union[type[BaseException], tuple[type[BaseException], ...]]

# Never retried, never counted, whatever `on` or a future predicate says
# (DESIGN.md section 4): they mean "stop now", not "this attempt failed".
_NEVER_RETRIED: tuple[type[BaseException], ...] = (KeyboardInterrupt, SystemExit, GeneratorExit)

# Built once: every caught `on` exception is a retryable failure to the engine.
_RETRYABLE_FAILURE = _core.Outcome.failure(True)

_MISSING: Any = object()


def _never_retried(exc: BaseException) -> bool:
    if isinstance(exc, _NEVER_RETRIED):
        return True
    # asyncio.CancelledError is a BaseException too; it can only exist if
    # asyncio was imported, so don't import it here.
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(exc, asyncio.CancelledError)


def _check_on(on: Any) -> tuple[type[BaseException], ...]:
    types = on if isinstance(on, tuple) else (on,)
    if not types:
        raise TypeError("mulligan.retry: on= must name at least one exception type")
    for t in types:
        if not (isinstance(t, type) and issubclass(t, BaseException)):
            if callable(t):
                raise TypeError(
                    f"mulligan.retry: on= must be an exception type or a tuple of them, "
                    f"got the callable {t!r}. Did you write @mulligan.retry without "
                    f"parentheses? Use @mulligan.retry(on=SomeError)."
                )
            raise TypeError(
                f"mulligan.retry: on= must be an exception type or a tuple of them, got {t!r}"
            )
    return types


def _add_note(exc: BaseException, note: str) -> None:
    add_note = getattr(exc, "add_note", None)  # Python 3.11+
    if add_note is not None:
        add_note(note)


def _give_up(exc: BaseException, decision: Any) -> BaseException:
    _add_note(
        exc,
        f"mulligan: gave up after {decision.attempt} attempt"
        f"{'' if decision.attempt == 1 else 's'} ({decision.reason})",
    )
    return exc


def _retry_loop(
    policy: Any,
    on: tuple[type[BaseException], ...],
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    exc: BaseException,
    start: Optional[float],
) -> Any:
    """The slow path: the first attempt raised `exc`; retry as the engine decides."""
    if _never_retried(exc):
        raise exc
    now = time.monotonic()
    session = policy.begin(now if start is None else start)
    while True:
        decision = session.on_outcome(_RETRYABLE_FAILURE, time.monotonic())
        if not decision.retry:
            raise _give_up(exc, decision)
        if decision.delay > 0:
            time.sleep(decision.delay)  # looked up per call: tests patch it
        try:
            return fn(*args, **kwargs)
        except on as e:
            exc = e
        if _never_retried(exc):
            raise exc


def _decorate(
    fn: F,
    policy: Any,
    on: tuple[type[BaseException], ...],
    timed: bool,
) -> F:
    if timed:
        # With a deadline the session must start when the first attempt did,
        # which costs one clock read per call; only deadline users pay it.
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.monotonic()
            try:
                return fn(*args, **kwargs)
            except on as e:
                exc = e
            return _retry_loop(policy, on, fn, args, kwargs, exc, start)

    else:

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except on as e:
                exc = e
            return _retry_loop(policy, on, fn, args, kwargs, exc, None)

    wrapper.retry_policy = policy  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


@overload
def retry(
    *,
    on: ExceptionTypes,
    attempts: int = ...,
    deadline: Optional[float] = ...,
    backoff: str = ...,
    base_delay: float = ...,
    multiplier: float = ...,
    max_delay: float = ...,
    jitter: str = ...,
    seed: Optional[int] = ...,
) -> Callable[[F], F]: ...


@overload
def retry(fn: Callable[..., Any], /) -> Callable[[F], F]: ...


def retry(
    _fn: Any = _MISSING,
    /,
    *,
    on: Any = _MISSING,
    attempts: int = 3,
    deadline: Optional[float] = None,
    backoff: str = "exponential",
    base_delay: float = 0.2,
    multiplier: float = 2.0,
    max_delay: float = 10.0,
    jitter: str = "full",
    seed: Optional[int] = None,
) -> Callable[[F], F]:
    """Retries a synchronous function when it raises one of the ``on`` exceptions.

    Example::

        @mulligan.retry(on=ConnectionError, attempts=5)
        def fetch() -> bytes: ...

    When the retries give up, the function's *last* exception is re-raised
    unchanged (same object), with a note such as
    ``"mulligan: gave up after 3 attempts (attempts_exhausted)"`` on Python 3.11+.
    :class:`KeyboardInterrupt`, :class:`SystemExit`, :class:`GeneratorExit` and
    ``asyncio.CancelledError`` are never retried, even with ``on=BaseException``.

    Args:
        on: required, keyword only: an exception type or a tuple of types that
            make an attempt retryable. Anything else propagates at once.
        attempts: total attempts including the first; >= 1. Default 3.
        deadline: total budget in seconds for the call, from the start of the
            first attempt; no retry starts if its wait would cross it. Default
            None (no deadline).
        backoff: ``"constant"``, ``"linear"``, ``"exponential"`` (default) or
            ``"decorrelated"``.
        base_delay: base delay in seconds, >= 0. Default 0.2.
        multiplier: growth factor of the exponential backoff, >= 0. Default 2.0.
        max_delay: cap in seconds on every wait, >= 0. Default 10.0.
        jitter: ``"none"``, ``"full"`` (default), ``"equal"`` or ``"proportional"``.
        seed: seed of the jitter generator, for reproducible waits. Default
            None (a fresh seed per call).

    Returns:
        A decorator that keeps the function's ``__name__``, ``__doc__`` and
        sets ``__wrapped__``.

    Raises:
        TypeError: ``on`` is missing or not exception types; the decorator was
            used without parentheses; the decorated object is a coroutine,
            generator or async generator function (async support comes later).
        ValueError: a bad number (``attempts < 1``, negative, NaN or infinite
            delays) or an unknown backoff/jitter name, at decoration time.

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
    if on is _MISSING:
        raise TypeError("mulligan.retry() missing required keyword argument: 'on'")
    on_types = _check_on(on)
    for name, value in (("backoff", backoff), ("jitter", jitter)):
        if not isinstance(value, str):
            raise TypeError(f"mulligan.retry: {name} must be a str, got {value!r}")
    if isinstance(attempts, bool) or not isinstance(attempts, int):
        raise TypeError(f"mulligan.retry: attempts must be an int, got {attempts!r}")
    # The core validates every value once, here; ValueError names the field.
    policy = _core.RetryPolicy(
        attempts=attempts,
        backoff=backoff,
        base_delay=float(base_delay),
        multiplier=float(multiplier),
        max_delay=float(max_delay),
        jitter=jitter,
        deadline=None if deadline is None else float(deadline),
        seed=seed,
    )

    def decorator(fn: F) -> F:
        if (
            inspect.iscoroutinefunction(fn)
            or inspect.isasyncgenfunction(fn)
            or inspect.isgeneratorfunction(fn)
        ):
            raise TypeError(
                f"mulligan.retry supports plain synchronous functions only; "
                f"{getattr(fn, '__qualname__', fn)!r} is a coroutine, generator or "
                f"async generator function"
            )
        if not callable(fn):
            raise TypeError(f"mulligan.retry: cannot decorate non-callable {fn!r}")
        return _decorate(fn, policy, on_types, deadline is not None)

    return decorator
