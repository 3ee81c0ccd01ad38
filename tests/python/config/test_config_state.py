"""A configuration file's ``"state"`` section and its ``"shared": true``
entries (issue 16, 0.6): ``load_config`` builds the shared breakers and rate
limiters on one ``RedisState``; two processes loading the same file share a
trip; errors name the JSON path without a password; ``mulligan config
check`` validates without connecting. Against a real redis-server
(tests/python/conftest.py's ``redis_server``), and a silent TCP listener (it
accepts connections and never answers) for the two timeouts.

``STATE_FIELD_TESTS`` maps each schema field of ``state`` and the
``shared`` fields of ``breaker`` and ``rateLimiter`` to its test;
test_config_fields.py merges it into ``FIELD_TESTS``.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import mulligan
from mulligan import testing
from mulligan._config import policies as _policies


def _write(tmp_path: Path, doc: dict[str, Any], name: str = "state.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def _resp(port: int, *args: str) -> Any:
    """One Redis command on a fresh connection (RESP2, integers only)."""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(b"".join([f"*{len(args)}\r\n".encode()] +
                           [f"${len(a)}\r\n{a}\r\n".encode() for a in args]))
        reply = s.recv(64)
    assert reply.startswith(b":"), reply
    return int(reply[1:].strip())


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    """Each test loads its own file; afterwards the shared parts stop."""
    yield
    with _policies._shared_lock:
        for _, _, breaker in _policies._shared_breakers.values():
            breaker.close_sharing()
        _policies._shared_breakers.clear()
        _policies._state = None
    _policies._REGISTRY.set_shared_state(None)


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts TCP connections and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield int(s.getsockname()[1])


WORKER = r'''
import sys

import mulligan

mulligan.load_config(sys.argv[1])
breaker = mulligan.shared_breaker("payments")


@breaker
def fail():
    raise ConnectionError("down")


for line in sys.stdin:
    command = line.strip()
    if command == "wait-shared":
        import time
        deadline = time.monotonic() + 5
        while not breaker.sharing_health()["shared"] and time.monotonic() < deadline:
            time.sleep(0.01)
        print(breaker.sharing_health()["shared"], flush=True)
    elif command == "trip":
        for _ in range(2):
            try:
                fail()
            except ConnectionError:
                pass
        print(breaker.state, flush=True)
    elif command == "state":
        print(breaker.state, flush=True)
'''


def test_two_processes_loading_the_same_file_share_a_trip(
    redis_server: Any, tmp_path: Path
) -> None:
    path = _write(tmp_path, {
        "state": {"redis": redis_server.url, "prefix": "cfg"},
        "breakers": {"payments": {"shared": True, "failure_threshold": 2,
                                  "reset_timeout": "30s"}},
    })
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, path], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        def ask(p: subprocess.Popen[str], command: str) -> str:
            assert p.stdin is not None and p.stdout is not None
            p.stdin.write(command + "\n")
            p.stdin.flush()
            return p.stdout.readline().strip()

        assert [ask(p, "wait-shared") for p in procs] == ["True", "True"]
        assert ask(procs[0], "trip") == "open"
        deadline = time.monotonic() + 5
        while ask(procs[1], "state") != "open" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ask(procs[1], "state") == "open"
    finally:
        for p in procs:
            assert p.stdin is not None and p.stdout is not None
            p.stdin.close()
            p.wait(timeout=10)
            p.stdout.close()
    assert all(p.returncode == 0 for p in procs)


def test_breaker_shared(redis_server: Any, tmp_path: Path) -> None:
    doc: dict[str, Any] = {"state": {"redis": redis_server.url, "prefix": "cfg"},
                           "breakers": {"payments": {"shared": True}, "local": {}}}
    report = mulligan.load_config(_write(tmp_path, doc))
    assert (report.state, report.shared_breakers) == (True, ("payments",))
    breaker = mulligan.shared_breaker("payments")
    assert breaker.name == "payments"
    assert breaker.sharing_health() is not None
    # One object per name, kept by a reload that changes nothing.
    assert mulligan.reload_config().shared_breakers == ("payments",)
    assert mulligan.shared_breaker("payments") is breaker
    # "shared": false (or absent): no shared breaker of that name.
    doc["breakers"]["payments"]["shared"] = False
    mulligan.load_config(_write(tmp_path, doc))
    with pytest.raises(ValueError, match=r"^mulligan.shared_breaker: no shared breaker named "
                                         r"'payments' in the loaded configuration \(shared: "
                                         r"none\)$"):
        mulligan.shared_breaker("payments")
    assert breaker.sharing_health() is None  # the old one stopped sharing
    # A client naming a shared breaker is refused when the client is made.
    doc["breakers"]["payments"]["shared"] = True
    doc["clients"] = {"api": {"breaker": "payments"}}
    mulligan.load_config(_write(tmp_path, doc))
    with pytest.raises(ValueError, match="which is shared"):
        mulligan.Client(policy="api")


def _limited_policy_doc(state: dict[str, Any], shared: bool = True) -> dict[str, Any]:
    return {"state": state,
            "rate_limiters": {"api": {"rate": 10, "burst": 2, "max_wait": 0, "shared": shared}},
            "policies": {"p": {"rate_limiter": "api"}}}


def test_rate_limiter_shared(redis_server: Any, tmp_path: Path) -> None:
    with testing.FakeClock() as clock:
        mulligan.load_config(_write(tmp_path, _limited_policy_doc(
            {"redis": redis_server.url, "prefix": "cfg"})))
        limiter = mulligan.policy("p").rate_limiter
        assert limiter.shared
        # Another "process" with its own connection shares the budget: burst
        # 2 in all, then the next slot 100 ms after the first.
        other = mulligan.RateLimiter(10, burst=2, max_wait=0, name="api",
                                     state=mulligan.RedisState(redis_server.url, prefix="cfg"))
        assert limiter.reserve() == 0.0
        # Each limiter maps the clock to Unix time by its own anchor (a real
        # monotonic and wall reading, bracketed), so two processes' "same
        # instant" can differ by microseconds on a loaded machine: `other`
        # calls 1 ms later, so that it cannot land before the first call.
        clock.advance(0.001)
        assert other.reserve() == 0.0
        # The cell's next slot: first call + 2 x 100 ms, less the burst's
        # 100 ms, seen 1 ms after the first call by the same limiter: 99 ms.
        with pytest.raises(mulligan.RateLimitedError) as e:
            limiter.reserve()
        assert e.value.retry_in == pytest.approx(0.099, abs=1e-4)
        mulligan.load_config(_write(tmp_path, _limited_policy_doc(
            {"redis": redis_server.url, "prefix": "cfg"}, shared=False)))
        assert not mulligan.policy("p").rate_limiter.shared


def test_state_redis(redis_server: Any, tmp_path: Path) -> None:
    with pytest.raises(ValueError) as e:
        mulligan.load_config(_write(tmp_path, {"state": {"redis": "http://admin:pw1@x"}}))
    assert str(e.value) == (f"{tmp_path / 'state.json'}: state.redis: expected a redis:// URL, "
                            'got "http://***@x"')
    # The URL names the server: a shared limiter's cell is there.
    with testing.FakeClock():
        mulligan.load_config(_write(tmp_path, _limited_policy_doc(
            {"redis": redis_server.url})))
        mulligan.policy("p").rate_limiter.reserve()
    assert _resp(redis_server.port, "EXISTS", "{mulligan:limiter:api}") == 1


def test_state_prefix(redis_server: Any, tmp_path: Path) -> None:
    with testing.FakeClock():
        mulligan.load_config(_write(tmp_path, _limited_policy_doc(
            {"redis": redis_server.url, "prefix": "orders"})))
        mulligan.policy("p").rate_limiter.reserve()
    assert _resp(redis_server.port, "EXISTS", "{orders:limiter:api}") == 1
    assert _resp(redis_server.port, "EXISTS", "{mulligan:limiter:api}") == 0
    with pytest.raises(ValueError, match=r"state.prefix: byte 1 must be one of A-Z"):
        mulligan.load_config(_write(tmp_path, {"state": {"redis": redis_server.url,
                                                         "prefix": "a:b"}}))


def _fallback_warning(caplog: pytest.LogCaptureFixture, reserve: Callable[[], Any]) -> str:
    caplog.clear()
    with testing.FakeClock():
        reserve()
    warnings = [r.getMessage() for r in caplog.records
                if r.name == "mulligan.state" and r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    return warnings[0]


def test_state_timeout(silent_port: int, tmp_path: Path,
                       caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mulligan.state")
    mulligan.load_config(_write(tmp_path, _limited_policy_doc(
        {"redis": f"redis://127.0.0.1:{silent_port}/0", "timeout": "40ms"})))
    message = _fallback_warning(caplog, mulligan.policy("p").rate_limiter.reserve)
    assert "no reply within 40 ms: timeout" in message


def test_state_connect_timeout(silent_port: int, tmp_path: Path,
                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mulligan.state")
    # With a password, connecting includes AUTH, which the listener never
    # answers: bounded by connect_timeout, not timeout.
    mulligan.load_config(_write(tmp_path, _limited_policy_doc(
        {"redis": f"redis://:pw2@127.0.0.1:{silent_port}/0", "timeout": "1s",
         "connect_timeout": "30ms"})))
    message = _fallback_warning(caplog, mulligan.policy("p").rate_limiter.reserve)
    assert "no reply within 30 ms: connect_timeout" in message
    assert "pw2" not in message


def test_config_check_validates_without_connecting(silent_port: int, tmp_path: Path) -> None:
    good = _write(tmp_path, {
        "state": {"redis": f"redis://admin:pw3@127.0.0.1:{silent_port}/0", "prefix": "orders"},
        "breakers": {"payments": {"shared": True}},
        "rate_limiters": {"api": {"rate": 5, "shared": True}},
    })
    started = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "mulligan", "config", "check", good],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == (
        f"OK {good}: policies: (none); breakers: payments; clients: (none); budgets: (none); "
        "throttles: (none); bulkheads: (none); rate_limiters: api; adaptive_rates: (none); "
        f"state: redis://***@127.0.0.1:{silent_port}/0 prefix orders; "
        "shared: breaker payments, rate_limiter api")
    assert "pw3" not in p.stdout + p.stderr
    assert time.monotonic() - started < 30
    bad = _write(tmp_path, {"breakers": {"b{x}": {"shared": True}}}, "bad.json")
    p = subprocess.run([sys.executable, "-m", "mulligan", "config", "check", bad],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert p.stderr.strip().splitlines() == [
        f'{bad}: breakers["b{{x}}"].shared: needs the top-level "state" section (the Redis the '
        "shared objects live in)"]


STATE_FIELD_TESTS: dict[str, dict[str, Any]] = {
    "breaker": {"shared": test_breaker_shared},
    "rateLimiter": {"shared": test_rate_limiter_shared},
    "state": {
        "redis": test_state_redis,
        "prefix": test_state_prefix,
        "timeout": test_state_timeout,
        "connect_timeout": test_state_connect_timeout,
    },
}
