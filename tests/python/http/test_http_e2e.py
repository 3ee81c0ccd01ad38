"""mulligan.get/post/request against the real nginx (tests/nginx)."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import mulligan

UUID_V4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
FAST = {"base_delay": 0.01, "max_delay": 0.05}


def logged(server: Any, path: str, count: int) -> list[dict[str, Any]]:
    return list(server.wait_for_requests(path, count))


def test_healthy_get(server: Any) -> None:
    r = mulligan.get(server.url("/ok"))
    assert r.status_code == 200
    assert r.ok
    assert r.text == "ok\n"
    assert r.content == b"ok\n"
    assert r.attempts == 1
    assert r.stop_reason == "succeeded"
    assert r.url == server.url("/ok")
    assert r.idempotency_key is None
    assert 0 < r.elapsed < 5
    assert r.headers["content-type"] == "text/plain"
    assert r.headers["Content-Type"] == r.headers["CONTENT-TYPE"]
    assert "content-length" in r.headers
    assert r.headers.get("x-missing") is None
    assert r.encoding == "utf-8"
    r.raise_for_status()
    assert len(logged(server, "/ok", 1)) == 1


def test_flaky_gets_all_succeed_thanks_to_retries(server: Any) -> None:
    # About half of the /flaky requests fail, independently: with 20 attempts a
    # call gives up with probability ~0.53**20 (3e-6); 8 would fail ~0.6% of calls.
    responses = [mulligan.get(server.url("/flaky"), attempts=20, **FAST) for _ in range(20)]
    assert [r.status_code for r in responses] == [200] * 20
    assert all(r.text == "flaky ok\n" for r in responses)
    assert any(r.attempts > 1 for r in responses)  # P(no retry in 20 calls) = 2**-20
    total = sum(r.attempts for r in responses)
    assert len(logged(server, "/flaky", total)) == total


def test_down_gives_up_and_returns_the_last_response(server: Any) -> None:
    r = mulligan.get(server.url("/down"), attempts=3, **FAST)
    assert r.status_code == 503
    assert not r.ok
    assert r.attempts == 3
    assert r.stop_reason == "attempts_exhausted"
    assert r.text == "down\n"
    assert len(logged(server, "/down", 3)) == 3
    with pytest.raises(mulligan.HTTPStatusError) as info:
        r.raise_for_status()
    assert info.value.response is r
    assert info.value.status_code == 503


def test_down_with_raise_on_give_up(server: Any) -> None:
    with pytest.raises(mulligan.RetriesExhausted) as info:
        mulligan.get(server.url("/down"), attempts=2, raise_on_give_up=True, **FAST)
    assert info.value.attempts == 2
    assert info.value.stop_reason == "attempts_exhausted"
    assert info.value.response is not None and info.value.response.status_code == 503


def test_terminal_status_is_not_retried(server: Any) -> None:
    r = mulligan.get(server.url("/nope"), attempts=3, **FAST)
    assert r.status_code == 404
    assert r.attempts == 1
    assert r.stop_reason == "terminal"


def test_post_without_key_is_not_retried(server: Any) -> None:
    r = mulligan.post(server.url("/down"), data=b"payload", attempts=3, **FAST)
    assert r.status_code == 503
    assert r.attempts == 1
    assert r.stop_reason == "not_replay_safe"
    entries = logged(server, "/down", 1)
    assert [e["method"] for e in entries] == ["POST"]


def test_post_with_key_is_retried_with_the_same_key(server: Any) -> None:
    r = mulligan.post(server.url("/down"), data=b"payload", idempotency_key="abc", attempts=3, **FAST)
    assert r.status_code == 503
    assert r.attempts == 3
    assert r.idempotency_key == "abc"
    entries = logged(server, "/down", 3)
    assert [(e["method"], e["idempotency_key"]) for e in entries] == [("POST", "abc")] * 3


def test_generated_idempotency_key_is_a_uuid4_sent_on_every_attempt(server: Any) -> None:
    r = mulligan.post(server.url("/down"), json={"n": 1}, idempotency_key=True, attempts=3, **FAST)
    assert r.attempts == 3
    key = r.idempotency_key
    assert key is not None and UUID_V4.match(key)
    entries = logged(server, "/down", 3)
    assert [e["idempotency_key"] for e in entries] == [key] * 3


def test_json_body_round_trip_via_echo(server: Any) -> None:
    r = mulligan.post(server.url("/echo"), json={"name": "mulligan", "n": [1, 2]}, idempotency_key="k-1")
    assert r.status_code == 200
    assert r.text == 'method=POST\nidempotency_key=k-1\nbody={"name":"mulligan","n":[1,2]}\n'


def test_request_with_headers_and_str_data(server: Any) -> None:
    r = mulligan.request("PUT", server.url("/echo"), data="héllo", headers=[("X-Test", "1")])
    assert r.status_code == 200
    assert r.content == "method=PUT\nidempotency_key=\nbody=héllo\n".encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_refused_raises_after_retries() -> None:
    url = f"http://127.0.0.1:{free_port()}/ok"
    with pytest.raises(mulligan.TransportError) as info:
        mulligan.get(url, attempts=3, **FAST)
    assert type(info.value) is mulligan.ConnectionRefused
    assert info.value.kind == "connection_refused"
    assert info.value.attempts == 3
    assert info.value.stop_reason == "attempts_exhausted"


def test_post_connection_refused_is_retried_even_without_key() -> None:
    url = f"http://127.0.0.1:{free_port()}/ok"
    with pytest.raises(mulligan.ConnectionRefused) as info:
        mulligan.post(url, data=b"x", attempts=3, **FAST)
    assert info.value.attempts == 3


def test_timeout_on_slow(server: Any) -> None:
    started = time.monotonic()
    with pytest.raises(mulligan.AttemptTimeout) as info:
        mulligan.get(server.url("/slow"), timeout=0.2, attempts=2, **FAST)
    assert time.monotonic() - started < 1.5
    assert isinstance(info.value, TimeoutError)
    assert info.value.kind == "timeout"
    assert info.value.attempts == 2


def test_deadline_ends_the_chain(server: Any) -> None:
    started = time.monotonic()
    with pytest.raises(mulligan.TransportError) as info:
        mulligan.get(server.url("/slow"), timeout=0.3, deadline=0.5, attempts=10, **FAST)
    assert time.monotonic() - started < 1.5
    assert isinstance(info.value, TimeoutError)
    assert info.value.attempts < 10


def test_request_releases_the_gil(server: Any) -> None:
    ticks = 0
    done = threading.Event()

    def slow_call() -> None:
        try:
            mulligan.get(server.url("/slow?s=0.5"))
        finally:
            done.set()

    t = threading.Thread(target=slow_call)
    t.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.01)
    t.join()
    assert ticks > 10


def test_default_client_is_thread_safe(server: Any) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        codes = list(pool.map(lambda _: mulligan.get(server.url("/ok")).status_code, range(40)))
    assert codes == [200] * 40


# -- bad input: rejected before any request ----------------------------------


@pytest.mark.parametrize(
    "url",
    ["", "not a url", "ftp://127.0.0.1/", "http://", "http:///path", "http://host:99999/", "http://a b/"],
)
def test_malformed_url_is_a_value_error(server: Any, url: str) -> None:
    with pytest.raises(ValueError):
        mulligan.get(url)


def test_non_str_header_is_a_type_error(server: Any) -> None:
    with pytest.raises(TypeError):
        mulligan.get(server.url("/ok"), headers={"X-Number": 1})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        mulligan.get(server.url("/ok"), headers={b"X-Bytes": "v"})  # type: ignore[dict-item]
    # Nothing reached nginx for this path. (A /slow request of an earlier test
    # may still be running and log its line now: only /ok is ours.)
    assert server.wait_for_requests("/ok", 1, timeout=0.2) == []


def test_header_injection_is_a_value_error(server: Any) -> None:
    with pytest.raises(ValueError):
        mulligan.get(server.url("/ok"), headers={"X-Evil": "a\r\nX-Injected: 1"})
    with pytest.raises(ValueError):
        mulligan.get(server.url("/ok"), headers={"Bad Name": "v"})
    # Nothing reached nginx for this path. (A /slow request of an earlier test
    # may still be running and log its line now: only /ok is ours.)
    assert server.wait_for_requests("/ok", 1, timeout=0.2) == []


def test_data_and_json_together_is_a_value_error(server: Any) -> None:
    with pytest.raises(ValueError):
        mulligan.post(server.url("/echo"), data=b"x", json={})


def test_bad_numbers_are_value_errors(server: Any) -> None:
    with pytest.raises(ValueError):
        mulligan.get(server.url("/ok"), attempts=0)
    with pytest.raises(ValueError):
        mulligan.get(server.url("/ok"), timeout=float("nan"))
    # Nothing reached nginx for this path. (A /slow request of an earlier test
    # may still be running and log its line now: only /ok is ours.)
    assert server.wait_for_requests("/ok", 1, timeout=0.2) == []


# -- Response and Headers without a server -----------------------------------


def test_headers_join_repeated_fields_and_keep_them_apart() -> None:
    h = mulligan.Headers([("Vary", "Accept"), ("set-cookie", "a=1"), ("VARY", "Origin"), ("Set-Cookie", "b=2")])
    assert h["vary"] == "Accept, Origin"
    assert h.get_all("Set-Cookie") == ["a=1", "b=2"]
    assert list(h) == ["Vary", "set-cookie"]
    assert len(h) == 2
    assert "VaRy" in h and 3 not in h
    with pytest.raises(KeyError):
        h["missing"]
    with pytest.raises(TypeError):
        h["x"] = "y"  # type: ignore[index]


def test_text_uses_the_declared_charset() -> None:
    body = "café".encode("latin-1")
    r = mulligan.Response(200, mulligan.Headers([("Content-Type", 'text/plain; charset="ISO-8859-1"')]), body)
    assert r.text == "café"
    r = mulligan.Response(200, mulligan.Headers([("Content-Type", "text/plain; charset=bogus")]), b"\xff")
    assert r.text == "\ufffd"
    r = mulligan.Response(200, mulligan.Headers(), b'{"a": [1]}')
    assert r.json() == {"a": [1]}


@pytest.mark.parametrize("client_kind", ["sync", "async"])
def test_response_headers_keep_order_repeats_and_colons(server: Any, client_kind: str) -> None:
    # The header fields cross from the engine as one block split on first
    # use: colons inside values, repeated fields and their order survive.
    url = server.url("/headers")
    if client_kind == "sync":
        r = mulligan.get(url)
    else:
        async def fetch() -> mulligan.Response:
            async with mulligan.AsyncClient() as c:
                return await c.get(url)

        r = asyncio.run(fetch())
    assert r.status_code == 200 and r.text == "headers\n"
    assert r.headers["x-colon"] == "a: b:c"
    assert r.headers.get_all("Set-Cookie") == ["a=1", "b=2; Path=/"]
    assert r.headers["set-cookie"] == "a=1, b=2; Path=/"
    assert r.headers["X-Spaced"] == "inner  space"  # outer whitespace is not part of a value
    names = [name.lower() for name in r.headers]
    assert names.index("x-colon") < names.index("set-cookie") < names.index("x-spaced")
    assert names.count("set-cookie") == 1  # iteration yields each name once
