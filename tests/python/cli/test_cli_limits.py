"""The command's --budget, --max-concurrent, --rate and --burst (issue 14),
run as a subprocess against the real nginx."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from conftest import mulligan_cmd


def run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(mulligan_cmd() + list(args), capture_output=True, timeout=60)


def summary(done: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    line = done.stderr.decode().strip().splitlines()[-1]
    result: dict[str, Any] = json.loads(line)
    return result


def test_help_documents_the_options_and_the_new_exit_codes() -> None:
    out = run("get", "--help").stdout.decode()
    for words in ("--budget", "--max-concurrent", "--rate", "--burst", "--adaptive-rate",
                  "8    throttled",
                  "9    bulkhead full", "10   rate limited"):
        assert words in out, words


@pytest.mark.parametrize(
    "spec, attempts",
    [
        # A6, 2 tokens: the first failure leaves 1, and 1 > 1 is false.
        ("token_bucket:2,0.5", 1),
        # AWS quota of 7: the first retry costs 5 (a 503 is a throttling
        # answer: 5), leaving 2 < 5: the second is refused.
        ("quota:7,5,10,5,1", 2),
        ("none", 3),
        ("per_origin", 3),
    ],
)
def test_budget_bounds_the_retries_and_keeps_the_gave_up_code(
    server: Any, spec: str, attempts: int
) -> None:
    done = run("get", server.url("/down"), "--attempts", "3", "--backoff", "0.001",
               "--budget", spec, "--metrics")
    assert done.returncode == 3, done.stderr  # a refused retry keeps "gave up"
    s = summary(done)
    assert s["attempts"] == attempts
    assert s["stop_reason"] == ("budget" if attempts < 3 else "attempts_exhausted")


def test_transport_failure_refused_by_the_budget_keeps_exit_6(server: Any) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = run("get", f"http://127.0.0.1:{port}/x", "--attempts", "3", "--backoff", "0.001",
               "--budget", "token_bucket:2,0.5", "--metrics")
    assert done.returncode == 6, done.stderr
    assert summary(done)["attempts"] == 1


def test_rate_and_max_concurrent_pass_a_single_request(server: Any) -> None:
    done = run("get", server.url("/ok"), "--rate", "5/s", "--burst", "2", "--max-concurrent", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"ok\n"


def test_adaptive_rate_waits_after_a_429(server: Any) -> None:
    # After the 429 the retry needs a token the bucket does not hold (its
    # capacity starts at 0). Real time: the 429 lands in the rate's first
    # 0.5 s bucket (fill rate 0.5/s, a 2 s wait) or after it (measured at most
    # 0.8 * 1 / 0.5 = 1.6/s, fill rate at most 0.7 * 1.6 = 1.12/s, a wait of
    # at least 1 / 1.12 = 0.89 s): past the 0.85 s deadline either way: exit 10
    # (the deadline leaves the first attempt 0.85 s even on a loaded machine).
    url = server.url("/script?id=cli-adaptive-on&steps=429:0,200")
    done = run("get", url, "--adaptive-rate", "--deadline", "0.85", "--backoff", "0.001", "--metrics")
    assert done.returncode == 10, done.stderr
    # Off (the default, or --no-adaptive-rate): the retry goes at once (a
    # generous deadline: what is checked is that no wait refuses it).
    url = server.url("/script?id=cli-adaptive-off&steps=429:0,200")
    done = run("get", url, "--no-adaptive-rate", "--deadline", "10", "--backoff", "0.001")
    assert done.returncode == 0, done.stderr
    # One request with the rate on (the retry refused), two with it off.
    assert len(server.wait_for_requests("/script", 3)) == 3


@pytest.mark.parametrize(
    "args, words",
    [
        (("--budget", "global"), "--budget"),
        (("--budget", "token_bucket:0,0.5"), "max_tokens"),
        (("--budget", "ratio:10,2"), "percent"),
        (("--budget", "quota:1,2,3,4,5,6"), "at most 5"),
        (("--rate", "0"), "--rate"),
        (("--rate", "fast"), "--rate"),
        (("--burst", "0.5"), "--burst"),
        (("--max-concurrent", "0"), "[1, 2**31 - 1]"),
        (("--max-concurrent", "3000000000"), "[1, 2**31 - 1]"),
        (("--budget", "ratio:"), "no parameters after ':'"),
    ],
)
def test_bad_values_are_usage_errors(server: Any, args: tuple[str, ...], words: str) -> None:
    done = run("get", server.url("/ok"), *args)
    assert done.returncode == 2
    assert words in done.stderr.decode()
