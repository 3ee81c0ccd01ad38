"""The ``mulligan`` command prints no credential (docs/security.md): a known
secret in the URL (userinfo, api_key, token) and in -H headers never appears
on stderr with -v and --metrics, whether the call gives up on a status, fails
to connect or is refused by its breaker, nor in a usage error."""

from __future__ import annotations

import json
import socket
import subprocess
from typing import Any

from conftest import mulligan_cmd

SECRET = "s3cr3t-9f2c"
FAST = ["--backoff", "0.01", "--max-delay", "0.05"]
HEADERS = ["-H", f"Authorization: Bearer {SECRET}", "-H", f"Cookie: sid={SECRET}"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(mulligan_cmd() + list(args), capture_output=True, timeout=60, text=True)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def urls(base: str, path: str) -> tuple[str, str]:
    """The URL with the secret, and how the command must show it."""
    rest = base.split("://", 1)[1]
    return (f"http://user:{SECRET}@{rest}{path}?api_key={SECRET}&token={SECRET}",
            f"http://[redacted]@{rest}{path}?api_key=[redacted]&token=[redacted]")


def summary(stderr: str) -> dict[str, Any]:
    return json.loads(stderr.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_a_give_up_on_a_status_prints_no_secret(server: Any) -> None:
    url, shown = urls(server.base_url, "/down")
    p = run("get", "-v", "--metrics", "--attempts", "2", *FAST, *HEADERS, url)
    assert p.returncode == 3
    assert SECRET not in p.stderr and SECRET not in p.stdout
    assert f"mulligan: gave up on GET {shown} after 2 attempts" in p.stderr
    assert "* attempt 1: 503 -> retrying in" in p.stderr
    doc = summary(p.stderr)
    assert doc["url"] == doc["final_url"] == shown
    # ... while the request carried them.
    (first, _) = server.wait_for_requests("/down", 2)
    assert first["uri"] == f"/down?api_key={SECRET}&token={SECRET}"


def test_a_transport_error_prints_no_secret() -> None:
    url, shown = urls(f"http://127.0.0.1:{closed_port()}", "/x")
    p = run("get", "-v", "--metrics", "--attempts", "2", *FAST, *HEADERS, url)
    assert p.returncode == 6
    assert SECRET not in p.stderr
    assert f"mulligan: GET {shown}: connection refused after 2 attempts" in p.stderr
    doc = summary(p.stderr)
    assert doc["url"] == shown and doc["error"].startswith(f"GET {shown}: ")


def test_a_refusing_breaker_prints_no_secret(server: Any) -> None:
    url, shown = urls(server.base_url, "/down")
    p = run("get", "-v", "--metrics", "--breaker=1", "--attempts", "3", *FAST, *HEADERS, url)
    assert p.returncode == 4
    assert SECRET not in p.stderr
    assert f"mulligan: GET {shown}: circuit open" in p.stderr


def test_usage_errors_quote_no_secret() -> None:
    p = run("get", "-H", f"Authorization Bearer {SECRET}", "http://127.0.0.1:9/")
    assert p.returncode == 2
    assert SECRET not in p.stderr
    assert "bad header (-H number 1): expected 'Name: value', got no colon" in p.stderr
    p = run("get", f"ftp://user:{SECRET}@127.0.0.1/")
    assert p.returncode == 2
    assert SECRET not in p.stderr
    assert "malformed URL 'ftp://[redacted]@127.0.0.1/'" in p.stderr
