"""mulligan for grpcio: client interceptors with mulligan's retries and breakers.

::

    import grpc
    from mulligan.adapters.grpc import RetryInterceptor, aio_interceptors

    channel = grpc.intercept_channel(
        grpc.insecure_channel("localhost:50051"),
        RetryInterceptor(attempts=4, codes=["UNAVAILABLE"], breaker=True),
    )

    channel = grpc.aio.insecure_channel(
        "localhost:50051", interceptors=aio_interceptors(service_config=True)
    )

Needs grpcio (``pip install 'mulligan[grpc]'``); without it, importing this
module raises ImportError naming the extra. Unary-unary and unary-stream
calls are intercepted; client-streaming and bidirectional calls are not
(replaying them would need a buffer of every request message).

What the engine decides, per RPC method (``/pkg.Service/Method``): the retry
policy with gRPC status classification (the retryable codes: UNAVAILABLE by
default, as gRFC A6's examples; every other non-OK code is terminal), the
backoff, the deadline (the call's own ``timeout=`` is the logical call's
deadline: every attempt is sent with the time left), the attempt timeout,
the circuit breaker (one per channel, or one per method), the retry budget
and the adaptive throttle, and the metrics (named by the method path).

Server pushback (gRFC A6): a ``grpc-retry-pushback-ms`` trailing metadata
value that is a non-negative integer replaces the backoff delay of the next
retry (bounded by ``retry_after_max`` and the deadline, like Retry-After);
a negative or unparseable value means "do not retry": the call ends with
that attempt. On every retry the request carries
``grpc-previous-rpc-attempts`` (the attempts before it, A6 "Exposed Retry
Metadata"; ``send_attempt_count=False`` turns it off). grpcio's core drops
application metadata under the reserved ``grpc-`` prefix before the wire,
so interceptors below this one see it and the server does not.

Unary-stream calls are retried only until the first response message has
arrived (A6's "committed" rule); after that, an error reaches the caller as
it is, and the breaker counted the call a success.

A gRPC service config: with ``service_config=True`` each method takes the
policy that ``mulligan.load_config(path)`` read from the file's
``methodConfig`` (``retryPolicy``, ``timeout``), matched as A6 and the
service config say: the entry naming the method, else the one naming its
service, else the default entry (``"name": [{}]``); a method no entry names
is not retried. The file's ``retryThrottling`` reaches the interceptor as
the policy's budget (``mulligan.policy(name).retry_kwargs()["budget"]``),
once the configuration loader provides it. ``policy="name"`` uses one named
policy for every method.

Errors keep grpcio's types: when the retries give up, the last attempt's
own ``grpc.RpcError`` (aio: ``grpc.aio.AioRpcError``) reaches the caller,
exactly as without the interceptor. An open breaker raises
:class:`mulligan.CircuitOpenError` (``.key`` the breaker: the target, or
the method path with ``breaker_key="method"``; ``.retry_in`` seconds until
its next probe) without sending anything, or returns the fallback's answer
(:class:`mulligan.ThrottledError` when the adaptive throttle rejects). A
sync unary-stream call raises them from its first ``next()``.

Hedging (0.6): a method whose service config entry has a ``hedgingPolicy``
(gRFC A6: ``maxAttempts`` capped at 5, ``hedgingDelay``,
``nonFatalStatusCodes``; an entry with a ``retryPolicy`` too is refused at
load, naming the method) is hedged by :class:`RetryInterceptor` for
unary-unary calls: a copy is sent every ``hedgingDelay`` (at once after a
non-fatal code) up to ``maxAttempts``, the first OK answer wins and the
other copies' RPCs are cancelled, and a fatal code ends the call with that
answer. The breaker and the retry budget gate every extra copy; the
metrics count the call once, with ``mulligan_hedges_total`` (gRPC A96
``grpc.client.call.hedges``), ``mulligan_hedges_won_total`` and
``mulligan_hedge_cancelled_total``; a cancelled copy is neither a success
nor a failure. :class:`AsyncRetryInterceptor` (grpc.aio) hedges them too,
each copy a task on the caller's loop. Unary-stream calls of such a method
are hedged too (0.6, both interceptors): a copy wins with its first
response message (or an OK end without one; gRFC A6's commit point, where
a retried stream commits too), the other copies are cancelled, and the
caller reads the winner's messages in order from its first; the returned
call's ``code()``, ``details()`` and metadata are the winner's. The sync
interceptor waits for each copy's first message on a short-lived thread
per copy (grpcio's blocking stream has no message callback); grpc.aio
runs the copies as tasks (mulligan/_adapter/grpc_hedge_stream.py).

Not done as gRPC does: the backoff after a pushback is not reset to
``initialBackoff``; transparent retries are grpcio's own (below the
interceptor).

.. versionadded:: 0.4.0
"""

from __future__ import annotations

import logging

import collections
import inspect
from typing import Any, Callable, Iterator, Optional

try:
    import grpc  # type: ignore[import-untyped,unused-ignore]
    import grpc.aio  # type: ignore[import-untyped,unused-ignore]
except ImportError as _missing:  # pragma: no cover - exercised without grpcio
    raise ImportError("mulligan.adapters.grpc needs grpcio: pip install 'mulligan[grpc]'") from _missing
try:
    from grpc import _interceptor as _grpc_interceptor  # type: ignore[import-untyped,unused-ignore]
except ImportError:  # pragma: no cover - a grpcio without the module
    _grpc_interceptor = None

from .._adapter.flow import sleep
from .._adapter.grpc_flow import GrpcCall, GrpcConfig
from .._adapter.grpc_hedge import future_starter, run_hedged, run_hedged_aio
from .._adapter.grpc_hedge_stream import HedgedStream, hedged_stream_aio
from .._errors import CircuitOpenError
from .._retry.fallback import call_fallback
from .._validate import UNSET as _UNSET
from .._retry.async_driver import sleep as async_sleep

__all__ = ["AsyncRetryInterceptor", "AsyncStreamRetryInterceptor", "RetryInterceptor", "aio_interceptors"]

_LOGGER = logging.getLogger("mulligan")
# The methods already warned about by _warn_unhedged (set.add is atomic).
_UNHEDGED: set[str] = set()


def _warn_unhedged(method: str) -> None:
    """Logs once per method (WARNING, logger "mulligan") that a method with a
    hedgingPolicy is sent as one copy: the blocking continuation grpcio gave
    the interceptor offers no way to start a second RPC (see
    grpc_hedge.future_starter). Thread-safe."""
    if method in _UNHEDGED:
        return
    _UNHEDGED.add(method)
    _LOGGER.warning(
        "mulligan: %s has a hedgingPolicy, but this grpcio gives the interceptor no way to "
        "send a second copy of a blocking call; it is sent once (a .future() call or "
        "grpc.aio is hedged)", method,
        extra={"mulligan_event": "hedging_unavailable", "mulligan_method": method},
    )

# grpcio's own wrapper of an exception raised under the interceptor (a
# serializer's): not an RPC status, so never retried.
_LOCAL_FAILURE: Any = getattr(_grpc_interceptor, "_FailureOutcome", ())


class _Details(
    collections.namedtuple(
        "_Details", ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression")
    ),
    grpc.ClientCallDetails,  # type: ignore[misc]
):
    """One attempt's call details (grpcio's own shape)."""


def _method(details: Any) -> str:
    method = details.method
    return method.decode("ascii", "replace") if isinstance(method, bytes) else str(method)


def _code(status: Any) -> int:
    """The integer of a ``grpc.StatusCode`` (None: UNKNOWN, 2)."""
    return 2 if status is None else int(status.value[0])


def _attempt(details: Any, call: GrpcCall) -> _Details:
    return _Details(
        details.method, call.attempt_timeout(), call.metadata(details.metadata),
        getattr(details, "credentials", None), getattr(details, "wait_for_ready", None),
        getattr(details, "compression", None),
    )


def _aio_attempt(details: Any, call: GrpcCall) -> Any:
    pairs = call.metadata(details.metadata)
    return grpc.aio.ClientCallDetails(
        details.method, call.attempt_timeout(),
        None if pairs is None else grpc.aio.Metadata(*pairs),
        details.credentials, details.wait_for_ready,
    )


class _Answer(grpc.Call, grpc.Future):  # type: ignore[misc]
    """A fallback's answer in the shape grpcio expects of a unary outcome."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def result(self, timeout: Optional[float] = None) -> Any:
        return self._value

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        return None

    def traceback(self, timeout: Optional[float] = None) -> Any:
        return None

    def add_done_callback(self, fn: Callable[[Any], None]) -> None:
        fn(self)

    def cancel(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False

    def running(self) -> bool:
        return False

    def done(self) -> bool:
        return True

    def is_active(self) -> bool:
        return False

    def time_remaining(self) -> Optional[float]:
        return None

    def add_callback(self, callback: Callable[[], None]) -> bool:
        return False

    def initial_metadata(self) -> Any:
        return ()

    def trailing_metadata(self) -> Any:
        return ()

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.OK

    def details(self) -> str:
        return "mulligan: the fallback's answer"


class _Options:
    """The keyword arguments both interceptors take (see RetryInterceptor)."""

    _owner = "mulligan.adapters.grpc"

    def __init__(self, **options: Any) -> None:
        self._cfg = GrpcConfig(self._owner, **options)


class RetryInterceptor(
    _Options, grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor  # type: ignore[misc]
):
    """A grpcio client interceptor whose retries are mulligan's
    (``grpc.intercept_channel(channel, RetryInterceptor(...))``).

    Waits use ``time.sleep`` (mulligan.testing's FakeClock replaces it). A
    ``.future()`` call waits for each attempt inside the interceptor.

    Thread-safety: one interceptor may serve every thread of the channel;
    its options are immutable and its per-method pipelines are built under
    a lock.

    Args:
        policy: a policy name of the loaded configuration
            (``mulligan.load_config``) for every method. Excludes the retry
            options below.
        service_config: True: each method's policy is the loaded gRPC
            service config's entry for it (A6 name matching, see the
            module). Excludes the retry options below.
        attempts: total attempts including the first (>= 1). Default 3.
        timeout: bound on each attempt, seconds (trimmed to the time left
            before the deadline); an attempt that hits it is retried.
            Default: none.
        deadline: bound on the whole call, seconds, from its first attempt
            (the call's own ``timeout=`` may shorten it). Default: none.
        backoff, base_delay, multiplier, max_delay, jitter, jitter_fraction:
            the backoff (DESIGN.md section 4: exponential, 0.2 s, x2, 10 s,
            full jitter); durations in seconds.
        retry_after_max: the longest pushback honoured, seconds (a longer
            one stops the call, reason ``retry_after_too_long``). Default 60.
        codes: the retryable status codes: names (``"UNAVAILABLE"``),
            numbers or ``grpc.StatusCode`` members, in [1, 16]. Default
            ``["UNAVAILABLE"]``.
        breaker: None (default: no breaker), True (a breaker with
            :class:`mulligan.CircuitBreaker`'s defaults), a dict of its
            keyword arguments, or a :class:`mulligan.CircuitBreaker` to share.
        breaker_key: ``"channel"`` (default: one breaker for every method
            this interceptor sees, i.e. per target when each channel has its
            own interceptor) or ``"method"`` (one per method path).
        target: the channel's target, naming its breaker (default "grpc").
        budget: a :class:`mulligan.RetryBudget` every retry draws on (wins
            over a service config's ``retryThrottling``). Default: none.
        throttle: a :class:`mulligan.AdaptiveThrottle`. Default: none.
        send_attempt_count: add ``grpc-previous-rpc-attempts`` to a retry's
            metadata (seen by the interceptors below; grpcio drops it before
            the wire: the ``grpc-`` prefix is reserved). Default True.
        on_retry: called before each wait with a :class:`mulligan.RetryEvent`
            (``method`` "grpc", ``url`` the method path, ``status`` the code).
        fallback: answers instead of raising when the breaker refuses or the
            retries give up: a callable given the exception (the
            CircuitOpenError, or the last grpc.RpcError), or a value; a
            response message for unary-unary calls, an iterable of them for
            unary-stream calls. Default: none.

    Raises:
        ValueError, TypeError: a bad option, naming it (at construction);
            ValueError for an unknown ``policy`` name.

    .. versionadded:: 0.4.0
    """

    _owner = "mulligan.adapters.grpc.RetryInterceptor"

    def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        """Runs one unary-unary call (grpcio calls it).

        Returns:
            The last attempt's outcome (grpcio raises its ``grpc.RpcError``
            when it failed), or the fallback's answer.

        Raises:
            mulligan.CircuitOpenError: the breaker refused (nothing sent).
        """
        route = self._cfg.route(_method(client_call_details))
        if route.hedging is not None:
            start = future_starter(continuation)
            if start is not None:
                return self._hedged(route, start, client_call_details, request)
            _warn_unhedged(_method(client_call_details))
        call = self._cfg.begin(_method(client_call_details), client_call_details.timeout)
        in_flight = 0
        try:
            while True:
                if not call.admit():
                    return _Answer(call.refused())
                in_flight = 1
                outcome = continuation(_attempt(client_call_details, call), request)
                if isinstance(outcome, _LOCAL_FAILURE):
                    in_flight = 0
                    call.terminal()
                    return outcome
                code = _code(outcome.code())
                in_flight = 0
                decision = call.record(code, outcome.trailing_metadata() if code else None)
                if not decision.retry:
                    if code == 0:
                        return outcome
                    used, answer = call.gave_up(decision, outcome)
                    return _Answer(answer) if used else outcome
                call.report(decision)
                sleep(decision.delay)
        except BaseException:
            call.abandon(in_flight)  # nothing once the call has ended
            raise

    def _hedged(self, route: Any, start: Any, details: Any, request: Any) -> Any:
        """Runs a unary-unary call of a method with a hedgingPolicy (see the
        module and mulligan/_adapter/grpc_hedge.py): the winning copy's
        future, or the one whose answer ended the call; the fallback's
        answer instead of a failure or a refusal when there is one."""
        timeout = details.timeout
        try:
            outcome, reason = run_hedged(route, route.for_timeout(timeout), _hedge_deadline(route, timeout),
                                         start, _copy_details(details), details.metadata, request,
                                         self._cfg.send_attempt_count)
        except CircuitOpenError as refused:
            if self._cfg.fallback is _UNSET:
                raise
            return _Answer(call_fallback(self._cfg.fallback, refused))
        # As for retries: a fallback answers a give-up, not a fatal (terminal) answer.
        if self._cfg.fallback is not _UNSET and reason not in ("succeeded", "terminal"):
            return _Answer(call_fallback(self._cfg.fallback, outcome))
        return outcome

    def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        """Starts one unary-stream call (grpcio calls it): returns a
        response iterator that is also a ``grpc.Call`` (the current
        attempt's), retrying until the first message arrives; a method with
        a hedgingPolicy is hedged until a copy's first message (0.6, see
        mulligan/_adapter/grpc_hedge_stream.py).

        Raises:
            mulligan.CircuitOpenError: (hedged) the breaker refused the
                first copy; grpcio raises it from the first ``next()``.
        """
        route = self._cfg.route(_method(client_call_details))
        if route.hedging is not None:
            timeout = client_call_details.timeout
            return HedgedStream(route, route.for_timeout(timeout), _hedge_deadline(route, timeout),
                                continuation, _copy_details(client_call_details), client_call_details,
                                request, self._cfg.send_attempt_count, _fallback_of(self._cfg))
        return _Stream(self._cfg.begin(_method(client_call_details), client_call_details.timeout),
                       continuation, client_call_details, request)


def _hedge_deadline(route: Any, timeout: Optional[float]) -> Optional[float]:
    """A hedged call's deadline, seconds: the smaller of the call's own
    ``timeout`` and its policy's deadline (None: neither)."""
    own = route.policy.deadline
    return own if timeout is None else (timeout if own is None else min(own, timeout))


def _copy_details(details: Any) -> Callable[[Optional[float], Any], _Details]:
    """``(timeout, metadata) -> call details`` of one hedged copy (sync)."""

    def make(left: Optional[float], pairs: Any) -> _Details:
        return _Details(
            details.method, left, pairs, getattr(details, "credentials", None),
            getattr(details, "wait_for_ready", None), getattr(details, "compression", None),
        )

    return make


def _aio_copy_details(details: Any) -> Callable[[Optional[float], Any], Any]:
    """``(timeout, metadata) -> call details`` of one hedged grpc.aio copy."""

    def make(left: Optional[float], pairs: Any) -> Any:
        return grpc.aio.ClientCallDetails(
            details.method, left, grpc.aio.Metadata(*(pairs or ())),
            details.credentials, details.wait_for_ready,
        )

    return make


def _fallback_of(cfg: GrpcConfig) -> Optional[Callable[[BaseException], Any]]:
    """The configured fallback as ``(error) -> answer`` (None: none)."""
    if cfg.fallback is _UNSET:
        return None
    return lambda error: call_fallback(cfg.fallback, error)


class _Stream(grpc.Call):  # type: ignore[misc]
    """A unary-stream call's responses across attempts (sync)."""

    def __init__(self, call: GrpcCall, continuation: Any, details: Any, request: Any) -> None:
        self._call = call
        self._continuation = continuation
        self._details = details
        self._request = request
        self._rpc: Any = None
        self._answer: Optional[Iterator[Any]] = None
        self._committed = False
        self._cancelled = False
        self._start()

    def _start(self) -> None:
        call = self._call
        try:
            if not call.admit():
                self._answer = iter(call.refused())
                self._committed = True
                return
            self._rpc = self._continuation(_attempt(self._details, call), self._request)
        except BaseException:
            call.abandon(0)
            raise

    def __iter__(self) -> _Stream:
        return self

    def __next__(self) -> Any:
        if self._answer is not None:
            return next(self._answer)
        if self._committed:
            return next(self._rpc)
        call = self._call
        in_flight = 1
        try:
            while True:
                try:
                    message = next(self._rpc)
                except StopIteration:
                    in_flight = 0
                    self._committed = True
                    call.committed()
                    raise
                except grpc.RpcError as exc:
                    in_flight = 0
                    if self._cancelled:
                        call.abandon(0)
                        self._committed = True
                        raise
                    code = _code(exc.code())
                    decision = call.record(code, exc.trailing_metadata())
                    if not decision.retry:
                        self._committed = True
                        used, answer = call.gave_up(decision, exc)
                        if not used:
                            raise
                        self._answer = iter(answer)
                        return next(self._answer)
                    call.report(decision)
                    sleep(decision.delay)
                    self._start()
                    in_flight = 1
                    if self._answer is not None:
                        return next(self._answer)
                else:
                    self._committed = True
                    call.committed()
                    return message
        except BaseException:
            if not self._committed:
                call.abandon(in_flight)
                self._committed = True
            raise

    next = __next__

    # grpc.Call, on the current attempt.
    def cancel(self) -> bool:
        self._cancelled = True
        return bool(self._rpc.cancel()) if self._rpc is not None else False

    def is_active(self) -> bool:
        return bool(self._rpc.is_active()) if self._rpc is not None else False

    def time_remaining(self) -> Optional[float]:
        return self._rpc.time_remaining() if self._rpc is not None else None

    def add_callback(self, callback: Callable[[], None]) -> bool:
        return bool(self._rpc.add_callback(callback)) if self._rpc is not None else False

    def initial_metadata(self) -> Any:
        return self._rpc.initial_metadata() if self._rpc is not None else ()

    def trailing_metadata(self) -> Any:
        return self._rpc.trailing_metadata() if self._rpc is not None else ()

    def code(self) -> Any:
        return self._rpc.code() if self._rpc is not None else grpc.StatusCode.OK

    def details(self) -> Any:
        return self._rpc.details() if self._rpc is not None else ""


async def _hooked(result: Any) -> None:
    if inspect.isawaitable(result):
        await result


class AsyncRetryInterceptor(_Options, grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """The grpc.aio twin of :class:`RetryInterceptor` for unary-unary calls
    (``grpc.aio.insecure_channel(target, interceptors=[AsyncRetryInterceptor(...)])``).

    grpc.aio files each interceptor under one kind only, so unary-stream
    calls take their own :class:`AsyncStreamRetryInterceptor`;
    :func:`aio_interceptors` gives both, sharing one configuration (the same
    breakers, budget and pipelines). The same options and decisions as
    :class:`RetryInterceptor`; waits are ``asyncio.sleep`` (cancelling the
    task cancels the wait), or mulligan.testing's FakeClock; a coroutine
    ``on_retry`` hook is awaited.

    Thread-safety: one event loop, like the channel.

    Raises:
        ValueError, TypeError: a bad option, naming it (at construction).

    .. versionadded:: 0.4.0
    """

    _owner = "mulligan.adapters.grpc.AsyncRetryInterceptor"

    def for_streams(self) -> AsyncStreamRetryInterceptor:
        """The unary-stream interceptor sharing this one's configuration."""
        twin = AsyncStreamRetryInterceptor.__new__(AsyncStreamRetryInterceptor)
        twin._cfg = self._cfg
        return twin

    async def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        """Runs one unary-unary call: returns the last attempt's call (awaiting
        it raises its ``AioRpcError`` when it failed) or the fallback's answer.

        Raises:
            mulligan.CircuitOpenError: the breaker refused (nothing sent).
        """
        route = self._cfg.route(_method(client_call_details))
        if route.hedging is not None:
            return await self._hedged(route, continuation, client_call_details, request)
        call = self._cfg.begin(_method(client_call_details), client_call_details.timeout)
        in_flight = 0
        try:
            while True:
                if not call.admit():
                    return call.refused()
                in_flight = 1
                rpc = await continuation(_aio_attempt(client_call_details, call), request)
                code = _code(await rpc.code())
                in_flight = 0
                decision = call.record(code, await rpc.trailing_metadata() if code else None)
                if not decision.retry:
                    if code == 0:
                        return rpc
                    error = await _error_of(rpc)
                    used, answer = call.gave_up(decision, error)
                    return answer if used else rpc
                await _hooked(call.report(decision))
                if decision.delay > 0:
                    await async_sleep(decision.delay)
        except BaseException:
            call.abandon(in_flight)  # nothing once the call has ended
            raise

    async def _hedged(self, route: Any, continuation: Any, details: Any, request: Any) -> Any:
        """RetryInterceptor._hedged for grpc.aio (copies as tasks)."""
        timeout = details.timeout
        try:
            rpc, reason = await run_hedged_aio(route, route.for_timeout(timeout), _hedge_deadline(route, timeout),
                                               continuation, _aio_copy_details(details), details.metadata,
                                               request, self._cfg.send_attempt_count)
        except CircuitOpenError as refused:
            if self._cfg.fallback is _UNSET:
                raise
            return call_fallback(self._cfg.fallback, refused)
        if self._cfg.fallback is not _UNSET and reason not in ("succeeded", "terminal"):
            return call_fallback(self._cfg.fallback, await _error_of(rpc))
        return rpc


class AsyncStreamRetryInterceptor(_Options, grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """The grpc.aio interceptor of unary-stream calls (the options of
    :class:`RetryInterceptor`). Its attempts run until the first response
    message (or the stream's end) before the call is handed over; read the
    responses with ``async for`` (grpcio's ``read()`` raises
    NotImplementedError once an interceptor returns an iterator).

    Thread-safety: one event loop, like the channel.

    Raises:
        ValueError, TypeError: a bad option, naming it (at construction).

    .. versionadded:: 0.4.0
    """

    _owner = "mulligan.adapters.grpc.AsyncStreamRetryInterceptor"

    async def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        """Runs one unary-stream call until its first message (or its end):
        returns an async iterator of the responses; errors after the first
        message reach the caller as they are. A method with a hedgingPolicy
        is hedged until a copy's first message (0.6): the winning copy's
        call is returned (an AioHedgedStream)."""
        route = self._cfg.route(_method(client_call_details))
        if route.hedging is not None:
            return await self._hedged(route, continuation, client_call_details, request)
        call = self._cfg.begin(_method(client_call_details), client_call_details.timeout)
        in_flight = 0
        try:
            while True:
                if not call.admit():
                    return _aiter_of(call.refused())
                in_flight = 1
                rpc = await continuation(_aio_attempt(client_call_details, call), request)
                responses = rpc.__aiter__()
                try:
                    first = await responses.__anext__()
                except StopAsyncIteration:
                    call.committed()
                    return _aiter_of(())
                except grpc.aio.AioRpcError as exc:
                    in_flight = 0
                    decision = call.record(_code(exc.code()), exc.trailing_metadata())
                    if not decision.retry:
                        used, answer = call.gave_up(decision, exc)
                        return _aiter_of(answer) if used else _raising(exc)
                    await _hooked(call.report(decision))
                    if decision.delay > 0:
                        await async_sleep(decision.delay)
                    continue
                call.committed()
                return _rest(first, responses)
        except BaseException:
            call.abandon(in_flight)
            raise


    async def _hedged(self, route: Any, continuation: Any, details: Any, request: Any) -> Any:
        """A hedged unary-stream call (see grpc_hedge_stream): the winning
        copy's call, the failed one's (iterating it raises its
        AioRpcError), or the fallback's answer (to a refusal or a give-up)."""
        timeout = details.timeout
        try:
            stream, reason = await hedged_stream_aio(
                route, route.for_timeout(timeout), _hedge_deadline(route, timeout), continuation,
                _aio_copy_details(details), details.metadata, request, self._cfg.send_attempt_count)
        except CircuitOpenError as refused:
            if self._cfg.fallback is _UNSET:
                raise
            return _aiter_of(call_fallback(self._cfg.fallback, refused))
        if self._cfg.fallback is not _UNSET and reason not in ("succeeded", "terminal"):
            error = stream.error if stream.error is not None else grpc.aio.AioRpcError(
                await stream.code(), None, None, await stream.details())
            return _aiter_of(call_fallback(self._cfg.fallback, error))
        return stream


def aio_interceptors(**options: Any) -> list[Any]:
    """``[AsyncRetryInterceptor(**options), its for_streams() twin]``: both
    kinds of call of a grpc.aio channel through one configuration
    (``grpc.aio.insecure_channel(target, interceptors=aio_interceptors(...))``).

    Raises:
        ValueError, TypeError: a bad option, naming it.

    .. versionadded:: 0.4.0
    """
    unary = AsyncRetryInterceptor(**options)
    return [unary, unary.for_streams()]


async def _error_of(rpc: Any) -> Any:
    """The AioRpcError that awaiting the failed call ``rpc`` raises."""
    try:
        await rpc
    except grpc.aio.AioRpcError as exc:
        return exc
    return grpc.aio.AioRpcError(await rpc.code(), None, None, await rpc.details())  # pragma: no cover


async def _rest(first: Any, responses: Any) -> Any:
    yield first
    async for message in responses:
        yield message


async def _aiter_of(values: Any) -> Any:
    for value in values:
        yield value


async def _raising(exc: BaseException) -> Any:
    raise exc
    yield  # pragma: no cover - makes it an async generator
