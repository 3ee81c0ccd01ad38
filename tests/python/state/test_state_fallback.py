"""Issue 16: breakers and limiters shared through Redis fall back to local
state and say so: a WARNING on the ``mulligan.state`` logger when a part
falls back, an INFO when it shares again, and the gauge
``mulligan_shared_state_fallback{part,name}`` (1 / 0) with the counter
``mulligan_shared_state_fallbacks_total`` of fallback periods. Against a
real redis-server (tests/python/conftest.py's ``redis_server``), stopped and
restarted; no secret of the URL is ever printed.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any, Callable

import pytest

import mulligan
from mulligan import testing


def _await(done: Callable[[], bool], limit: float = 5.0) -> bool:
    """Polls `done` every 10 ms of real time for at most `limit` seconds
    (the sharing threads work in real time)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if done():
            return True
        time.sleep(0.01)
    return done()


def _sample(part: str, name: str) -> tuple[str, str]:
    """The (gauge, counter) values of one shared part in the Prometheus text,
    or ("absent", "absent")."""
    text = mulligan.prometheus_text()
    labels = re.escape(f'{{part="{part}",name="{name}"}}')
    gauge = re.search(rf"^mulligan_shared_state_fallback{labels} (\S+)$", text, re.M)
    total = re.search(rf"^mulligan_shared_state_fallbacks_total{labels} (\S+)$", text, re.M)
    return (gauge.group(1) if gauge else "absent", total.group(1) if total else "absent")


def _state_records(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "mulligan.state" and r.levelno == level]


def test_a_shared_breaker_says_when_it_falls_back_and_resumes(
    redis_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mulligan.state")
    state = mulligan.RedisState(redis_server.url, prefix="fb")
    breaker = mulligan.CircuitBreaker("fb-breaker", state=state, poll_interval=0.05)
    try:
        assert _await(lambda: breaker.sharing_health()["shared"])  # type: ignore[index]
        assert _await(lambda: _state_records(caplog, logging.INFO) != [])
        assert _state_records(caplog, logging.INFO) == [
            "mulligan: circuit breaker 'fb-breaker' is shared through Redis"]
        assert _sample("breaker", "fb-breaker") == ("0", "0")

        redis_server.stop()
        assert _await(lambda: _state_records(caplog, logging.WARNING) != [])
        warnings = _state_records(caplog, logging.WARNING)
        assert len(warnings) == 1
        assert warnings[0].startswith(
            "mulligan: circuit breaker 'fb-breaker' serves from local state alone: "
            f"redis at redis://127.0.0.1:{redis_server.port}/0")
        assert _sample("breaker", "fb-breaker") == ("1", "1")

        redis_server.start()
        assert _await(lambda: len(_state_records(caplog, logging.INFO)) == 2, limit=10.0)
        assert _sample("breaker", "fb-breaker") == ("0", "1")
        record = [r for r in caplog.records if r.name == "mulligan.state"][-1]
        assert record.mulligan_event == "breaker_sharing"  # type: ignore[attr-defined]
        assert record.mulligan_shared is True  # type: ignore[attr-defined]
    finally:
        breaker.close_sharing()
    # Gone from the metrics with its sharing.
    del breaker
    assert _sample("breaker", "fb-breaker") == ("absent", "absent")


def test_an_unreachable_start_is_said_once_without_the_password(
    redis_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mulligan.state")
    # The server has no password: AUTH is refused, so Redis is unreachable
    # for this state from the start.
    url = f"redis://admin:s3cr3t-pw@127.0.0.1:{redis_server.port}/0"
    state = mulligan.RedisState(url, prefix="fb")
    breaker = mulligan.CircuitBreaker("fb-auth", state=state, poll_interval=0.05)
    try:
        assert _await(lambda: _state_records(caplog, logging.WARNING) != [])
        time.sleep(0.3)  # later failed attempts are not new fallbacks
        warnings = _state_records(caplog, logging.WARNING)
        assert len(warnings) == 1
        assert "serves from local state alone" in warnings[0]
        assert _sample("breaker", "fb-auth") == ("1", "1")
        health = breaker.sharing_health()
        assert health is not None
        for text in [r.getMessage() for r in caplog.records] + [health["last_error"]]:
            assert "s3cr3t-pw" not in text
            assert "admin" not in text
    finally:
        breaker.close_sharing()


def test_a_shared_limiter_says_when_it_falls_back_and_resumes(
    redis_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mulligan.state")
    with testing.FakeClock() as clock:
        limiter = mulligan.RateLimiter(
            10, name="fb-limiter", max_wait=0, fallback_rate=1,
            state=mulligan.RedisState(redis_server.url, prefix="fb", timeout=0.2))
        assert limiter.reserve() == 0.0
        assert _sample("rate_limiter", "fb-limiter") == ("0", "0")
        redis_server.stop()
        clock.advance(0.1)
        assert limiter.reserve() == 0.0
        assert _sample("rate_limiter", "fb-limiter") == ("1", "1")
        warnings = _state_records(caplog, logging.WARNING)
        assert len(warnings) == 1
        assert warnings[0].startswith("mulligan.RateLimiter 'fb-limiter': redis://127.0.0.1:")
        redis_server.start()
        deadline = time.monotonic() + 5
        while _sample("rate_limiter", "fb-limiter")[0] != "0" and time.monotonic() < deadline:
            clock.advance(1.0)
            try:
                limiter.reserve()
            except mulligan.RateLimitedError:
                pass
            time.sleep(0.05)
        assert _sample("rate_limiter", "fb-limiter") == ("0", "1")
        assert _state_records(caplog, logging.INFO) == [
            "mulligan.RateLimiter 'fb-limiter': redis://127.0.0.1:"
            f"{redis_server.port}/0 answers again; the limit is shared again"]
