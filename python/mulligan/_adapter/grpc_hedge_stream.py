"""Hedged unary-stream RPCs for :mod:`mulligan.adapters.grpc` (issue 18, 0.6).

A unary-stream call of a method whose service config entry has a
``hedgingPolicy`` is hedged as its unary-unary calls are
(:mod:`mulligan._adapter.grpc_hedge`: the engine's ``HedgedCall`` decides
every copy's start, the winner and the cancels, gates the copies on the
breaker and the retry budget and counts the metrics), with gRFC A6's
commit point for a stream: a copy *wins* when its first response message
arrives, or when its stream ends OK without one (a trailers-only OK); the
call is then committed and every other copy's RPC is cancelled
(``call.cancel()``: the server's context sees the RPC end). A copy that
ends with a non-fatal code (``nonFatalStatusCodes``) before its first
message starts the next copy at once (a pushback delays it); a fatal code
ends the call with that status and cancels the others. After the commit
the caller reads the winner's messages, starting with the first one, in
order; a later error of the winner reaches the caller as it is (the call
was already counted a success), as for a retried stream.

Sync (:class:`HedgedStream`): grpcio's blocking stream call offers no
notification of a message (``add_done_callback`` fires when the RPC ends,
not on a message), so each copy gets one short-lived daemon thread that
waits for that copy's first message (one ``next()``) and exits; the
calling thread keeps the hedging clock and, once a copy has won, reads the
rest of its stream itself. A losing copy's thread ends as soon as its RPC
is cancelled. So a call uses at most ``maxAttempts`` (<= 5) extra threads,
each only until the call commits.

grpc.aio (:func:`hedged_stream_aio`): each copy is a task on the caller's
loop that reads its first message; the interceptor returns an
:class:`AioHedgedStream` (a ``grpc.aio.UnaryStreamCall`` over the winning
copy), so ``code()``, ``details()`` and the metadata are the winner's, not
those of the copy grpcio started last.

.. versionadded:: 0.6.0
"""

from __future__ import annotations

import threading
from typing import Any, AsyncIterator, Callable, Iterator, Optional

import grpc  # type: ignore[import-untyped,unused-ignore]
import grpc.aio  # type: ignore[import-untyped,unused-ignore]

from .._errors import CircuitOpenError
from .grpc_hedge import SyncHedge, run_hedged_aio_copies

__all__ = ["AioHedgedStream", "HedgedStream", "hedged_stream_aio"]

# A copy whose stream ended (OK) before any message.
_END = object()
# A copy whose first read has not ended.
_PENDING = object()


def _status_of(error: Any) -> tuple[int, Any]:
    """(status code, trailers) of a copy's error: a grpc.RpcError's own; an
    exception that is no RPC status (a deserializer's) is UNKNOWN (2),
    which no hedging policy lists as non-fatal, ending the call."""
    if isinstance(error, grpc.RpcError) and hasattr(error, "code"):
        status = error.code()
        return (2 if status is None else int(status.value[0])), error.trailing_metadata()
    return 2, None


class _Copy:
    """One sync copy: its RPC (a grpcio stream call) and a daemon thread
    that reads its first message, then calls ``ended(copy)``."""

    __slots__ = ("rpc", "first", "error", "cancelled", "_done")

    def __init__(self, rpc: Any, copy: int, ended: Callable[[int], None]) -> None:
        self.rpc = rpc
        self.first: Any = _PENDING
        self.error: Optional[BaseException] = None
        self.cancelled = False
        self._done = threading.Event()
        threading.Thread(target=self._read, args=(copy, ended), name=f"mulligan-grpc-hedge-{copy}",
                         daemon=True).start()

    def _read(self, copy: int, ended: Callable[[int], None]) -> None:
        try:
            self.first = next(self.rpc)
        except StopIteration:
            self.first = _END
        except Exception as exc:  # noqa: BLE001 - handed to the calling thread
            self.error = exc
        finally:
            self._done.set()
            ended(copy)

    def cancel(self) -> None:
        self.cancelled = True
        self.rpc.cancel()

    def done(self) -> bool:
        return self._done.is_set()

    def status(self) -> Optional[tuple[int, Any]]:
        if self.cancelled:
            return None
        return (0, None) if self.error is None else _status_of(self.error)


class HedgedStream(grpc.Call):  # type: ignore[misc]
    """A hedged unary-stream call (sync): an iterator of the winning copy's
    responses that is also a ``grpc.Call`` (the winner's, or the copy's
    whose status ended the call). The first copy is sent at construction;
    the hedge runs on the first ``next()`` (or the first call of
    ``initial_metadata()``, ``trailing_metadata()``, ``code()`` or
    ``details()``, which then block as grpcio's do).

    Args:
        route: the method's route (its hedging and retry policies).
        pipeline: the route's pipeline for the call's deadline.
        deadline: seconds the call may take (None: none).
        continuation: grpcio's; each call sends one copy (non-blocking).
        make_details: ``(timeout, metadata) -> call details`` of a copy.
        details: the caller's call details (its metadata).
        request: the request message.
        send_attempt_count: send ``grpc-previous-rpc-attempts`` on copies.
        fallback: ``(error) -> iterable`` answering a give-up, or None.

    Raises:
        mulligan.CircuitOpenError: (at construction) the breaker refused
            the first copy and there is no fallback.

    Thread-safety: one consumer thread; ``cancel()`` may come from any.
    """

    def __init__(self, route: Any, pipeline: Any, deadline: Optional[float], continuation: Any,
                 make_details: Callable[[Optional[float], Any], Any], details: Any, request: Any,
                 send_attempt_count: bool, fallback: Optional[Callable[[BaseException], Any]]) -> None:
        def launch(copy: int, copy_details: Any, ended: Callable[[int], None]) -> _Copy:
            return _Copy(continuation(copy_details, request), copy, ended)

        self._fallback = fallback
        self._lock = threading.Lock()
        self._settled = False
        self._settling = False
        self._settle_lock = threading.Lock()
        self._chosen: Optional[_Copy] = None
        self._answer: Optional[Iterator[Any]] = None
        self._hedge = SyncHedge(route, pipeline, deadline, launch, _Copy.status, make_details,
                                details.metadata, send_attempt_count)
        try:
            self._hedge.drive(settle=False)
        except BaseException as exc:
            self._hedge.close(exc)
            raise
        if self._hedge.call.started == 0:  # the breaker refused: nothing was sent
            self._hedge.close(None)
            self._settled = True
            try:
                self._hedge.answer()
            except CircuitOpenError as refused:
                if fallback is None:
                    raise
                self._answer = iter(fallback(refused))

    def _settle(self) -> None:
        """Runs the hedge until a copy has won or the call has ended (once:
        a second thread asking meanwhile waits for the first)."""
        with self._settle_lock:
            with self._lock:
                if self._settled:
                    return
                self._settling = True
            self._drive()

    def _drive(self) -> None:
        hedge = self._hedge
        try:
            hedge.drive(settle=True)
        except BaseException as exc:
            hedge.close(exc)
            self._end(hedge.copies[max(hedge.copies)])
            raise
        hedge.close(None)
        chosen = hedge.answer()
        if self._fallback is not None and not hedge.stopped and \
                hedge.call.stop_reason not in ("succeeded", "terminal"):
            self._answer = iter(self._fallback(chosen.error or chosen.rpc))
        self._end(chosen)

    def _end(self, chosen: _Copy) -> None:
        with self._lock:
            self._chosen = chosen
            self._settled = True
            self._settling = False

    def __iter__(self) -> HedgedStream:
        return self

    def __next__(self) -> Any:
        self._settle()
        if self._answer is not None:
            return next(self._answer)
        chosen = self._chosen
        assert chosen is not None
        first = chosen.first
        if first is not _PENDING and first is not _END:
            chosen.first = _PENDING
            return first  # the first message, with which this copy won
        if chosen.error is not None and not isinstance(chosen.error, grpc.RpcError):
            raise chosen.error  # no RPC status (an interceptor's exception below)
        return next(chosen.rpc)  # the rest; grpcio raises the copy's end (StopIteration, its RpcError)

    next = __next__

    def _current(self) -> Any:
        """The chosen copy's RPC, else the latest copy's (None: none sent)."""
        with self._lock:
            if self._chosen is not None:
                return self._chosen.rpc
            copies = dict(self._hedge.copies)
        return copies[max(copies)].rpc if copies else None

    # grpc.Call
    def cancel(self) -> bool:
        """Cancels the call: before a copy has won, every copy's RPC (the
        call counts cancelled, never failed; the iterator then raises the
        CANCELLED RpcError, as grpcio's); after, the winner's RPC."""
        hedge = self._hedge
        with self._lock:
            settled, settling = self._settled, self._settling
            copies = list(hedge.copies.values())
            if not settled:
                hedge.stopped = True
                if not settling:  # this thread ends the engine's call below
                    self._settled = True
                    self._chosen = copies[-1]  # next() raises its CANCELLED
        if settled:
            return bool(self._chosen.rpc.cancel()) if self._chosen is not None else False
        for copy in copies:
            copy.cancel()
        if settling:
            hedge.wake()  # the thread in next() ends the call
        else:
            hedge.close(None)
        return True

    def is_active(self) -> bool:
        rpc = self._current()
        return bool(rpc.is_active()) if rpc is not None else False

    def time_remaining(self) -> Optional[float]:
        rpc = self._current()
        return rpc.time_remaining() if rpc is not None else None

    def add_callback(self, callback: Callable[[], None]) -> bool:
        rpc = self._current()
        return bool(rpc.add_callback(callback)) if rpc is not None else False

    def _settled_rpc(self) -> Any:
        self._settle()
        return self._chosen.rpc if self._chosen is not None and self._answer is None else None

    def initial_metadata(self) -> Any:
        rpc = self._settled_rpc()
        return rpc.initial_metadata() if rpc is not None else ()

    def trailing_metadata(self) -> Any:
        rpc = self._settled_rpc()
        return rpc.trailing_metadata() if rpc is not None else ()

    def code(self) -> Any:
        rpc = self._settled_rpc()
        return rpc.code() if rpc is not None else grpc.StatusCode.OK

    def details(self) -> Any:
        rpc = self._settled_rpc()
        return rpc.details() if rpc is not None else ""


class AioHedgedStream(grpc.aio.UnaryStreamCall):  # type: ignore[misc]
    """The call a hedged grpc.aio unary-stream call hands back: the winning
    copy's stream call (or the one whose status ended the call), its first
    message already read. ``async for`` (or ``read()``, grpc.aio.EOF at
    the end) gives that first message, then the rest of the copy's stream
    in order; a failed call raises the copy's AioRpcError. ``cancel()``,
    ``code()``, ``details()``, the metadata, ``done()`` and the callbacks
    are that copy's.

    Thread-safety: the event loop's, like the call.
    """

    def __init__(self, rpc: Any, responses: Any, first: Any, error: Optional[BaseException]) -> None:
        self._rpc = rpc
        self._responses = responses
        self._first = first
        self._error = error
        self._reader: Optional[AsyncIterator[Any]] = None

    @property
    def error(self) -> Optional[BaseException]:
        """The copy's AioRpcError when it failed before a first message."""
        return self._error

    async def _messages(self) -> AsyncIterator[Any]:
        if self._error is not None:
            raise self._error
        if self._first is _END:
            return
        if self._first is not _PENDING:
            first, self._first = self._first, _PENDING
            yield first
        responses = self._responses if self._responses is not None else self._rpc.__aiter__()
        async for message in responses:
            yield message

    def __aiter__(self) -> AsyncIterator[Any]:
        if self._reader is None:
            self._reader = self._messages()
        return self._reader

    async def read(self) -> Any:
        try:
            return await self.__aiter__().__anext__()
        except StopAsyncIteration:
            return grpc.aio.EOF

    def cancelled(self) -> bool:
        return bool(self._rpc.cancelled())

    def done(self) -> bool:
        return bool(self._rpc.done())

    def time_remaining(self) -> Optional[float]:
        return self._rpc.time_remaining()  # type: ignore[no-any-return]

    def cancel(self) -> bool:
        return bool(self._rpc.cancel())

    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        self._rpc.add_done_callback(lambda _rpc: callback(self))

    async def initial_metadata(self) -> Any:
        return await self._rpc.initial_metadata()

    async def trailing_metadata(self) -> Any:
        return await self._rpc.trailing_metadata()

    async def code(self) -> Any:
        return await self._rpc.code()

    async def details(self) -> Any:
        return await self._rpc.details()

    async def debug_error_string(self) -> Any:
        return await self._rpc.debug_error_string()

    async def wait_for_connection(self) -> None:
        await self._rpc.wait_for_connection()


async def hedged_stream_aio(
    route: Any,
    pipeline: Any,
    deadline: Optional[float],
    continuation: Any,
    make_details: Callable[[Optional[float], Any], Any],
    metadata: Any,
    request: Any,
    send_attempt_count: bool,
) -> tuple[AioHedgedStream, str]:
    """Runs one hedged grpc.aio unary-stream RPC until a copy has won (its
    first message, or its OK end) or the call has ended; each copy a task on
    the running loop reading its first message. Returns (the
    :class:`AioHedgedStream` of the copy whose answer is the call's, the
    stop reason: "succeeded", "terminal", "attempts_exhausted" ...).
    Raises mulligan.CircuitOpenError when the breaker refused the first
    copy. Cancelling the caller's task cancels every copy's RPC."""

    async def one(copy: int, details: Any, rpcs: dict[int, Any]) -> tuple[AioHedgedStream, int, Any]:
        rpc = await continuation(details, request)
        rpcs[copy] = rpc
        responses = rpc.__aiter__()
        try:
            first = await responses.__anext__()
        except StopAsyncIteration:
            return AioHedgedStream(rpc, None, _END, None), 0, None
        except grpc.aio.AioRpcError as exc:
            code, trailers = _status_of(exc)
            return AioHedgedStream(rpc, None, None, exc), code, trailers
        return AioHedgedStream(rpc, responses, first, None), 0, None

    def unanswered(rpc: Any) -> AioHedgedStream:
        return AioHedgedStream(rpc, None, _PENDING, None)

    stream, reason = await run_hedged_aio_copies(route, pipeline, deadline, one, unanswered,
                                                 make_details, metadata, send_attempt_count)
    return stream, reason
