"""A response cut by toxiproxy's ``limit_data`` is never a success.

``limit_data`` closes the connection once it has passed N bytes of the
response. nginx's answer to /ok is one head of HEAD bytes (measured once,
directly from nginx: its Date field has a fixed width) and the 3-byte body
"ok\\n". The cut points cover every region: inside the status line, just
after it, inside the fields, one byte before the head's end (between the CR
and the LF of the empty line), just after the head, inside the body. The
expected kind follows from where the cut falls (RFC 9112: a head ends with
an empty line, a body has Content-Length bytes): before the status line's
LF libcurl has no status line ("empty reply": ``connection_reset``); after
it the response is ``truncated``.

Each cut is checked with the Client and the AsyncClient:

- with the toxic left in place, the call fails with TruncatedResponse (kind
  "truncated") or ConnectionReset, after its attempts;
- a GET whose on_retry hook removes the toxic is retried once and gets the
  whole response (status 200, body "ok\\n", 2 attempts, 2 requests at nginx);
- an unkeyed POST is not retried (stop reason not_replay_safe) and reaches
  nginx once; a keyed POST is retried, both attempts with its one key.
"""

from __future__ import annotations

import asyncio
import socket
import uuid
from typing import Any, Callable

import pytest

import mulligan

pytestmark = pytest.mark.usefixtures("toxiproxy")

STATUS_LINE = len(b"HTTP/1.1 200 OK\r\n")


def _head_size(nginx: Any) -> int:
    """The size of nginx's response head for GET /ok (kept alive), read
    from nginx itself."""
    with socket.create_connection(("127.0.0.1", nginx.port), timeout=5) as s:
        s.sendall(b"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data or not data.endswith(b"ok\n"):
            chunk = s.recv(4096)
            assert chunk, data
            data += chunk
    return data.index(b"\r\n\r\n") + 4


@pytest.fixture(scope="module")
def head(nginx: Any) -> int:
    return _head_size(nginx)


def cut_points(head: int) -> list[int]:
    return [5, STATUS_LINE - 1, STATUS_LINE, STATUS_LINE + 20, head - 1, head, head + 1]


def expected_kind(cut: int) -> str:
    return "connection_reset" if cut < STATUS_LINE else "truncated"


def _client(hook: Any = None, attempts: int = 2) -> dict[str, Any]:
    return dict(attempts=attempts, backoff="constant", base_delay=0.001, jitter="none",
                timeout=5, on_retry=hook)


def _healing(toxiproxy: Any, name: str) -> Callable[[Any], None]:
    """An on_retry hook that removes the toxic: the retry finds a healthy proxy."""

    def hook(event: Any) -> None:
        if name in [t["name"] for t in toxiproxy.server.toxics(toxiproxy.PROXY)]:
            toxiproxy.remove(name)

    return hook


def _check_failure(exc: BaseException, cut: int) -> None:
    kind = expected_kind(cut)
    assert isinstance(exc, mulligan.ConnectionReset), repr(exc)
    assert exc.kind == kind, (cut, exc)
    if kind == "truncated":
        assert isinstance(exc, mulligan.TruncatedResponse), (cut, exc)


def _lines(toxiproxy: Any, uri: str, count: int) -> list[dict[str, Any]]:
    entries = toxiproxy.nginx.wait_for_requests("/ok", count, settle=0.1)
    return [e for e in entries if e["uri"] == uri]


# -- the Client ----------------------------------------------------------------


def test_a_cut_response_fails_with_its_kind(toxiproxy: Any, head: int) -> None:
    for cut in cut_points(head):
        toxic = toxiproxy.add("limit_data", bytes=cut)
        with mulligan.Client(**_client(attempts=2)) as client:
            with pytest.raises(mulligan.TransportError) as info:
                client.get(toxiproxy.url("/ok"))
        _check_failure(info.value, cut)
        assert info.value.attempts == 2
        toxiproxy.remove(toxic)


def test_a_cut_get_is_retried_and_the_healthy_retry_succeeds(toxiproxy: Any, head: int) -> None:
    for cut in cut_points(head):
        toxic = toxiproxy.add("limit_data", bytes=cut)
        uri = f"/ok?cut={cut}&id={uuid.uuid4().hex}"
        kinds: list[Any] = []
        heal = _healing(toxiproxy, toxic)

        def hook(event: Any) -> None:
            kinds.append(event.kind)
            heal(event)

        with mulligan.Client(**_client(hook, attempts=3)) as client:
            r = client.get(toxiproxy.url(uri))
        assert (r.status_code, r.content, r.attempts) == (200, b"ok\n", 2), cut
        assert kinds == [expected_kind(cut)], cut
        assert len(_lines(toxiproxy, uri, 2)) == 2, cut


def test_a_cut_post_is_retried_only_with_a_key(toxiproxy: Any, head: int) -> None:
    for cut in cut_points(head):
        toxic = toxiproxy.add("limit_data", bytes=cut)
        unkeyed = f"/ok?cut={cut}&id={uuid.uuid4().hex}"
        with mulligan.Client(**_client(_healing(toxiproxy, toxic), attempts=3)) as client:
            with pytest.raises(mulligan.TransportError) as info:
                client.post(toxiproxy.url(unkeyed), data=b"x")
            _check_failure(info.value, cut)
            assert (info.value.attempts, info.value.stop_reason) == (1, "not_replay_safe")
            # nginx answers a POST to /ok (return 200) like a GET.
            assert len(_lines(toxiproxy, unkeyed, 1)) == 1, cut

            keyed = f"/ok?cut={cut}&id={uuid.uuid4().hex}"
            key = str(uuid.uuid4())
            r = client.post(toxiproxy.url(keyed), data=b"x", idempotency_key=key)
        assert (r.status_code, r.content, r.attempts) == (200, b"ok\n", 2), cut
        lines = _lines(toxiproxy, keyed, 2)
        assert [e["idempotency_key"] for e in lines] == [key, key], cut
        toxiproxy.reset()


# -- the AsyncClient -----------------------------------------------------------


def test_async_cuts_fail_with_their_kind_and_heal_on_retry(toxiproxy: Any, head: int) -> None:
    async def main() -> None:
        for cut in cut_points(head):
            toxic = toxiproxy.add("limit_data", bytes=cut)
            async with mulligan.AsyncClient(**_client(attempts=2)) as client:
                with pytest.raises(mulligan.TransportError) as info:
                    await client.get(toxiproxy.url("/ok"))
            _check_failure(info.value, cut)

            uri = f"/ok?cut={cut}&id={uuid.uuid4().hex}"
            async with mulligan.AsyncClient(**_client(_healing(toxiproxy, toxic), 3)) as client:
                r = await client.get(toxiproxy.url(uri))
            assert (r.status_code, r.content, r.attempts) == (200, b"ok\n", 2), cut
            assert len(_lines(toxiproxy, uri, 2)) == 2, cut

    asyncio.run(main())


def test_async_cut_posts_are_retried_only_with_a_key(toxiproxy: Any, head: int) -> None:
    async def main() -> None:
        for cut in cut_points(head):
            toxic = toxiproxy.add("limit_data", bytes=cut)
            unkeyed = f"/ok?cut={cut}&id={uuid.uuid4().hex}"
            keyed = f"/ok?cut={cut}&id={uuid.uuid4().hex}"
            key = str(uuid.uuid4())
            async with mulligan.AsyncClient(**_client(_healing(toxiproxy, toxic), 3)) as client:
                with pytest.raises(mulligan.TransportError) as info:
                    await client.post(toxiproxy.url(unkeyed), data=b"x")
                _check_failure(info.value, cut)
                assert (info.value.attempts, info.value.stop_reason) == (1, "not_replay_safe")
                r = await client.post(toxiproxy.url(keyed), data=b"x", idempotency_key=key)
            assert (r.status_code, r.attempts) == (200, 2), cut
            assert len(_lines(toxiproxy, unkeyed, 1)) == 1, cut
            assert [e["idempotency_key"] for e in _lines(toxiproxy, keyed, 2)] == [key, key]
            toxiproxy.reset()

    asyncio.run(main())
