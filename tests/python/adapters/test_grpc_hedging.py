"""Hedged unary-unary RPCs of mulligan.adapters.grpc.RetryInterceptor from a
gRPC service config's ``hedgingPolicy`` (gRFC A6; issue 18), against a real
grpcio server (grpc_server.py) on a free loopback port.

The server is scripted per call: a ``hold`` step answers after that many
seconds unless the RPC ends first, which it records as ``cancelled`` (its
context's callback ran and ``is_active()`` is false). Real time, short: a
hedge starts after 50 ms; a held copy would wait 5 s but is cancelled as
soon as another copy's answer wins, so no test waits for it.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

grpc = pytest.importorskip("grpc")

import mulligan  # noqa: E402
from mulligan.adapters.grpc import RetryInterceptor, aio_interceptors  # noqa: E402

from grpc_server import OTHER, UNARY, ScriptedServer, Step, server  # noqa: E402,F401

HOLD = 5.0


def _load(tmp_path: Path, entries: list[dict[str, Any]]) -> None:
    path = tmp_path / "service_config.json"
    path.write_text(json.dumps({"methodConfig": entries}), encoding="utf-8")
    mulligan.load_config(str(path))


def _hedged(tmp_path: Path, delay: str = "0.05s", attempts: int = 2) -> None:
    _load(tmp_path, [{
        "name": [{"service": "test.Echo", "method": "Unary"}],
        "hedgingPolicy": {"maxAttempts": attempts, "hedgingDelay": delay,
                          "nonFatalStatusCodes": ["UNAVAILABLE"]},
    }])


def _counts() -> dict[str, int]:
    keys = ("calls", "attempts", "successes", "failures", "hedges", "hedges_won", "hedge_cancelled")
    for m in mulligan.metrics_snapshot():
        if m["name"] == UNARY:
            return {k: m[k] for k in keys}
    return dict.fromkeys(keys, 0)


def _cancelled(server: ScriptedServer, index: int) -> bool:
    """Whether the server saw attempt `index` of UNARY end early (it notices
    the client's cancel a moment after it was sent)."""
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        if server.attempts(UNARY)[index].cancelled:
            return True
        time.sleep(0.01)
    return False


def _channel(server: ScriptedServer) -> Any:
    return grpc.intercept_channel(grpc.insecure_channel(server.target), RetryInterceptor(service_config=True))


def test_the_slow_first_copy_is_cancelled_and_the_second_answers(
    server: ScriptedServer, tmp_path: Path
) -> None:
    _hedged(tmp_path)
    assert mulligan.policy("test.Echo/Unary").hedging == {"max_attempts": 2, "delay": 0.05}
    server.script(UNARY, Step(hold=HOLD, reply=b"slow"), Step(reply=b"fast"))
    ch = _channel(server)
    before = _counts()
    began = time.monotonic()
    answer = ch.unary_unary(UNARY)(b"x")
    elapsed = time.monotonic() - began
    after = _counts()
    assert answer == b"fast"
    assert elapsed < 2.0  # not the slow copy's 5 s
    assert len(server.attempts(UNARY)) == 2
    assert _cancelled(server, 0)
    assert not server.attempts(UNARY)[1].cancelled
    # One logical call: 2 copies, 1 hedge that won, 1 cancelled copy, no failure.
    assert {k: after[k] - before[k] for k in after} == {
        "calls": 1, "attempts": 2, "successes": 1, "failures": 0,
        "hedges": 1, "hedges_won": 1, "hedge_cancelled": 1,
    }
    ch.close()


def test_a_future_call_is_hedged_too(server: ScriptedServer, tmp_path: Path) -> None:
    _hedged(tmp_path)
    server.script(UNARY, Step(hold=HOLD, reply=b"slow"), Step(reply=b"fast"))
    ch = _channel(server)
    assert ch.unary_unary(UNARY).future(b"x").result(timeout=3) == b"fast"
    assert len(server.attempts(UNARY)) == 2
    assert _cancelled(server, 0)
    ch.close()


def test_the_aio_interceptor_hedges_on_the_callers_loop(server: ScriptedServer, tmp_path: Path) -> None:
    _hedged(tmp_path)
    server.script(UNARY, Step(hold=HOLD, reply=b"slow"), Step(reply=b"fast"))
    before = _counts()

    async def main() -> bytes:
        async with grpc.aio.insecure_channel(
            server.target, interceptors=aio_interceptors(service_config=True)
        ) as ch:
            return await asyncio.wait_for(ch.unary_unary(UNARY)(b"x"), 3)  # type: ignore[no-any-return]

    assert asyncio.run(main()) == b"fast"
    after = _counts()
    assert len(server.attempts(UNARY)) == 2
    assert _cancelled(server, 0)
    assert {k: after[k] - before[k] for k in after} == {
        "calls": 1, "attempts": 2, "successes": 1, "failures": 0,
        "hedges": 1, "hedges_won": 1, "hedge_cancelled": 1,
    }


def test_a_fatal_status_ends_the_call_and_cancels_the_other_copy(
    server: ScriptedServer, tmp_path: Path
) -> None:
    _hedged(tmp_path)
    server.script(UNARY, Step(hold=HOLD), Step(code=grpc.StatusCode.INVALID_ARGUMENT))
    ch = _channel(server)
    with pytest.raises(grpc.RpcError) as raised:
        ch.unary_unary(UNARY)(b"x")
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len(server.attempts(UNARY)) == 2
    assert _cancelled(server, 0)
    ch.close()


def test_a_non_fatal_status_starts_the_next_copy_at_once(server: ScriptedServer, tmp_path: Path) -> None:
    _hedged(tmp_path, delay="10s", attempts=3)
    server.script(UNARY, Step(code=grpc.StatusCode.UNAVAILABLE), Step(reply=b"second"))
    ch = _channel(server)
    began = time.monotonic()
    assert ch.unary_unary(UNARY)(b"x") == b"second"
    assert time.monotonic() - began < 2.0  # not after the 10 s hedging delay
    assert len(server.attempts(UNARY)) == 2
    ch.close()


def test_every_copy_failing_non_fatally_gives_the_last_answer(server: ScriptedServer, tmp_path: Path) -> None:
    _hedged(tmp_path, delay="0s", attempts=9)  # capped at 5 copies
    server.script(UNARY, *[Step(code=grpc.StatusCode.UNAVAILABLE)] * 6)
    ch = _channel(server)
    with pytest.raises(grpc.RpcError) as raised:
        ch.unary_unary(UNARY)(b"x")
    assert raised.value.code() == grpc.StatusCode.UNAVAILABLE
    assert len(server.attempts(UNARY)) == 5
    # A method without a hedgingPolicy entry is sent once.
    server.script(OTHER, Step(reply=b"other"))
    assert ch.unary_unary(OTHER)(b"x") == b"other"
    assert len(server.attempts(OTHER)) == 1
    ch.close()


def test_retry_and_hedging_policy_together_are_refused_naming_the_method(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as raised:
        _load(tmp_path, [{
            "name": [{"service": "test.Echo", "method": "Unary"}],
            "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
                            "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
            "hedgingPolicy": {"maxAttempts": 2},
        }])
    assert ('methodConfig[0]: has both retryPolicy and hedgingPolicy for "test.Echo/Unary"; '
            "gRFC A6 allows one or the other for a method") in str(raised.value)


def test_a_blocking_continuation_without_a_future_is_sent_once_with_one_warning(
    server: ScriptedServer, tmp_path: Path, caplog: Any
) -> None:
    """A continuation that is not grpcio's (as if grpcio changed the closure
    future_starter reads) cannot start copies: the call is sent once, and one
    WARNING per method says so."""
    _hedged(tmp_path)
    server.script(UNARY, Step(reply=b"one"), Step(reply=b"two"))
    plain = grpc.insecure_channel(server.target)

    def continuation(details: Any, request: bytes) -> Any:
        return plain.unary_unary(UNARY).with_call(request, timeout=details.timeout)[1]

    details = type("Details", (), {"method": UNARY, "timeout": 5.0, "metadata": None,
                                   "credentials": None, "wait_for_ready": None,
                                   "compression": None})()
    interceptor = RetryInterceptor(service_config=True)
    with caplog.at_level("WARNING", logger="mulligan"):
        first = interceptor.intercept_unary_unary(continuation, details, b"x")
        second = interceptor.intercept_unary_unary(continuation, details, b"x")
    assert (first.result(), second.result()) == (b"one", b"two")
    assert len(server.attempts(UNARY)) == 2  # one copy each
    warnings = [r for r in caplog.records if getattr(r, "mulligan_event", "") == "hedging_unavailable"]
    assert [r.getMessage() for r in warnings] == [
        f"mulligan: {UNARY} has a hedgingPolicy, but this grpcio gives the interceptor no way to "
        "send a second copy of a blocking call; it is sent once (a .future() call or grpc.aio "
        "is hedged)"
    ]
    plain.close()
