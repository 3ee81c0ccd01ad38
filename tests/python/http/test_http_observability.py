"""The HTTP client's metrics, logging, fallback and named configuration, against nginx."""

from __future__ import annotations

import json
import logging
import pathlib
import socket

import pytest

import mulligan
from mulligan._telemetry import metrics as _metrics
from mulligan.testing import FakeClock


@pytest.fixture(autouse=True)
def fresh_metrics() -> None:
    _metrics.reset_metrics()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def snapshot(name: str) -> dict:
    for snap in mulligan.metrics_snapshot():
        if snap["name"] == name:
            return snap
    raise AssertionError(f"no metrics for {name!r}: {[s['name'] for s in mulligan.metrics_snapshot()]}")


def test_scripted_run_counts_exactly(server) -> None:
    """A call that succeeds on its third attempt is one success and two retries."""
    origin = server.base_url
    attempts = {"n": 0}

    with mulligan.Client(attempts=1) as client:

        @mulligan.retry(on=mulligan.HTTPStatusError, attempts=5, base_delay=0.0)
        def fetch() -> str:
            attempts["n"] += 1
            path = "/down" if attempts["n"] < 3 else "/ok"
            response = client.get(server.url(path))
            response.raise_for_status()
            return response.text

        with FakeClock():
            assert fetch() == "ok\n"
        for _ in range(4):
            assert client.get(server.url("/ok")).status_code == 200

    fn = snapshot(fetch.__qualname__)
    assert (fn["calls"], fn["attempts"], fn["retries"], fn["successes"], fn["failures"]) == (1, 3, 2, 1, 0)
    http = snapshot(origin)
    assert (http["calls"], http["attempts"], http["retries"]) == (7, 7, 0)
    assert (http["successes"], http["failures"]) == (5, 2)
    assert len(server.wait_for_requests("/down", 2)) == 2
    assert len(server.wait_for_requests("/ok", 5)) == 5


def test_client_retries_are_logged_with_structured_fields(server, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="mulligan")
    with mulligan.Client(attempts=3, base_delay=0.0) as client:
        assert client.get(server.url("/down")).status_code == 503
    retries = [r for r in caplog.records if getattr(r, "mulligan_event", None) == "retry_scheduled"]
    assert [r.mulligan_attempt for r in retries] == [1, 2]
    assert {r.mulligan_http_status for r in retries} == {503}
    assert retries[0].mulligan_url == server.url("/down")
    gave_up = [r for r in caplog.records if getattr(r, "mulligan_event", None) == "gave_up"]
    assert len(gave_up) == 1 and gave_up[0].mulligan_stop_reason == "attempts_exhausted"
    snap = snapshot(server.base_url)
    assert (snap["calls"], snap["attempts"], snap["retries_by_reason"]["status"]) == (1, 3, 2)


def test_fallback_answers_transport_errors_and_open_circuits(server) -> None:
    url = f"http://127.0.0.1:{closed_port()}/x"
    with mulligan.Client(attempts=2, base_delay=0.0, breaker={"failure_threshold": 1}) as client:
        assert client.get(url, fallback="cached") == "cached"
        # The breaker of that origin is now open: refused without an attempt.
        kinds = client.get(url, fallback=lambda exc: type(exc).__name__)
        assert kinds == "CircuitOpenError"
        with pytest.raises(mulligan.CircuitOpenError):
            client.get(url)
    origin = url.rsplit("/", 1)[0]
    snap = snapshot(origin)
    assert snap["fallbacks"] == 2
    assert snap["short_circuits"] == 2
    assert snap["breaker_state"] == "open"


def test_client_takes_a_named_policy_from_the_configuration(server, tmp_path: pathlib.Path) -> None:
    config = tmp_path / "mulligan.json"
    config.write_text(json.dumps({
        "policies": {"flaky-backend": {"max_attempts": 4, "backoff": "constant", "base_delay": 0,
                                       "jitter": "none"}},
        "clients": {"backend": {"policy": "flaky-backend", "attempt_timeout": "2s",
                                "user_agent": "shop/1.0"}},
    }))
    mulligan.load_config(str(config))
    with mulligan.Client(policy="backend") as client:
        response = client.get(server.url("/down"))
    assert response.attempts == 4
    with mulligan.Client(policy="backend", attempts=2) as client:
        assert client.get(server.url("/down")).attempts == 2
    with mulligan.Client(policy="flaky-backend") as client:  # a bare policy name works too
        assert client.get(server.url("/down")).attempts == 4
    with pytest.raises(ValueError, match="nope"):
        mulligan.Client(policy="nope")


def test_transport_errors_are_builtin_connection_errors_too() -> None:
    """`@mulligan.retry(on=ConnectionError)` around the client retries refused connections."""
    url = f"http://127.0.0.1:{closed_port()}/"
    calls = []

    @mulligan.retry(on=ConnectionError, attempts=3, base_delay=0.0)
    def fetch() -> None:
        calls.append(1)
        mulligan.get(url, attempts=1)

    with FakeClock(), pytest.raises(mulligan.ConnectionRefused) as refused:
        fetch()
    assert len(calls) == 3
    assert isinstance(refused.value, ConnectionRefusedError)
    assert issubclass(mulligan.ConnectionReset, ConnectionResetError)
    assert issubclass(mulligan.DnsFailure, ConnectionError)
    assert issubclass(mulligan.TlsError, ConnectionError)
    assert issubclass(mulligan.AttemptTimeout, TimeoutError)
