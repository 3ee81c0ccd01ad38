"""The asyncio driver: ``@mulligan.retry`` on coroutine functions.

Same engine and same failure-path logic as the sync driver (``call._Call``);
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
from typing import Any, Callable, Optional

from .._errors import CircuitOpenError
from .call import (
    _BREAKER_FAILURE,
    _BREAKER_IGNORED,
    _BREAKER_SUCCESS,
    _Call,
    _refused_first_attempt,
)
from .options import _Config, _never_retried
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
    permit: Any = None,
) -> Any:
    """The async slow path: the first attempt failed with `exc` (or a rejected `result`).

    ``permit`` is the breaker permit the first attempt ran under (with ``breaker=``).
    """
    if exc is not None and _never_retried(exc):
        if permit is not None:
            cfg.breaker._after_attempt(permit, _BREAKER_IGNORED, final=True)  # type: ignore[union-attr]
        raise exc
    if not STATE.active:
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
                await sleep(delay)  # cancelling the task cancels the wait
            call.wait_over()
            refused = call.next_permit(exc)
            if refused is not None:
                return refused.value
            try:
                result = await fn(*args, **kwargs)
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


def wrap_async(fn: Callable[..., Any], cfg: _Config) -> Callable[..., Any]:
    """Returns the retrying ``async def`` wrapper of coroutine function `fn`."""
    catch = cfg.catch
    if cfg.breaker is not None:
        return _wrap_async_with_breaker(fn, cfg)
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


def _wrap_async_with_breaker(fn: Callable[..., Any], cfg: _Config) -> Callable[..., Any]:
    """The async wrapper with ``breaker=`` (see sync_driver._wrap_sync_with_breaker)."""
    breaker = cfg.breaker
    assert breaker is not None
    catch = cfg.catch
    check = cfg.check
    on_result = cfg.on_result
    timed = cfg.timed
    tick = cfg.tick
    state = STATE

    @functools.wraps(fn)
    async def breaker_wrapper(*args: Any, **kwargs: Any) -> Any:
        start = state.now() if timed else None
        try:
            permit = breaker._acquire()
        except CircuitOpenError as refused:
            return _refused_first_attempt(cfg, refused)
        try:
            result = await fn(*args, **kwargs)
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
            return await _run_async(cfg, fn, args, kwargs, None, result, start, permit)
        return await _run_async(cfg, fn, args, kwargs, exc, None, start, permit)

    return breaker_wrapper
