"""The installed ``mulligan`` command against the real nginx (subprocess)."""

from __future__ import annotations

import json
import signal
import urllib.request
import socket
import subprocess
from typing import Any

import pytest
from conftest import mulligan_cmd, sigint_default

FAST = ["--backoff", "0.01", "--max-delay", "0.05"]


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(mulligan_cmd() + list(args), input=stdin, capture_output=True, timeout=60)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_help_documents_the_exit_codes() -> None:
    p = run("--help")
    assert p.returncode == 0
    out = p.stdout.decode()
    for line in ("0    success", "2    usage error", "3    gave up", "4    circuit open",
                 "5    timeout", "6    transport error"):
        assert line in out
    assert "--idempotency-key" in run("request", "--help").stdout.decode()


def test_get_writes_the_body_to_stdout(server: Any) -> None:
    p = run("get", server.url("/ok"))
    assert (p.returncode, p.stdout, p.stderr) == (0, b"ok\n", b"")


def test_gave_up_verbose_and_metrics(server: Any) -> None:
    p = run("get", "-v", "--metrics", "--attempts", "3", *FAST, server.url("/down"))
    assert p.returncode == 3
    assert p.stdout == b"down\n"  # the last body is still written
    err = p.stderr.decode().splitlines()
    assert err[0].startswith("* attempt 1: 503 -> retrying in ")
    assert err[1].startswith("* attempt 2: 503 -> retrying in ")
    assert err[2].startswith("* attempt 3: 503 (attempts_exhausted)")
    metrics = json.loads(err[-1])
    assert metrics["attempts"] == 3 and metrics["retries"] == 2
    assert metrics["outcome"] == "gave_up" and metrics["exit_code"] == 3
    assert len(metrics["waits"]) == 2 and metrics["status"] == 503
    assert len(server.wait_for_requests("/down", 3)) == 3


def test_request_post_with_file_body_key_and_headers(server: Any, tmp_path: Any) -> None:
    body = tmp_path / "body.txt"
    body.write_bytes(b"from a file")
    p = run("request", "-X", "POST", "-d", "@" + str(body), "-H", "X-Test: 1",
            "--idempotency-key=abc-123", server.url("/echo"))
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"method=POST\nidempotency_key=abc-123\nbody=from a file\n"
    p = run("request", "-d", "@-", "--idempotency-key", server.url("/echo"), stdin=b"piped")
    lines = p.stdout.decode().splitlines()
    assert lines[0] == "method=POST" and lines[2] == "body=piped"
    assert len(lines[1].split("=", 1)[1]) == 36  # a generated UUID


def test_post_with_key_is_retried_with_the_same_key(server: Any) -> None:
    p = run("request", "-X", "POST", "-d", "x", "--idempotency-key", "--attempts", "3",
            *FAST, server.url("/reset"))
    assert p.returncode == 6
    keys = {e["idempotency_key"] for e in server.wait_for_requests("/reset", 3)}
    assert len(keys) == 1 and len(keys.pop()) == 36


def test_output_file(server: Any, tmp_path: Any) -> None:
    out = tmp_path / "out.bin"
    p = run("get", "-o", str(out), server.url("/ok"))
    assert (p.returncode, p.stdout) == (0, b"")
    assert out.read_bytes() == b"ok\n"


def test_exit_codes_for_failures(server: Any) -> None:
    assert run("get", *FAST, "http://127.0.0.1:%d/" % closed_port()).returncode == 6
    p = run("get", "--timeout", "0.2", "--attempts", "2", *FAST, server.url("/slow?s=2"))
    assert p.returncode == 5 and b"timeout after 2 attempts" in p.stderr
    p = run("get", "--timeout", "0.2", "--deadline", "0.3", "--attempts", "9", *FAST,
            server.url("/slow?s=2"))
    assert p.returncode == 5 and b"deadline exceeded" in p.stderr
    p = run("get", "--breaker=2", "--attempts", "5", *FAST, server.url("/down"))
    assert p.returncode == 4 and b"circuit open" in p.stderr
    assert run("get", "--fail", server.url("/nope")).returncode == 7
    assert run("get", server.url("/nope")).returncode == 0  # like curl without -f


@pytest.mark.parametrize(
    "args",
    [["get"], ["get", "--attempts", "0", "http://x/"], ["get", "ftp://x/"],
     ["request", "-H", "nocolon", "http://127.0.0.1/"], ["frobnicate"],
     ["get", "--retry-on", "abc", "http://127.0.0.1/"]],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    p = run(*args)
    assert p.returncode == 2, p.stderr
    assert b"usage:" in p.stderr


def test_retry_on_and_redirects(server: Any) -> None:
    p = run("get", "--retry-on", "404", "--attempts", "2", *FAST, server.url("/nope"))
    assert p.returncode == 3
    p = run("get", "-L", server.url("/redirect"))
    assert (p.returncode, p.stdout) == (0, b"ok\n")


def test_config_check_accepts_a_good_file_and_names_every_error(tmp_path: Any) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"policies": {"payments": {"max_attempts": 5, "base_delay": "100ms"}}}))
    p = run("config", "check", str(good))
    assert p.returncode == 0
    assert p.stdout.decode().startswith(f"OK {good}: policies: payments")
    limits = tmp_path / "limits.json"
    limits.write_text(json.dumps({"budgets": {"b": {"kind": "quota"}}, "bulkheads": {"db": {"max_concurrent": 4}}}))
    p = run("config", "check", str(limits))
    assert p.stdout.decode().splitlines()[0] == (
        f"OK {limits}: policies: (none); breakers: (none); clients: (none); budgets: b; "
        "throttles: (none); bulkheads: db; rate_limiters: (none); adaptive_rates: (none)")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"policies": {"payments": {"max_delay": -3, "colour": "red"}}}))
    p = run("config", "check", str(bad))
    assert p.returncode == 1
    err = p.stderr.decode()
    assert f'{bad}: policies.payments.max_delay: expected a duration such as "10s", got -3' in err
    assert "policies.payments.colour" in err
    assert run("config", "check").returncode == 2


def test_dashboard_serves_until_interrupted() -> None:
    proc = subprocess.Popen(mulligan_cmd() + ["dashboard", "--port", "0"], stderr=subprocess.PIPE,
                            preexec_fn=sigint_default)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
        assert line.startswith("mulligan dashboard at http://127.0.0.1:")
        url = line.split()[3]
        with urllib.request.urlopen(url + "metrics", timeout=5) as response:
            assert response.status == 200
            assert b"# TYPE mulligan_calls_total counter" in response.read()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
    assert run("dashboard", "--port", "70000").returncode == 2


def test_an_unwritable_output_is_a_usage_error_before_anything_is_sent(server: Any) -> None:
    p = run("request", "-X", "POST", "-d", "x", "--idempotency-key", "-o", "/nonexistent/dir/out",
            server.url("/echo"))
    assert p.returncode == 2
    assert b"cannot write '/nonexistent/dir/out'" in p.stderr
    assert server.wait_for_requests("/echo", 1, timeout=0.3) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["get", "--timeout", "0"], b"--timeout: must be a finite number of seconds > 0: '0'"),
        (["get", "--deadline", "0"], b"--deadline: must be a finite number of seconds > 0: '0'"),
        (["get", "--connect-timeout", "0"],
         b"--connect-timeout: must be a finite number of seconds > 0: '0'"),
        (["get", "--timeout", "-1"], b"--timeout: must be a finite number >= 0: '-1'"),
        (["request", "-X", ""], b"-X/--request: the method must not be empty"),
        (["get", "--retry-on", ""], b"--retry-on: expected comma-separated HTTP statuses, got an "
                                    b"empty item in ''"),
        (["get", "--retry-on", "503,,429"], b"--retry-on: expected comma-separated HTTP statuses, "
                                            b"got an empty item in '503,,429'"),
    ],
)
def test_zero_timeouts_empty_method_and_empty_statuses_are_usage_errors(
    args: list[str], message: bytes
) -> None:
    # Refused before anything is sent (nothing listens on port 9), as the
    # Python API refuses timeout=0: no silent 1 ms.
    p = run(*args, "http://127.0.0.1:9/")
    assert p.returncode == 2, p.stderr
    assert message in p.stderr, p.stderr
