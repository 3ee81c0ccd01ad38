"""mulligan.adapters.grpc's sync interceptor against a real grpcio server.

Expected values are worked out by hand from gRFC A6 and the options given:
waits on the FakeClock with jitter "none" are base_delay * multiplier**(n-1);
a pushback of "100" is exactly 0.1 s; the server's own record says how many
attempts it saw and what ``grpc-previous-rpc-attempts`` each carried.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

grpc = pytest.importorskip("grpc")

import mulligan  # noqa: E402
from mulligan.adapters.grpc import RetryInterceptor  # noqa: E402

from adapter_helpers import clock  # noqa: E402,F401
from grpc_server import OTHER, STREAM, UNARY, ScriptedServer, Step, server  # noqa: E402,F401

U = grpc.StatusCode.UNAVAILABLE


class Recorder(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """Below mulligan's interceptor: the metadata each attempt hands to the
    channel. (grpcio's server treats ``grpc-previous-rpc-attempts`` as a
    reserved header and never shows it to a handler, so it is checked here.)"""

    def __init__(self) -> None:
        self.previous: list[Any] = []

    def _note(self, details: Any) -> None:
        md = dict(details.metadata or ())
        self.previous.append(md.get("grpc-previous-rpc-attempts"))

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        self._note(details)
        return continuation(details, request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        self._note(details)
        return continuation(details, request)


RECORDER = Recorder()


def channel(server: ScriptedServer, **options: Any) -> Any:
    options.setdefault("jitter", "none")
    options.setdefault("base_delay", 0.1)
    RECORDER.previous.clear()
    inner = grpc.intercept_channel(grpc.insecure_channel(server.target), RECORDER)
    return grpc.intercept_channel(inner, RetryInterceptor(**options))


@pytest.fixture
def plain(server: ScriptedServer) -> Iterator[Any]:
    ch = channel(server)
    yield ch
    ch.close()


def test_unavailable_twice_then_ok(server: ScriptedServer, plain: Any, clock: Any) -> None:
    server.script(UNARY, Step(U), Step(U))
    assert plain.unary_unary(UNARY)(b"x") == b"ok:x"
    assert len(server.attempts(UNARY)) == 3
    # A6: no header on the first attempt, then the attempts before each retry.
    assert RECORDER.previous == [None, "1", "2"]
    assert clock.sleeps == pytest.approx([0.1, 0.2])


def test_gives_up_with_grpcs_own_error(server: ScriptedServer, plain: Any, clock: Any) -> None:
    server.script(UNARY, Step(U), Step(U), Step(U), Step(U))
    with pytest.raises(grpc.RpcError) as info:
        plain.unary_unary(UNARY)(b"x")
    assert info.value.code() == U
    assert len(server.attempts(UNARY)) == 3  # attempts=3 by default


def test_pushback_replaces_the_backoff(server: ScriptedServer, plain: Any, clock: Any) -> None:
    server.script(UNARY, Step(U, pushback="100"), Step(U, pushback="0"))
    assert plain.unary_unary(UNARY)(b"y") == b"ok:y"
    assert len(server.attempts(UNARY)) == 3
    assert clock.sleeps == pytest.approx([0.1])  # then no wait at all: not the backoff's 0.1, 0.2


@pytest.mark.parametrize("value", ["-1", "soon", "1.5", ""])
def test_negative_or_unparseable_pushback_stops(server: ScriptedServer, plain: Any, clock: Any, value: str) -> None:
    server.script(UNARY, Step(U, pushback=value))
    with pytest.raises(grpc.RpcError) as info:
        plain.unary_unary(UNARY)(b"x")
    assert info.value.code() == U
    assert len(server.attempts(UNARY)) == 1
    assert clock.sleeps == []


def test_non_retryable_code_is_one_attempt(server: ScriptedServer, plain: Any, clock: Any) -> None:
    server.script(UNARY, Step(grpc.StatusCode.INVALID_ARGUMENT), Step(U))
    with pytest.raises(grpc.RpcError) as info:
        plain.unary_unary(UNARY)(b"x")
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len(server.attempts(UNARY)) == 1


def test_codes_option(server: ScriptedServer, clock: Any) -> None:
    ch = channel(server, codes=["RESOURCE_EXHAUSTED", grpc.StatusCode.ABORTED])
    server.script(UNARY, Step(grpc.StatusCode.RESOURCE_EXHAUSTED), Step(grpc.StatusCode.ABORTED), Step(U))
    with pytest.raises(grpc.RpcError) as info:
        ch.unary_unary(UNARY)(b"x")
    assert info.value.code() == U  # UNAVAILABLE is no longer in the list
    assert len(server.attempts(UNARY)) == 3
    ch.close()


def test_stream_retried_before_the_first_message(server: ScriptedServer, plain: Any, clock: Any) -> None:
    server.script(STREAM, Step(U), Step(messages=(b"a", b"b")))
    assert list(plain.unary_stream(STREAM)(b"x")) == [b"a", b"b"]
    assert len(server.attempts(STREAM)) == 2
    assert RECORDER.previous == [None, "1"]


def test_stream_committed_after_the_first_message(server: ScriptedServer, plain: Any, clock: Any) -> None:
    server.script(STREAM, Step(U, messages=(b"a",)), Step(messages=(b"never",)))
    got = []
    with pytest.raises(grpc.RpcError) as info:
        for m in plain.unary_stream(STREAM)(b"x"):
            got.append(m)
    assert got == [b"a"]
    assert info.value.code() == U
    assert len(server.attempts(STREAM)) == 1
    assert clock.sleeps == []


def test_attempt_timeout_is_retried(server: ScriptedServer, clock: Any) -> None:
    ch = channel(server, timeout=0.05)
    server.script(UNARY, Step(hold=0.5))
    assert ch.unary_unary(UNARY)(b"t") == b"ok:t"
    assert len(server.attempts(UNARY)) == 2
    ch.close()


def test_call_deadline_is_not_retried(server: ScriptedServer, plain: Any, clock: Any) -> None:
    server.script(UNARY, Step(hold=0.5))
    with pytest.raises(grpc.RpcError) as info:
        plain.unary_unary(UNARY)(b"t", timeout=0.05)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert len(server.attempts(UNARY)) == 1


def test_call_timeout_bounds_the_retries(server: ScriptedServer, plain: Any, clock: Any) -> None:
    # timeout 0.25 s on the fake clock: the waits 0.1 then 0.2 would reach it.
    server.script(UNARY, Step(U), Step(U), Step(U))
    with pytest.raises(grpc.RpcError):
        plain.unary_unary(UNARY)(b"x", timeout=0.25)
    assert len(server.attempts(UNARY)) == 2
    assert clock.sleeps == pytest.approx([0.1])


def test_breaker_opens_after_n_failures(server: ScriptedServer, clock: Any) -> None:
    ch = channel(server, attempts=1, breaker={"failure_threshold": 3}, target=server.target)
    server.script(UNARY, Step(U), Step(U), Step(U))
    for _ in range(3):
        with pytest.raises(grpc.RpcError):
            ch.unary_unary(UNARY)(b"x")
    with pytest.raises(mulligan.CircuitOpenError) as info:
        ch.unary_unary(UNARY)(b"x")
    assert info.value.key == server.target
    with pytest.raises(mulligan.CircuitOpenError):  # a stream, from its first next()
        next(iter(ch.unary_stream(STREAM)(b"x")))
    assert len(server.attempts(UNARY)) == 3
    assert server.attempts(STREAM) == []
    ch.close()


def test_breaker_per_method(server: ScriptedServer, clock: Any) -> None:
    ch = channel(server, attempts=1, breaker={"failure_threshold": 1}, breaker_key="method")
    server.script(UNARY, Step(U))
    with pytest.raises(grpc.RpcError):
        ch.unary_unary(UNARY)(b"x")
    with pytest.raises(mulligan.CircuitOpenError) as info:
        ch.unary_unary(UNARY)(b"x")
    assert info.value.key == UNARY
    assert ch.unary_unary(OTHER)(b"o") == b"ok:o"  # its own breaker, closed
    ch.close()


def test_fallback_answers_an_open_breaker(server: ScriptedServer, clock: Any) -> None:
    ch = channel(server, attempts=1, breaker={"failure_threshold": 1}, fallback=lambda exc: b"cached")
    server.script(UNARY, Step(U))
    assert ch.unary_unary(UNARY)(b"x") == b"cached"  # gave up: the fallback answers
    assert ch.unary_unary(UNARY)(b"x") == b"cached"  # refused: the fallback answers
    assert len(server.attempts(UNARY)) == 1
    ch.close()


def test_budget_stops_retries(server: ScriptedServer, clock: Any) -> None:
    # A6 token bucket: max 2, ratio 0.1; a retry needs more than max/2 tokens.
    # The first failure leaves 1 token (not > 1): no retry at all.
    budget = mulligan.RetryBudget.token_bucket(max_tokens=2, token_ratio=0.1)
    ch = channel(server, budget=budget, attempts=5)
    server.script(UNARY, Step(U), Step(U))
    with pytest.raises(grpc.RpcError):
        ch.unary_unary(UNARY)(b"x")
    assert len(server.attempts(UNARY)) == 1
    ch.close()


SERVICE_CONFIG = {
    "methodConfig": [
        {
            "name": [{"service": "test.Echo"}],
            "retryPolicy": {
                "maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
                "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"],
            },
        },
        {
            "name": [{"service": "test.Echo", "method": "Stream"}],
            "retryPolicy": {
                "maxAttempts": 2, "initialBackoff": "0.1s", "maxBackoff": "1s",
                "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"],
            },
        },
    ]
}


def test_service_config_by_method_name(server: ScriptedServer, tmp_path: Path, clock: Any) -> None:
    path = tmp_path / "service_config.json"
    path.write_text(json.dumps(SERVICE_CONFIG), encoding="utf-8")
    mulligan.load_config(str(path))
    ch = grpc.intercept_channel(grpc.insecure_channel(server.target), RetryInterceptor(service_config=True))
    # /test.Echo/Unary: the service-wide entry (4 attempts, RESOURCE_EXHAUSTED retryable).
    server.script(UNARY, *[Step(grpc.StatusCode.RESOURCE_EXHAUSTED)] * 5)
    with pytest.raises(grpc.RpcError):
        ch.unary_unary(UNARY)(b"x")
    assert len(server.attempts(UNARY)) == 4
    # A6 delays: min(0.1 * 2**(n-1), 1) * random(0.8, 1.2).
    for n, wait in enumerate(clock.sleeps, start=1):
        assert 0.8 * 0.1 * 2 ** (n - 1) <= wait <= 1.2 * 0.1 * 2 ** (n - 1)
    # /test.Echo/Stream: its own entry (2 attempts).
    server.script(STREAM, Step(U), Step(U), Step(U))
    with pytest.raises(grpc.RpcError):
        list(ch.unary_stream(STREAM)(b"x"))
    assert len(server.attempts(STREAM)) == 2
    # /other.Svc/Unary: no entry names it, so it is not retried.
    server.script(OTHER, Step(U), Step(U))
    with pytest.raises(grpc.RpcError):
        ch.unary_unary(OTHER)(b"x")
    assert len(server.attempts(OTHER)) == 1
    ch.close()


def test_service_config_retry_throttling(server: ScriptedServer, tmp_path: Path, clock: Any) -> None:
    config = dict(SERVICE_CONFIG, retryThrottling={"maxTokens": 2, "tokenRatio": 0.1})
    path = tmp_path / "throttled.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    mulligan.load_config(str(path))
    if mulligan.policy("test.Echo").retry_kwargs().get("budget") is None:
        pytest.skip("the configuration loader does not turn retryThrottling into a budget yet")
    ch = grpc.intercept_channel(grpc.insecure_channel(server.target), RetryInterceptor(service_config=True))
    server.script(UNARY, Step(U), Step(U))
    with pytest.raises(grpc.RpcError):
        ch.unary_unary(UNARY)(b"x")
    assert len(server.attempts(UNARY)) == 1  # 2 -> 1 token: not above max/2
    ch.close()


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"attempts": 0}, "attempts"),
        ({"codes": ["NOPE"]}, "codes"),
        ({"codes": [0]}, "codes"),
        ({"codes": "UNAVAILABLE"}, "codes"),
        ({"breaker_key": "origin"}, "breaker_key"),
        ({"breaker": "yes"}, "breaker"),
        ({"budget": 3}, "budget"),
        ({"timeout": -1}, "timeout"),
        ({"service_config": True, "attempts": 2}, "attempts"),
    ],
)
def test_bad_options_name_the_field(options: dict[str, Any], field: str) -> None:
    with pytest.raises((ValueError, TypeError), match=field):
        RetryInterceptor(**options)


def test_unknown_policy_name_fails_at_construction() -> None:
    with pytest.raises(ValueError):
        RetryInterceptor(policy="no-such-policy-anywhere")


def test_readme_quick_start_runs(server: ScriptedServer) -> None:
    import asyncio
    import re

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    start = readme.index("### gRPC")
    (code,) = re.findall(r"```python\n(.*?)```", readme[start:readme.index("\n## ", start)], re.S)
    server.script(UNARY, Step(U))  # the sync call is retried once, then answered
    namespace: dict[str, Any] = {"__name__": "readme"}
    exec(compile(code.replace("localhost:50051", server.target), "README gRPC", "exec"), namespace)
    assert namespace["reply"] == b"ok:hi"
    asyncio.run(namespace["main"]())
    assert len(server.attempts(UNARY)) == 3


def test_with_call_and_future(server: ScriptedServer, plain: Any, clock: Any) -> None:
    server.script(UNARY, Step(U))
    response, call = plain.unary_unary(UNARY).with_call(b"w")
    assert response == b"ok:w" and call.code() == grpc.StatusCode.OK
    assert len(server.attempts(UNARY)) == 2
    server.script(UNARY, Step(U))
    assert plain.unary_unary(UNARY).future(b"f").result() == b"ok:f"
    assert len(server.attempts(UNARY)) == 2


def test_cancelled_stream_is_not_retried(server: ScriptedServer, plain: Any, clock: Any) -> None:
    server.script(STREAM, Step(messages=(b"a",), hold=0.5))
    responses = plain.unary_stream(STREAM)(b"x")
    assert responses.cancel()
    with pytest.raises(grpc.RpcError) as info:
        next(responses)
    assert info.value.code() == grpc.StatusCode.CANCELLED
    assert len(server.attempts(STREAM)) <= 1  # the cancel may beat the request to the server
    assert clock.sleeps == []
