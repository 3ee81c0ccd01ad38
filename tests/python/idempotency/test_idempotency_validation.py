"""mulligan.IdempotencyStore and @store.idempotent: the key read from positional
or keyword arguments, results that cannot be stored never running twice,
responses that cannot be replayed as HTTP refused (in the core), and clear
TypeError/ValueError for bad arguments."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import mulligan
from mulligan import _core
from mulligan import IdempotencyResultNotReplayable


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- @store.idempotent(key="name"): positional or keyword --------------------


def test_key_passed_positionally_is_deduplicated() -> None:
    store = mulligan.IdempotencyStore()
    calls: list[tuple[int, str]] = []

    @store.idempotent(key="request_id")
    def charge(amount: int, request_id: str) -> dict[str, int]:
        calls.append((amount, request_id))
        return {"charged": amount}

    assert charge(1, "pos") == {"charged": 1}
    assert charge(1, "pos") == {"charged": 1}
    assert charge(1, request_id="pos") == {"charged": 1}
    assert charge(amount=1, request_id="pos") == {"charged": 1}
    assert calls == [(1, "pos")]
    assert store.stats()["reserved"] == 1 and store.stats()["replayed"] == 3


def test_key_of_a_method_and_of_an_async_function_by_position() -> None:
    store = mulligan.IdempotencyStore()
    calls: list[str] = []

    class Payments:
        @store.idempotent(key="request_id")
        def charge(self, amount: int, request_id: str) -> int:
            calls.append(request_id)
            return amount

    @store.idempotent(key="key")
    async def create(name: str, key: str) -> str:
        calls.append(key)
        return name

    p = Payments()
    assert p.charge(3, "m1") == 3
    assert p.charge(3, "m1") == 3

    async def main() -> None:
        assert await create("a", "a1") == "a"
        assert await create("a", "a1") == "a"
        assert await create("a", key="a1") == "a"

    asyncio.run(main())
    assert calls == ["m1", "a1"]


def test_key_parameter_must_exist_at_decoration_time() -> None:
    store = mulligan.IdempotencyStore()
    with pytest.raises(TypeError, match="no parameter 'request_id'"):

        @store.idempotent(key="request_id")
        def charge(amount: int, req: str) -> int:
            return amount

    with pytest.raises(TypeError, match="no parameter 'request_id'"):

        @store.idempotent(key="request_id")
        def star(*request_id: str) -> None: ...

    with pytest.raises(TypeError, match="parameter name or a callable"):
        store.idempotent(key=42)  # type: ignore[arg-type]

    # **kwargs may carry the key: read from the keywords.
    calls: list[Any] = []

    @store.idempotent(key="request_id")
    def flexible(*args: Any, **kwargs: Any) -> int:
        calls.append(kwargs.get("request_id"))
        return len(calls)

    assert flexible(1, request_id="f") == 1
    assert flexible(1, request_id="f") == 1
    assert flexible(1) == 2  # no key: runs normally
    assert calls == ["f", None]


def test_a_call_without_a_required_key_is_a_type_error_and_reserves_nothing() -> None:
    store = mulligan.IdempotencyStore()
    calls: list[int] = []

    @store.idempotent(key="request_id")
    def charge(amount: int, request_id: str) -> int:
        calls.append(amount)
        return amount

    with pytest.raises(TypeError, match="request_id"):
        charge(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        charge(1, "a", request_id="b")  # type: ignore[misc]
    assert calls == [] and store.stats()["reserved"] == 0

    # A key parameter defaulting to None: no key, no deduplication.
    @store.idempotent(key="request_id")
    def optional(amount: int, request_id: str | None = None) -> int:
        calls.append(amount)
        return amount

    assert optional(1) == 1 and optional(1) == 1
    assert optional(2, "o") == 2 and optional(2, "o") == 2
    assert calls == [1, 1, 2]

    with pytest.raises(TypeError, match="key must be a str"):
        charge(1, 12345)  # type: ignore[arg-type]
    assert store.stats()["in_flight"] == 0


# --- a result that cannot be stored never runs twice -------------------------


def test_an_unpicklable_result_is_not_run_again() -> None:
    clock = FakeClock()
    store = mulligan.IdempotencyStore(clock=clock, ttl=100.0)
    calls: list[str] = []

    @store.idempotent(key="request_id")
    def open_lock(request_id: str) -> Any:
        calls.append(request_id)
        return threading.Lock()  # cannot be pickled

    with pytest.warns(RuntimeWarning, match="could not be pickled"):
        first = open_lock("u1")
    assert hasattr(first, "acquire")  # the first caller gets the real result
    clock.now += 40.0
    with pytest.raises(IdempotencyResultNotReplayable, match="not replayable") as info:
        open_lock("u1")
    assert isinstance(info.value, mulligan.IdempotencyConflict)
    assert info.value.key == "u1"
    assert info.value.retry_after == pytest.approx(60.0)
    assert "pickle" in info.value.reason
    with pytest.raises(IdempotencyResultNotReplayable):
        open_lock(request_id="u1")
    assert calls == ["u1"]
    # Once the entry expires, the key runs afresh.
    clock.now += 60.0
    with pytest.warns(RuntimeWarning):
        open_lock("u1")
    assert calls == ["u1", "u1"]


def test_an_unpicklable_async_result_is_not_run_again() -> None:
    store = mulligan.IdempotencyStore()
    calls: list[str] = []

    @store.idempotent(key="k")
    async def make(k: str) -> Any:
        calls.append(k)
        return lambda: None  # cannot be pickled

    async def main() -> None:
        with pytest.warns(RuntimeWarning, match="could not be pickled"):
            assert callable(await make("a1"))
        with pytest.raises(IdempotencyResultNotReplayable):
            await make("a1")

    asyncio.run(main())
    assert calls == ["a1"]


def test_a_result_too_big_for_the_store_is_not_run_again() -> None:
    store = mulligan.IdempotencyStore(max_bytes=8192, shards=1)
    calls: list[str] = []

    @store.idempotent(key="k")
    def big(k: str) -> bytes:
        calls.append(k)
        return b"x" * 100_000

    with pytest.warns(RuntimeWarning, match="was not stored"):
        assert len(big("b1")) == 100_000
    with pytest.raises(IdempotencyResultNotReplayable, match="not stored"):
        big("b1")
    assert calls == ["b1"]


def test_a_function_that_raises_still_releases_its_key() -> None:
    store = mulligan.IdempotencyStore()
    calls: list[str] = []

    @store.idempotent(key="k")
    def fail(k: str) -> None:
        calls.append(k)
        raise RuntimeError("boom")

    for _ in range(2):
        with pytest.raises(RuntimeError):
            fail("f1")
    assert calls == ["f1", "f1"]


# --- responses that cannot be replayed as HTTP are refused ------------------


@pytest.mark.parametrize("status", [0, -1, 99, 600, 1000, 2**31, -(2**63)])
def test_complete_rejects_statuses_out_of_range_and_keeps_the_lease(status: int) -> None:
    store = mulligan.IdempotencyStore()
    r = store.reserve("k", b"fp")
    with pytest.raises(ValueError, match=r"status must be .*" + str(status)):
        store.complete(r, status=status, body=b"x")
    assert store.reserve("k", b"fp").state == "in_flight"
    store.release(r)  # the lease is still held
    assert store.reserve("k", b"fp").state == "reserved"


def test_complete_rejects_a_bool_status() -> None:
    store = mulligan.IdempotencyStore()
    r = store.reserve("k")
    with pytest.raises(TypeError, match="status must be an int"):
        store.complete(r, status=True)
    with pytest.raises(TypeError, match="status"):
        store.complete(r, status=200.0)  # type: ignore[arg-type]
    store.complete(r, status=100)
    r2 = store.reserve("k2")
    store.complete(r2, status=599)
    assert store.reserve("k2").status == 599


@pytest.mark.parametrize(
    ("headers", "match"),
    [
        ([(b"X-A\r\nSet-Cookie: evil=1", b"v\r\nX-B: 1")], "invalid name"),
        ([(b"X-A", b"v\r\nX-B: 1")], "CR, LF or NUL"),
        ([(b"X-A", b"v\r")], "CR, LF or NUL"),
        ([(b"X-A", b"v\n")], "CR, LF or NUL"),
        ([(b"X-A", b"v\0")], "CR, LF or NUL"),
        ([(b"", b"v")], "invalid name"),
        ([(b"X A", b"v")], "invalid name"),
        ([(b"X:A", b"v")], "invalid name"),
        ([(b"X\0", b"v")], "invalid name"),
        ([(b"ok", b"v"), ("caf\u00e9".encode(), b"v")], "header field 1"),
    ],
)
def test_complete_rejects_header_injection_and_keeps_the_lease(
    headers: list[tuple[bytes, bytes]], match: str
) -> None:
    store = mulligan.IdempotencyStore()
    r = store.reserve("k", b"fp")
    with pytest.raises(ValueError, match=match):
        store.complete(r, headers=headers, body=b"x")
    assert store.stats()["completed"] == 0
    assert store.reserve("k", b"fp").state == "in_flight"
    # The lease is still held: a valid response completes it.
    store.complete(r, headers=[(b"X-A", b"v\tw \x80")], body=b"x")
    replay = store.reserve("k", b"fp")
    assert replay.state == "replay" and replay.headers == [(b"X-A", b"v\tw \x80")]


def test_the_core_validates_even_past_the_python_checks() -> None:
    raw = _core.IdempotencyStore()
    r = raw.reserve("", "k", b"", 1.0)
    with pytest.raises(ValueError, match="status must be in"):
        raw.complete(r, 600, [], b"", 1.0)
    with pytest.raises(ValueError, match="invalid name"):
        raw.complete(r, 200, [(b"X-A\r\nSet-Cookie: evil=1", b"v")], b"", 1.0)
    with pytest.raises(ValueError, match="CR, LF or NUL"):
        raw.complete(r, 200, [(b"X-A", b"v\r\nX-B: 1")], b"", 1.0)
    raw.release(r)
    assert raw.stats()["released"] == 1


# --- clear errors for bad arguments ------------------------------------------


def _no_pybind_dump(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    assert "incompatible" not in str(excinfo.value)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"max_bytes": 2**70}, ValueError, "max_bytes must be <="),
        ({"max_entries": 2**64}, ValueError, "max_entries"),
        ({"max_key_length": -1}, ValueError, "max_key_length must be >= 1"),
        ({"shards": 2**40}, ValueError, "shards must be <= 1024"),
        ({"shards": True}, TypeError, "shards must be an int"),
        ({"ttl": "60"}, TypeError, "ttl must be a number"),
        ({"lease": None}, TypeError, "lease must be a number"),
        ({"in_flight_retry_after": True}, TypeError, "in_flight_retry_after"),
        ({"ttl": 1e300}, ValueError, "ttl"),
        ({"clock": 5}, TypeError, "clock"),
    ],
)
def test_store_options_give_clear_errors(kwargs: dict[str, Any], exc: type, match: str) -> None:
    with pytest.raises(exc, match=match) as info:
        mulligan.IdempotencyStore(**kwargs)
    _no_pybind_dump(info)


def test_store_accepts_the_largest_size_t_and_int_seconds() -> None:
    store = mulligan.IdempotencyStore(max_bytes=2**64 - 1, ttl=60, lease=5)
    assert store.reserve("k").state == "reserved"


@pytest.mark.parametrize(
    ("args", "kwargs", "exc", "match"),
    [
        ((5,), {}, TypeError, "key must be a str"),
        ((b"k",), {}, TypeError, "key must be a str"),
        ((None,), {}, TypeError, "key must be a str"),
        (("\ud800",), {}, ValueError, "key must be printable ASCII"),
        (("caf\u00e9",), {}, ValueError, "printable ASCII"),
        (("k", "str-fp"), {}, TypeError, "fingerprint must be bytes"),
        (("k", None), {}, TypeError, "fingerprint must be bytes"),
        (("k",), {"scope": None}, TypeError, "scope must be a str"),
        (("k",), {"scope": 7}, TypeError, "scope must be a str"),
        (("k",), {"scope": "\ud800"}, ValueError, "scope must be encodable"),
    ],
)
def test_reserve_gives_clear_errors(
    args: tuple[Any, ...], kwargs: dict[str, Any], exc: type, match: str
) -> None:
    store = mulligan.IdempotencyStore()
    with pytest.raises(exc, match=match) as info:
        store.reserve(*args, **kwargs)
    _no_pybind_dump(info)
    assert store.stats()["reserved"] == 0


def test_reserve_accepts_bytes_like_fingerprints_as_their_bytes() -> None:
    store = mulligan.IdempotencyStore()
    r = store.reserve("k", bytearray(b"fp"))
    assert r.state == "reserved"
    assert store.reserve("k", memoryview(b"fp")).state == "in_flight"
    assert store.reserve("k", b"fp").state == "in_flight"
    assert store.reserve("k", bytearray(b"other")).state == "fingerprint_mismatch"
    store.complete(r, headers=[(bytearray(b"X-A"), memoryview(b"v"))], body=bytearray(b"body"))
    replay = store.reserve("k", memoryview(bytearray(b"fp")))
    assert (replay.state, replay.headers, replay.body) == ("replay", [(b"X-A", b"v")], b"body")


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"status": 2**31}, ValueError, "status must be <= 599"),
        ({"status": 2**70}, ValueError, "status"),
        ({"status": "200"}, TypeError, "status must be an int"),
        ({"status": None}, TypeError, "status"),
        ({"body": "text"}, TypeError, "body must be bytes"),
        ({"body": None}, TypeError, "body must be bytes"),
        ({"headers": [("X-A", "v")]}, TypeError, r"headers\[0\] name must be bytes"),
        ({"headers": [(b"X-A", "v")]}, TypeError, r"headers\[0\] value must be bytes"),
        ({"headers": [(b"X-A",)]}, TypeError, r"headers\[0\] must be a \(name, value\) pair"),
        ({"headers": [b"X-A: v"]}, TypeError, r"headers\[0\]"),
        ({"headers": b"X-A: v"}, TypeError, "headers must be an iterable"),
        ({"headers": 5}, TypeError, "headers must be an iterable"),
    ],
)
def test_complete_gives_clear_errors_and_keeps_the_lease(
    kwargs: dict[str, Any], exc: type, match: str
) -> None:
    store = mulligan.IdempotencyStore()
    r = store.reserve("k")
    with pytest.raises(exc, match=match) as info:
        store.complete(r, **kwargs)
    _no_pybind_dump(info)
    store.release(r)


def test_complete_and_release_want_a_reservation() -> None:
    store = mulligan.IdempotencyStore()
    with pytest.raises(TypeError, match="reservation must be an IdempotencyReservation"):
        store.complete("k")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reservation must be an IdempotencyReservation"):
        store.release(None)  # type: ignore[arg-type]


def test_wsgi_middleware_frees_the_key_when_the_store_refuses_the_response() -> None:
    """A response the store cannot replay (a header value with CR/LF) must not
    block its key with 409s until the lease expires."""
    import io
    import wsgiref.util

    import mulligan

    runs: list[int] = []

    def app(environ, start_response):  # type: ignore[no-untyped-def]
        runs.append(1)
        start_response("201 Created", [("X-Bad", "a\r\nInjected: 1")])
        return [b"created"]

    wrapped = mulligan.WSGIIdempotencyMiddleware(app, store=mulligan.IdempotencyStore())

    def post() -> str:
        environ: dict = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": "/orders",
            "HTTP_IDEMPOTENCY_KEY": "k-refused",
            "CONTENT_LENGTH": "2",
            "wsgi.input": io.BytesIO(b"{}"),
        }
        wsgiref.util.setup_testing_defaults(environ)
        seen: list[str] = []
        body = b"".join(wrapped(environ, lambda status, headers, exc_info=None: seen.append(status)))
        assert body
        return seen[0]

    assert post().startswith("201")
    assert post().startswith("201")  # runs again: not a 409, the key was freed
    assert runs == [1, 1]
