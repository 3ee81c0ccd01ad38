"""@mulligan.retry on coroutine functions and `async for` blocks (asyncio driver)."""

from __future__ import annotations

import asyncio
import inspect
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

import mulligan
from mulligan.testing import FakeClock


@pytest.fixture
def clock() -> Iterator[FakeClock]:
    with FakeClock() as c:
        yield c


def test_wrapper_is_a_coroutine_function_with_the_same_signature() -> None:
    async def fetch(url: str, *, timeout: float = 1.0) -> bytes:
        """Fetches."""
        return url.encode()

    wrapped = mulligan.retry(on=OSError)(fetch)
    assert inspect.iscoroutinefunction(wrapped)
    assert inspect.signature(wrapped) == inspect.signature(fetch)
    assert (wrapped.__name__, wrapped.__doc__, wrapped.__wrapped__) == ("fetch", "Fetches.", fetch)
    assert asyncio.run(wrapped("x")) == b"x"


def test_retries_then_succeeds_with_async_waits(clock: FakeClock) -> None:
    calls = 0

    @mulligan.retry(on=ConnectionError, attempts=4, jitter="none", base_delay=1.0)
    async def flaky(x: int) -> int:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise ConnectionError
        return x

    assert asyncio.run(flaky(5)) == 5
    assert calls == 3 and clock.sleeps == [1.0, 2.0]


def test_async_method() -> None:
    class Client:
        def __init__(self) -> None:
            self.calls = 0

        @mulligan.retry(on=ValueError, base_delay=0)
        async def get(self) -> int:
            self.calls += 1
            if self.calls == 1:
                raise ValueError
            return self.calls

    assert asyncio.run(Client().get()) == 2


def test_deadline_5_s_with_waits_1_2_4_async(clock: FakeClock) -> None:
    calls = 0

    @mulligan.retry(on=ValueError, attempts=10, deadline=5.0, base_delay=1.0, jitter="none")
    async def fails() -> None:
        nonlocal calls
        calls += 1
        raise ValueError

    clock.advance(50.0)  # after decoration: not part of the budget
    with pytest.raises(ValueError) as info:
        asyncio.run(fails())
    assert calls == 3 and clock.sleeps == [1.0, 2.0]
    if sys.version_info >= (3, 11):
        assert info.value.__notes__ == ["mulligan: gave up after 3 attempts (deadline)"]


def test_deadline_counts_the_first_attempt_async(clock: FakeClock) -> None:
    calls = 0

    @mulligan.retry(on=ValueError, attempts=10, deadline=5.0, base_delay=1.0, jitter="none")
    async def slow_first() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            await clock.async_sleep(2.5)
        raise ValueError

    with pytest.raises(ValueError):
        asyncio.run(slow_first())
    assert calls == 2 and clock.sleeps == [2.5, 1.0]


def test_predicate_never_retries_cancelled_error() -> None:
    calls = 0

    @mulligan.retry(on=lambda e: not isinstance(e, ValueError), attempts=5, base_delay=0)
    async def cancelled() -> None:
        nonlocal calls
        calls += 1
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(cancelled())
    assert calls == 1


def test_on_baseexception_never_retries_cancelled_error() -> None:
    calls = 0

    @mulligan.retry(on=BaseException, attempts=5, base_delay=0)
    async def cancelled() -> None:
        nonlocal calls
        calls += 1
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(cancelled())
    assert calls == 1


def test_cancelling_the_task_cancels_the_wait_promptly() -> None:
    calls = 0

    @mulligan.retry(on=lambda e: not isinstance(e, ValueError), attempts=5, base_delay=30.0,
                    jitter="none")
    async def flaky() -> None:
        nonlocal calls
        calls += 1
        raise ConnectionError

    async def main() -> float:
        task = asyncio.create_task(flaky())
        await asyncio.sleep(0.05)  # the task is now waiting 30 s
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    assert asyncio.run(main()) < 0.5
    assert calls == 1


def test_two_tasks_see_their_own_attempt_counts() -> None:
    failures = {"a": 1, "b": 3}
    calls = {"a": 0, "b": 0}

    async def main() -> dict[str, Any]:
        both_started = asyncio.Event()
        started: set[str] = set()

        @mulligan.retry(on=ValueError, attempts=10, base_delay=0)
        async def work(name: str) -> int:
            calls[name] += 1
            if calls[name] == 1:
                started.add(name)
                if len(started) == 2:
                    both_started.set()
                await both_started.wait()  # both calls are in flight at once
            await asyncio.sleep(0)
            if calls[name] <= failures[name]:
                raise ValueError(name)
            return calls[name]

        async def run(name: str) -> tuple[int, Any]:
            return await work(name), work.statistics.last

        a, b = await asyncio.gather(run("a"), run("b"))
        return {"a": a, "b": b, "main": work.statistics.last}

    out = asyncio.run(main())
    assert out["a"][0] == 2 and out["a"][1].attempts == 2
    assert out["b"][0] == 4 and out["b"][1].attempts == 4
    assert out["main"] is None  # each task ran in a copy of the context


def test_async_give_up_with_retries_exhausted(clock: FakeClock) -> None:
    @mulligan.retry(on=KeyError, attempts=2, raise_on_give_up=True, jitter="none")
    async def fails() -> None:
        raise KeyError("k")

    with pytest.raises(mulligan.RetriesExhausted) as info:
        asyncio.run(fails())
    assert info.value.attempts == 2 and isinstance(info.value.__cause__, KeyError)
    assert clock.sleeps == [0.2]


def test_async_retry_with_and_set_testing() -> None:
    calls = 0

    @mulligan.retry(on=ValueError, attempts=5, base_delay=100.0)
    async def fails() -> None:
        nonlocal calls
        calls += 1
        raise ValueError

    with mulligan.testing.set_testing(True, attempts=2), pytest.raises(ValueError):
        asyncio.run(fails())
    assert calls == 2
    with mulligan.testing.set_active(False), pytest.raises(ValueError):
        asyncio.run(fails.retry_with(attempts=3)())
    assert calls == 3


# -- mulligan.retrying blocks ---------------------------------------------------------


def test_retrying_block_sync(clock: FakeClock) -> None:
    numbers = []
    for attempt in mulligan.retrying(on=ConnectionError, attempts=5, jitter="none"):
        with attempt:
            numbers.append((attempt.number, attempt.waited))
            if attempt.number < 3:
                raise ConnectionError
    assert numbers == [(1, 0.0), (2, 0.2), (3, pytest.approx(0.6))]
    assert clock.sleeps == [0.2, 0.4]


def test_retrying_block_gives_up_with_the_last_exception(clock: FakeClock) -> None:
    block = mulligan.retrying(on=ValueError, attempts=3, name="load")
    with pytest.raises(ValueError) as info:
        for attempt in block:
            with attempt:
                raise ValueError(attempt.number)
    assert str(info.value) == "3"
    if sys.version_info >= (3, 11):
        assert info.value.__notes__ == ["mulligan: gave up after 3 attempts (attempts_exhausted)"]
    stats = block.statistics.last
    assert stats is not None and (stats.name, stats.attempts, stats.stop_reason) == (
        "load", 3, "attempts_exhausted")


def test_retrying_block_terminal_exception_propagates(clock: FakeClock) -> None:
    seen = []
    with pytest.raises(KeyError):
        for attempt in mulligan.retrying(on=ValueError, attempts=5):
            with attempt:
                seen.append(attempt.number)
                if attempt.number == 1:
                    raise ValueError
                raise KeyError
    assert seen == [1, 2]


def test_retrying_block_on_result(clock: FakeClock) -> None:
    values = iter([0, 0, 5])
    for attempt in mulligan.retrying(on_result=lambda r: r == 0, attempts=5, base_delay=0):
        with attempt:
            attempt.set_result(next(values))
    assert attempt.result == 5 and attempt.number == 3


def test_retrying_block_async(clock: FakeClock) -> None:
    async def main() -> list[int]:
        numbers = []
        async for attempt in mulligan.retrying(on=OSError, attempts=4, jitter="none", base_delay=1):
            with attempt:
                numbers.append(attempt.number)
                if attempt.number < 3:
                    raise OSError
        return numbers

    assert asyncio.run(main()) == [1, 2, 3]
    assert clock.sleeps == [1.0, 2.0]


def test_retrying_block_async_deadline(clock: FakeClock) -> None:
    async def main() -> None:
        async for attempt in mulligan.retrying(
            on=OSError, attempts=10, deadline=5.0, base_delay=1.0, jitter="none"
        ):
            with attempt:
                raise OSError(attempt.number)

    with pytest.raises(OSError) as info:
        asyncio.run(main())
    assert str(info.value) == "3" and clock.sleeps == [1.0, 2.0]


def test_retrying_block_inactive_propagates_first_failure() -> None:
    seen = []
    with mulligan.testing.set_active(False), pytest.raises(ValueError):
        for attempt in mulligan.retrying(on=ValueError, attempts=5):
            with attempt:
                seen.append(attempt.number)
                raise ValueError
    assert seen == [1]
