"""Ctrl-C during a backoff wait ends the call promptly, at the sync front
doors that wait in Python: ``mulligan.Client.get`` and ``@mulligan.retry``.

A child process makes one call against nginx's /down (always 503) whose
first retry waits 5 s, and prints "waiting" from its on_retry hook, just
before the wait. The test waits for that line (not for a fixed time, so a
loaded machine only makes it slower), sends SIGINT, and expects the child
to end within 2 s with KeyboardInterrupt on stderr, and nginx to have seen
exactly one request: the interrupted wait was not followed by the retry.

The waits are exactly 5 s: the decorator's constant backoff has no jitter,
and the client, whose backoff always has full jitter, uses the
decorrelated backoff with base and cap 5 s, min(5, uniform(5, 15)) = 5.
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
from conftest import sigint_default

_CHILD = textwrap.dedent("""
    import sys
    import urllib.error
    import urllib.request

    import mulligan

    base, door = sys.argv[1], sys.argv[2]

    def waiting(details):
        print("waiting", flush=True)

    if door == "client":
        with mulligan.Client(attempts=2, backoff="decorrelated", base_delay=5, max_delay=5,
                             on_retry=waiting) as client:
            client.get(base + "/down")
    else:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

        @mulligan.retry(on=ConnectionError, attempts=2, backoff="constant", base_delay=5,
                        jitter="none", on_retry=waiting)
        def fetch():
            try:
                opener.open(base + "/down", timeout=10)
            except urllib.error.HTTPError as e:
                e.close()
                raise ConnectionError(f"HTTP {e.code}") from None

        fetch()
    print("finished", flush=True)
""")

# Bounds for a loaded machine: the child's start (imports, first request),
# and its exit once interrupted (the test's real bound is PROMPT).
START_TIMEOUT = 60.0
EXIT_TIMEOUT = 30.0
PROMPT = 2.0


def _env() -> dict[str, str]:
    return {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


def read_until(proc: "subprocess.Popen[bytes]", line: bytes, timeout: float) -> bytes:
    """Reads the child's stdout until ``line`` appears; fails after
    ``timeout`` seconds or if the child ends first."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    seen = b""
    deadline = time.monotonic() + timeout
    while line not in seen.splitlines(keepends=True):
        left = deadline - time.monotonic()
        assert left > 0, f"no {line!r} within {timeout} s; stdout so far {seen!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 4096)
            assert chunk, f"the child ended before {line!r}: {seen!r}, {proc.communicate()}"
            seen += chunk
    return seen


@pytest.mark.parametrize("door", ["client", "decorator"])
def test_ctrl_c_during_a_backoff_wait_ends_the_call_promptly(server: Any, door: str) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, server.base_url, door],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
                            preexec_fn=sigint_default)
    try:
        seen = read_until(proc, b"waiting\n", START_TIMEOUT)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=EXIT_TIMEOUT)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert took < PROMPT, took
    assert proc.returncode != 0
    assert b"KeyboardInterrupt" in err, err
    assert b"finished" not in seen + out
    assert len(server.wait_for_requests("/down", 1, settle=0.2)) == 1
