"""mulligan.IdempotencyStore, parse_idempotency_key and @store.idempotent, without
a server: semantics, ttl on a fake clock, bounds and flat memory over a million
keys, sync and async decorated functions."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

import mulligan


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_parse_idempotency_key() -> None:
    assert mulligan.parse_idempotency_key('"8e03978e-40d5-43e8-bc93-6894a57f9324"') == (
        "8e03978e-40d5-43e8-bc93-6894a57f9324"
    )
    assert mulligan.parse_idempotency_key(' "a \\"b\\" \\\\" ') == 'a "b" \\'
    assert mulligan.parse_idempotency_key("KG5LxwFBepaKHyUD") == "KG5LxwFBepaKHyUD"
    key = mulligan.new_idempotency_key()
    assert mulligan.parse_idempotency_key(key) == key  # the client's keys round-trip
    for bad in ["", '""', '"x', '"a\\b"', 'a"b', "caf\u00e9", "k" * 256]:
        with pytest.raises(ValueError):
            mulligan.parse_idempotency_key(bad)
    assert mulligan.parse_idempotency_key("abcd", max_length=4) == "abcd"
    with pytest.raises(ValueError, match="longer than 3"):
        mulligan.parse_idempotency_key("abcd", max_length=3)
    with pytest.raises(TypeError):
        mulligan.parse_idempotency_key(b"abc")  # type: ignore[arg-type]


def test_store_options_are_validated() -> None:
    with pytest.raises(ValueError, match="ttl"):
        mulligan.IdempotencyStore(ttl=0)
    with pytest.raises(ValueError, match="max_entries"):
        mulligan.IdempotencyStore(max_entries=0)
    with pytest.raises(TypeError):
        mulligan.IdempotencyStore(max_bytes=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        mulligan.IdempotencyStore(lease=float("nan"))


def test_reserve_complete_replay_conflict_mismatch_release() -> None:
    clock = FakeClock()
    store = mulligan.IdempotencyStore(clock=clock, lease=10.0, in_flight_retry_after=2.0)
    r = store.reserve("k", b"fp")
    assert r.state == "reserved" and r.key == "k"
    busy = store.reserve("k", b"fp")
    assert busy.state == "in_flight" and busy.retry_after == 2.0
    assert store.reserve("k", b"other").state == "fingerprint_mismatch"
    store.complete(r, status=201, headers=[(b"location", b"/o/1")], body=b"done")
    with pytest.raises(ValueError, match="not held"):
        store.complete(r, body=b"twice")
    replay = store.reserve("k", b"fp")
    assert (replay.state, replay.status, replay.headers, replay.body) == (
        "replay",
        201,
        [(b"location", b"/o/1")],
        b"done",
    )
    failed = store.reserve("k2", b"")
    store.release(failed)
    assert store.reserve("k2", b"").state == "reserved"
    stats = store.stats()
    assert stats["replayed"] == 1 and stats["released"] == 1 and stats["in_flight"] == 1


def test_a_lease_that_runs_out_frees_the_key() -> None:
    clock = FakeClock()
    store = mulligan.IdempotencyStore(clock=clock, lease=5.0)
    crashed = store.reserve("k")
    clock.now += 4.9
    assert store.reserve("k").state == "in_flight"
    clock.now += 0.1
    taken = store.reserve("k")
    assert taken.state == "reserved"
    with pytest.raises(ValueError):
        store.complete(crashed, body=b"late")


def test_ttl_replays_just_before_expiry_and_runs_afresh_just_after() -> None:
    clock = FakeClock()
    store = mulligan.IdempotencyStore(clock=clock, ttl=3600.0)
    store.complete(store.reserve("k", b"fp"), body=b"first")
    clock.now += 3600.0 - 0.001
    assert store.reserve("k", b"fp").body == b"first"
    clock.now += 0.001
    assert store.reserve("k", b"fp").state == "reserved"


def test_scopes_are_separate() -> None:
    store = mulligan.IdempotencyStore()
    store.complete(store.reserve("k", scope="alice"), body=b"alice")
    assert store.reserve("k", scope="alice").body == b"alice"
    assert store.reserve("k", scope="bob").state == "reserved"


def test_store_full_of_in_flight_keys() -> None:
    store = mulligan.IdempotencyStore(max_entries=2, shards=1)
    store.reserve("a")
    store.reserve("b")
    with pytest.raises(mulligan.IdempotencyStoreFull, match="in-flight"):
        store.reserve("c")


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_a_million_keys_stay_within_the_bound_and_memory_is_flat() -> None:
    store = mulligan.IdempotencyStore(max_entries=10_000)
    body = b"r" * 200
    headers = [(b"content-type", b"application/json")]
    reserve, complete = store.reserve, store.complete
    rss_at_100k = 0
    for i in range(1_000_000):
        r = reserve(f"3f1c9a2e-0000-4000-8000-{i:012d}", b"fingerprint-32-bytes............")
        complete(r, status=201, headers=headers, body=body)
        if i == 100_000:
            rss_at_100k = _rss()
            assert store.stats()["entries"] <= 10_000
    stats = store.stats()
    assert 9_000 <= stats["entries"] <= 10_000
    assert stats["evicted"] == 1_000_000 - stats["entries"]
    grown = _rss() - rss_at_100k
    assert grown < 4 * 2**20, f"resident memory grew by {grown} bytes over 900,000 keys"


def test_idempotent_decorator_sync() -> None:
    store = mulligan.IdempotencyStore()
    calls: list[int] = []

    @store.idempotent(key="request_id", fingerprint=lambda amount, **_: str(amount))
    def charge(amount: int, *, request_id: str) -> dict[str, int]:
        calls.append(amount)
        if amount < 0:
            raise ValueError("negative")
        return {"charged": amount}

    assert charge(5, request_id="r1") == {"charged": 5}
    assert charge(5, request_id="r1") == {"charged": 5}
    assert calls == [5]
    with pytest.raises(mulligan.IdempotencyKeyMismatch):
        charge(6, request_id="r1")
    with pytest.raises(ValueError, match="negative"):
        charge(-1, request_id="r2")
    with pytest.raises(ValueError, match="negative"):
        charge(-1, request_id="r2")  # released: it ran again
    assert calls == [5, -1, -1]
    assert charge.__name__ == "charge"


def test_idempotent_decorator_conflict_between_threads() -> None:
    store = mulligan.IdempotencyStore(in_flight_retry_after=0.5)
    started, finish = threading.Event(), threading.Event()

    @store.idempotent(key=lambda order: order)
    def slow(order: str) -> str:
        started.set()
        finish.wait(5)
        return order.upper()

    t = threading.Thread(target=slow, args=("o1",))
    t.start()
    started.wait(5)
    with pytest.raises(mulligan.IdempotencyConflict) as info:
        slow("o1")
    assert info.value.key == "o1" and info.value.retry_after == 0.5
    finish.set()
    t.join()
    assert slow("o1") == "O1"


def test_idempotent_decorator_async() -> None:
    store = mulligan.IdempotencyStore()
    calls: list[str] = []

    @store.idempotent(key="key")
    async def create(name: str, *, key: str | None = None) -> dict[str, Any]:
        calls.append(name)
        await asyncio.sleep(0.01)
        if name == "bad":
            raise RuntimeError("boom")
        return {"name": name}

    async def main() -> None:
        first, second = await asyncio.gather(
            create("a", key="k1"), create("a", key="k1"), return_exceptions=True
        )
        assert first == {"name": "a"}
        assert isinstance(second, mulligan.IdempotencyConflict)
        assert await create("a", key="k1") == {"name": "a"}
        assert await create("b") == {"name": "b"}  # no key: runs every time
        assert await create("b") == {"name": "b"}
        for _ in range(2):
            with pytest.raises(RuntimeError):
                await create("bad", key="k2")

    asyncio.run(main())
    assert calls == ["a", "b", "b", "bad", "bad"]


def test_replay_costs_little() -> None:
    # Not a benchmark (bench/ has those): a guard against a gross regression.
    store = mulligan.IdempotencyStore()
    store.complete(store.reserve("k", b"fp"), body=b"x" * 100)
    n = 20_000
    start = time.perf_counter()
    for _ in range(n):
        store.reserve("k", b"fp")
    per_call = (time.perf_counter() - start) / n
    assert per_call < 20e-6
