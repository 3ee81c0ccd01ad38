"""Hedged unary-stream RPCs of mulligan.adapters.grpc (sync RetryInterceptor
and the grpc.aio interceptors) from a service config's ``hedgingPolicy``
(gRFC A6; issue 18), against the real grpcio server of grpc_server.py on a
free loopback port.

A6's commit point for a stream: a copy wins with its first message (or an
OK end without one); the other copies are cancelled. A ``hold`` step stalls
a copy before its first message (5 s, cut short by the cancel, which the
server records as ``cancelled``); a hedge starts after 50 ms. The tests
assert what the server saw, the messages and the metrics, never timings: a
copy that should start "at once" runs under a call deadline far shorter
than the hedging delay, so a late start would fail the call.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

grpc = pytest.importorskip("grpc")

import mulligan  # noqa: E402
from mulligan.adapters.grpc import RetryInterceptor, aio_interceptors  # noqa: E402

from grpc_server import STREAM, ScriptedServer, Step, server  # noqa: E402,F401

HOLD = 5.0
U = grpc.StatusCode.UNAVAILABLE
KEYS = ("calls", "attempts", "successes", "failures", "cancelled", "hedges", "hedges_won", "hedge_cancelled")


class Recorder(grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """Below mulligan's interceptor: the ``grpc-previous-rpc-attempts`` of
    each copy handed to the channel (grpcio's server never shows it to a
    handler: the ``grpc-`` prefix is reserved)."""

    def __init__(self) -> None:
        self.previous: list[Any] = []

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        self.previous.append(dict(details.metadata or ()).get("grpc-previous-rpc-attempts"))
        return continuation(details, request)


class AioRecorder(grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """Recorder for grpc.aio."""

    def __init__(self) -> None:
        self.previous: list[Any] = []

    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        self.previous.append(dict(details.metadata or ()).get("grpc-previous-rpc-attempts"))
        return await continuation(details, request)


RECORDER = Recorder()


def _hedged(tmp_path: Path, delay: str = "0.05s", attempts: int = 2) -> None:
    path = tmp_path / "service_config.json"
    path.write_text(json.dumps({"methodConfig": [{
        "name": [{"service": "test.Echo", "method": "Stream"}],
        "hedgingPolicy": {"maxAttempts": attempts, "hedgingDelay": delay,
                          "nonFatalStatusCodes": ["UNAVAILABLE"]},
    }]}), encoding="utf-8")
    mulligan.load_config(str(path))


def _counts() -> dict[str, int]:
    for m in mulligan.metrics_snapshot():
        if m["name"] == STREAM:
            return {k: m[k] for k in KEYS}
    return dict.fromkeys(KEYS, 0)


def _delta(before: dict[str, int]) -> dict[str, int]:
    after = _counts()
    return {k: after[k] - before[k] for k in KEYS if after[k] != before[k]}


def _cancelled(server: ScriptedServer, index: int) -> bool:
    """Whether the server saw STREAM attempt `index` end early (it notices
    the client's cancel a moment after it was sent)."""
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        if server.attempts(STREAM)[index].cancelled:
            return True
        time.sleep(0.01)
    return False


def _wait_for(server: ScriptedServer, calls: int) -> None:
    deadline = time.monotonic() + 5.0
    while len(server.attempts(STREAM)) < calls and time.monotonic() < deadline:
        time.sleep(0.01)


def _channel(server: ScriptedServer, **options: Any) -> Any:
    """RetryInterceptor(service_config=True) above the Recorder of the
    metadata each copy hands to the channel."""
    RECORDER.previous.clear()
    inner = grpc.intercept_channel(grpc.insecure_channel(server.target), RECORDER)
    return grpc.intercept_channel(inner, RetryInterceptor(service_config=True, **options))


def test_the_hedge_wins_a_stalled_stream_and_only_its_messages_arrive(
    server: ScriptedServer, tmp_path: Path
) -> None:
    _hedged(tmp_path)
    server.script(STREAM, Step(hold=HOLD, messages=(b"slow-1", b"slow-2"), tag="first"),
                  Step(messages=(b"a", b"b", b"c"), tag="second"))
    ch = _channel(server)
    before = _counts()
    call = ch.unary_stream(STREAM)(b"x", timeout=10)
    assert list(call) == [b"a", b"b", b"c"]
    assert call.code() == grpc.StatusCode.OK
    assert ("x-tag", "second") in tuple(call.initial_metadata())
    assert len(server.attempts(STREAM)) == 2
    assert _cancelled(server, 0)
    assert not server.attempts(STREAM)[1].cancelled
    assert RECORDER.previous == [None, "1"]  # A6: the copies sent before each
    assert _delta(before) == {"calls": 1, "attempts": 2, "successes": 1, "hedges": 1,
                              "hedges_won": 1, "hedge_cancelled": 1}
    ch.close()


def test_the_call_commits_at_the_first_message_and_is_not_hedged_after_it(
    server: ScriptedServer, tmp_path: Path
) -> None:
    """The first copy's first message commits the call: its pause of 1 s
    before the next message, two hedging delays, starts no copy."""
    _hedged(tmp_path, delay="0.5s")
    server.script(STREAM, Step(messages=(b"1", b"2", b"3"), pause=1.0))
    ch = _channel(server)
    before = _counts()
    assert list(ch.unary_stream(STREAM)(b"x", timeout=10)) == [b"1", b"2", b"3"]
    assert len(server.attempts(STREAM)) == 1
    assert _delta(before) == {"calls": 1, "attempts": 1, "successes": 1}
    ch.close()


def test_a_non_fatal_status_starts_the_next_copy_at_once(server: ScriptedServer, tmp_path: Path) -> None:
    _hedged(tmp_path, delay="30s", attempts=3)
    server.script(STREAM, Step(code=U), Step(messages=(b"second",)))
    ch = _channel(server)
    before = _counts()
    # The 5 s deadline is far below the 30 s delay: only an immediate copy answers.
    assert list(ch.unary_stream(STREAM)(b"x", timeout=5)) == [b"second"]
    assert len(server.attempts(STREAM)) == 2
    assert RECORDER.previous == [None, "1"]
    assert _delta(before) == {"calls": 1, "attempts": 2, "successes": 1, "hedges": 1, "hedges_won": 1}
    ch.close()


def test_copies_are_capped_and_the_last_status_is_raised(server: ScriptedServer, tmp_path: Path) -> None:
    _hedged(tmp_path, delay="0s", attempts=9)  # gRFC A6: capped at 5
    server.script(STREAM, *[Step(code=U)] * 6)
    ch = _channel(server)
    before = _counts()
    call = ch.unary_stream(STREAM)(b"x", timeout=10)
    with pytest.raises(grpc.RpcError) as raised:
        next(call)
    assert raised.value.code() == U
    assert call.code() == U
    assert len(server.attempts(STREAM)) == 5
    assert RECORDER.previous == [None, "1", "2", "3", "4"]
    assert _delta(before) == {"calls": 1, "attempts": 5, "failures": 1, "hedges": 4}
    ch.close()


def test_a_fallback_answers_when_every_copy_failed_but_not_a_fatal_status(
    server: ScriptedServer, tmp_path: Path
) -> None:
    _hedged(tmp_path, delay="0s", attempts=2)
    ch = _channel(server, fallback=lambda exc: [b"fallback", exc.code().name.encode()])
    server.script(STREAM, Step(code=U), Step(code=U))
    assert list(ch.unary_stream(STREAM)(b"x", timeout=10)) == [b"fallback", b"UNAVAILABLE"]
    server.script(STREAM, Step(code=grpc.StatusCode.NOT_FOUND), Step(hold=HOLD))
    with pytest.raises(grpc.RpcError) as raised:
        list(ch.unary_stream(STREAM)(b"x", timeout=10))
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND  # a fatal answer is the call's
    ch.close()


def test_a_fatal_status_ends_the_call_and_cancels_the_stalled_copy(
    server: ScriptedServer, tmp_path: Path
) -> None:
    _hedged(tmp_path)
    server.script(STREAM, Step(hold=HOLD, messages=(b"slow",)), Step(code=grpc.StatusCode.INVALID_ARGUMENT))
    ch = _channel(server)
    before = _counts()
    with pytest.raises(grpc.RpcError) as raised:
        list(ch.unary_stream(STREAM)(b"x", timeout=10))
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len(server.attempts(STREAM)) == 2
    assert _cancelled(server, 0)
    assert _delta(before) == {"calls": 1, "attempts": 2, "failures": 1, "hedges": 1, "hedge_cancelled": 1}
    ch.close()


def test_an_ok_end_without_a_message_wins(server: ScriptedServer, tmp_path: Path) -> None:
    _hedged(tmp_path)
    server.script(STREAM, Step(hold=HOLD, messages=(b"slow",)), Step())
    ch = _channel(server)
    call = ch.unary_stream(STREAM)(b"x", timeout=10)
    assert list(call) == []
    assert call.code() == grpc.StatusCode.OK
    assert _cancelled(server, 0)
    ch.close()


def test_the_callers_cancel_before_a_winner_cancels_every_copy(server: ScriptedServer, tmp_path: Path) -> None:
    _hedged(tmp_path, delay="30s")
    server.script(STREAM, Step(hold=HOLD, messages=(b"slow",)))
    ch = _channel(server)
    before = _counts()
    call = ch.unary_stream(STREAM)(b"x", timeout=10)
    _wait_for(server, 1)  # the first copy reached the server (it is sent at once)
    assert call.cancel()
    with pytest.raises(grpc.RpcError) as raised:
        next(call)
    assert raised.value.code() == grpc.StatusCode.CANCELLED
    assert _cancelled(server, 0)
    assert len(server.attempts(STREAM)) == 1
    assert _delta(before) == {"calls": 1, "attempts": 1, "cancelled": 1, "hedge_cancelled": 1}
    ch.close()


def test_a_cancel_from_another_thread_wakes_the_waiting_next(server: ScriptedServer, tmp_path: Path) -> None:
    _hedged(tmp_path, delay="30s")
    server.script(STREAM, Step(hold=HOLD, messages=(b"slow",)))
    ch = _channel(server)
    before = _counts()
    call = ch.unary_stream(STREAM)(b"x", timeout=10)
    outcome: list[Any] = []

    def consume() -> None:
        try:
            outcome.append(next(call))
        except grpc.RpcError as exc:
            outcome.append(exc.code())

    consumer = threading.Thread(target=consume)
    consumer.start()
    _wait_for(server, 1)
    assert call.cancel()
    consumer.join(5)
    assert outcome == [grpc.StatusCode.CANCELLED]
    assert _cancelled(server, 0)
    assert _delta(before) == {"calls": 1, "attempts": 1, "cancelled": 1, "hedge_cancelled": 1}
    ch.close()


def test_an_open_breaker_sends_nothing(server: ScriptedServer, tmp_path: Path) -> None:
    _hedged(tmp_path)
    server.script(STREAM)
    breaker = mulligan.CircuitBreaker("hedged-stream")
    breaker.force_open()
    ch = _channel(server, breaker=breaker)
    with pytest.raises(mulligan.CircuitOpenError) as raised:
        next(ch.unary_stream(STREAM)(b"x", timeout=10))
    assert raised.value.key == "hedged-stream"
    assert server.attempts(STREAM) == []
    ch.close()
    fallback = _channel(server, breaker=breaker, fallback=lambda exc: [b"fallback", type(exc).__name__.encode()])
    assert list(fallback.unary_stream(STREAM)(b"x", timeout=10)) == [b"fallback", b"CircuitOpenError"]
    fallback.close()


def test_an_empty_budget_stops_the_extra_copies(server: ScriptedServer, tmp_path: Path) -> None:
    # gRPC A6 token bucket of 2: one non-fatal failure leaves 1 token, and an
    # extra copy (as a retry) needs more than 2 / 2 = 1.
    _hedged(tmp_path, delay="0.05s", attempts=3)
    budget = mulligan.RetryBudget.token_bucket(max_tokens=2, token_ratio=0.5)
    ch = _channel(server, budget=budget)
    server.script(STREAM, Step(code=U), Step(messages=(b"never",)))
    with pytest.raises(grpc.RpcError) as raised:
        list(ch.unary_stream(STREAM)(b"x", timeout=10))
    assert raised.value.code() == U  # the non-fatal failure could start no copy
    assert len(server.attempts(STREAM)) == 1
    # The first copy stalls 0.3 s, six hedging delays: still no second copy.
    server.script(STREAM, Step(hold=0.3, messages=(b"slow",)), Step(messages=(b"never",)))
    assert list(ch.unary_stream(STREAM)(b"x", timeout=10)) == [b"slow"]
    assert len(server.attempts(STREAM)) == 1
    ch.close()


def _aio(server: ScriptedServer, body: Any) -> tuple[Any, list[Any]]:
    recorder = AioRecorder()

    async def main() -> Any:
        interceptors = [*aio_interceptors(service_config=True), recorder]
        async with grpc.aio.insecure_channel(server.target, interceptors=interceptors) as ch:
            return await asyncio.wait_for(body(ch.unary_stream(STREAM)), 8)

    return asyncio.run(main()), recorder.previous


def test_aio_the_hedge_wins_a_stalled_stream(server: ScriptedServer, tmp_path: Path) -> None:
    _hedged(tmp_path)
    server.script(STREAM, Step(hold=HOLD, messages=(b"slow-1", b"slow-2"), tag="first"),
                  Step(messages=(b"a", b"b", b"c"), tag="second"))
    before = _counts()

    async def body(method: Any) -> Any:
        call = method(b"x", timeout=10)
        messages = [m async for m in call]
        return messages, await call.code(), tuple(await call.initial_metadata())

    (messages, code, initial), previous = _aio(server, body)
    assert messages == [b"a", b"b", b"c"]
    assert code == grpc.StatusCode.OK  # the winner's, not the cancelled copy's
    assert ("x-tag", "second") in initial
    assert previous == [None, "1"]
    assert len(server.attempts(STREAM)) == 2
    assert _cancelled(server, 0)
    assert _delta(before) == {"calls": 1, "attempts": 2, "successes": 1, "hedges": 1,
                              "hedges_won": 1, "hedge_cancelled": 1}


def test_aio_read_gives_the_winners_messages_then_eof(server: ScriptedServer, tmp_path: Path) -> None:
    _hedged(tmp_path)
    server.script(STREAM, Step(hold=HOLD, messages=(b"slow",)), Step(messages=(b"a", b"b")))

    async def body(method: Any) -> Any:
        call = method(b"x", timeout=10)
        return [await call.read() for _ in range(3)]

    (reads, _previous) = _aio(server, body)
    assert reads == [b"a", b"b", grpc.aio.EOF]
    assert _cancelled(server, 0)


def test_aio_a_non_fatal_status_starts_the_next_copy_at_once_up_to_the_cap(
    server: ScriptedServer, tmp_path: Path
) -> None:
    _hedged(tmp_path, delay="30s", attempts=3)
    server.script(STREAM, Step(code=U), Step(code=U), Step(code=U), Step(messages=(b"never",)))
    before = _counts()

    async def body(method: Any) -> Any:
        call = method(b"x", timeout=5)  # far below the 30 s delay
        try:
            return [m async for m in call]
        except grpc.aio.AioRpcError as exc:
            return exc.code(), await call.code()

    (result, previous) = _aio(server, body)
    assert result == (U, U)
    assert previous == [None, "1", "2"]
    assert len(server.attempts(STREAM)) == 3
    assert _delta(before) == {"calls": 1, "attempts": 3, "failures": 1, "hedges": 2}


def test_aio_the_callers_cancel_counts_the_call_cancelled(server: ScriptedServer, tmp_path: Path) -> None:
    _hedged(tmp_path)
    server.script(STREAM, Step(hold=HOLD, messages=(b"slow",)), Step(hold=HOLD, messages=(b"slow",)))
    before = _counts()

    async def body(method: Any) -> Any:
        call = method(b"x", timeout=10)
        reader = asyncio.ensure_future(call.read())
        while len(server.attempts(STREAM)) < 2:  # both copies reached the server
            await asyncio.sleep(0.01)
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        call.cancel()
        return None

    _aio(server, body)
    assert _cancelled(server, 0) and _cancelled(server, 1)
    assert _delta(before) == {"calls": 1, "attempts": 2, "cancelled": 1, "hedges": 1, "hedge_cancelled": 2}
