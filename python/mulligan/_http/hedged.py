"""Hedged requests for :class:`mulligan.AsyncClient` (``hedge=``, issue 18).

The engine decides, the caller acts (hedging/hedging.h): the core's
``HedgedCall`` says when copy k+1 may start (the hedging delay after copy k
started, at once after a retryable failure, never more than ``max_attempts``
copies, never past the deadline, only while the retry budget grants each
extra copy), names the winner and the copies to cancel. This module only
runs each copy as an asyncio task on the client's ``HttpLoopDriver`` and
cancels the losers; cancelling a task removes its curl easy handle from the
multi handle, which aborts the transfer and closes its connection (libcurl
never reuses a connection mid-request).

Each copy is one single-attempt call of the client's own pipeline for the
origin: the per-origin circuit breaker admits (an open breaker refuses the
copy, which sends nothing) and judges every copy, and the copy's outcome is
recorded in the budget and the metrics like any attempt's. The hedged call
is therefore begun with ``gate_only=True`` (HedgeAccounting::kGateOnly):
it asks the same budget (the driver's for the origin) before each extra
copy and counts only the hedge metrics (``mulligan_hedges_total`` and
friends, by origin), so nothing is recorded twice. A cancelled loser is
released without judging the origin and without charging the budget, and
its call is counted ``cancelled`` in the origin's metrics, neither a
success nor a failure (``driver.cancel_copy``; issue 18). A copy ended
because the whole request was cancelled by its caller is counted cancelled
the same way (0.6); one ended because the client closed is abandoned as
any request is.

.. versionadded:: 0.6.0
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Mapping
from typing import Any, Optional

from .. import _core, _validate
from .._errors import CircuitOpenError, TransportError
from .._hedging.policy import make_policy
from .._retry.options import _never_retried
from .._retry.state import STATE
from .._telemetry import metrics as _metrics
from .._text import fold
from .response import _response_from

__all__: list[str] = []

# RFC 9110 section 9.2.2: the idempotent methods. A request with any other
# method is hedged only when it carries an Idempotency-Key.
_IDEMPOTENT = frozenset(("GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"))
_HEDGE_FIELDS = frozenset(("delay", "max_attempts", "quantile", "quantile_window", "quantile_min_samples"))


def hedging_policy(owner: str, hedge: Any) -> Optional[_core.HedgingPolicy]:
    """The engine's hedging policy of a ``hedge=`` argument, or None (off).

    ``hedge`` is None or False (off); a number of seconds or a timedelta (the
    hedging delay, two copies at most); or a mapping with any of ``delay``
    (seconds, default 0: every copy at once), ``max_attempts`` (copies, the
    first included, >= 2, above 5 is 5; default 2), ``quantile`` (in (0, 1]:
    the delay is that quantile of recent winners' latencies once
    ``quantile_min_samples``, default 20, of the last ``quantile_window``,
    default 100, are known). TypeError/ValueError name the field."""
    if hedge is None or hedge is False:
        return None
    if isinstance(hedge, (int, float, datetime.timedelta)) and not isinstance(hedge, bool):
        return make_policy(owner, lambda field: "hedge", delay=hedge)
    if not isinstance(hedge, Mapping):
        raise TypeError(
            f"{owner}: hedge must be None, a delay in seconds or a mapping of hedging options, got {hedge!r}"
        )
    unknown = sorted(set(hedge) - _HEDGE_FIELDS)
    if unknown:
        raise ValueError(f"{owner}: unknown hedge options: {unknown}")
    return make_policy(owner, lambda field: f'hedge["{field}"]', **hedge)


def copies_text(message: str, copies: int) -> str:
    """A copy's error text made to name the copies sent: its "after 1
    attempt" becomes "after N attempts (hedged copies)" (appended when the
    text has no such phrase)."""
    one = " after 1 attempt"
    at = message.find(one)
    if at >= 0 and not message.startswith("s", at + len(one)):
        return f"{message[:at]} after {copies} attempts (hedged copies){message[at + len(one):]}"
    return f"{message} ({copies} hedged copies)"


def replay_safe(method: str, pairs: list[tuple[str, bytes]], key: Optional[str]) -> bool:
    """Whether a request may be sent more than once at a time: an idempotent
    method (RFC 9110), or one carrying an Idempotency-Key (the same one on
    every copy: the key argument, or the field among the headers)."""
    if method in _IDEMPOTENT or key is not None:
        return True
    return any(fold(name) == "idempotency-key" for name, _ in pairs)


def _outcome_of(raw: tuple[Any, ...], keyed: bool) -> Any:
    """A copy's outcome for the hedged call, from its own call's end (the
    native response tuple ``raw``): a response it accepted wins; a terminal
    status (404) ends the hedged call with it; a retryable one is the
    engine's outcome of that response (HttpResponseOutcome, as every client
    builds it), so that its Retry-After is the server's pushback, which
    delays the next copy (gRPC A6 "Pushback"; ``keyed``: the request carries
    an Idempotency-Key, for the 409 rule)."""
    stop_reason = raw[6]
    if stop_reason == "succeeded":
        return _core.Outcome.success()
    if stop_reason == "terminal":
        return _core.Outcome.failure(False)
    retry_after = _response_from(raw).headers.get("Retry-After")
    wall = 0.0
    if retry_after is not None:
        native = STATE.native_clock  # mulligan.testing's FakeClock, for HTTP-dates
        wall = native.wall_now() if native is not None else time.time()
    return _core.http_response_outcome(int(raw[0]), retry_after, keyed, wall)


async def _copy(
    client: Any,
    driver: Any,
    args: tuple[Any, ...],
    fallback: bool,
    no_wait: bool,
    clock: Any,
    loser: list[bool],
) -> tuple[Any, ...]:
    """Runs one copy: a one-attempt call on the driver. Returns the native
    response tuple, or raises its TransportError / CircuitOpenError.
    Cancelling the task removes its transfer: with ``loser[0]`` set (the
    hedged call named it a loser) or a cancel from the request's caller,
    through driver.cancel_copy (counted cancelled), else (the client closed)
    through driver.cancel (abandoned, counted failed)."""
    method, url, pairs, body, key, policy, follow_redirects, max_redirects, strict = args
    loop = driver.loop
    fut = loop.create_future()
    call: Optional[int] = driver.begin(
        fut, method, url, pairs, body, key, policy, follow_redirects, max_redirects, strict,
        fallback, 1, no_wait, clock, client._breaker_key(method, url),
    )
    try:
        while True:
            info = await fut
            if info is None:
                break
            # One attempt at most: only an admission wait (bulkhead queue,
            # rate limiter slot) can come back before the end.
            await client._wait(loop, info[1])
            fut = loop.create_future()
            driver.start(call, fut)
        done, call = call, None
        return driver.finish(done)  # type: ignore[no-any-return]
    except BaseException as left:
        if call is not None:
            # A loser, or the whole request cancelled by its caller: counted
            # cancelled; the client closed (RuntimeError): abandoned, failed.
            if loser[0] or _never_retried(left):
                driver.cancel_copy(call)
            else:
                driver.cancel(call)
        raise


async def _cancel(tasks: list[asyncio.Task[Any]]) -> None:
    for t in tasks:
        t.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


async def run_hedged(
    client: Any,  # the AsyncClient (not imported: async_client imports this module)
    hedging: _core.HedgingPolicy,
    args: tuple[Any, ...],
    fallback: bool,
    testing: tuple[int, bool, Any],
) -> tuple[tuple[Any, ...], int]:
    """Runs one hedged request (``args``: method, url, header pairs, body,
    key, policy, follow_redirects, max_redirects, strict).

    Returns (the winning copy's native response tuple, or when none won the
    last response a copy got, with the attempts field set to the copies
    started and the elapsed to the whole call's; the winning copy's number,
    0 when no copy won). Raises the last copy's TransportError or
    CircuitOpenError when no copy got a response."""
    driver = client._get_driver()
    loop = driver.loop
    method, url, policy = args[0], args[1], args[5]
    keyed = args[4] is not None or any(fold(name) == "idempotency-key" for name, _ in args[2])
    cap, no_wait, native_clock = testing
    # mulligan.testing's FakeClock, when one is installed: the copies' start
    # times are read from it and the hedging delay passes on it at once.
    fake = STATE.clock
    now = fake.monotonic if fake is not None else loop.time
    # The gate: the request's deadline bounds new copies; the budget is the
    # one the copies' calls are charged to; metrics by origin, as the calls'.
    gate = _core.Pipeline(
        _core.RetryPolicy(attempts=1, deadline=policy.deadline,
                          retry_after_max=policy.retry_after_max),
        None,
        False,
        _metrics._metrics_for(_origin(url)),
        driver.budget_for(url),
        None,
    )
    # cap 1: mulligan.testing turned retries (and so hedges) off: one copy.
    call = hedging.begin(gate, now(), cap != 1, True)
    start = now()
    tasks: dict[int, asyncio.Task[Any]] = {}
    losers: dict[int, list[bool]] = {}
    last: Optional[tuple[Any, ...]] = None
    last_exc: Optional[BaseException] = None
    winner = 0
    try:
        while not call.finished:
            action, copy, next_start, _reason = call.admit(now())
            if action == "start":
                losers[copy] = [False]
                tasks[copy] = loop.create_task(
                    _copy(client, driver, args, fallback, no_wait, native_clock, losers[copy])
                )
                continue
            running = [t for t in tasks.values() if not t.done()]
            timeout = max(0.0, next_start - now()) if action == "wait" else None
            if fake is not None and timeout is not None:
                # A fake clock: the hedging delay passes at once, as the
                # retries' waits do under mulligan.testing.
                fake.sleep(timeout)
                timeout = 0.0
            if not running:
                if timeout is None:
                    break  # no copy may start and none runs
                # Nothing runs and the next copy is due later: a server's
                # pushback (Retry-After) is being waited out.
                await asyncio.sleep(timeout)
                continue
            done, _ = await asyncio.wait(running, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            for copy, task in sorted(tasks.items()):
                if task not in done or call.finished:
                    continue
                exc = task.exception()
                if exc is None:
                    raw = task.result()
                    last, last_exc = raw, None
                    outcome = _outcome_of(raw, keyed)
                elif isinstance(exc, (TransportError, CircuitOpenError)):
                    # A response an earlier copy got is kept over a later
                    # copy's error (a refused copy sent nothing).
                    last_exc = exc
                    outcome = _core.Outcome.failure(getattr(exc, "stop_reason", None) != "terminal")
                else:
                    raise exc
                finished, won, _reason, cancel = call.record(copy, outcome, now())
                for c in cancel:
                    losers[c][0] = True
                await _cancel([tasks[c] for c in cancel])
                if won == copy:
                    winner = copy
                if finished:
                    break
    finally:
        await _cancel([t for t in tasks.values() if not t.done()])
        for t in tasks.values():  # a copy that ended after the call did: its result is dropped
            if not t.cancelled():
                t.exception()
        call.abandon(now())
    if last is None:
        assert last_exc is not None
        if isinstance(last_exc, TransportError) and call.started > 1:
            # The last copy's error, made by its one-attempt call: the count
            # and the text name the copies the hedged request sent, as the
            # C++ client's do (hedged_send.cc, CopiesError).
            last_exc.attempts = call.started
            text = copies_text(last_exc.message, call.started)
            last_exc.message = text
            last_exc.args = (text, *last_exc.args[1:])
        raise last_exc
    stop = last[6] if winner else _final_reason(call.stop_reason, last[6])
    raw = (last[0], last[1], call.started, now() - start, last[4], last[5], stop, *last[7:])
    return raw, winner


def _final_reason(hedge_reason: str, copy_reason: str) -> str:
    """The stop reason of a hedged request no copy won: the hedged call's
    (attempts_exhausted, budget, deadline) except for a terminal response,
    which keeps its own."""
    return copy_reason if copy_reason == "terminal" or hedge_reason == "none" else hedge_reason


def _origin(url: str) -> str:
    origin: Optional[str] = _core.http_origin(url)
    return origin if origin is not None else url
