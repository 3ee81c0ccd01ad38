"""OpenTelemetry traces from the decorators and retrying() blocks (issue 20).

The SDK's in-memory exporter receives the spans; the FakeClock makes every
wait instant and records it. Expected values are worked out by hand: a
constant backoff of 0.5 s without jitter waits 0.5 s before every retry.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace  # noqa: E402
from opentelemetry.trace import SpanKind  # noqa: E402

import mulligan  # noqa: E402
import mulligan.otel  # noqa: E402
from mulligan.testing import FakeClock  # noqa: E402

from tracing_helpers import Spans, attrs, check_attempts, is_error, spans  # noqa: E402,F401

FAST = {"backoff": "constant", "base_delay": 0.5, "jitter": "none"}
CONN = "builtins.ConnectionError"


def flaky(failures: int) -> Any:
    """A function failing ``failures`` times with ConnectionError, then returning 42."""
    left = [failures]

    def call() -> int:
        if left[0]:
            left[0] -= 1
            raise ConnectionError("flaky")
        return 42

    return call


def test_first_attempt_success_is_one_call_span_and_one_attempt(spans: Spans) -> None:
    @mulligan.retry(on=ConnectionError, **FAST)
    def ok() -> int:
        return 7

    assert ok() == 7
    root, attempts = spans.call_and_attempts()
    name = ok.__qualname__
    assert root.name == name and root.kind is SpanKind.INTERNAL
    assert attrs(root) == {
        "mulligan.name": name,
        "mulligan.retry.attempts": 1,
        "mulligan.retry.stop_reason": "succeeded",
        "mulligan.retry.waited_s": 0.0,
    }
    assert not is_error(root)
    assert [s.name for s in attempts] == [f"{name} attempt"]
    check_attempts(attempts, [], [None], http=False)


def test_retries_make_one_span_per_attempt_with_the_waits(spans: Spans) -> None:
    fn = mulligan.retry(on=ConnectionError, attempts=5, **FAST)(flaky(2))
    with FakeClock() as clock:
        assert fn() == 42
    assert clock.sleeps == [0.5, 0.5]
    root, attempts = spans.call_and_attempts()
    check_attempts(attempts, [0.5, 0.5], [CONN, CONN, None], http=False)
    a = attrs(root)
    assert a["mulligan.retry.attempts"] == 3
    assert a["mulligan.retry.stop_reason"] == "succeeded"
    assert a["mulligan.retry.waited_s"] == pytest.approx(1.0)
    assert "error.type" not in a and not is_error(root)
    # Each failed attempt records its exception as a span event.
    assert [e.name for e in attempts[0].events] == ["exception"]


def test_give_up_marks_the_call_span(spans: Spans) -> None:
    fn = mulligan.retry(on=ConnectionError, attempts=3, **FAST)(flaky(10))
    with FakeClock(), pytest.raises(ConnectionError):
        fn()
    root, attempts = spans.call_and_attempts()
    check_attempts(attempts, [0.5, 0.5], [CONN, CONN, CONN], http=False)
    a = attrs(root)
    assert (a["mulligan.retry.attempts"], a["mulligan.retry.stop_reason"]) == (3, "attempts_exhausted")
    assert a["error.type"] == CONN and is_error(root)


def test_a_terminal_error_ends_the_call_at_once(spans: Spans) -> None:
    @mulligan.retry(on=ConnectionError, **FAST)
    def bad() -> None:
        raise KeyError("x")

    with pytest.raises(KeyError):
        bad()
    root, attempts = spans.call_and_attempts()
    check_attempts(attempts, [], ["builtins.KeyError"], http=False)
    a = attrs(root)
    assert (a["mulligan.retry.attempts"], a["mulligan.retry.stop_reason"]) == (1, "terminal")
    assert a["error.type"] == "builtins.KeyError"


def test_spans_opened_by_the_function_are_children_of_its_attempt(spans: Spans) -> None:
    tracer = spans.provider.get_tracer("app")
    left = [1]

    @mulligan.retry(on=ConnectionError, **FAST)
    def work() -> str:
        with tracer.start_as_current_span("inner"):
            if left[0]:
                left[0] -= 1
                raise ConnectionError("once")
        return "done"

    with FakeClock():
        assert work() == "done"
    finished = spans.finished()
    inner = [s for s in finished if s.name == "inner"]
    attempt_spans = [s for s in finished if s.name.endswith(" attempt")]
    assert len(inner) == 2 and len(attempt_spans) == 2
    assert {s.parent.span_id for s in inner if s.parent} == {s.context.span_id for s in attempt_spans}
    # No mulligan span is current after the call.
    assert not trace.get_current_span().get_span_context().is_valid


def test_a_decorated_call_inside_an_attempt_nests_under_it(spans: Spans) -> None:
    @mulligan.retry(on=ConnectionError, **FAST)
    def inner() -> int:
        return 1

    @mulligan.retry(on=ConnectionError, **FAST)
    def outer() -> int:
        return inner() + 1

    assert outer() == 2
    finished = {s.name: s for s in spans.finished()}
    assert len(finished) == 4
    outer_attempt = finished[f"{outer.__qualname__} attempt"]
    inner_call = finished[inner.__qualname__]
    assert inner_call.parent is not None and inner_call.parent.span_id == outer_attempt.context.span_id


def test_async_decorator(spans: Spans) -> None:
    fn = flaky(2)

    @mulligan.retry(on=ConnectionError, attempts=4, **FAST)
    async def call() -> int:
        await asyncio.sleep(0)
        return fn()

    with FakeClock() as clock:
        assert asyncio.run(call()) == 42
    assert clock.sleeps == [0.5, 0.5]
    root, attempts = spans.call_and_attempts()
    check_attempts(attempts, [0.5, 0.5], [CONN, CONN, None], http=False)
    assert attrs(root)["mulligan.retry.attempts"] == 3


def test_concurrent_async_calls_keep_their_own_spans(spans: Spans) -> None:
    @mulligan.retry(on=ConnectionError, **FAST)
    async def call(fail: bool, box: list[int]) -> int:
        await asyncio.sleep(0)
        if fail and not box:
            box.append(1)
            raise ConnectionError("once")
        return 1

    async def both() -> None:
        await asyncio.gather(call(True, []), call(False, []))

    with FakeClock():
        asyncio.run(both())
    finished = spans.finished()
    roots = [s for s in finished if s.parent is None]
    assert len(roots) == 2
    counts = sorted(
        len([s for s in finished if s.parent and s.parent.span_id == r.context.span_id]) for r in roots
    )
    assert counts == [1, 2]
    assert sorted(attrs(r)["mulligan.retry.attempts"] for r in roots) == [1, 2]


def test_breaker_refusal_has_no_attempt_span(spans: Spans) -> None:
    breaker = mulligan.CircuitBreaker("otel-refuse", failure_threshold=1, reset_timeout=60.0)
    fn = mulligan.retry(on=ConnectionError, attempts=1, breaker=breaker, **FAST)(flaky(10))
    with FakeClock():
        with pytest.raises(ConnectionError):
            fn()  # opens the breaker
        spans.exporter.clear()
        with pytest.raises(mulligan.CircuitOpenError):
            fn()
    finished = spans.finished()
    assert len(finished) == 1
    a = attrs(finished[0])
    assert (a["mulligan.retry.attempts"], a["mulligan.retry.stop_reason"]) == (0, "circuit_open")
    # error.type names the class users catch, not its private module.
    assert a["error.type"] == "mulligan.CircuitOpenError"


def test_error_type_names_public_paths() -> None:
    from mulligan._telemetry.tracing import qualname

    assert qualname(mulligan.CircuitOpenError("x", name="b", key="b", retry_in=1.0)) == "mulligan.CircuitOpenError"
    assert qualname(KeyError("k")) == "builtins.KeyError"
    pytest.importorskip("requests")
    from mulligan.adapters.requests import CircuitOpenError as RequestsOpen

    # a public module's own class keeps its path
    error = RequestsOpen("x", name="b", key="b", retry_in=1.0)
    assert qualname(error) == "mulligan.adapters.requests.CircuitOpenError"


def test_retrying_block(spans: Spans) -> None:
    fn = flaky(2)
    with FakeClock():
        for attempt in mulligan.retrying(on=ConnectionError, name="blk", attempts=5, **FAST):
            with attempt:
                value = fn()
    assert value == 42
    root, attempts = spans.call_and_attempts()
    assert root.name == "blk" and [s.name for s in attempts] == ["blk attempt"] * 3
    check_attempts(attempts, [0.5, 0.5], [CONN, CONN, None], http=False)
    a = attrs(root)
    assert (a["mulligan.retry.attempts"], a["mulligan.retry.stop_reason"]) == (3, "succeeded")


def test_retrying_block_give_up_and_terminal(spans: Spans) -> None:
    fn = flaky(10)
    with FakeClock(), pytest.raises(ConnectionError):
        for attempt in mulligan.retrying(on=ConnectionError, name="blk", attempts=2, **FAST):
            with attempt:
                fn()
    root, attempts = spans.call_and_attempts()
    check_attempts(attempts, [0.5], [CONN, CONN], http=False)
    assert attrs(root)["mulligan.retry.stop_reason"] == "attempts_exhausted"
    spans.exporter.clear()
    with pytest.raises(KeyError):
        for attempt in mulligan.retrying(on=ConnectionError, name="blk2", **FAST):
            with attempt:
                raise KeyError("k")
    root, attempts = spans.call_and_attempts()
    check_attempts(attempts, [], ["builtins.KeyError"], http=False)
    assert attrs(root)["mulligan.retry.stop_reason"] == "terminal"


def test_async_retrying_block(spans: Spans) -> None:
    fn = flaky(1)

    async def run() -> int:
        value = 0
        async for attempt in mulligan.retrying(on=ConnectionError, name="ablk", **FAST):
            with attempt:
                value = fn()
        return value

    with FakeClock():
        assert asyncio.run(run()) == 42
    root, attempts = spans.call_and_attempts()
    check_attempts(attempts, [0.5], [CONN, None], http=False)


def test_nothing_is_recorded_when_tracing_is_off() -> None:
    recorder = Spans()
    bridge = mulligan.otel.instrument(tracing=True, tracer_provider=recorder.provider)
    bridge.uninstrument()
    fn = mulligan.retry(on=ConnectionError, **FAST)(flaky(1))
    with FakeClock():
        assert fn() == 42
        for attempt in mulligan.retrying(on=ConnectionError, **FAST):
            with attempt:
                pass
    assert recorder.finished() == []


def test_no_sdk_is_a_no_op() -> None:
    """Tracing on with the API's no-op provider: the calls run untraced."""
    bridge = mulligan.otel.instrument(tracing=True, tracer_provider=trace.NoOpTracerProvider())
    try:
        fn = mulligan.retry(on=ConnectionError, **FAST)(flaky(1))
        with FakeClock() as clock:
            assert fn() == 42
        assert clock.sleeps == [0.5]
        assert fn.statistics.last is not None and fn.statistics.last.attempts == 2
    finally:
        bridge.uninstrument()


def test_leaving_a_block_early_ends_its_span(spans: Spans) -> None:
    for attempt in mulligan.retrying(on=ConnectionError, name="early", **FAST):
        with attempt:
            pass
        break
    root, attempts = spans.call_and_attempts()
    assert len(attempts) == 1
    assert attrs(root)["mulligan.retry.stop_reason"] == "succeeded" and not is_error(root)


def test_bad_instrument_arguments_are_type_errors() -> None:
    with pytest.raises(TypeError, match="tracing must be a bool, got 'yes'"):
        mulligan.otel.instrument(tracing="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tracer_provider must be a TracerProvider, got 5"):
        mulligan.otel.instrument(tracing=True, tracer_provider=5)  # type: ignore[arg-type]
