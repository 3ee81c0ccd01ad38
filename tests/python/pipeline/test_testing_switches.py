"""mulligan.testing governs every front door: ``set_testing`` (an attempt cap,
no waits), ``set_active(False)`` (one attempt) and ``FakeClock`` (every wait
and deadline on the fake clock) reach ``@mulligan.retry`` (sync and async),
``mulligan.retrying()``, ``mulligan.get``, ``mulligan.Client``,
``mulligan.AsyncClient`` and the ``mulligan`` command alike.

Every front door sends its attempts to the real nginx, so the access log
counts what reached the server: the HTTP front doors request it
themselves, and the decorated functions and the block fetch it with
urllib (a 503 raises ConnectionError, which they retry). The command reads
the switches in-process only, so it runs through its ``main()`` entry
point, with its output captured. The policies would wait 5 s between
attempts (a constant 5 s for the decorators; for the clients a
decorrelated backoff with base and cap 5 s, which is always exactly 5 s:
min(5, uniform(5, 15)); the command's full jitter up to 5 s), so a wait
that slipped through would show in the fake clock's sleeps, and in the
wall time.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Optional

import pytest

import mulligan
from mulligan._cli.main import main as cli_main
from mulligan.testing import FakeClock, set_active, set_testing

from pipeline_script import unique

# The policy every front door is given: more attempts than any cap below,
# and 5 s waits.
ATTEMPTS = 5
RETRY_WAITS = {"attempts": ATTEMPTS, "backoff": "constant", "base_delay": 5, "jitter": "none"}
CLIENT_WAITS = {"attempts": ATTEMPTS, "backoff": "decorrelated", "base_delay": 5, "max_delay": 5}


@dataclass
class Seen:
    """What a front door reports about one logical call."""

    attempts: int
    status: Optional[int] = None  # the final HTTP status, for the HTTP front doors
    stop_reason: Optional[str] = None  # as the front door reports it, when it does


# No proxy, whatever the environment says: nginx is on loopback.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch(url: str) -> str:
    """One attempt of the non-HTTP front doors: a 5xx is a ConnectionError."""
    try:
        with _OPENER.open(url, timeout=10) as r:
            return str(r.read().decode())
    except urllib.error.HTTPError as e:
        e.close()  # the error holds the response (and its socket) open
        if e.code >= 500:
            raise ConnectionError(f"HTTP {e.code}") from None
        raise


def via_decorator(url: str) -> Seen:
    runs = []

    @mulligan.retry(on=ConnectionError, **RETRY_WAITS)
    def op() -> str:
        runs.append(1)
        return fetch(url)

    with pytest.raises(ConnectionError):
        op()
    return Seen(len(runs))


def via_async_decorator(url: str) -> Seen:
    runs = []

    @mulligan.retry(on=ConnectionError, **RETRY_WAITS)
    async def op() -> str:
        runs.append(1)
        await asyncio.sleep(0)
        return fetch(url)

    async def main() -> None:
        with pytest.raises(ConnectionError):
            await op()

    asyncio.run(main())
    return Seen(len(runs))


def via_block(url: str) -> Seen:
    runs = []
    with pytest.raises(ConnectionError):
        for attempt in mulligan.retrying(on=ConnectionError, **RETRY_WAITS):
            with attempt:
                runs.append(1)
                fetch(url)
    return Seen(len(runs))


def seen_response(r: mulligan.Response) -> Seen:
    return Seen(r.attempts, r.status_code, r.stop_reason)


def via_get(url: str, **options: Any) -> Seen:
    return seen_response(mulligan.get(url, **{**CLIENT_WAITS, **options}))


def via_client(url: str, **options: Any) -> Seen:
    with mulligan.Client(**{**CLIENT_WAITS, **options}) as client:
        return seen_response(client.get(url))


def via_async_client(url: str, **options: Any) -> Seen:
    async def main() -> mulligan.Response:
        async with mulligan.AsyncClient(**{**CLIENT_WAITS, **options}) as client:
            return await client.get(url)

    return seen_response(asyncio.run(main()))


_command_output: dict[str, Any] = {}


def via_command(url: str, **options: Any) -> Seen:
    """``mulligan get --metrics URL`` in-process; its summary (stderr) says what happened."""
    argv = ["get", "--attempts", str(ATTEMPTS), "--backoff", "5", "--max-delay", "5", "--metrics"]
    if "deadline" in options:
        argv += ["--deadline", str(options.pop("deadline"))]
    assert not options, options
    capture = _command_output["capture"]
    code = cli_main(argv + [url])
    out, err = capture.readouterr()
    summary = json.loads(err.strip().splitlines()[-1])
    _command_output.update(code=code, out=out, summary=summary)
    assert summary["exit_code"] == code
    return Seen(summary["attempts"], summary["status"], summary["stop_reason"])


@pytest.fixture
def command_capture(capsys: pytest.CaptureFixture[str]) -> Any:
    _command_output.clear()
    _command_output["capture"] = capsys
    capsys.readouterr()
    return capsys


PYTHON_DOORS: dict[str, Callable[[str], Seen]] = {
    "decorator": via_decorator,
    "async decorator": via_async_decorator,
    "retrying": via_block,
}
HTTP_DOORS: dict[str, Callable[..., Seen]] = {
    "mulligan.get": via_get,
    "Client": via_client,
    "AsyncClient": via_async_client,
    "command": via_command,
}
EVERY_DOOR = {**PYTHON_DOORS, **HTTP_DOORS}


def requests_to(server: Any, path: str, count: int) -> int:
    return len(server.wait_for_requests(path, count, settle=0.1))


@pytest.mark.parametrize("cap", [1, 2])
@pytest.mark.parametrize("door", list(EVERY_DOOR))
def test_set_testing_caps_the_attempts_and_removes_the_waits(
    server: Any, command_capture: Any, door: str, cap: int
) -> None:
    start = time.monotonic()
    with FakeClock() as clock, set_testing(True, attempts=cap):
        seen = EVERY_DOOR[door](server.url("/down"))
    assert time.monotonic() - start < 5.0  # far below one real 5 s wait
    assert requests_to(server, "/down", cap) == cap
    assert seen.attempts == cap
    assert all(s == 0 for s in clock.sleeps), clock.sleeps  # no wait was made
    if door in HTTP_DOORS:
        # The cap ends the call as running out of attempts does.
        assert (seen.status, seen.stop_reason) == (503, "attempts_exhausted")
    if door == "command":
        assert _command_output["code"] == 3  # gave up
        assert _command_output["out"] == "down\n"
        assert _command_output["summary"]["waits"] == [{"attempt": 1, "outcome": "503", "delay": 0.0}] * (cap - 1)


def test_set_testing_keeps_a_policy_with_fewer_attempts(server: Any) -> None:
    # "a policy with fewer keeps its own": attempts=1 under a cap of 2.
    with FakeClock() as clock, set_testing(True, attempts=2):
        assert via_client(server.url("/down"), attempts=1).attempts == 1
    assert requests_to(server, "/down", 1) == 1
    assert clock.sleeps == []


@pytest.mark.parametrize("door", list(EVERY_DOOR))
def test_set_active_false_makes_one_attempt(server: Any, command_capture: Any, door: str) -> None:
    with FakeClock() as clock, set_active(False):
        seen = EVERY_DOOR[door](server.url("/down"))
    assert requests_to(server, "/down", 1) == 1
    assert seen.attempts == 1
    assert clock.sleeps == []
    if door in HTTP_DOORS:
        assert seen.status == 503


def test_set_active_false_lets_the_first_failure_propagate_unchanged() -> None:
    # No note, no statistics: the failure is the function's own, as it was raised.
    @mulligan.retry(on=ConnectionError, attempts=3)
    def op() -> None:
        raise ConnectionError("down")

    with set_active(False):
        with pytest.raises(ConnectionError) as info:
            op()
    assert getattr(info.value, "__notes__", []) == []
    assert op.statistics.last is None


@pytest.mark.parametrize("door", list(HTTP_DOORS))
def test_a_fake_clock_takes_every_retry_after_wait(server: Any, command_capture: Any, door: str) -> None:
    # 503 with Retry-After: 2, then 200: one wait of exactly 2 s, on the fake clock.
    call_id = unique("fake-clock")
    start = time.monotonic()
    with FakeClock() as clock:
        seen = HTTP_DOORS[door](server.url(f"/script?id={call_id}&steps=503:2,200"))
    assert time.monotonic() - start < 1.0
    assert clock.sleeps == [2.0]
    assert (seen.status, seen.attempts, seen.stop_reason) == (200, 2, "succeeded")
    assert requests_to(server, "/script", 2) == 2
    if door == "command":
        assert _command_output["code"] == 0
        assert _command_output["out"] == f"step 2 of {call_id}: 200\n"
        assert _command_output["summary"]["waits"] == [{"attempt": 1, "outcome": "503", "delay": 2.0}]


@pytest.mark.parametrize("door", list(HTTP_DOORS))
def test_a_deadline_shorter_than_the_hint_stops_on_the_fake_clock(
    server: Any, command_capture: Any, door: str
) -> None:
    # Retry-After: 2 would cross a 1 s deadline: the call stops at once
    # (DESIGN.md section 5), after its one attempt, without any wait.
    call_id = unique("fake-deadline")
    start = time.monotonic()
    with FakeClock() as clock:
        seen = HTTP_DOORS[door](server.url(f"/script?id={call_id}&steps=503:2,200"), deadline=1)
    assert time.monotonic() - start < 1.0
    assert clock.sleeps == []
    assert (seen.status, seen.attempts, seen.stop_reason) == (503, 1, "deadline")
    assert requests_to(server, "/script", 1) == 1
    if door == "command":
        assert _command_output["code"] == 3  # gave up
