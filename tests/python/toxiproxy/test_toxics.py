"""Every toxic of toxiproxy between the clients and nginx: bounded loops that
check what must hold whatever the network does.

For each toxic (latency below and above the attempt timeout, a stall, a
stall that closes, resets at once, later and on half of the connections,
slicing, byte limits at three cut points of the response and one of the
request, a slow close, a bandwidth cap) a batch of calls runs through the
Client (each call on its own thread: the sync client keeps one connection
per thread) and through one AsyncClient (gathered): GETs of /ok, unkeyed
POSTs and keyed POSTs of /echo, each with a unique query id so that nginx's
access log tells them apart. Every call must:

- end within its deadline (plus a slack for a loaded machine): no hang;
- return a whole response (status 200 and exactly the body nginx sends, so a
  truncated answer is never a success) or raise a documented mulligan error
  (TransportError and its subclasses), of a kind the toxic can cause;
- when it failed: a GET or a keyed POST was retried (2 attempts or more), an
  unkeyed POST was not (1 attempt, stop reason not_replay_safe: every toxic
  here lets the request's bytes out);
- reach nginx once per attempt when the toxic lets requests through (and
  never when it cuts them), so an unkeyed POST reaches nginx at most once
  and a keyed POST's attempts all carry the call's one key.

What each toxic does is fixed, so the verdict of each batch is too: "ok"
(every call succeeds), "fail" (every call fails, with one of the kinds
listed), "mixed" (the /ok GETs fit under the byte limit, the /echo POSTs do
not) or "any" (a toxic on half of the connections: each call succeeds or
fails with the kind listed).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

import pytest

import mulligan

ATTEMPTS = 3
# Generous against the toxics' timings (150-300 ms), so that a loaded
# machine does not turn an "ok" batch into timeouts.
TIMEOUT = 1.0  # seconds per attempt
DEADLINE = 2.5  # seconds per call
SLACK = 1.5  # seconds a loaded machine may add to a deadline
GETS, UNKEYED, KEYED = 3, 2, 2
CLIENT = dict(attempts=ATTEMPTS, timeout=TIMEOUT, deadline=DEADLINE, backoff="constant",
              base_delay=0.05, jitter="none")


@dataclass(frozen=True)
class Toxic:
    id: str
    kind: str
    # An attribute may be a function of the size in bytes of nginx's whole
    # answer to GET /ok (measured once: it depends on nginx's header fields).
    attributes: dict[str, Union[int, Callable[[int], int]]]
    verdict: str  # "ok", "fail", "mixed" or "any"
    kinds: frozenset[str] = field(default_factory=frozenset)  # failure kinds allowed
    stream: str = "downstream"
    toxicity: float = 1.0  # the share of connections the toxic applies to
    reaches: bool = True  # each attempt's request reaches nginx (else none does)

    def resolve(self, ok_size: int) -> dict[str, int]:
        return {k: v(ok_size) if callable(v) else v for k, v in self.attributes.items()}


TOXICS = [
    Toxic("latency", "latency", {"latency": 150, "jitter": 50}, "ok"),
    Toxic("latency_over_timeout", "latency", {"latency": 1500}, "fail", frozenset({"timeout"})),
    Toxic("latency_upstream", "latency", {"latency": 150}, "ok", stream="upstream"),
    Toxic("stall", "timeout", {"timeout": 0}, "fail", frozenset({"timeout"})),
    # Closes the connection 100 ms after the request, no byte answered.
    Toxic("stall_then_close", "timeout", {"timeout": 100}, "fail",
          frozenset({"connection_reset"})),
    Toxic("reset_peer", "reset_peer", {"timeout": 0}, "fail", frozenset({"connection_reset"})),
    # Upstream, the request never gets through before the reset.
    Toxic("reset_peer_later", "reset_peer", {"timeout": 50}, "fail",
          frozenset({"connection_reset"}), stream="upstream", reaches=False),
    Toxic("reset_peer_half", "reset_peer", {"timeout": 0}, "any",
          frozenset({"connection_reset"}), toxicity=0.5),
    Toxic("slicer", "slicer", {"average_size": 8, "size_variation": 4, "delay": 1000}, "ok"),
    Toxic("limit_data_status_line", "limit_data", {"bytes": 8}, "fail",
          frozenset({"connection_reset"})),
    Toxic("limit_data_head", "limit_data", {"bytes": 60}, "fail", frozenset({"truncated"})),
    # Past /ok's whole answer, inside /echo's chunked body (its head is 9
    # bytes longer than /ok's: Transfer-Encoding instead of Content-Length).
    Toxic("limit_data_body", "limit_data", {"bytes": lambda ok: ok + 17}, "mixed",
          frozenset({"truncated"})),
    # The request cut inside its head: nginx never sees a whole request.
    Toxic("limit_data_request", "limit_data", {"bytes": 30}, "fail",
          frozenset({"connection_reset"}), stream="upstream", reaches=False),
    Toxic("slow_close", "slow_close", {"delay": 300}, "ok"),
    Toxic("bandwidth", "bandwidth", {"rate": 4}, "ok"),  # KB/s
]


@dataclass
class Call:
    method: str
    uri: str
    key: Optional[str]
    expected: bytes
    elapsed: float = 0.0
    response: Any = None
    error: Optional[BaseException] = None


def plan() -> list[Call]:
    calls = []
    for _ in range(GETS):
        calls.append(Call("GET", f"/ok?id={uuid.uuid4().hex}", None, b"ok\n"))
    for i in range(UNKEYED + KEYED):
        key = str(uuid.uuid4()) if i >= UNKEYED else None
        body = "method=POST\nidempotency_key=%s\nbody=x\n" % (key or "")
        calls.append(Call("POST", f"/echo?id={uuid.uuid4().hex}", key, body.encode()))
    return calls


def run_sync(toxiproxy: Any, calls: list[Call]) -> None:
    def one(call: Call) -> None:
        start = time.monotonic()
        with mulligan.Client(**CLIENT) as client:  # type: ignore[arg-type]
            try:
                if call.method == "GET":
                    call.response = client.get(toxiproxy.url(call.uri))
                else:
                    call.response = client.post(toxiproxy.url(call.uri), data=b"x",
                                                idempotency_key=call.key)
            except mulligan.TransportError as exc:
                call.error = exc
        call.elapsed = time.monotonic() - start

    with concurrent.futures.ThreadPoolExecutor(len(calls)) as pool:
        for f in [pool.submit(one, c) for c in calls]:
            f.result()  # an undocumented exception fails the test here


def run_async(toxiproxy: Any, calls: list[Call]) -> None:
    async def one(client: Any, call: Call) -> None:
        start = time.monotonic()
        try:
            if call.method == "GET":
                call.response = await client.get(toxiproxy.url(call.uri))
            else:
                call.response = await client.post(toxiproxy.url(call.uri), data=b"x",
                                                  idempotency_key=call.key)
        except mulligan.TransportError as exc:
            call.error = exc
        call.elapsed = time.monotonic() - start

    async def main() -> None:
        async with mulligan.AsyncClient(**CLIENT) as client:  # type: ignore[arg-type]
            await asyncio.gather(*(one(client, c) for c in calls))

    asyncio.run(main())


def _log_lines(nginx: Any, calls: list[Call], expected: int) -> dict[str, int]:
    """Access-log lines per call URI, once `expected` lines of these calls
    are there (nginx logs just after answering) or 5 s passed, and 0.1 s
    more to show that no further line comes."""
    uris = {c.uri for c in calls}
    deadline = time.monotonic() + 5.0

    def count() -> dict[str, int]:
        counts = dict.fromkeys(uris, 0)
        for e in nginx.access_log():
            if e["uri"] in counts:
                counts[e["uri"]] += 1
        return counts

    while sum(count().values()) < expected and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.1)
    return count()


def _keys(nginx: Any, uri: str) -> set[str]:
    return {e["idempotency_key"] for e in nginx.access_log() if e["uri"] == uri}


def check(toxiproxy: Any, toxic: Toxic, calls: list[Call], door: str) -> None:
    def attempts(call: Call) -> int:
        return int((call.response if call.response is not None else call.error).attempts)

    expected_lines = sum(attempts(c) for c in calls) if toxic.reaches else 0
    lines = _log_lines(toxiproxy.nginx, calls, expected_lines)
    for call in calls:
        what = f"{door} {toxic.id}: {call.method} {call.uri} key={call.key}"
        assert call.elapsed <= DEADLINE + SLACK, f"{what} took {call.elapsed:.2f} s"
        if call.response is not None:
            r = call.response
            assert (r.status_code, r.content) == (200, call.expected), f"{what}: {r.content!r}"
            assert toxic.verdict in ("ok", "any") or (
                toxic.verdict == "mixed" and call.method == "GET"
            ), f"{what} succeeded ({r.attempts} attempts)"
        else:
            exc = call.error
            assert isinstance(exc, mulligan.TransportError), what
            assert exc.kind in toxic.kinds, f"{what}: {exc!r}"
            assert toxic.verdict in ("fail", "any") or (
                toxic.verdict == "mixed" and call.method == "POST"
            ), f"{what} failed: {exc!r}"
            if toxic.kinds == frozenset({"timeout"}):
                assert isinstance(exc, (mulligan.AttemptTimeout, mulligan.DeadlineExceeded)), what
            if "truncated" in toxic.kinds:
                assert isinstance(exc, mulligan.TruncatedResponse), what
            if call.method == "POST" and call.key is None:
                assert (exc.attempts, exc.stop_reason) == (1, "not_replay_safe"), f"{what}: {exc!r}"
            else:
                assert exc.attempts >= 2, f"{what} was not retried: {exc!r}"
        # One access-log line per attempt: an unkeyed POST, never retried,
        # reaches nginx at most once.
        assert lines[call.uri] == (attempts(call) if toxic.reaches else 0), (
            f"{what}: {lines[call.uri]} lines for {attempts(call)} attempts"
        )
        if call.key is not None and lines[call.uri]:
            assert _keys(toxiproxy.nginx, call.uri) == {call.key}, what


def _ok_size(nginx: Any) -> int:
    """The size in bytes of nginx's whole answer to GET /ok, read from nginx."""
    with socket.create_connection(("127.0.0.1", nginx.port), timeout=5) as s:
        s.sendall(b"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data or not data.endswith(b"ok\n"):
            chunk = s.recv(4096)
            assert chunk, data
            data += chunk
    return len(data)


@pytest.fixture(scope="module")
def ok_size(nginx: Any) -> int:
    return _ok_size(nginx)


@pytest.mark.parametrize("toxic", TOXICS, ids=[t.id for t in TOXICS])
def test_toxic(toxiproxy: Any, ok_size: int, toxic: Toxic) -> None:
    toxiproxy.add(toxic.kind, stream=toxic.stream, toxicity=toxic.toxicity,
                  **toxic.resolve(ok_size))
    sync_calls = plan()
    run_sync(toxiproxy, sync_calls)
    check(toxiproxy, toxic, sync_calls, "Client")
    async_calls = plan()
    run_async(toxiproxy, async_calls)
    check(toxiproxy, toxic, async_calls, "AsyncClient")
