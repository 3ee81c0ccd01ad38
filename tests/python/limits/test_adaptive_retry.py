"""@mulligan.retry(adaptive_rate=) (issue 14): a token before every attempt,
every answer recorded. Expected waits worked out by hand from the AWS SDKs'
adaptive-mode pseudo-code (the model in core/include/mulligan/limits/
adaptive_rate.h), on a fake clock starting at 1000.0 (a 0.5 s bucket edge):

- a 429 at t=1000 (the rate's first bucket, so the measured rate is still 0):
  W_max = 0, new rate 0, fill rate floored at 0.5/s, capacity 0;
- the next attempt waits (1 - 0) / 0.5 = 2 s;
- a 429 at 1002: 2 requests over 2 s -> measured 0.8 * 1 = 0.8; W_max =
  min(0.8, 0.5) = 0.5; new 0.35 -> floored at 0.5, capacity 0 again: 2 s;
- a 429 at 1004: 1 request over 2 s -> measured 0.8 * 0.5 + 0.2 * 0.8 = 0.56.
- a success at 1002 after the first 429 instead: K = cbrt(0) = 0, CUBIC
  0.4 * (1002 - 1000 - 0)^3 + 0 = 3.2, capped at 2 * 0.8 = 1.6/s; the next
  token then waits (1 - 0) / 1.6 = 0.625 s.
"""

from __future__ import annotations

import asyncio
from typing import Any, Optional

import pytest

import mulligan
from mulligan import testing
from mulligan._limits.adaptive import is_throttling_answer


class Throttled(Exception):
    def __init__(self, status: int = 429, headers: Optional[dict[str, str]] = None) -> None:
        super().__init__(status)
        self.status_code = status
        self.headers = headers or {}


def test_each_attempt_waits_for_the_rate() -> None:
    with testing.FakeClock(start=1000.0) as clock:
        rate = mulligan.AdaptiveRate(name="retry-429")
        starts: list[float] = []

        @mulligan.retry(on=Throttled, attempts=3, base_delay=0, adaptive_rate=rate)
        def call() -> None:
            starts.append(round(clock.monotonic() - 1000.0, 9))
            raise Throttled(429)

        with pytest.raises(Throttled):
            call()
        assert starts == [0.0, 2.0, 4.0]
        state = rate.state()
        assert rate.throttles == 3
        assert state["measured_rate"] == pytest.approx(0.56, rel=1e-12)
        assert state["last_max_rate"] == pytest.approx(0.5, rel=1e-12)
        assert state["fill_rate"] == pytest.approx(0.5, rel=1e-12)


def test_a_success_grows_the_rate() -> None:
    with testing.FakeClock(start=1000.0) as clock:
        rate = mulligan.AdaptiveRate(name="retry-grow")
        starts: list[float] = []

        @mulligan.retry(on=Throttled, attempts=3, base_delay=0, adaptive_rate=rate)
        def call() -> str:
            starts.append(round(clock.monotonic() - 1000.0, 9))
            if len(starts) == 1:
                raise Throttled(429)
            return "ok"

        assert call() == "ok"
        assert starts == [0.0, 2.0]
        state = rate.state()
        assert state["calculated_rate"] == pytest.approx(3.2, rel=1e-12)
        assert state["fill_rate"] == pytest.approx(1.6, rel=1e-12)
        assert call() == "ok"
        assert starts[2] == pytest.approx(2.625, abs=1e-9)


def test_a_wait_past_max_wait_is_refused_and_not_retried() -> None:
    with testing.FakeClock(start=1000.0):
        rate = mulligan.AdaptiveRate(name="retry-refuse", max_wait=1.0)
        calls = 0

        @mulligan.retry(on=Throttled, attempts=5, base_delay=0, adaptive_rate=rate)
        def call() -> None:
            nonlocal calls
            calls += 1
            raise Throttled(429)

        with pytest.raises(mulligan.RateLimitedError) as info:
            call()
        assert calls == 1
        assert info.value.retry_in == pytest.approx(2.0, abs=1e-9)


def test_transport_failures_are_not_recorded_and_the_predicate_overrides() -> None:
    with testing.FakeClock(start=1000.0) as clock:
        rate = mulligan.AdaptiveRate(name="retry-transport")
        starts: list[float] = []

        @mulligan.retry(on=ConnectionError, attempts=3, base_delay=0, adaptive_rate=rate)
        def down() -> None:
            starts.append(round(clock.monotonic() - 1000.0, 9))
            raise ConnectionError

        with pytest.raises(ConnectionError):
            down()
        assert starts == [0.0, 0.0, 0.0]
        assert not rate.state()["enabled"] and rate.throttles == 0

        @mulligan.retry(on=KeyError, attempts=2, base_delay=0, adaptive_rate=rate,
                        is_throttling=lambda e: isinstance(e, KeyError))
        def busy() -> None:
            starts.append(round(clock.monotonic() - 1000.0, 9))
            raise KeyError("slow down")

        with pytest.raises(KeyError):
            busy()
        assert starts[3:] == [0.0, 2.0]
        assert rate.throttles == 2


def test_a_returned_response_is_classified_too() -> None:
    with testing.FakeClock(start=1000.0):
        rate = mulligan.AdaptiveRate(name="retry-result")

        @mulligan.retry(on=ValueError, adaptive_rate=rate)
        def call() -> Throttled:
            return Throttled(503, {"Retry-After": "1"})

        call()
        assert rate.throttles == 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [(Throttled(429), True), (Throttled(503, {"Retry-After": "3"}), True),
     (Throttled(503), False), (Throttled(500), False), (ValueError(), False),
     (ConnectionResetError(), None), (TimeoutError(), None), ("plain result", False)],
)
def test_default_classification(value: Any, expected: Optional[bool]) -> None:
    assert is_throttling_answer(value) is expected


def test_grpc_resource_exhausted_is_throttling() -> None:
    class Code:
        def __init__(self, name: str) -> None:
            self.name = name

    class RpcError(Exception):
        def __init__(self, name: str) -> None:
            super().__init__(name)
            self._code = Code(name)

        def code(self) -> Code:
            return self._code

    assert is_throttling_answer(RpcError("RESOURCE_EXHAUSTED")) is True
    assert is_throttling_answer(RpcError("UNAVAILABLE")) is False


def test_async_attempts_wait_on_the_fake_clock() -> None:
    with testing.FakeClock(start=1000.0) as clock:
        rate = mulligan.AdaptiveRate(name="retry-async")
        starts: list[float] = []

        @mulligan.retry(on=Throttled, attempts=3, base_delay=0, adaptive_rate=rate)
        async def call() -> None:
            starts.append(round(clock.monotonic() - 1000.0, 9))
            raise Throttled(429)

        with pytest.raises(Throttled):
            asyncio.run(call())
        assert starts == [0.0, 2.0, 4.0]


def test_bad_options_are_refused_at_decoration() -> None:
    with pytest.raises(TypeError, match="adaptive_rate"):
        mulligan.retry(on=ValueError, adaptive_rate=object())(lambda: None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="is_throttling"):
        mulligan.retry(on=ValueError, adaptive_rate=mulligan.AdaptiveRate(),
                       is_throttling=3)(lambda: None)  # type: ignore[arg-type]
