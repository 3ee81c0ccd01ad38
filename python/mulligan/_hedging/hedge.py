"""``@mulligan.hedge``: extra copies of a coroutine call, the first success wins.

The rules are the core's (hedging/hedging.h, gRPC A6 ``hedgingPolicy``): the
engine's ``_core.HedgedCall`` says when each copy may start, takes each
copy's outcome, names the winner and the copies to cancel, and never allows
more than ``max_attempts`` copies. This driver only starts copies as asyncio
tasks, waits, turns exceptions into outcomes and cancels the losers.

Time is the running event loop's ``loop.time()`` (``time.monotonic()`` on the
default loops), so a loop with virtual time controls the copies' start times.

.. versionadded:: 0.5.0
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any, Callable, Coroutine, Optional, TypeVar, Union

from .. import _core, _validate
from .._breaker.breaker import CircuitBreaker
from .._errors import _circuit_open
from .._http.headers import new_idempotency_key
from .._telemetry import metrics as _metrics
from .policy import make_policy

__all__ = ["hedge"]

_OWNER = "mulligan.hedge"
_NEVER_CLASSIFIED = (asyncio.CancelledError, KeyboardInterrupt, SystemExit, GeneratorExit)

F = TypeVar("F", bound=Callable[..., Coroutine[Any, Any, Any]])


def _exception_types(value: Any) -> tuple[type[BaseException], ...]:
    types = value if isinstance(value, tuple) else (value,)
    for t in types:
        if not (isinstance(t, type) and issubclass(t, BaseException)):
            raise TypeError(f"{_OWNER}: on must be an exception type or a tuple of them, got {value!r}")
    return types


class _Hedged:
    """The compiled options of one decorated function (immutable)."""

    def __init__(self, fn: Callable[..., Coroutine[Any, Any, Any]], o: dict[str, Any]) -> None:
        self.fn = fn
        self.name: str = _validate.name_or_none(_OWNER, "name", o["name"]) or str(
            getattr(fn, "__qualname__", "hedged")
        )
        self.on = _exception_types(o["on"])
        self.key_arg: Optional[str] = _validate.name_or_none(_OWNER, "key_arg", o["key_arg"])
        self.signature = inspect.signature(fn)
        self.takes_key = self.key_arg is not None and self.key_arg in self.signature.parameters
        self.hedging = make_policy(
            _OWNER, lambda field: field, max_attempts=o["max_attempts"], delay=o["delay"],
            quantile=o["quantile"], quantile_window=o["quantile_window"],
            quantile_min_samples=o["quantile_min_samples"],
        )
        from .._budget import RetryBudget  # at use, as _retry/options.py does

        breaker, budget = o["breaker"], o["budget"]
        if breaker is not None and not isinstance(breaker, CircuitBreaker):
            raise TypeError(f"{_OWNER}: breaker must be a mulligan.CircuitBreaker, got {breaker!r}")
        if budget is not None and not isinstance(budget, RetryBudget):
            raise TypeError(f"{_OWNER}: budget must be a mulligan.RetryBudget, got {budget!r}")
        # The pipeline's retry policy only bounds the call (deadline); this
        # driver classifies exceptions itself (``on=``).
        policy = _core.RetryPolicy(attempts=1, deadline=o["deadline"])
        self.pipeline = _core.Pipeline(
            policy,
            breaker._core if breaker is not None else None,
            True,
            _metrics._metrics_for(self.name) if o["report_metrics"] else None,
            budget._core if budget is not None else None,
            None,
        )

    def outcome(self, exc: BaseException) -> Any:
        return _core.Outcome.failure(isinstance(exc, self.on))


async def _cancel(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancels `tasks` and waits for them; their exceptions are dropped."""
    for t in tasks:
        t.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


async def _run(h: _Hedged, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    loop = asyncio.get_running_loop()
    if h.takes_key:
        # The caller's key, by keyword or by position, else one new key for
        # every copy. A call the function could not take raises its TypeError.
        bound = h.signature.bind_partial(*args, **kwargs)
        if bound.arguments.get(h.key_arg) is None:  # type: ignore[arg-type]
            bound.arguments[h.key_arg] = new_idempotency_key()  # type: ignore[index]
            args, kwargs = bound.args, bound.kwargs
    call = h.hedging.begin(h.pipeline, loop.time())
    tasks: dict[int, asyncio.Task[Any]] = {}
    last_exc: Optional[BaseException] = None
    stopped = False  # the caller's cancel (or Ctrl-C): counted cancelled, never failed
    try:
        while True:
            action, copy, next_start, reason = call.admit(loop.time())
            if action == "start":
                tasks[copy] = loop.create_task(h.fn(*args, **kwargs))
                continue
            running = [t for t in tasks.values() if not t.done()]
            if call.finished and not running:
                break
            timeout = max(0.0, next_start - loop.time()) if action == "wait" else None
            done, _ = await asyncio.wait(running, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            for copy, task in sorted(tasks.items()):
                if task not in done:
                    continue
                exc = task.exception()
                if exc is not None and isinstance(exc, _NEVER_CLASSIFIED):
                    raise exc
                outcome = _core.Outcome.success() if exc is None else h.outcome(exc)
                if exc is not None:
                    last_exc = exc
                finished, winner, _reason, cancel = call.record(copy, outcome, loop.time())
                await _cancel([tasks[c] for c in cancel])
                if winner == copy:
                    return task.result()
                if finished:
                    break
            if call.finished:
                break
        if call.started == 0:
            raise _circuit_open(call.breaker_name, call.retry_in, call.refusal_message)
        assert last_exc is not None
        raise last_exc
    except _NEVER_CLASSIFIED:
        stopped = True
        raise
    finally:
        await _cancel([t for t in tasks.values() if not t.done()])
        # Once finished (a win, a failure) both do nothing.
        if stopped:
            call.cancel(loop.time())
        else:
            call.abandon(loop.time())


def hedge(
    *,
    max_attempts: int = 2,
    delay: float = 0.0,
    quantile: Optional[float] = None,
    quantile_window: int = 100,
    quantile_min_samples: int = 20,
    on: Union[type[BaseException], tuple[type[BaseException], ...]] = Exception,
    key_arg: Optional[str] = "idempotency_key",
    deadline: Optional[float] = None,
    breaker: Any = None,
    budget: Any = None,
    name: Optional[str] = None,
    report_metrics: bool = True,
) -> Callable[[F], F]:
    """Hedges a coroutine function: extra copies after a delay, the first success wins.

    Only for idempotent operations (or ones that carry an idempotency key).

    Args:
        max_attempts: copies per call, the first included; >= 2, above 5 is 5
            (gRPC A6 maxAttempts).
        delay: seconds after a copy started before the next may start (A6
            hedgingDelay); 0 starts every copy at once.
        quantile: in (0, 1]: the delay is instead this nearest-rank quantile
            of the latencies of the last ``quantile_window`` winning copies,
            once ``quantile_min_samples`` are known ("The Tail at Scale").
        on: exception types that are non-fatal: the next copy starts at once.
            Any other exception is fatal: it is raised and the other copies
            are cancelled. Default Exception. CancelledError,
            KeyboardInterrupt, SystemExit and GeneratorExit are never
            classified.
        key_arg: the keyword argument that carries an idempotency key; when
            the function takes it and the caller passed none, one key (UUID v4)
            is made per call and every copy gets the same one.
        deadline: seconds from the call's start after which no copy starts.
        breaker: a mulligan.CircuitBreaker asked before every copy; an open
            breaker stops new copies (the first copy refused: CircuitOpenError).
        budget: a mulligan.RetryBudget every copy after the first must be
            granted by; an empty budget stops new copies.
        name: metrics name (mulligan_hedges_total, mulligan_hedges_won_total,
            mulligan_hedge_cancelled_total, and the call counters). Default:
            the function's qualified name.

    Returns a decorator. The decorated coroutine returns the winning copy's
    value; when every copy failed it raises the last copy's exception. Losing
    copies are cancelled and awaited; their exceptions are not raised.

    Raises:
        TypeError: the function is not a coroutine function, or ``on`` is not
            exception types.
        ValueError: a bad option, naming the field.

    Thread-safety: a decorated function may be called from any event loop.

    .. versionadded:: 0.5.0
    """
    options = dict(
        max_attempts=max_attempts,
        delay=delay,
        quantile=quantile,
        quantile_window=quantile_window,
        quantile_min_samples=quantile_min_samples,
        on=on,
        key_arg=key_arg,
        deadline=_validate.seconds_or_none(_OWNER, "deadline", deadline, positive=True),
        breaker=breaker,
        budget=budget,
        name=name,
        report_metrics=report_metrics,
    )

    def decorate(fn: F) -> F:
        if not inspect.iscoroutinefunction(fn):
            raise TypeError(f"{_OWNER}: {fn!r} is not a coroutine function (async def)")
        h = _Hedged(fn, options)

        @functools.wraps(fn)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            return await _run(h, args, kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
