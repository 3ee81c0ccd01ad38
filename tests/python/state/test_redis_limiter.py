"""mulligan.RateLimiter(state=mulligan.RedisState(...)): one GCRA budget
shared by every process, against a real redis-server (the ``redis_server``
fixture of tests/python/conftest.py). Two limiter objects on two connections
stand for two processes. Times are scripted on mulligan.testing.FakeClock;
the expected values come from the GCRA rule (T = 1 / rate,
tau = (burst - 1) * T), worked out by hand. The shared cells keep
microseconds, and each limiter maps the monotonic clock to Unix time with its
own anchor (the tightest of a few bracketed clock readings, floored to the
microsecond), so two "processes" may disagree by a microsecond: calls of the
second one are placed 5 us after the nominal instants and times compare to
10 us (the C++ suite, on one FakeClock, is exact).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

import mulligan
from mulligan import testing

US = 10e-6  # see the module docstring


def _limiter(redis_server: Any, rate: float, burst: float = 1.0, **kw: Any) -> mulligan.RateLimiter:
    return mulligan.RateLimiter(rate, burst=burst, name=kw.pop("name", "api"),
                                state=mulligan.RedisState(redis_server.url, prefix="rl"), **kw)


def test_two_processes_share_one_budget(redis_server: Any) -> None:
    with testing.FakeClock() as clock:
        # rate 10/s (T = 100 ms), burst 2 (tau = 100 ms), never wait.
        a = _limiter(redis_server, 10, 2, max_wait=0)
        b = _limiter(redis_server, 10, 2, max_wait=0)
        assert a.shared and b.shared
        assert a.reserve() == 0.0
        clock.advance(US / 2)  # b's anchor may sit a microsecond from a's
        assert b.reserve() == 0.0
        # TAT = t0 + 200 ms: the next slot, for both, is at t0 + 100 ms.
        with pytest.raises(mulligan.RateLimitedError) as e:
            a.reserve()
        assert e.value.retry_in == pytest.approx(0.1, abs=US)
        clock.advance(0.03)
        with pytest.raises(mulligan.RateLimitedError) as e:
            b.reserve()
        assert e.value.retry_in == pytest.approx(0.07, abs=US)
        # At the slot (plus the anchors' few microseconds: each "process"
        # maps its monotonic clock to Unix time on its own, see above).
        clock.advance(0.07)
        assert b.reserve() == 0.0
        with pytest.raises(mulligan.RateLimitedError):
            a.reserve()
        assert (a.fallbacks, b.fallbacks) == (0, 0)


def test_waiters_are_spaced_exactly_and_the_decorator_shares_too(redis_server: Any) -> None:
    with testing.FakeClock() as clock:
        limiter = _limiter(redis_server, 4, name="spaced")  # T = 250 ms
        other = _limiter(redis_server, 4, name="spaced")
        t0 = clock.monotonic()
        starts = []

        @limiter
        def work() -> None:
            starts.append(round(clock.monotonic() - t0, 5))

        work()
        other.acquire()  # another process takes the slot at 250 ms
        work()
        work()
        assert starts == [0.0, 0.5, 0.75]
        assert clock.sleeps == [pytest.approx(0.25, abs=US)] * 3


def test_async_acquire_runs_off_the_loop(redis_server: Any) -> None:
    with testing.FakeClock() as clock:
        limiter = _limiter(redis_server, 2, name="async")  # T = 500 ms

        async def main() -> list[float]:
            t0 = clock.monotonic()
            out = []
            for _ in range(3):
                async with limiter:
                    out.append(round(clock.monotonic() - t0, 5))
            return out

        assert asyncio.run(main()) == [0.0, 0.5, 1.0]


def test_bad_arguments_name_the_field(redis_server: Any) -> None:
    state = mulligan.RedisState(redis_server.url)
    with pytest.raises(ValueError, match=r"^a shared object's name must not be empty \(it names "
                                         r"the Redis key \{prefix:kind:name\}\)$"):
        mulligan.RateLimiter(5, state=state)
    with pytest.raises(ValueError, match="fallback_rate must be > 0 and finite"):
        mulligan.RateLimiter(5, name="x", state=state, fallback_rate=0)
    with pytest.raises(ValueError, match="^mulligan.RateLimiter: fallback_rate needs state="):
        mulligan.RateLimiter(5, name="x", fallback_rate=1)
    with pytest.raises(TypeError, match="state must be a mulligan.RedisState or None"):
        mulligan.RateLimiter(5, name="x", state="redis://127.0.0.1/0")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fallback_rate must be a number"):
        mulligan.RateLimiter(5, name="x", state=state, fallback_rate="1")  # type: ignore[arg-type]


def test_redis_down_falls_back_locally_logs_and_recovers(
    redis_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mulligan")
    with testing.FakeClock() as clock:
        limiter = mulligan.RateLimiter(
            10, name="fb", max_wait=0, fallback_rate=1,
            state=mulligan.RedisState(redis_server.url, timeout=0.2))
        assert limiter.reserve() == 0.0
        redis_server.stop()
        # Decided here, at 1/s: one now, the next in 1 s. Nothing raises but
        # the limiter's own refusal.
        clock.advance(0.1)
        assert limiter.reserve() == 0.0
        with pytest.raises(mulligan.RateLimitedError) as e:
            limiter.reserve()
        assert e.value.retry_in == pytest.approx(1.0)
        assert limiter.fallbacks == 2
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert "mulligan.RateLimiter 'fb'" in warnings[0].getMessage()
        assert "deciding locally at 1/s" in warnings[0].getMessage()
        redis_server.start()
        # The state reconnects on its backoff (real time: from 50 ms, full
        # jitter); then the shared cell (empty after the restart) decides.
        deadline = time.monotonic() + 5
        while True:
            clock.advance(1.0)
            try:
                limiter.reserve()
            except mulligan.RateLimitedError:
                pass
            if not limiter._falling_back or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert not limiter._falling_back
        infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
        assert any("answers again; the limit is shared again" in m for m in infos)
        # Shared again: rate 10/s, so the next slot is 100 ms away.
        with pytest.raises(mulligan.RateLimitedError) as e:
            limiter.reserve()
        assert e.value.retry_in == pytest.approx(0.1, abs=US)


BRACE = ("a shared object's name must be printable ASCII without '{' or '}' (a brace would end "
         "the Redis Cluster hash tag {prefix:kind:name}): byte 3 is 0x7b")


def test_one_name_rule_for_shared_limiters_and_breakers(redis_server: Any) -> None:
    """core/include/mulligan/state/backend.h's ValidateSharedName: 1 to 200
    printable ASCII bytes without braces, the same text for both parts."""
    state = mulligan.RedisState(redis_server.url, prefix="rl")
    with pytest.raises(ValueError) as limiter_error:
        mulligan.RateLimiter(5, name="api{x}", state=state)
    assert str(limiter_error.value) == BRACE
    with pytest.raises(ValueError) as breaker_error:
        mulligan.CircuitBreaker("api{x}", state=state)
    assert str(breaker_error.value) == "mulligan.CircuitBreaker: " + BRACE
    with pytest.raises(ValueError, match="^a shared object's name must be at most 200 bytes, "
                                         "got 201$"):
        mulligan.RateLimiter(5, name="n" * 201, state=state)
    with pytest.raises(ValueError, match="name must be at most 200 bytes, got 201$"):
        mulligan.CircuitBreaker("n" * 201, state=state)
    with pytest.raises(ValueError, match=r"byte 3 is 0xc3$"):
        mulligan.RateLimiter(5, name="caf\u00e9", state=state)
    # The widest accepted name: 200 bytes, with every allowed punctuation.
    name = ("https://api.example.com:443/a b%[]~" * 6)[:200]
    limiter = mulligan.RateLimiter(5, name=name, state=state, max_wait=0)
    assert limiter.reserve() == 0.0
    breaker = mulligan.CircuitBreaker(name, state=state)
    breaker.close_sharing()
    # Local objects keep their own rules: a brace is fine without state=.
    assert mulligan.RateLimiter(5, name="api{x}").name == "api{x}"
    assert mulligan.CircuitBreaker("api{x}").name == "api{x}"
