"""Hedged unary-unary RPCs for :mod:`mulligan.adapters.grpc` (issue 18, 0.6).

A method whose service config entry has a ``hedgingPolicy`` (gRFC A6
"Hedging Policy", mapped by the config loader: maxAttempts capped at 5,
hedgingDelay, nonFatalStatusCodes) is hedged: the engine's ``HedgedCall``
(hedging/hedging.h) decides, this module acts. Copy k+1 is sent
``hedgingDelay`` after copy k, or at once after copy k failed with a
non-fatal code (a server's ``grpc-retry-pushback-ms`` delays it, A6
"Pushback"); the first OK answer wins and every other copy's RPC is
cancelled (``grpc.Future.cancel``: the server sees the RPC end, its
``context.is_active()`` turns false); a fatal code ends the call with that
answer and cancels the rest. The hedged call runs through the method's
pipeline with full accounting: its breaker is asked before every copy and
told after each, its retry budget before every extra copy, and its metrics
count one call, its hedges (``mulligan_hedges_total``, gRPC A96's
``grpc.client.call.hedges``), the hedges that won and the cancelled copies;
a cancelled copy is recorded neither as a success nor as a failure.

Every copy carries the caller's metadata and, after the first,
``grpc-previous-rpc-attempts`` (the copies sent before it, A6 "Exposed
Retry Metadata"), and is bounded by the time left before the call's
deadline (its own ``timeout=`` or the service config's ``timeout``).

The grpc.aio interceptor runs its copies as tasks on the caller's event loop
(run_hedged_aio); a losing copy's RPC is cancelled (``call.cancel()``) and
its task with it. The sync interceptor's copies are grpcio futures, so no
thread is spent per copy. A blocking call
(``stub(request)``, ``with_call``) gives the interceptor a continuation that
blocks; the copies are then sent through the same multicallable's
``future()`` (found in grpcio's interceptor closure; when it cannot be
found, the call is sent as one copy).

The loops themselves (:class:`SyncHedge`, :func:`run_hedged_aio_copies`)
take the way a copy is sent and answers, so hedged unary-stream calls
(grpc_hedge_stream.py: a copy answers with its first message) share them.

.. versionadded:: 0.6.0
"""

from __future__ import annotations

import asyncio
import queue
from typing import Any, Callable, Optional

from .._errors import _circuit_open
from .._retry.options import _never_retried
from .._retry.state import STATE
from .grpc_flow import PREVIOUS_ATTEMPTS, outcome_of

__all__ = ["SyncHedge", "future_starter", "run_hedged", "run_hedged_aio", "run_hedged_aio_copies"]


def future_starter(continuation: Any) -> Optional[Callable[[Any, Any], Any]]:
    """A function ``(details, request) -> grpc.Future`` that sends one copy
    without blocking, for the ``continuation`` grpcio gave the interceptor:
    the continuation itself for a ``.future()`` call; for a blocking call,
    the next multicallable's ``future`` (grpcio's ``_with_call`` closure
    holds it as ``self._thunk``); None when neither is found."""
    qualname = getattr(continuation, "__qualname__", "")
    if qualname.endswith("future.<locals>.continuation"):
        return continuation  # type: ignore[no-any-return]
    code = getattr(continuation, "__code__", None)
    closure = getattr(continuation, "__closure__", None)
    if not qualname.endswith("_with_call.<locals>.continuation") or code is None or not closure:
        return None
    cells = dict(zip(code.co_freevars, (c.cell_contents for c in closure)))
    thunk = getattr(cells.get("self"), "_thunk", None)
    if not callable(thunk):
        return None

    def start(details: Any, request: Any) -> Any:
        return thunk(details.method).future(
            request, timeout=details.timeout, metadata=details.metadata,
            credentials=details.credentials, wait_for_ready=details.wait_for_ready,
            compression=details.compression,
        )

    return start


def _code(future: Any) -> int:
    status = future.code()
    return 2 if status is None else int(status.value[0])


def _future_status(future: Any) -> Optional[tuple[int, Any]]:
    """A unary copy's (status code, trailers when it failed); None when it
    was cancelled (a loser: it is not recorded)."""
    if future.cancelled():
        return None
    code = _code(future)
    return code, future.trailing_metadata() if code else None


def _launch_future(start: Callable[[Any, Any], Any], request: Any) -> Callable[[int, Any, Callable[[int], None]], Any]:
    """run_hedged's launcher of unary copies: ``start`` sends one and gives
    its grpc.Future; grpcio runs the done callback on its channel thread."""

    def launch(copy: int, details: Any, ended: Callable[[int], None]) -> Any:
        future = start(details, request)
        future.add_done_callback(lambda _f: ended(copy))
        return future

    return launch


class SyncHedge:
    """One hedged RPC's copies on the calling thread (sync grpcio): the
    engine's ``HedgedCall`` decides when each copy starts, which wins and
    which are cancelled; this class sends them (``launch``) and waits.

    ``launch(copy, details, ended)`` sends copy ``copy`` with its call
    details and returns its handle (``cancel()``, ``done()``); the copy
    calls ``ended(copy)`` once, from any thread, when its answer is known
    (for a unary copy: the RPC ended; for a stream copy: its first message
    or its end). ``status(handle)`` is then (status code, trailers) or None
    for a copy that was cancelled. ``deadline``: seconds the call may take
    (None: none).

    :meth:`drive` starts the copies due now; :meth:`settle` runs the call
    to its end. Not thread-safe (one caller), except :meth:`wake`.
    """

    def __init__(self, route: Any, pipeline: Any, deadline: Optional[float],
                 launch: Callable[[int, Any, Callable[[int], None]], Any],
                 status: Callable[[Any], Optional[tuple[int, Any]]],
                 make_details: Callable[[Optional[float], Any], Any], metadata: Any,
                 send_attempt_count: bool) -> None:
        self.route = route
        self.call = route.hedging.begin(pipeline, STATE.now(), True, False)
        self._began = STATE.now()
        self._deadline = deadline
        self._launch = launch
        self._status = status
        self._make = make_details
        self._metadata = metadata
        self._count = send_attempt_count
        self._ended: queue.SimpleQueue[int] = queue.SimpleQueue()
        self.copies: dict[int, Any] = {}
        #: The handle of the copy whose answer ended the call (or the latest answer).
        self.last: Any = None
        self.stopped = False  # wake() asked the loop to stop (the caller cancelled)

    def wake(self) -> None:
        """Makes a waiting :meth:`settle` look at ``stopped`` (thread-safe)."""
        self._ended.put(0)

    def _start(self, copy: int, now: float) -> None:
        left = None if self._deadline is None else max(self._deadline - (now - self._began), 0.0)
        details = self._make(left, _copy_metadata(self._metadata, copy, self._count))
        self.copies[copy] = self._launch(copy, details, self._ended.put)

    def _record(self, copy: int) -> None:
        if copy == 0:
            return  # wake()
        handle = self.copies[copy]
        status = self._status(handle)
        if status is None:
            return  # a cancelled copy: neither a success nor a failure
        outcome = outcome_of(self.route.policy, status[0], status[1], False)
        _finished, _winner, _reason, cancel = self.call.record(copy, outcome, STATE.now())
        for loser in cancel:
            self.copies[loser].cancel()
        self.last = handle  # the call's answer when it ends here

    def drive(self, settle: bool) -> None:
        """Starts every copy the engine says is due; with ``settle``, waits
        and goes on until the call has ended (a winner, a fatal status, no
        copy left to start, or ``stopped``). The hedging delay passes at
        once on mulligan.testing's FakeClock."""
        call, clock = self.call, STATE.clock
        while not call.finished and not self.stopped:
            try:
                self._record(self._ended.get_nowait())  # answers already in
                continue
            except queue.Empty:
                pass
            now = STATE.now()
            action, copy, next_start, _reason = call.admit(now)
            if action == "start":
                self._start(copy, now)
                continue
            if not settle or call.started == 0:
                return  # the rest waits for settle; or the breaker refused the first copy
            wait = max(next_start - now, 0.0) if action == "wait" else None
            if call.running == 0 and wait is None:
                return
            if clock is not None and wait is not None:
                clock.sleep(wait)
                wait = 0.0
            try:
                self._record(self._ended.get(timeout=wait))
            except queue.Empty:
                continue

    def close(self, exc: Optional[BaseException]) -> None:
        """Cancels every copy still running and ends the engine's call: a
        stop exception ``exc`` (KeyboardInterrupt, the caller's cancel:
        ``stopped``) counts it cancelled, anything else left unfinished
        failed (nothing when it has ended)."""
        for handle in self.copies.values():
            if not handle.done():
                handle.cancel()
        if self.stopped or (exc is not None and _never_retried(exc)):
            self.call.cancel(STATE.now())
        else:
            self.call.abandon(STATE.now())

    def answer(self) -> Any:
        """The handle whose answer is the call's (after settling); raises
        mulligan.CircuitOpenError when the breaker refused the first copy."""
        call = self.call
        if self.last is None:
            if call.started == 0:
                raise _circuit_open(call.breaker_name, call.retry_in, call.refusal_message)
            # Every copy still running was cancelled (no more may start): the
            # latest copy's outcome is the call's.
            return self.copies[max(self.copies)]
        return self.last


def run_hedged(
    route: Any,
    pipeline: Any,
    deadline: Optional[float],
    start: Callable[[Any, Any], Any],
    make_details: Callable[[Optional[float], Any], Any],
    metadata: Any,
    request: Any,
    send_attempt_count: bool,
) -> tuple[Any, str]:
    """Runs one hedged unary-unary RPC of ``route`` (its hedging policy and
    retry policy) through ``pipeline`` (the route's, for the call's
    deadline). ``deadline``: seconds the call may take (None: none);
    ``start(details, request)`` sends one copy and returns its grpc.Future;
    ``make_details(timeout, metadata)`` builds a copy's call details.

    Returns (the winning copy's future (an OK answer), else the future of
    the copy whose answer ended the call (a fatal code, or the last
    non-fatal one when no copy may start), grpcio raising its RpcError from
    ``result()``; the hedged call's stop reason: "succeeded", "terminal" (a
    fatal code), "attempts_exhausted", "budget", "deadline" ...). Raises
    mulligan.CircuitOpenError when the breaker refused the first copy
    (nothing was sent). Not thread-safe: one call."""
    hedge = SyncHedge(route, pipeline, deadline, _launch_future(start, request), _future_status,
                      make_details, metadata, send_attempt_count)
    try:
        hedge.drive(settle=True)
    except BaseException as exc:
        hedge.close(exc)
        raise
    hedge.close(None)
    return hedge.answer(), hedge.call.stop_reason


def _copy_metadata(metadata: Any, copy: int, send_attempt_count: bool) -> Optional[list[tuple[str, Any]]]:
    pairs = [(k, v) for k, v in (metadata or ()) if k != PREVIOUS_ATTEMPTS]
    if copy > 1 and send_attempt_count:
        pairs.append((PREVIOUS_ATTEMPTS, str(copy - 1)))
    return pairs or None


async def run_hedged_aio(
    route: Any,
    pipeline: Any,
    deadline: Optional[float],
    continuation: Any,
    make_details: Callable[[Optional[float], Any], Any],
    metadata: Any,
    request: Any,
    send_attempt_count: bool,
) -> tuple[Any, str]:
    """run_hedged for grpc.aio: ``continuation(details, request)`` (grpcio's)
    sends one copy; each copy runs as a task on the running loop. Returns
    (the call object of the winning copy, or of the copy whose answer ended
    the call: awaiting it raises its AioRpcError; the stop reason). Raises
    mulligan.CircuitOpenError when the breaker refused the first copy.
    Cancelling the caller's task cancels every copy's RPC."""

    async def one(copy: int, details: Any, rpcs: dict[int, Any]) -> tuple[Any, int, Any]:
        rpc = await continuation(details, request)
        rpcs[copy] = rpc
        status = await rpc.code()
        code = 2 if status is None else int(status.value[0])
        return rpc, code, (await rpc.trailing_metadata()) if code else None

    return await run_hedged_aio_copies(route, pipeline, deadline, one, lambda rpc: rpc,
                                       make_details, metadata, send_attempt_count)


async def run_hedged_aio_copies(
    route: Any,
    pipeline: Any,
    deadline: Optional[float],
    one: Callable[[int, Any, dict[int, Any]], Any],
    unanswered: Callable[[Any], Any],
    make_details: Callable[[Optional[float], Any], Any],
    metadata: Any,
    send_attempt_count: bool,
) -> tuple[Any, str]:
    """The grpc.aio hedging loop: ``one(copy, details, rpcs)`` is a
    coroutine that sends copy ``copy`` (putting its call object in
    ``rpcs[copy]`` at once, so that a loser's RPC can be cancelled) and
    returns (its answer, status code, trailers when it failed) once the
    copy's answer is known (a unary copy: its status; a stream copy: its
    first message or its end). Each copy runs as a task on the running
    loop. Returns (the answer of the winning copy, or of the copy whose
    answer ended the call; the stop reason); ``unanswered(rpc)`` makes the
    answer of a copy whose task was cancelled before it answered (the
    latest copy, when no copy answered). Raises mulligan.CircuitOpenError
    when the breaker refused the first copy. Cancelling the caller's task
    cancels every copy's RPC and counts the call cancelled."""
    loop = asyncio.get_running_loop()
    clock = STATE.clock
    call = route.hedging.begin(pipeline, STATE.now(), True, False)
    began = STATE.now()
    copies = _AioCopies(call)
    last: Any = None
    stop: Optional[BaseException] = None
    try:
        while not call.finished:
            now = STATE.now()
            action, copy, next_start, _reason = call.admit(now)
            if action == "start":
                left = None if deadline is None else max(deadline - (now - began), 0.0)
                details = make_details(left, _copy_metadata(metadata, copy, send_attempt_count))
                copies.tasks[copy] = loop.create_task(one(copy, details, copies.rpcs))
                continue
            if call.started == 0:
                break  # the breaker refused the first copy
            wait = max(next_start - now, 0.0) if action == "wait" else None
            running = [t for t in copies.tasks.values() if not t.done()]
            if not running and wait is None:
                break
            if clock is not None and wait is not None:
                clock.sleep(wait)  # the hedging delay passes at once on a fake clock
                wait = 0.0
            if not running:
                await asyncio.sleep(wait or 0.0)  # a pushback is being waited out
                continue
            await asyncio.wait(running, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
            last = copies.record(route.policy, last)
    except BaseException as exc:
        stop = exc
        raise
    finally:
        await copies.close(stop)
    if last is None:
        if call.started == 0:
            raise _circuit_open(call.breaker_name, call.retry_in, call.refusal_message)
        last = unanswered(copies.rpcs[max(copies.rpcs)])
    return last, call.stop_reason


class _AioCopies:
    """The copies of one grpc.aio hedged call: their tasks and call objects."""

    def __init__(self, call: Any) -> None:
        self.call = call
        self.rpcs: dict[int, Any] = {}
        self.tasks: dict[int, asyncio.Task[tuple[Any, int, Any]]] = {}
        self._handled: set[int] = set()

    def cancel(self, copy: int) -> None:
        rpc = self.rpcs.get(copy)
        if rpc is not None:
            rpc.cancel()
        self.tasks[copy].cancel()

    def record(self, policy: Any, last: Any) -> Any:
        """Records every copy that has answered since the last look (in copy
        order) and cancels the losers the engine names; returns the answer
        of the latest copy recorded (else ``last``)."""
        for ended, task in sorted(self.tasks.items()):
            if ended in self._handled or not task.done() or self.call.finished:
                continue
            self._handled.add(ended)
            if task.cancelled():
                continue
            answer, code, trailers = task.result()
            outcome = outcome_of(policy, code, trailers, False)
            _finished, _winner, _why, losers = self.call.record(ended, outcome, STATE.now())
            for loser in losers:
                self.cancel(loser)
            last = answer
        return last

    async def close(self, stop: Optional[BaseException]) -> None:
        """Cancels and awaits every copy still running; ends the engine's
        call (counted cancelled when ``stop`` is a stop exception: the
        caller's task was cancelled)."""
        for copy, task in self.tasks.items():
            if not task.done():
                self.cancel(copy)
        if self.tasks:
            await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        if stop is not None and _never_retried(stop):
            self.call.cancel(STATE.now())
        else:
            self.call.abandon(STATE.now())
