"""Every field of a named policy, breaker and client reaches the front door
that uses it (issue 15, "Config files").

One test per schema field of ``policy``, ``breaker`` and ``client``: each
loads a small configuration file, drives the real front door (the decorator
on mulligan.testing's FakeClock, a CircuitBreaker built from
``breaker_config`` on a fake clock, a Client against the test nginx), and
compares an exact value worked out by hand with what the same file gives
WITHOUT the field (or with another value), so that the test shows the field
changes behaviour. ``FIELD_TESTS`` maps each field to its test;
``test_every_schema_field_has_a_behaviour_test`` fails naming any field of
the schema that has none, so a field added later without a test fails CI.

``retryable_grpc_codes`` has no public Python front door yet (HTTP outcomes
carry no gRPC status): its test drives the named policy's engine session
(``mulligan.policy(name)._native``, what a gRPC front door such as an
interceptor records its outcomes with) with ``_core.Outcome.grpc``; the C++
suite has the same test (tests/core/config_fields_test.cc).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

import mulligan
from mulligan import _core
from mulligan.testing import FakeClock

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = ROOT / "schema" / "mulligan-config.schema.json"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("MULLIGAN_"):
            monkeypatch.delenv(name)


@pytest.fixture
def load(tmp_path: Path) -> Callable[[dict[str, Any]], None]:
    """Writes a configuration document to a file and loads it."""
    counter = [0]

    def _load(doc: dict[str, Any]) -> None:
        counter[0] += 1
        path = tmp_path / f"config{counter[0]}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        mulligan.load_config(str(path))

    return _load


# --- the decorator: @mulligan.retry(policy="p") on a fake clock -------------


class Flaky(Exception):
    """Always raised; ``retry_after`` is the hint the decorator reads."""

    def __init__(self, retry_after: Optional[float] = None) -> None:
        super().__init__("flaky")
        self.retry_after = retry_after


def run_policy(
    load: Callable[[dict[str, Any]], None],
    policy: dict[str, Any],
    retry_after: Optional[float] = None,
) -> tuple[list[float], int]:
    """Loads policy "p", runs a decorated function that always fails, and
    returns (the fake clock's sleeps in seconds, the calls made)."""
    load({"policies": {"p": policy}})
    calls = [0]

    @mulligan.retry(policy="p", on=Flaky, delay_hint=lambda e: e.retry_after)
    def op() -> None:
        calls[0] += 1
        raise Flaky(retry_after)

    with FakeClock() as clock:
        with pytest.raises(Flaky):
            op()
    return [round(s, 9) for s in clock.sleeps], calls[0]


# No jitter, 1 s base, doubling: the retry waits are 1, 2, 4... seconds.
PLAIN = {"jitter": "none", "base_delay": "1s"}


def test_max_attempts(load: Any) -> None:
    assert run_policy(load, {**PLAIN, "max_attempts": 4}) == ([1.0, 2.0, 4.0], 4)
    assert run_policy(load, PLAIN) == ([1.0, 2.0], 3)  # default 3


def test_backoff(load: Any) -> None:
    four = {**PLAIN, "max_attempts": 4}
    assert run_policy(load, {**four, "backoff": "constant"})[0] == [1.0, 1.0, 1.0]
    assert run_policy(load, four)[0] == [1.0, 2.0, 4.0]  # exponential


def test_base_delay(load: Any) -> None:
    assert run_policy(load, {"jitter": "none", "base_delay": "250ms"})[0] == [0.25, 0.5]
    assert run_policy(load, {"jitter": "none"})[0] == [0.2, 0.4]  # default 200 ms


def test_multiplier(load: Any) -> None:
    assert run_policy(load, {**PLAIN, "multiplier": 3})[0] == [1.0, 3.0]
    assert run_policy(load, PLAIN)[0] == [1.0, 2.0]  # default 2


def test_max_delay(load: Any) -> None:
    four = {**PLAIN, "max_attempts": 4}
    assert run_policy(load, {**four, "max_delay": "1.5s"})[0] == [1.0, 1.5, 1.5]
    assert run_policy(load, four)[0] == [1.0, 2.0, 4.0]  # default 10 s


def test_jitter(load: Any) -> None:
    seeded = {"base_delay": "1s", "seed": 7, "max_attempts": 4}
    assert run_policy(load, {**seeded, "jitter": "none"})[0] == [1.0, 2.0, 4.0]
    full = run_policy(load, seeded)[0]  # default "full": uniform in [0, d]
    assert full != [1.0, 2.0, 4.0]
    assert all(0.0 <= s <= cap for s, cap in zip(full, [1.0, 2.0, 4.0]))


def test_jitter_fraction(load: Any) -> None:
    prop = {"base_delay": "1s", "seed": 7, "jitter": "proportional", "max_attempts": 4}
    # d * uniform(1 - f, 1 + f): f = 0 leaves d exactly.
    assert run_policy(load, {**prop, "jitter_fraction": 0})[0] == [1.0, 2.0, 4.0]
    default = run_policy(load, prop)[0]  # f = 0.2
    assert default != [1.0, 2.0, 4.0]
    assert all(0.8 * d <= s <= 1.2 * d for s, d in zip(default, [1.0, 2.0, 4.0]))


def test_deadline(load: Any) -> None:
    ten = {**PLAIN, "max_attempts": 10, "max_delay": "1s"}
    # Waits of 1 s each; a 2.5 s deadline leaves room for two of them
    # (the third would end at 3 s), so 3 calls instead of 10.
    assert run_policy(load, {**ten, "deadline": "2.5s"}) == ([1.0, 1.0], 3)
    assert run_policy(load, ten) == ([1.0] * 9, 10)


def test_retry_after_max(load: Any) -> None:
    # A 5 s hint: honoured under the default 60 s cap; past a 3 s cap the
    # default overflow ("stop") gives up at once.
    assert run_policy(load, PLAIN, retry_after=5.0) == ([5.0, 5.0], 3)
    assert run_policy(load, {**PLAIN, "retry_after_max": "3s"}, retry_after=5.0) == ([], 1)


def test_retry_after_overflow(load: Any) -> None:
    capped = {**PLAIN, "retry_after_max": "3s"}
    assert run_policy(load, {**capped, "retry_after_overflow": "clamp"}, 5.0) == ([3.0, 3.0], 3)
    assert run_policy(load, capped, 5.0) == ([], 1)  # default "stop"


def test_respect_retry_after(load: Any) -> None:
    assert run_policy(load, {**PLAIN, "respect_retry_after": False}, 5.0) == ([1.0, 2.0], 3)
    assert run_policy(load, PLAIN, 5.0) == ([5.0, 5.0], 3)  # default true


def grpc_attempts(load: Any, policy: dict[str, Any], code: int) -> int:
    """Attempts of a call whose every attempt ends with gRPC status `code`,
    under the engine session of named policy "p"."""
    load({"policies": {"p": policy}})
    session = mulligan.policy("p")._native.begin(0.0)
    attempts = 1
    while session.on_outcome(_core.Outcome.grpc(code), 0.0).retry:
        attempts += 1
    return attempts


def test_retryable_grpc_codes(load: Any) -> None:
    # RESOURCE_EXHAUSTED (8) retries once listed; by default only
    # UNAVAILABLE (14) does, so 8 ends the call at its first attempt.
    listed = {"base_delay": 0, "retryable_grpc_codes": ["RESOURCE_EXHAUSTED"]}
    assert grpc_attempts(load, listed, 8) == 3
    assert grpc_attempts(load, listed, 14) == 1  # the list replaces the default
    assert grpc_attempts(load, {"base_delay": 0}, 8) == 1
    assert grpc_attempts(load, {"base_delay": 0}, 14) == 3


def test_seed(load: Any) -> None:
    first = run_policy(load, {"base_delay": "1s", "seed": 42, "max_attempts": 5})[0]
    again = run_policy(load, {"base_delay": "1s", "seed": 42, "max_attempts": 5})[0]
    assert first == again  # the seed makes every call's full jitter the same
    unseeded = [run_policy(load, {"base_delay": "1s", "max_attempts": 5})[0] for _ in range(2)]
    assert unseeded[0] != unseeded[1]  # a fresh seed per call (4 uniform draws)


# --- the HTTP client: Client(policy="name") against the test nginx ----------


def client_attempts(server: Any, path: str, **client: Any) -> int:
    """Requests nginx logged for one GET of `path` by Client(policy="c")."""
    server.clear_access_log()
    with mulligan.Client(policy="c") as c:
        response = c.get(server.url(path))
    logged = server.wait_for_requests(path, response.attempts)
    assert len(logged) == response.attempts
    return response.attempts


def test_retryable_statuses(load: Any, server: Any) -> None:
    policy = {"base_delay": 0}
    load({"policies": {"p": {**policy, "retryable_statuses": [429]}},
          "clients": {"c": {"policy": "p"}}})
    assert client_attempts(server, "/down") == 1  # 503 is not retryable here
    # An argument of the client, or of a request, replaces its own field of
    # the named policy and keeps the others: 503 stays non-retryable.
    with mulligan.Client(policy="c", attempts=5) as c:
        assert c.get(server.url("/down")).attempts == 1
        assert c.get(server.url("/down"), attempts=4, base_delay=0.0).attempts == 1
        assert c.get(server.url("/down"), retry_on=[503]).attempts == 5
    load({"policies": {"p": policy}, "clients": {"c": {"policy": "p"}}})
    assert client_attempts(server, "/down") == 3  # 503 is by default


def refused_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/"  # nothing listens there now


def test_retryable_errors(load: Any) -> None:
    url = refused_url()
    policy = {"base_delay": 0}
    load({"policies": {"p": {**policy, "retryable_errors": ["timeout"]}},
          "clients": {"c": {"policy": "p"}}})
    with mulligan.Client(policy="c") as c, pytest.raises(mulligan.ConnectionRefused) as info:
        c.get(url)
    assert info.value.attempts == 1
    load({"policies": {"p": policy}, "clients": {"c": {"policy": "p"}}})
    with mulligan.Client(policy="c") as c, pytest.raises(mulligan.ConnectionRefused) as info:
        c.get(url)
    assert info.value.attempts == 3  # connection_refused is retryable by default


def test_attempt_timeout(load: Any, server: Any) -> None:
    # /slow?s=0.5 answers after 500 ms: a 100 ms attempt timeout ends it.
    load({"policies": {"p": {"max_attempts": 1, "attempt_timeout": "100ms"}},
          "clients": {"c": {"policy": "p"}}})
    with mulligan.Client(policy="c") as c, pytest.raises(mulligan.AttemptTimeout):
        c.get(server.url("/slow?s=0.5"))
    load({"policies": {"p": {"max_attempts": 1}}, "clients": {"c": {"policy": "p"}}})
    with mulligan.Client(policy="c") as c:
        assert c.get(server.url("/slow?s=0.5")).text == "slow\n"


def test_client_policy(load: Any, server: Any) -> None:
    load({"policies": {"p": {"max_attempts": 2, "base_delay": 0}},
          "clients": {"c": {"policy": "p"}}})
    assert client_attempts(server, "/down") == 2
    load({"policies": {"p": {"max_attempts": 2, "base_delay": 0}},
          "clients": {"c": {}}})
    with FakeClock():  # the default policy's waits, on the fake clock
        assert client_attempts(server, "/down") == 3


def down_calls_reaching_nginx(server: Any, calls: int) -> int:
    """GETs /down `calls` times with Client(policy="c"); returns how many
    reached nginx (an open breaker refuses the others before sending)."""
    server.clear_access_log()
    reached = 0
    with mulligan.Client(policy="c") as c:
        for _ in range(calls):
            try:
                c.get(server.url("/down"))
                reached += 1
            except mulligan.CircuitOpenError:
                pass
    server.wait_for_requests("/down", reached)
    return reached


def test_client_breaker(load: Any, server: Any) -> None:
    one = {"policies": {"p": {"max_attempts": 1}}}
    load({**one, "breakers": {"b": {"failure_threshold": 1}},
          "clients": {"c": {"policy": "p", "breaker": "b"}}})
    assert down_calls_reaching_nginx(server, 3) == 1  # opened by the first failure
    load({**one, "clients": {"c": {"policy": "p"}}})
    assert down_calls_reaching_nginx(server, 3) == 3
    # Every option of the named breaker guards the client, not only the
    # threshold and reset timeout: a count window of 2 calls opens after 2.
    load({**one, "breakers": {"b": {"failure_threshold": 0, "window": "count",
                                    "window_size": 2, "minimum_calls": 2}},
          "clients": {"c": {"policy": "p", "breaker": "b"}}})
    assert down_calls_reaching_nginx(server, 4) == 2


def test_client_attempt_timeout(load: Any, server: Any) -> None:
    # The client's attempt timeout bounds attempts when its policy sets none.
    load({"policies": {"p": {"max_attempts": 1}},
          "clients": {"c": {"policy": "p", "attempt_timeout": "100ms"}}})
    with mulligan.Client(policy="c") as c, pytest.raises(mulligan.AttemptTimeout):
        c.get(server.url("/slow?s=0.5"))
    load({"policies": {"p": {"max_attempts": 1}}, "clients": {"c": {"policy": "p"}}})
    with mulligan.Client(policy="c") as c:
        assert c.get(server.url("/slow?s=0.5")).text == "slow\n"


@pytest.fixture
def unaccepted() -> Iterator[str]:
    """A loopback port whose accept queue is full: a new connection's SYN is
    dropped (Linux, tcp_abort_on_overflow 0), so connecting hangs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(3):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(s)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        for s in fillers:
            s.close()
        listener.close()


def test_connect_timeout(load: Any, unaccepted: str) -> None:
    # Both ends are a connect timeout (the connection never completes); the
    # limit that fired shows in the elapsed time libcurl reports. libcurl
    # words it two ways, and which one appears is a race inside libcurl
    # (its connect filter and its multi handle's timer both check the same
    # deadline): "Failed to connect ... after N ms: Timeout was reached" or
    # "Connection timeout after N ms" / "Connection timed out after N
    # milliseconds". So the test reads N, not the wording: N at or past the
    # limit under test, and far below the other limit (5 s), proves which
    # one libcurl was given.
    elapsed = re.compile(r"(?:Failed to connect .*?|Connection time(?:d out|out)) "
                         r"after (\d+) m")
    one = {"policies": {"p": {"max_attempts": 1}}}
    for connect, attempt, limit_ms in (("100ms", "5s", 100), ("5s", "200ms", 200)):
        load({**one, "clients": {"c": {"policy": "p", "connect_timeout": connect,
                                       "attempt_timeout": attempt}}})
        with mulligan.Client(policy="c") as c, pytest.raises(mulligan.ConnectTimeout) as info:
            c.get(unaccepted)
        found = elapsed.search(str(info.value))
        assert found, str(info.value)
        assert limit_ms <= int(found.group(1)) < 5000, str(info.value)


class _TlsOk(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.send_response(200)
        self.send_header("Content-Length", "7")
        self.end_headers()
        self.wfile.write(b"tls ok\n")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def https_url(tmp_path_factory: Any) -> Iterator[str]:
    """An HTTPS server on loopback with a self-signed certificate."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    d = tmp_path_factory.mktemp("tls")
    cert, key = str(d / "cert.pem"), str(d / "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
         "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TlsOk)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield "https://127.0.0.1:%d/" % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_verify_tls(load: Any, https_url: str) -> None:
    load({"clients": {"c": {"verify_tls": False}}})
    with mulligan.Client(policy="c") as c:
        assert c.get(https_url).text == "tls ok\n"
    load({"clients": {"c": {}}})
    with mulligan.Client(policy="c") as c, pytest.raises(mulligan.TlsError):
        c.get(https_url)  # verified by default: the self-signed certificate is refused


def logged_user_agent(server: Any) -> str:
    server.clear_access_log()
    with mulligan.Client(policy="c") as c:
        assert c.get(server.url("/ok")).status_code == 200
    agent: str = server.wait_for_requests("/ok", 1)[0]["user_agent"]
    return agent


def test_user_agent(load: Any, server: Any) -> None:
    load({"clients": {"c": {"user_agent": "shop/1.0"}}})
    assert logged_user_agent(server) == "shop/1.0"
    load({"clients": {"c": {}}})
    assert logged_user_agent(server) == "mulligan"  # ClientSettings' default


def ok_after_down(server: Any) -> str:
    """Fails /down once (opening a one-failure breaker), then GETs /ok:
    "refused" when the breaker of /down also guards /ok."""
    with mulligan.Client(policy="c") as c:
        assert c.get(server.url("/down")).status_code == 503
        try:
            return c.get(server.url("/ok")).text
        except mulligan.CircuitOpenError:
            return "refused"


def test_breaker_key(load: Any, server: Any) -> None:
    doc: dict[str, Any] = {"policies": {"p": {"max_attempts": 1}},
                           "breakers": {"b": {"failure_threshold": 1}}}
    load({**doc, "clients": {"c": {"policy": "p", "breaker": "b", "breaker_key": "path"}}})
    assert ok_after_down(server) == "ok\n"  # one breaker per path
    load({**doc, "clients": {"c": {"policy": "p", "breaker": "b",
                                   "breaker_key": ["/users/{id}", "/{rest...}"]}}})
    assert ok_after_down(server) == "refused"  # both match "/{rest...}": one key
    load({**doc, "clients": {"c": {"policy": "p", "breaker": "b"}}})
    assert ok_after_down(server) == "refused"  # default: one breaker per origin


def test_async_client_takes_the_same_fields(load: Any, server: Any) -> None:
    # AsyncClient(policy="c") is the same front door as Client's: the named
    # policy (1 attempt, not 3), the user agent, the named breaker keyed by path.
    load({"policies": {"p": {"max_attempts": 1}},
          "breakers": {"b": {"failure_threshold": 1}},
          "clients": {"c": {"policy": "p", "breaker": "b", "breaker_key": "path",
                            "user_agent": "shop/2.0"}}})

    async def run() -> tuple[int, int, str]:
        async with mulligan.AsyncClient(policy="c") as c:
            down = await c.get(server.url("/down"))
            ok = await c.get(server.url("/ok"))
            try:
                await c.get(server.url("/down"))
                again = "sent"
            except mulligan.CircuitOpenError:
                again = "refused"
            return down.attempts, ok.status_code, again

    server.clear_access_log()
    assert asyncio.run(run()) == (1, 200, "refused")
    agents = {e["uri"]: e["user_agent"] for e in server.wait_for_requests("/ok", 1)}
    assert agents == {"/ok": "shop/2.0"}


# --- breakers: CircuitBreaker(**breaker_config(name).breaker_kwargs()) ------


class Script:
    """A breaker built from breaker "b" of a document, on a fake clock, and
    the calls of a script: "F" fails, "S" succeeds, "s" succeeds slowly
    (the call lasts 2 s of the fake clock)."""

    def __init__(self, load: Callable[[dict[str, Any]], None], options: dict[str, Any]) -> None:
        load({"breakers": {"b": options}})
        self.clock = FakeClock()
        kwargs = mulligan.breaker_config("b").breaker_kwargs()
        self.breaker = mulligan.CircuitBreaker("config-fields", clock=self.clock.monotonic,
                                               **kwargs)

    def run(self, script: str) -> str:
        """Runs the calls of `script`, returns the state after them;
        "R" marks a call the breaker refused."""
        for step in script:
            try:
                self._call(step)
            except mulligan.CircuitOpenError:
                pass
        return self.breaker.state

    def _call(self, step: str) -> None:
        @self.breaker
        def op() -> None:
            if step == "s":
                self.clock.advance(2.0)
            if step == "F":
                raise Flaky()

        try:
            op()
        except Flaky:
            pass

    def after(self, seconds: float) -> str:
        self.clock.advance(seconds)
        return self.breaker.state


def breaker_state(load: Any, options: dict[str, Any], script: str) -> str:
    return Script(load, options).run(script)


def test_failure_threshold(load: Any) -> None:
    assert breaker_state(load, {"failure_threshold": 2}, "FF") == "open"
    assert breaker_state(load, {}, "FF") == "closed"  # default 5


def test_window(load: Any) -> None:
    # F S F S: 2 failures of 4 calls (50%), never 3 in a row.
    count = {"failure_threshold": 3, "window_size": 4, "minimum_calls": 4}
    assert breaker_state(load, {**count, "window": "count"}, "FSFS") == "open"
    assert breaker_state(load, count, "FSFS") == "closed"  # default: no window


RATE = {"failure_threshold": 0, "window": "count"}


def test_window_size(load: Any) -> None:
    # S S F F with a 75% threshold: the last 2 calls are 100% failures, the
    # last 4 are 50%.
    opts = {**RATE, "minimum_calls": 2, "failure_rate_threshold": 75}
    assert breaker_state(load, {**opts, "window_size": 2}, "SSFF") == "open"
    assert breaker_state(load, {**opts, "window_size": 4}, "SSFF") == "closed"


def test_window_duration(load: Any) -> None:
    # F at t, then F S at t + 20 s, 3 calls needed: a 10 s window holds 2
    # calls (not enough), the default 60 s window holds all 3 (67% >= 50%).
    opts = {"failure_threshold": 0, "window": "time", "minimum_calls": 3}
    for extra, expected in (({"window_duration": "10s"}, "closed"), ({}, "open")):
        s = Script(load, {**opts, **extra})
        s.run("F")
        s.after(20.0)
        assert s.run("FS") == expected


def test_window_buckets(load: Any) -> None:
    # A 10 s window. F at t = 0 and t = 9.5, then F at t = 10.5, with 3
    # calls needed: in 10 one-second buckets the first F has expired by then
    # (2 calls: not enough); in one 10 s bucket nothing expires until the
    # whole bucket does, after which the window starts again.
    opts = {"failure_threshold": 0, "window": "time", "window_duration": "10s",
            "minimum_calls": 2, "failure_rate_threshold": 100}
    states = {}
    for buckets in (1, 10):
        s = Script(load, {**opts, "window_buckets": buckets})
        s.run("S")
        s.after(9.5)
        s.run("F")
        s.after(1.0)
        states[buckets] = s.run("F")
    # 10 buckets: at 10.5 s the S of t = 0 has expired: F F, 100% -> open.
    # 1 bucket: the bucket holding S and F expired as a whole: only the last
    # F is left, below minimum_calls -> closed.
    assert states == {1: "closed", 10: "open"}


def test_failure_rate_threshold(load: Any) -> None:
    opts = {**RATE, "window_size": 4, "minimum_calls": 4}
    assert breaker_state(load, {**opts, "failure_rate_threshold": 25}, "FSSS") == "open"
    assert breaker_state(load, opts, "FSSS") == "closed"  # 25% < default 50%


def test_minimum_calls(load: Any) -> None:
    assert breaker_state(load, {**RATE, "minimum_calls": 2}, "FF") == "open"
    assert breaker_state(load, RATE, "FF") == "closed"  # default 10 calls first


def test_slow_call_duration(load: Any) -> None:
    opts = {**RATE, "minimum_calls": 2}
    assert breaker_state(load, {**opts, "slow_call_duration": "1s"}, "ss") == "open"
    assert breaker_state(load, opts, "ss") == "closed"  # no slow calls by default


def test_slow_call_rate_threshold(load: Any) -> None:
    opts = {**RATE, "minimum_calls": 2, "slow_call_duration": "1s"}
    assert breaker_state(load, {**opts, "slow_call_rate_threshold": 50}, "sS") == "open"
    assert breaker_state(load, opts, "sS") == "closed"  # 50% < default 100%


def test_reset_timeout(load: Any) -> None:
    s = Script(load, {"failure_threshold": 1, "reset_timeout": "5s"})
    s.run("F")
    assert s.after(5.0) == "half_open"
    s = Script(load, {"failure_threshold": 1})
    s.run("F")
    assert s.after(5.0) == "open"  # default 30 s


def open_after_second_trip(load: Any, options: dict[str, Any], wait: float) -> str:
    """Trips, probes and fails again (a second consecutive trip), then
    returns the state `wait` seconds later."""
    s = Script(load, {"failure_threshold": 1, "reset_timeout": "5s", **options})
    s.run("F")
    assert s.after(5.0) == "half_open"
    assert s.run("F") == "open"
    return s.after(wait)


def test_reset_timeout_multiplier(load: Any) -> None:
    # The second trip stays open 5 s * 2 = 10 s with the multiplier, 5 s without.
    assert open_after_second_trip(load, {"reset_timeout_multiplier": 2}, 5.0) == "open"
    assert open_after_second_trip(load, {}, 5.0) == "half_open"


def test_max_reset_timeout(load: Any) -> None:
    # Multiplier 4: the second trip would stay open 20 s; capped at 8 s.
    grow = {"reset_timeout_multiplier": 4}
    assert open_after_second_trip(load, {**grow, "max_reset_timeout": "8s"}, 8.0) == "half_open"
    assert open_after_second_trip(load, grow, 8.0) == "open"  # default cap 5 min


def test_half_open_max_calls(load: Any) -> None:
    for extra, expected in (({"half_open_max_calls": 2}, "half_open"), ({}, "closed")):
        s = Script(load, {"failure_threshold": 1, "reset_timeout": "5s", **extra})
        s.run("F")
        s.after(5.0)
        assert s.run("S") == expected  # 2 successful probes close it, or 1


def test_max_half_open_duration(load: Any) -> None:
    # Half-open at t = 5 s; one of two probes succeeds; 3 s later a 3 s limit
    # reopens the breaker, while without a limit it waits for the second probe.
    for extra, expected in (({"max_half_open_duration": "3s"}, "open"), ({}, "half_open")):
        s = Script(load, {"failure_threshold": 1, "reset_timeout": "5s",
                          "half_open_max_calls": 2, **extra})
        s.run("F")
        s.after(5.0)
        assert s.run("S") == "half_open"
        assert s.after(3.0) == expected


def test_permit_timeout(load: Any) -> None:
    # A probe that never ends (a `with` block entered, never left) holds the
    # only half-open slot until its permit times out after 2 s.
    for extra, admitted in (({"permit_timeout": "2s"}, True), ({}, False)):
        s = Script(load, {"failure_threshold": 1, "reset_timeout": "5s", **extra})
        s.run("F")
        s.after(5.0)
        s.breaker.__enter__()  # the stuck probe
        s.after(2.5)
        try:
            with s.breaker:
                pass
            got = True
        except mulligan.CircuitOpenError:
            got = False
        assert got is admitted


# --- composed waits, stops and per-kind counts (policy), method rules (client) --


def test_min_delay(load: Any) -> None:
    # 100 ms doubling: 0.1, 0.2; a 0.5 s floor lifts both.
    fast = {"jitter": "none", "base_delay": "100ms"}
    assert run_policy(load, {**fast, "min_delay": "0.5s"}) == ([0.5, 0.5], 3)
    assert run_policy(load, fast) == ([0.1, 0.2], 3)  # default 0


def test_wait(load: Any) -> None:
    # linear start 1 s, increment 0.5 s: 1, 1.5, 2 s; a sum adds 0.25 s each.
    four = {"max_attempts": 4}
    linear = {"linear": {"start": "1s", "increment": "0.5s"}}
    assert run_policy(load, {**four, "wait": linear}) == ([1.0, 1.5, 2.0], 4)
    assert run_policy(load, {**four, "wait": {"sum": [linear, {"constant": "0.25s"}]}})[0] == [
        1.25, 1.75, 2.25]
    assert run_policy(load, {**four, **PLAIN})[0] == [1.0, 2.0, 4.0]  # the backoff fields


def test_stop(load: Any) -> None:
    # Waits 1, 2, 4, 8 s: attempts start at 0, 1, 3 and 7 s; the next wait
    # would end at 15 s, past 8 s, so after_elapsed 8 s stops after 4 attempts.
    assert run_policy(load, {**PLAIN, "stop": {"after_elapsed": "8s"}}) == ([1.0, 2.0, 4.0], 4)
    assert run_policy(load, {**PLAIN, "stop": {"after_attempts": 2}}) == ([1.0], 2)
    assert run_policy(load, PLAIN) == ([1.0, 2.0], 3)  # max_attempts' default


def test_other_retries(load: Any) -> None:
    # A decorated function's exceptions are the "other" kind.
    assert run_policy(load, {**PLAIN, "max_attempts": 5, "other_retries": 1}) == ([1.0], 2)
    assert run_policy(load, {**PLAIN, "max_attempts": 5}) == ([1.0, 2.0, 4.0, 8.0], 5)


def kind_attempts(load: Any, url: str, policy: dict[str, Any]) -> int:
    """Attempts of one GET of `url` by Client(policy="c"), policy "p" = `policy`."""
    load({"policies": {"p": {"base_delay": 0, "max_attempts": 4, **policy}},
          "clients": {"c": {"policy": "p"}}})
    with mulligan.Client(policy="c") as c:
        try:
            return c.get(url).attempts
        except mulligan.TransportError as e:
            return e.attempts


def test_connect_retries(load: Any) -> None:
    url = refused_url()
    assert kind_attempts(load, url, {"connect_retries": 1}) == 2
    assert kind_attempts(load, url, {"status_retries": 0}) == 4  # another kind's count


def test_read_retries(load: Any, server: Any) -> None:
    # nginx's /reset closes the connection after reading the request: a read failure.
    url = server.url("/reset")
    assert kind_attempts(load, url, {"read_retries": 1}) == 2
    assert kind_attempts(load, url, {"connect_retries": 0}) == 4


def test_status_retries(load: Any, server: Any) -> None:
    url = server.url("/down")
    assert kind_attempts(load, url, {"status_retries": 2}) == 3
    assert kind_attempts(load, url, {"read_retries": 0}) == 4


def method_attempts(load: Any, server: Any, method: str, client: dict[str, Any]) -> int:
    """Attempts of one unkeyed `method` /down by Client(policy="c")."""
    load({"policies": {"p": {"base_delay": 0}}, "clients": {"c": {"policy": "p", **client}}})
    with mulligan.Client(policy="c") as c:
        return c.request(method, server.url("/down"), data=b"x").attempts


def test_method_rule(load: Any, server: Any) -> None:
    assert method_attempts(load, server, "PUT", {"method_rule": "strict"}) == 1
    assert method_attempts(load, server, "PUT", {"method_rule": "safe"}) == 1
    assert method_attempts(load, server, "PUT", {}) == 3  # idempotent: PUT is replayed


def test_allowed_methods(load: Any, server: Any) -> None:
    assert method_attempts(load, server, "POST", {"allowed_methods": ["POST"]}) == 3
    assert method_attempts(load, server, "PUT", {"allowed_methods": ["POST"]}) == 1
    assert method_attempts(load, server, "POST", {"allowed_methods": None}) == 3  # every method
    assert method_attempts(load, server, "POST", {}) == 1  # an unkeyed POST is not replayed


# --- the table, and the check that it covers the schema ---------------------

FIELD_TESTS: dict[str, dict[str, Any]] = {
    "policy": {
        "max_attempts": test_max_attempts,
        "backoff": test_backoff,
        "base_delay": test_base_delay,
        "multiplier": test_multiplier,
        "max_delay": test_max_delay,
        "jitter": test_jitter,
        "jitter_fraction": test_jitter_fraction,
        "deadline": test_deadline,
        "attempt_timeout": test_attempt_timeout,
        "retry_after_max": test_retry_after_max,
        "retry_after_overflow": test_retry_after_overflow,
        "respect_retry_after": test_respect_retry_after,
        "retryable_statuses": test_retryable_statuses,
        "retryable_errors": test_retryable_errors,
        "retryable_grpc_codes": test_retryable_grpc_codes,
        "seed": test_seed,
        "min_delay": test_min_delay,
        "wait": test_wait,
        "stop": test_stop,
        "connect_retries": test_connect_retries,
        "read_retries": test_read_retries,
        "status_retries": test_status_retries,
        "other_retries": test_other_retries,
    },
    "breaker": {
        "failure_threshold": test_failure_threshold,
        "window": test_window,
        "window_size": test_window_size,
        "window_duration": test_window_duration,
        "window_buckets": test_window_buckets,
        "failure_rate_threshold": test_failure_rate_threshold,
        "minimum_calls": test_minimum_calls,
        "slow_call_duration": test_slow_call_duration,
        "slow_call_rate_threshold": test_slow_call_rate_threshold,
        "reset_timeout": test_reset_timeout,
        "reset_timeout_multiplier": test_reset_timeout_multiplier,
        "max_reset_timeout": test_max_reset_timeout,
        "half_open_max_calls": test_half_open_max_calls,
        "max_half_open_duration": test_max_half_open_duration,
        "permit_timeout": test_permit_timeout,
    },
    "client": {
        "policy": test_client_policy,
        "breaker": test_client_breaker,
        "attempt_timeout": test_client_attempt_timeout,
        "connect_timeout": test_connect_timeout,
        "verify_tls": test_verify_tls,
        "user_agent": test_user_agent,
        "breaker_key": test_breaker_key,
        "method_rule": test_method_rule,
        "allowed_methods": test_allowed_methods,
    },
}


# The overload-protection sections and references (issue 14) have their
# tests in test_config_limits.py (same directory, imported by its basename).
from test_config_limits import LIMIT_FIELD_TESTS  # noqa: E402

for _kind, _tests in LIMIT_FIELD_TESTS.items():
    FIELD_TESTS.setdefault(_kind, {}).update(_tests)

# The "state" section and the "shared" fields (issue 16, 0.6): their tests
# are in test_config_state.py (they need a redis-server).
from test_config_state import STATE_FIELD_TESTS  # noqa: E402

for _kind, _tests in STATE_FIELD_TESTS.items():
    FIELD_TESTS.setdefault(_kind, {}).update(_tests)


def test_every_schema_field_has_a_behaviour_test() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    missing, stale = [], []
    for kind, tests in FIELD_TESTS.items():
        fields = set(schema["$defs"][kind]["properties"])
        missing += [f"{kind}.{f}" for f in sorted(fields - set(tests))]
        stale += [f"{kind}.{f}" for f in sorted(set(tests) - fields)]
    assert not missing, f"schema fields without a behaviour test: {', '.join(missing)}"
    assert not stale, f"tests of fields the schema does not have: {', '.join(stale)}"
    # Each entry is a test function of this module.
    for tests in FIELD_TESTS.values():
        for target in tests.values():
            assert callable(target) and target.__name__.startswith("test_")
            assert getattr(inspect.getmodule(target), target.__name__) is target


def test_the_new_fields_are_checked_at_load_time(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({
        "breakers": {"b": {"max_half_open_duration": "0s"}},
        "clients": {"c": {"breaker_key": ["/users/{"]}, "d": {"breaker_key": "url"}},
    }), encoding="utf-8")
    with pytest.raises(ValueError) as info:
        mulligan.load_config(str(bad))
    lines = str(info.value).splitlines()
    assert any("breakers.b.max_half_open_duration: expected" in line for line in lines), lines
    assert any(
        "clients.c.breaker_key[0]: breaker key template '/users/{' is malformed" in line
        for line in lines
    ), lines
    assert any('clients.d.breaker_key: expected one of "origin"' in line
               or "clients.d.breaker_key: expected" in line for line in lines), lines


def test_the_new_fields_take_environment_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "env.json"
    path.write_text(json.dumps({"breakers": {"b": {}}, "clients": {"c": {}}}), encoding="utf-8")
    monkeypatch.setenv("MULLIGAN_BREAKER_B_MAX_HALF_OPEN_DURATION", "3s")
    monkeypatch.setenv("MULLIGAN_CLIENT_C_BREAKER_KEY", "host")
    mulligan.load_config(str(path))
    assert mulligan.breaker_config("b").max_half_open_duration == 3.0
    assert mulligan.client_config("c").breaker_key == "host"
    monkeypatch.setenv("MULLIGAN_BREAKER_B_MAX_HALF_OPEN_DURATION", "none")
    mulligan.load_config(str(path))
    assert mulligan.breaker_config("b").max_half_open_duration is None
