"""HTTP client input checks and Ctrl-C: argument types, framing headers the
client manages, oversized heads, and KeyboardInterrupt during the backoff
wait of mulligan.get (Ctrl-C during a transfer, where the GIL is released
and the core polls for signals: pipeline/test_ctrl_c_transfers.py)."""

from __future__ import annotations

import datetime
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest
from conftest import sigint_default

import mulligan



# -- argument types -------------------------------------------------------------


def test_durations_accept_timedelta(server: Any) -> None:
    td = datetime.timedelta
    with mulligan.Client(
        timeout=td(seconds=5), deadline=td(seconds=10), base_delay=td(milliseconds=10),
        max_delay=td(milliseconds=50), retry_after_max=td(seconds=1),
        connect_timeout=td(seconds=2), attempts=2,
    ) as c:
        assert c.get(server.url("/down")).attempts == 2
        r = c.get(server.url("/slow?s=2"), timeout=td(milliseconds=200), attempts=1,
                  fallback=lambda e: e)
        assert isinstance(r, mulligan.TransportError)
        assert c.get(server.url("/ok"), deadline=td(seconds=3)).status_code == 200


@pytest.mark.parametrize("name", ["timeout", "deadline", "base_delay", "max_delay",
                                  "retry_after_max", "connect_timeout"])
@pytest.mark.parametrize("value", ["1", b"1", True, [1]])
def test_durations_reject_other_types(name: str, value: Any) -> None:
    with pytest.raises(TypeError, match=name):
        mulligan.Client(**{name: value})


def test_request_overrides_are_checked_too(server: Any) -> None:
    with mulligan.Client() as c:
        with pytest.raises(TypeError, match="timeout"):
            c.get(server.url("/ok"), timeout="1")
        with pytest.raises(TypeError, match="retry_on"):
            c.get(server.url("/ok"), retry_on="503")
        with pytest.raises(ValueError, match="attempts"):
            c.get(server.url("/ok"), attempts=2**31)
    assert list(server.wait_for_requests("/ok", 0, settle=0.2)) == []


def test_retry_on_must_be_error_statuses() -> None:
    with pytest.raises(TypeError, match="retry_on"):
        mulligan.Client(retry_on="503")
    with pytest.raises(TypeError, match="retry_on"):
        mulligan.Client(retry_on=503)
    with pytest.raises(TypeError, match="retry_on"):
        mulligan.Client(retry_on=[503.0])
    with pytest.raises(TypeError, match="retry_on"):
        mulligan.Client(retry_on=["503"])
    for bad in ([200], [399], [600], [503, 99]):
        with pytest.raises(ValueError, match="retry_on"):
            mulligan.Client(retry_on=bad)
    mulligan.Client(retry_on=[400, 503, 599]).close()
    mulligan.Client(retry_on=(s for s in (503,))).close()


def test_attempts_range_names_attempts() -> None:
    for bad in (2**31, 2**64, 0, -1):
        with pytest.raises(ValueError, match="attempts"):
            mulligan.Client(attempts=bad)
    with pytest.raises(TypeError, match="attempts"):
        mulligan.Client(attempts=2.0)
    mulligan.Client(attempts=2**31 - 1).close()


# -- headers the client manages, oversized heads ---------------------------------


@pytest.mark.parametrize("name,value", [
    ("Content-Length", "5"), ("content-length", "0"), ("Transfer-Encoding", "chunked"),
    ("TE", "trailers"), ("Upgrade", "websocket"),
])
def test_framing_headers_are_rejected_before_sending(server: Any, name: str, value: str) -> None:
    with mulligan.Client(attempts=2, timeout=2) as c:
        start = time.monotonic()
        with pytest.raises(ValueError, match=name):
            c.get(server.url("/ok"), headers={name: value})
        with pytest.raises(ValueError, match=name):
            c.post(server.url("/ok"), data=b"hello", headers=[(name, value)])
        assert time.monotonic() - start < 0.5
    with pytest.raises(ValueError, match=name):
        mulligan.Client(headers={name: value})
    assert list(server.wait_for_requests("/ok", 0, settle=0.2)) == []  # nothing was sent


def test_host_and_connection_pass_through(server: Any) -> None:
    r = mulligan.get(server.url("/ok"), headers={"Connection": "close", "Host": "localhost"})
    assert r.status_code == 200


def test_huge_header_is_a_value_error_without_an_attempt(server: Any) -> None:
    with mulligan.Client(attempts=3) as c:
        start = time.monotonic()
        with pytest.raises(ValueError, match="request head too large"):
            c.get(server.url("/ok"), headers={"X-Big": "a" * 10_000_000})
        assert time.monotonic() - start < 1.0


# -- Ctrl-C ---------------------------------------------------------------------
# (Ctrl-C during a transfer, at every sync front door and in the command:
# tests/python/pipeline/test_ctrl_c_transfers.py, which signals once the
# server has the request, rather than after a fixed sleep.)

_SCRIPT = textwrap.dedent("""
    import sys, time
    import mulligan
    url = sys.argv[1]
    start = time.monotonic()
    try:
        # No jitter: the waits are 5 s each (full jitter could make the
        # whole call end before the signal is sent).
        mulligan.get(url + "/down", attempts=3, base_delay=5, max_delay=5, backoff="constant",
                     jitter="none", on_retry=lambda e: print("waiting", flush=True))
    except KeyboardInterrupt:
        print("interrupted", round(time.monotonic() - start, 3), flush=True)
        sys.exit(42)
    print("finished", flush=True)
""")


def _env() -> dict[str, str]:
    return {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


def test_ctrl_c_interrupts_the_backoff_of_mulligan_get(server: Any) -> None:
    base = server.url("").rstrip("/")
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT, base],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
                            preexec_fn=sigint_default)
    try:
        assert proc.stdout is not None
        # The signal goes during the first wait, whatever the load.
        assert proc.stdout.readline() == b"waiting\n"
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 42, (out, err)
    assert out.startswith(b"interrupted"), (out, err)
    assert took < 2.0, took
    assert len(server.wait_for_requests("/down", 1, settle=0.2)) == 1


def test_methods_are_upper_cased_and_checked(server: Any) -> None:
    # As requests and httpx: "patch" sends PATCH. A non-str is a TypeError.
    with mulligan.Client(attempts=1) as c:
        r = c.request("patch", server.url("/echo"), data="x")
        assert r.text.startswith("method=PATCH\n")
        for bad in (None, b"GET", 3):
            with pytest.raises(TypeError, match="method must be a str"):
                c.request(bad, server.url("/ok"))  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="invalid HTTP method 'GE T'"):
            c.request("GE T", server.url("/ok"))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"max_redirects": "3"}, TypeError, "max_redirects must be an int or None, got '3'"),
        ({"max_redirects": 1001}, ValueError, r"max_redirects must be in \[0, 1000\], got 1001"),
        ({"follow_redirects": "yes"}, TypeError, "follow_redirects must be a bool or None"),
        ({"strict": 1}, TypeError, "strict must be a bool or None, got 1"),
        ({"timeout": -1}, ValueError, "timeout must be > 0 seconds, got -1"),
        ({"deadline": 0}, ValueError, "deadline must be > 0 seconds, got 0"),
    ],
)
def test_request_switches_name_the_argument(kwargs: dict[str, Any], error: type, message: str) -> None:
    # Raised before anything is sent (nothing listens on port 9).
    with mulligan.Client(attempts=1) as c:
        with pytest.raises(error, match=message):
            c.get("http://127.0.0.1:9/", **kwargs)


@pytest.mark.parametrize("url", ["http://127.0.0.1:+80/", "http://[::1/", "http://127.0.0.1:99999/"])
def test_malformed_urls_are_named_in_the_error(url: str) -> None:
    with pytest.raises(ValueError, match=r"malformed URL '" + re.escape(url) + "'"):
        mulligan.get(url)


# -- bodies, keys and TLS options a server or libcurl would refuse later ------------


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_json_without_a_json_number_raises_before_sending(value: float) -> None:
    # NaN and the infinities have no JSON form (RFC 8259 section 6); nothing
    # listens on port 9, so an attempt would fail otherwise.
    with mulligan.Client(attempts=1) as c:
        with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
            c.post("http://127.0.0.1:9/", json={"x": value})


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("k" * 256, "longer than 255"),
        ("caf\u00e9", "printable ASCII without quotes or backslashes"),
        ("a\"b", "without quotes or backslashes"),
        ("a\\b", "without quotes or backslashes"),
        (" k", "a server would read it as a different key"),
        ('"k"', "a server would read it as a different key"),
        ("", "empty"),
    ],
)
def test_keys_mulligans_own_server_would_refuse_raise_before_sending(key: str, message: str) -> None:
    with mulligan.Client(attempts=1) as c:
        with pytest.raises(ValueError, match="invalid idempotency key: .*" + re.escape(message)):
            c.post("http://127.0.0.1:9/", data=b"x", idempotency_key=key)
    # The same rule as the server side's parse with its default limit.
    if key.strip() == key and not key.startswith('"'):
        with pytest.raises(ValueError):
            mulligan.parse_idempotency_key(key)


def test_a_255_character_key_is_sent(server: Any) -> None:
    key = "k" * 255  # the longest key the server side accepts by default
    assert mulligan.parse_idempotency_key(key) == key
    with mulligan.Client(attempts=1) as c:
        r = c.post(server.url("/echo"), data=b"x", idempotency_key=key)
    assert f"idempotency_key={key}\n" in r.text


def test_an_idempotency_key_header_the_server_would_refuse_raises_before_sending() -> None:
    with mulligan.Client(attempts=1) as c:
        with pytest.raises(ValueError, match="invalid Idempotency-Key header: .*longer than 255"):
            c.post("http://127.0.0.1:9/", data=b"x", headers={"Idempotency-Key": "k" * 300})


@pytest.mark.parametrize(
    ("verify", "message"),
    [
        ("/no/such/ca.pem", 'ca_bundle "/no/such/ca.pem" cannot be read: No such file or directory'),
        ("", "verify must be True, False or the path of a CA bundle, got ''"),
    ],
)
def test_a_ca_bundle_that_cannot_be_read_is_refused_at_construction(verify: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        mulligan.Client(verify=verify)
