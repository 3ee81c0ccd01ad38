"""mulligan.adapters.grpc's aio interceptor against a real grpcio server.

The same scripted server as the sync tests; expected values by hand
(jitter "none": waits of base_delay * 2**(n-1); pushback "100" is 0.1 s).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

grpc = pytest.importorskip("grpc")
import grpc.aio  # noqa: E402

import mulligan  # noqa: E402
from mulligan.adapters.grpc import aio_interceptors  # noqa: E402

from adapter_helpers import clock  # noqa: E402,F401
from grpc_server import STREAM, UNARY, ScriptedServer, Step, server  # noqa: E402,F401

U = grpc.StatusCode.UNAVAILABLE


class Recorder(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Below mulligan's interceptors: the ``grpc-previous-rpc-attempts`` each
    attempt hands to the channel (grpcio's server never shows it to a handler)."""

    def __init__(self, previous: Any = None) -> None:
        self.previous: list[Any] = [] if previous is None else previous

    def for_streams(self) -> Any:
        return _StreamRecorder(self.previous)

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        self.previous.append(dict(details.metadata or ()).get("grpc-previous-rpc-attempts"))
        return await continuation(details, request)


class _StreamRecorder(grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
    def __init__(self, previous: list[Any]) -> None:
        self.previous = previous

    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        self.previous.append(dict(details.metadata or ()).get("grpc-previous-rpc-attempts"))
        return await continuation(details, request)


RECORDER = Recorder()


def run(server: ScriptedServer, body: Any, **options: Any) -> Any:
    options.setdefault("jitter", "none")
    options.setdefault("base_delay", 0.1)

    async def main() -> Any:
        RECORDER.previous.clear()
        interceptors = [*aio_interceptors(**options), RECORDER, RECORDER.for_streams()]
        async with grpc.aio.insecure_channel(server.target, interceptors=interceptors) as ch:
            return await body(ch)

    return asyncio.run(main())


def test_unavailable_twice_then_ok(server: ScriptedServer, clock: Any) -> None:
    server.script(UNARY, Step(U), Step(U))

    async def body(ch: Any) -> Any:
        return await ch.unary_unary(UNARY)(b"a")

    assert run(server, body) == b"ok:a"
    assert len(server.attempts(UNARY)) == 3
    assert RECORDER.previous == [None, "1", "2"]
    assert clock.sleeps == pytest.approx([0.1, 0.2])


def test_gives_up_with_aio_rpc_error(server: ScriptedServer, clock: Any) -> None:
    server.script(UNARY, Step(U), Step(U), Step(U))

    async def body(ch: Any) -> Any:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await ch.unary_unary(UNARY)(b"a")
        return info.value.code()

    assert run(server, body, attempts=2) == U
    assert len(server.attempts(UNARY)) == 2


def test_pushback(server: ScriptedServer, clock: Any) -> None:
    server.script(UNARY, Step(U, pushback="100"))

    async def body(ch: Any) -> Any:
        return await ch.unary_unary(UNARY)(b"p")

    assert run(server, body) == b"ok:p"
    assert clock.sleeps == pytest.approx([0.1])


def test_negative_pushback_is_one_attempt(server: ScriptedServer, clock: Any) -> None:
    server.script(UNARY, Step(U, pushback="-5"))

    async def body(ch: Any) -> Any:
        with pytest.raises(grpc.aio.AioRpcError):
            await ch.unary_unary(UNARY)(b"p")

    run(server, body)
    assert len(server.attempts(UNARY)) == 1


def test_stream_before_and_after_the_first_message(server: ScriptedServer, clock: Any) -> None:
    server.script(STREAM, Step(U), Step(messages=(b"a", b"b")))

    async def before(ch: Any) -> Any:
        return [m async for m in ch.unary_stream(STREAM)(b"x")]

    assert run(server, before) == [b"a", b"b"]
    assert len(server.attempts(STREAM)) == 2
    assert RECORDER.previous == [None, "1"]

    server.script(STREAM, Step(U, messages=(b"a",)), Step(messages=(b"never",)))

    async def after(ch: Any) -> Any:
        got = []
        with pytest.raises(grpc.aio.AioRpcError) as info:
            async for m in ch.unary_stream(STREAM)(b"x"):
                got.append(m)
        return got, info.value.code()

    assert run(server, after) == ([b"a"], U)
    assert len(server.attempts(STREAM)) == 1


def test_stream_gives_up_with_aio_rpc_error(server: ScriptedServer, clock: Any) -> None:
    server.script(STREAM, Step(U), Step(U))

    async def body(ch: Any) -> Any:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            async for _ in ch.unary_stream(STREAM)(b"x"):
                pass
        return info.value.code()

    assert run(server, body, attempts=2) == U
    assert len(server.attempts(STREAM)) == 2


def test_deadline_from_the_call_timeout(server: ScriptedServer, clock: Any) -> None:
    server.script(UNARY, Step(hold=0.5))

    async def body(ch: Any) -> Any:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await ch.unary_unary(UNARY)(b"t", timeout=0.05)
        return info.value.code()

    assert run(server, body) == grpc.StatusCode.DEADLINE_EXCEEDED
    assert len(server.attempts(UNARY)) == 1


def test_breaker_opens_after_n_failures(server: ScriptedServer, clock: Any) -> None:
    server.script(UNARY, Step(U), Step(U))

    async def body(ch: Any) -> Any:
        for _ in range(2):
            with pytest.raises(grpc.aio.AioRpcError):
                await ch.unary_unary(UNARY)(b"x")
        with pytest.raises(mulligan.CircuitOpenError):
            await ch.unary_unary(UNARY)(b"x")

    run(server, body, attempts=1, breaker={"failure_threshold": 2})
    assert len(server.attempts(UNARY)) == 2


def test_fallback(server: ScriptedServer, clock: Any) -> None:
    server.script(UNARY, Step(U))

    async def body(ch: Any) -> Any:
        return await ch.unary_unary(UNARY)(b"x")

    assert run(server, body, attempts=1, fallback=b"cached") == b"cached"


def test_stream_refused_by_an_open_breaker(server: ScriptedServer, clock: Any) -> None:
    server.script(STREAM, Step(U))

    async def body(ch: Any) -> Any:
        with pytest.raises(grpc.aio.AioRpcError):
            async for _ in ch.unary_stream(STREAM)(b"x"):
                pass
        with pytest.raises(mulligan.CircuitOpenError):
            async for _ in ch.unary_stream(STREAM)(b"x"):
                pass

    run(server, body, attempts=1, breaker={"failure_threshold": 1})
    assert len(server.attempts(STREAM)) == 1
