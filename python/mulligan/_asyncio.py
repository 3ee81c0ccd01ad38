"""The asyncio driver: ``@mulligan.retry`` on coroutine functions, ``async for`` blocks.

Same engine and same failure-path logic as the sync driver (``_retry._Call``);
the only difference is the wait, ``await asyncio.sleep(delay)``, so cancelling
the task during a wait cancels the wait at once. A zero delay does not sleep
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
from collections.abc import AsyncIterator
from typing import Any, Callable, Optional

from ._state import STATE
from ._retry import Attempt, _BlockRun, _Call, _Config, _never_retried

__all__ = ["iterate_async", "wrap_async"]


async def _sleep(delay: float) -> None:
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
) -> Any:
    """The async slow path: the first attempt failed with `exc` (or a rejected `result`)."""
    if exc is not None and _never_retried(exc):
        raise exc
    if not STATE.active:
        if exc is not None:
            raise exc
        return result
    call = _Call(cfg, start)
    catch = cfg.catch
    try:
        while True:
            delay = call.failed(exc, result)
            if delay is None:
                return call.give_up(exc, result)
            if delay > 0:
                await _sleep(delay)  # cancelling the task cancels the wait
            call.wait_over()
            try:
                result = await fn(*args, **kwargs)
            except catch as e:
                if not cfg.retryable_exception(e):
                    call.finish("terminal")
                    raise
                exc, result = e, None
            except BaseException:
                call.finish("terminal")
                raise
            else:
                if not cfg.rejects(result):
                    call.finish("succeeded")
                    return result
                exc = None
    except BaseException:
        call.abandon()
        raise


def wrap_async(fn: Callable[..., Any], cfg: _Config) -> Callable[..., Any]:
    """Returns the retrying ``async def`` wrapper of coroutine function `fn`."""
    catch = cfg.catch
    if cfg.check is None and cfg.on_result is None and not cfg.timed:

        tick = cfg.tick

        @functools.wraps(fn)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                result = await fn(*args, **kwargs)
            except catch as e:
                exc = e
            else:
                tick()
                return result
            return await _run_async(cfg, fn, args, kwargs, exc, None, None)

        return wrapper

    check = cfg.check
    on_result = cfg.on_result
    timed = cfg.timed
    state = STATE
    tick = cfg.tick

    @functools.wraps(fn)
    async def general_wrapper(*args: Any, **kwargs: Any) -> Any:
        start = state.now() if timed else None
        try:
            result = await fn(*args, **kwargs)
        except catch as e:
            if check is not None and not check(e):
                raise
            exc = e
        else:
            if on_result is None or not on_result(result):
                tick()
                return result
            return await _run_async(cfg, fn, args, kwargs, None, result, start)
        return await _run_async(cfg, fn, args, kwargs, exc, None, start)

    return general_wrapper


async def iterate_async(run: _BlockRun) -> AsyncIterator[Attempt]:
    """The ``async for`` form of a :class:`mulligan.RetryBlock`."""
    number = 1
    while True:
        attempt = Attempt(run, number, run.waited())
        yield attempt
        delay = run.after(attempt)
        if delay is None:
            return
        if delay > 0:
            try:
                await _sleep(delay)
            except BaseException:
                run.abandon()
                raise
        run.wait_over()
        number += 1
