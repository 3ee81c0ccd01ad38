"""Ctrl-C while a transfer is in flight ends the call promptly, at every
sync front door: ``mulligan.Client``, ``@mulligan.retry`` and the
``mulligan`` command; and Ctrl-C during the command's wait between attempts.

The server is a loopback one (conftest.RawServer) that tells the test when
a request head has arrived: the test sends SIGINT only then, so the signal
always lands inside the transfer (or, for the wait, after the command has
printed "retrying in" on stderr), whatever the load. The transfer would
last 30 s (the server never answers, the attempt timeout is 30 s) and the
wait 30 s (a 503 with Retry-After: 30, which replaces the backoff: no
jitter), so a call that ends within PROMPT seconds of the signal was ended
by it. Each call is also checked not to have been retried after the
interrupt: the server saw exactly one request.

(The waits of the Client and the decorator are in test_ctrl_c_waits.py.)
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest

from conftest import mulligan_cmd, sigint_default

_CHILD = textwrap.dedent("""
    import sys
    import urllib.request

    import mulligan

    url, door = sys.argv[1], sys.argv[2]
    try:
        if door == "client":
            with mulligan.Client(attempts=3, timeout=30, backoff="constant",
                                 base_delay=0.01) as client:
                client.get(url)
        else:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

            @mulligan.retry(on=OSError, attempts=3, backoff="constant", base_delay=0.01,
                            jitter="none")
            def fetch():
                with opener.open(url, timeout=30) as r:
                    return r.read()

            fetch()
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(42)
    print("finished", flush=True)
""")

# Bounds for a loaded machine: the child's start (imports, connect), and
# its exit once interrupted (the test's real bound is PROMPT, far below the
# 30 s the transfer or the wait would last).
START_TIMEOUT = 60.0
EXIT_TIMEOUT = 30.0
PROMPT = 3.0

RETRY_AFTER_30 = (b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 30\r\n"
                  b"Content-Length: 5\r\n\r\ndown\n")


def _env() -> dict[str, str]:
    return {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


def _interrupt(proc: "subprocess.Popen[bytes]") -> tuple[float, bytes, bytes]:
    """Sends SIGINT; returns the seconds until the child ended, its stdout
    and its stderr."""
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=EXIT_TIMEOUT)
    return time.monotonic() - sent, out, err


def _kill(proc: "subprocess.Popen[bytes]") -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("door", ["client", "decorator"])
def test_ctrl_c_during_a_transfer_ends_the_call_promptly(raw_server: Any, door: str) -> None:
    silent = raw_server()
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, silent.base_url + "/never", door],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
                            preexec_fn=sigint_default)
    try:
        assert silent.wait_for_requests(1, START_TIMEOUT) == 1, proc.poll()
        took, out, err = _interrupt(proc)
    finally:
        _kill(proc)
    assert (proc.returncode, out) == (42, b"interrupted\n"), (out, err)
    assert took < PROMPT, took
    assert silent.requests == 1  # not retried after the interrupt


def test_ctrl_c_during_a_transfer_of_the_command_exits_130(raw_server: Any) -> None:
    silent = raw_server()
    proc = subprocess.Popen(mulligan_cmd() + ["get", "--timeout", "30", silent.base_url + "/never"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
                            preexec_fn=sigint_default)
    try:
        assert silent.wait_for_requests(1, START_TIMEOUT) == 1, proc.poll()
        took, out, err = _interrupt(proc)
    finally:
        _kill(proc)
    assert proc.returncode == 130, (out, err)
    assert took < PROMPT, took
    assert silent.requests == 1


def _read_stderr_until(proc: "subprocess.Popen[bytes]", needle: bytes, timeout: float) -> bytes:
    assert proc.stderr is not None
    fd = proc.stderr.fileno()
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {needle!r} within {timeout} s; stderr so far {seen!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 4096)
            assert chunk, f"the command ended before {needle!r}: {seen!r}"
            seen += chunk
    return seen


def test_ctrl_c_during_a_wait_of_the_command_exits_130(raw_server: Any) -> None:
    down = raw_server(RETRY_AFTER_30)
    proc = subprocess.Popen(mulligan_cmd() + ["get", "-v", "--attempts", "3",
                                              down.base_url + "/down"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
                            preexec_fn=sigint_default)
    try:
        seen = _read_stderr_until(proc, b"-> retrying in 30.000s", START_TIMEOUT)
        took, out, err = _interrupt(proc)
    finally:
        _kill(proc)
    assert proc.returncode == 130, (seen, out, err)
    assert took < PROMPT, took
    assert down.requests == 1  # the interrupted wait was not followed by a retry
