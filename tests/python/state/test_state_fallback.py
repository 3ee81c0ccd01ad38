"""Issue 16: breakers and limiters shared through Redis fall back to local
state and say so: a WARNING on the ``mulligan.state`` logger when a part
falls back, an INFO when it shares again, and the gauge
``mulligan_shared_state_fallback{part,name}`` (1 / 0) with the counter
``mulligan_shared_state_fallbacks_total`` of fallback periods. Against a
real redis-server (tests/python/conftest.py's ``redis_server``), stopped and
restarted; no secret of the URL is ever printed.
"""

from __future__ import annotations

import json
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
    or ("absent", "absent"), when ``metrics_json()`` and ``limits_snapshot()``
    (0.6) report the same values; otherwise ("mismatch", <the views>). The
    views are read one after another, so while the sharing thread changes
    state they may differ: a poll (``_await``) retries, and an exact
    comparison at a settled moment fails on a real mismatch."""
    text = mulligan.prometheus_text()
    labels = re.escape(f'{{part="{part}",name="{name}"}}')
    gauge = re.search(rf"^mulligan_shared_state_fallback{labels} (\S+)$", text, re.M)
    total = re.search(rf"^mulligan_shared_state_fallbacks_total{labels} (\S+)$", text, re.M)
    sample = (gauge.group(1) if gauge else "absent", total.group(1) if total else "absent")
    for parts in (json.loads(mulligan.metrics_json())["shared_states"],
                  mulligan.limits_snapshot()["shared_states"]):
        mine = [p for p in parts if (p["part"], p["name"]) == (part, name)]
        seen = ("absent", "absent") if not mine else (
            "1" if mine[0]["fallback"] is True else "0", str(mine[0]["fallback_periods"]))
        if seen != sample:
            return ("mismatch", f"{sample} in the text, {seen} in {parts}")
    return sample


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


def test_the_fallback_reaches_opentelemetry(redis_server: Any) -> None:
    """mulligan.otel (0.6): mulligan.shared_state.fallback (gauge, 1 / 0) and
    mulligan.shared_state.fallbacks (periods begun), read from the engine at
    each collection, with the part and the name as attributes."""
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    import mulligan.otel

    try:
        import prometheus_client
    except ImportError:
        prometheus_client = None

    def points() -> dict[str, Any]:
        found: dict[str, Any] = {}
        for resource_metrics in reader.get_metrics_data().resource_metrics:
            for scope in resource_metrics.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        if dict(point.attributes) == {"mulligan.shared_state.part": "breaker",
                                                      "mulligan.name": "otel-breaker"}:
                            found[metric.name] = point.value
        return found

    reader = InMemoryMetricReader()
    bridge = mulligan.otel.instrument(MeterProvider(metric_readers=[reader]))
    state = mulligan.RedisState(redis_server.url, prefix="fbotel")
    breaker = mulligan.CircuitBreaker("otel-breaker", state=state, poll_interval=0.05)
    try:
        assert _await(lambda: breaker.sharing_health()["shared"])  # type: ignore[index]
        assert points() == {"mulligan.shared_state.fallback": 0, "mulligan.shared_state.fallbacks": 0}
        redis_server.stop()
        assert _await(lambda: _sample("breaker", "otel-breaker") == ("1", "1"))
        assert points() == {"mulligan.shared_state.fallback": 1, "mulligan.shared_state.fallbacks": 1}
        if prometheus_client is not None:  # mulligan.prometheus: the same families
            import mulligan.prometheus

            registry = prometheus_client.CollectorRegistry()
            mulligan.prometheus.register(registry)
            text = prometheus_client.generate_latest(registry).decode()
            labels = '{name="otel-breaker",part="breaker"}'
            assert f"mulligan_shared_state_fallback{labels} 1.0" in text
            assert f"mulligan_shared_state_fallbacks_total{labels} 1.0" in text
        redis_server.start()
        assert _await(lambda: _sample("breaker", "otel-breaker") == ("0", "1"), limit=10.0)
        assert points() == {"mulligan.shared_state.fallback": 0, "mulligan.shared_state.fallbacks": 1}
    finally:
        breaker.close_sharing()
        bridge.uninstrument()
