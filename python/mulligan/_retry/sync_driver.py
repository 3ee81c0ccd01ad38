"""The sync driver: ``@mulligan.retry`` on plain functions and methods.

The wrapper runs the user's function inside a plain ``try``/``return``: a
call that succeeds at its first attempt allocates nothing and never enters
the engine (DESIGN.md section 1), unless a breaker must be asked first. A
failure takes the slow path, :func:`_run_sync`, which steps a
:class:`~mulligan._retry.call._Call` (the pipeline decides) and waits with
``time.sleep`` (through ``STATE.sleep``, so a FakeClock replaces it).
The async driver (``async_driver``) is this module with ``await``.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

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

__all__ = ["wrap_sync"]


def _run_sync(
    cfg: _Config,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    exc: Optional[BaseException],
    result: Any,
    start: Optional[float],
    core: Any = None,
) -> Any:
    """The sync slow path: the first attempt failed with `exc` (or a rejected `result`).

    ``core`` is the ``_core.Call`` the first attempt ran under (with ``breaker=``).
    """
    call = first_failure(cfg, exc, result, start, core)
    if call is None:
        if exc is not None:
            raise exc
        return result
    catch = cfg.catch
    state = STATE
    try:
        while True:
            delay = call.failed(exc, result)
            if delay is None:
                return call.give_up(exc, result)
            if delay > 0:
                state.sleep(delay)
            refused = call.admit(exc)
            if refused is not None:
                return refused.value
            try:
                result = fn(*args, **kwargs)
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


def wrap_sync(fn: Callable[..., Any], cfg: _Config, switch: Any = _tracing.SWITCH) -> Callable[..., Any]:
    """Returns the retrying wrapper of the plain function `fn`.

    While tracing is on (``switch.tracer``, mulligan.otel), each call takes
    the traced path instead: the same wrapper, built with the ``OFF`` switch
    around each attempt's span (``_telemetry.tracing``); while it is off,
    that check is all a call pays."""
    catch = cfg.catch
    traced = _tracing.Traced(fn, cfg.name, lambda f: wrap_sync(f, cfg, _tracing.OFF), False)
    if cfg.breaker is not None or cfg.throttle is not None:
        return _wrap_sync_with_breaker(fn, cfg, switch, traced)
    if cfg.check is None and cfg.on_result is None and not cfg.timed:
        # The common case, kept minimal: exception types, no deadline.
        successes = cfg.successes

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if switch.tracer is not None:
                return traced.run(switch.tracer, args, kwargs)
            try:
                result = fn(*args, **kwargs)
            except catch as e:
                exc = e
            else:
                successes.tick()  # a method call: CPython 3.11 calls the C method directly
                return result
            return _run_sync(cfg, fn, args, kwargs, exc, None, None)

        return wrapper

    state = STATE
    successes = cfg.successes
    if cfg.check is None and cfg.on_result is None:
        # Exception types with a deadline: one clock read per call.
        @functools.wraps(fn)
        def timed_wrapper(*args: Any, **kwargs: Any) -> Any:
            if switch.tracer is not None:
                return traced.run(switch.tracer, args, kwargs)
            start = state.now()
            try:
                result = fn(*args, **kwargs)
            except catch as e:
                exc = e
            else:
                successes.tick()
                return result
            return _run_sync(cfg, fn, args, kwargs, exc, None, start)

        return timed_wrapper

    check = cfg.check
    on_result = cfg.on_result
    timed = cfg.timed

    @functools.wraps(fn)
    def general_wrapper(*args: Any, **kwargs: Any) -> Any:
        if switch.tracer is not None:
            return traced.run(switch.tracer, args, kwargs)
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
                successes.tick()
                return result
            return _run_sync(cfg, fn, args, kwargs, None, result, start)
        return _run_sync(cfg, fn, args, kwargs, exc, None, start)

    return general_wrapper


def _wrap_sync_with_breaker(
    fn: Callable[..., Any], cfg: _Config, switch: Any, traced: _tracing.Traced
) -> Callable[..., Any]:
    """The sync wrapper with ``breaker=``: the pipeline asks the breaker
    before every attempt, so an open breaker ends the call at once with
    CircuitOpenError (or the fallback) and never runs ``fn``."""
    catch = cfg.catch
    check = cfg.check
    on_result = cfg.on_result
    timed = cfg.timed
    state = STATE

    @functools.wraps(fn)
    def breaker_wrapper(*args: Any, **kwargs: Any) -> Any:
        if switch.tracer is not None:
            return traced.run(switch.tracer, args, kwargs)
        core = start_guarded(cfg, state.now() if timed else None)
        if core.refused:
            return refused_first_attempt(cfg, core)
        try:
            result = fn(*args, **kwargs)
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
            return _run_sync(cfg, fn, args, kwargs, None, result, None, core)
        return _run_sync(cfg, fn, args, kwargs, exc, None, None, core)

    return breaker_wrapper
