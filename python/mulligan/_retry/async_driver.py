"""The asyncio driver: ``@mulligan.retry`` on coroutine functions.

The sync driver (``sync_driver``) with ``await``: the same pipeline and the
same failure-path steps (``call._Call``); the waits are ``await
asyncio.sleep(delay)``, so cancelling the task during a wait cancels the wait
at once. A zero delay does not sleep
(and does not yield to the event loop). With a FakeClock installed by
:mod:`mulligan.testing`, waits advance the fake clock instead.

The wrapper is an ``async def`` on every Python version, so
``inspect.iscoroutinefunction`` is true for it without
``inspect.markcoroutinefunction`` (3.12+ only): a wrapper must await the
coroutine anyway to see the exceptions its attempts raise.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Callable, Optional

from .call import (
    _SUCCESS,
    end_unretried,
    first_failure,
    refused_first_attempt,
    start_guarded,
    terminal_outcome,
)
from .._telemetry import tracing as _tracing
from .options import _Config
from .state import STATE

__all__ = ["sleep", "wrap_async"]


async def sleep(delay: float) -> None:
    """Waits ``delay`` seconds with asyncio.sleep, or on the installed FakeClock."""
    clock = STATE.clock
    if clock is None:
        await asyncio.sleep(delay)
    else:
        await clock.async_sleep(delay)


async def _run_async(
    cfg: _Config,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    exc: Optional[BaseException],
    result: Any,
    start: Optional[float],
    core: Any = None,
) -> Any:
    """The async slow path: the first attempt failed with `exc` (or a rejected `result`).

    ``core`` is the ``_core.Call`` the first attempt ran under (with ``breaker=``).
    """
    call = first_failure(cfg, exc, result, start, core)
    if call is None:
        if exc is not None:
            raise exc
        return result
    catch = cfg.catch
    try:
        while True:
            delay = call.failed(exc, result)
            if delay is None:
                return call.give_up(exc, result)
            if delay > 0:
                await sleep(delay)  # cancelling the task cancels the wait
            refused = call.admit(exc)
            if refused is not None:
                return refused.value
            try:
                result = await fn(*args, **kwargs)
            except catch as e:
                if not call.retryable(e):
                    raise
                exc, result = e, None
            except BaseException as e:
                call.unretried(e)
                raise
            else:
                if not call.rejected(result):
                    return result
                exc = None
    except BaseException as e:
        call.left(e)  # a cancelled wait or Ctrl-C: cancelled; a hook's error: failed
        raise


def wrap_async(fn: Callable[..., Any], cfg: _Config, switch: Any = _tracing.SWITCH) -> Callable[..., Any]:
    """Returns the retrying ``async def`` wrapper of coroutine function `fn`
    (traced while ``switch.tracer`` is set, as ``sync_driver.wrap_sync``)."""
    catch = cfg.catch
    traced = _tracing.Traced(fn, cfg.name, lambda f: wrap_async(f, cfg, _tracing.OFF), True)
    if cfg.breaker is not None or cfg.throttle is not None:
        return _wrap_async_with_breaker(fn, cfg, switch, traced)
    if cfg.check is None and cfg.on_result is None and not cfg.timed:

        successes = cfg.successes

        @functools.wraps(fn)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            if switch.tracer is not None:
                return await traced.run_async(switch.tracer, args, kwargs)
            try:
                result = await fn(*args, **kwargs)
            except catch as e:
                exc = e
            else:
                successes.tick()  # a method call: CPython 3.11 calls the C method directly
                return result
            return await _run_async(cfg, fn, args, kwargs, exc, None, None)

        return wrapper

    check = cfg.check
    on_result = cfg.on_result
    timed = cfg.timed
    state = STATE
    successes = cfg.successes

    @functools.wraps(fn)
    async def general_wrapper(*args: Any, **kwargs: Any) -> Any:
        if switch.tracer is not None:
            return await traced.run_async(switch.tracer, args, kwargs)
        start = state.now() if timed else None
        try:
            result = await fn(*args, **kwargs)
        except catch as e:
            if check is not None and not check(e):
                raise
            exc = e
        else:
            if on_result is None or not on_result(result):
                successes.tick()
                return result
            return await _run_async(cfg, fn, args, kwargs, None, result, start)
        return await _run_async(cfg, fn, args, kwargs, exc, None, start)

    return general_wrapper


def _wrap_async_with_breaker(
    fn: Callable[..., Any], cfg: _Config, switch: Any, traced: _tracing.Traced
) -> Callable[..., Any]:
    """The async wrapper with ``breaker=`` (see sync_driver._wrap_sync_with_breaker)."""
    catch = cfg.catch
    check = cfg.check
    on_result = cfg.on_result
    timed = cfg.timed
    state = STATE

    @functools.wraps(fn)
    async def breaker_wrapper(*args: Any, **kwargs: Any) -> Any:
        if switch.tracer is not None:
            return await traced.run_async(switch.tracer, args, kwargs)
        core = start_guarded(cfg, state.now() if timed else None)
        if core.refused:
            return refused_first_attempt(cfg, core)
        try:
            result = await fn(*args, **kwargs)
        except catch as e:
            if check is not None and not check(e):
                core.record(terminal_outcome(cfg, e), state.now())
                raise
            exc = e
        except BaseException as e:
            end_unretried(cfg, core, e)
            raise
        else:
            if on_result is None or not on_result(result):
                core.record(_SUCCESS, state.now())
                return result
            return await _run_async(cfg, fn, args, kwargs, None, result, None, core)
        return await _run_async(cfg, fn, args, kwargs, exc, None, None, core)

    return breaker_wrapper
