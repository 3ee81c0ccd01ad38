"""The sync driver: ``@mulligan.retry`` on plain functions and methods.

The wrapper runs the user's function inside a plain ``try``/``return``: a
call that succeeds at its first attempt allocates nothing and never enters
the engine (DESIGN.md section 1). Only a failure takes the slow path,
:func:`_run_sync`, which drives a :class:`_Call` and waits with
``time.sleep`` (through ``STATE.sleep``, so a FakeClock replaces it).

.. versionadded:: 0.1.0
"""

from __future__ import annotations

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

__all__ = ["wrap_sync"]


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


def wrap_sync(fn: Callable[..., Any], cfg: _Config) -> Callable[..., Any]:
    """Returns the retrying wrapper of the plain function `fn`."""
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
