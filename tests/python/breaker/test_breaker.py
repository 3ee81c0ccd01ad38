"""mulligan.CircuitBreaker: exact states with an injected clock, sync and async."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import pickle
import re
import threading
from typing import Any, List

import pytest

import mulligan
import mulligan.testing
from mulligan._telemetry import metrics as _metrics
from mulligan import BreakerTransition, CircuitBreaker, CircuitOpenError


class Clock:
    """A monotonic clock that moves only when advanced."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Boom(Exception):
    pass


def fail() -> None:
    raise Boom("down")


def trip(breaker: CircuitBreaker, n: int) -> None:
    guarded = breaker(fail)
    for _ in range(n):
        with pytest.raises(Boom):
            guarded()


def test_consecutive_failures_open_then_probe_closes() -> None:
    clock = Clock()
    breaker = CircuitBreaker("db", failure_threshold=3, reset_timeout=10.0, clock=clock)
    ok = breaker(lambda: "ok")
    assert ok() == "ok"
    trip(breaker, 2)
    assert breaker.state == "closed"
    assert breaker.counts["consecutive_failures"] == 2
    trip(breaker, 1)
    assert breaker.state == "open"
    assert breaker.time_until_probe == 10.0

    clock.advance(4.0)
    with pytest.raises(CircuitOpenError) as info:
        ok()
    assert info.value.name == "db"
    assert info.value.retry_in == pytest.approx(6.0)
    assert str(info.value) == "circuit breaker 'db' is open; next probe in 6.000 s"
    assert isinstance(info.value, mulligan.MulliganError)

    clock.advance(6.0)
    assert breaker.state == "half_open"
    assert ok() == "ok"
    assert breaker.state == "closed"
    counts = breaker.counts
    assert (counts["successes"], counts["failures"], counts["rejected"]) == (2, 3, 1)


def test_failed_probe_reopens() -> None:
    clock = Clock()
    breaker = CircuitBreaker("db", failure_threshold=1, reset_timeout=5.0, clock=clock)
    trip(breaker, 1)
    clock.advance(5.0)
    assert breaker.state == "half_open"
    trip(breaker, 1)  # the probe fails
    assert breaker.state == "open"
    assert breaker.time_until_probe == 5.0


def test_half_open_admits_exactly_one_probe_among_eight_threads() -> None:
    clock = Clock()
    breaker = CircuitBreaker(
        "db", failure_threshold=1, reset_timeout=1.0, half_open_max_calls=1, clock=clock
    )
    trip(breaker, 1)
    clock.advance(1.0)

    start = threading.Barrier(8)
    release = threading.Event()
    ran: List[int] = []
    refused: List[float] = []
    lock = threading.Lock()

    @breaker
    def probe(i: int) -> None:
        with lock:
            ran.append(i)
        release.wait(5)  # hold the probe slot while the others try

    def worker(i: int) -> None:
        start.wait()
        try:
            probe(i)
        except CircuitOpenError as e:
            with lock:
                refused.append(e.retry_in)
            if len(refused) == 7:
                release.set()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(ran) == 1
    assert len(refused) == 7
    assert all(r == pytest.approx(60.0) for r in refused)  # until the probe permit expires
    assert breaker.state == "closed"  # the one probe succeeded
    assert breaker.counts["rejected"] == 7


def test_a_permit_never_recorded_does_not_wedge_half_open() -> None:
    clock = Clock()
    breaker = CircuitBreaker(
        "db", failure_threshold=1, reset_timeout=1.0, permit_timeout=2.0, clock=clock
    )
    trip(breaker, 1)
    clock.advance(1.0)
    lost = breaker._acquire()  # a caller that never records
    assert lost.probe
    clock.advance(1.0)
    with pytest.raises(CircuitOpenError) as info:
        breaker._acquire()
    assert info.value.retry_in == pytest.approx(1.0)
    clock.advance(1.0)  # the permit expires
    assert breaker.time_until_probe == 0.0
    assert breaker(lambda: 1)() == 1
    assert breaker.state == "closed"
    breaker._record(lost, 0)  # a late record changes nothing
    assert breaker.counts["successes"] == 1


def test_timeouts_count_and_free_the_probe_slot() -> None:
    clock = Clock()
    breaker = CircuitBreaker("db", failure_threshold=2, reset_timeout=1.0, clock=clock)

    @breaker
    def slow() -> None:
        raise TimeoutError("attempt timed out")

    for _ in range(2):
        with pytest.raises(TimeoutError):
            slow()
    assert breaker.state == "open"
    clock.advance(1.0)
    with pytest.raises(TimeoutError):
        slow()  # the probe times out: a failure, and its slot is freed
    assert breaker.state == "open"
    assert breaker.counts["failures"] == 3


def test_failure_on_ignore_on_and_never_counted() -> None:
    clock = Clock()
    breaker = CircuitBreaker(
        "db",
        failure_threshold=1,
        failure_on=(ConnectionError,),
        ignore_on=lambda e: isinstance(e, ConnectionError) and "404" in str(e),
        clock=clock,
    )

    def raiser(exc: BaseException) -> Any:
        @breaker
        def f() -> None:
            raise exc

        return f

    for exc in (ValueError("bad"), ConnectionError("404"), KeyboardInterrupt()):
        with pytest.raises(type(exc)):
            raiser(exc)()
    assert breaker.state == "closed"
    assert breaker.counts["ignored"] == 3
    with pytest.raises(ConnectionError):
        raiser(ConnectionError("reset"))()
    assert breaker.state == "open"


def test_async_decorator_counts_exceptions_inside_the_awaited_call() -> None:
    clock = Clock()
    breaker = CircuitBreaker("svc", failure_threshold=2, clock=clock)
    calls = 0

    @breaker
    async def call() -> str:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0)
        raise Boom("inside the coroutine")

    import inspect

    assert inspect.iscoroutinefunction(call)

    async def main() -> None:
        for _ in range(2):
            with pytest.raises(Boom):
                await call()
        assert breaker.state == "open"
        with pytest.raises(CircuitOpenError):
            await call()

    asyncio.run(main())
    assert calls == 2


def test_async_timeout_counts_as_failure() -> None:
    clock = Clock()
    breaker = CircuitBreaker("svc", failure_threshold=1, clock=clock)

    @breaker
    async def hang() -> None:
        await asyncio.wait_for(asyncio.sleep(10), timeout=0.001)

    with pytest.raises((asyncio.TimeoutError, TimeoutError)):
        asyncio.run(hang())
    assert breaker.state == "open"


def test_cancellation_is_not_a_failure() -> None:
    breaker = CircuitBreaker("svc", failure_threshold=1, clock=Clock())

    @breaker
    async def slow() -> None:
        await asyncio.sleep(10)

    async def main() -> None:
        task = asyncio.ensure_future(slow())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert breaker.state == "closed"
    assert breaker.counts["ignored"] == 1


def test_context_managers_sync_and_async() -> None:
    clock = Clock()
    breaker = CircuitBreaker("blk", failure_threshold=2, clock=clock)
    with breaker:
        pass
    with pytest.raises(Boom):
        with breaker:
            with breaker:  # nested uses keep their own permits
                raise Boom()
    assert breaker.counts["failures"] == 2  # inner and outer both saw Boom
    assert breaker.state == "open"
    with pytest.raises(CircuitOpenError):
        with breaker:
            pass

    async def main() -> None:
        breaker.reset()
        async with breaker:
            await asyncio.sleep(0)
        with pytest.raises(Boom):
            async with breaker:
                raise Boom()

    asyncio.run(main())
    assert breaker.counts["successes"] == 1
    assert breaker.counts["failures"] == 1


def test_manual_states() -> None:
    clock = Clock()
    breaker = CircuitBreaker("m", failure_threshold=1, clock=clock)
    breaker.force_open()
    assert breaker.state == "forced_open"
    assert breaker.time_until_probe == math.inf
    with pytest.raises(CircuitOpenError) as info:
        breaker(lambda: 1)()
    assert info.value.retry_in == math.inf
    breaker.disable()
    trip(breaker, 3)
    assert breaker.state == "disabled"
    breaker.reset()
    assert breaker.state == "closed"
    assert breaker.counts["failures"] == 0


def test_listeners_and_logging(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    breaker = CircuitBreaker("lst", failure_threshold=1, reset_timeout=2.0, clock=clock)
    seen: List[BreakerTransition] = []
    breaker.add_listener(seen.append)

    def broken(t: BreakerTransition) -> None:
        raise RuntimeError("listener bug")

    breaker.add_listener(broken)
    with caplog.at_level(logging.INFO, logger="mulligan"):
        trip(breaker, 1)
        clock.advance(2.0)
        assert breaker(lambda: 1)() == 1
    assert [(t.from_state, t.to_state, t.reason) for t in seen] == [
        ("closed", "open", "failure_threshold"),
        ("open", "half_open", "reset_timeout_elapsed"),
        ("half_open", "closed", "probe_succeeded"),
    ]
    assert seen[0].name == "lst"
    assert seen[0].at == 1000.0
    assert seen[1].at == 1002.0
    records = [r for r in caplog.records if getattr(r, "mulligan_event", "") == "breaker_transition"]
    assert [(r.mulligan_from_state, r.mulligan_to_state) for r in records] == [  # type: ignore[attr-defined]
        ("closed", "open"),
        ("open", "half_open"),
        ("half_open", "closed"),
    ]
    assert records[0].levelno == logging.WARNING
    errors = [r for r in caplog.records if getattr(r, "mulligan_event", "") == "breaker_listener_error"]
    assert len(errors) == 3
    assert breaker.remove_listener(broken)
    assert not breaker.remove_listener(broken)


def test_registry_get_or_create_never_resets() -> None:
    registry = mulligan.BreakerRegistry(failure_threshold=2, reset_timeout=5.0, clock=Clock())
    a = registry.get("user-1")
    assert registry.get("user-1") is a
    trip(a, 2)
    assert a.state == "open"
    assert registry.get("user-1").state == "open"
    assert registry.get("user-2").state == "closed"
    assert a.options["failure_threshold"] == 2
    assert sorted(b.name for b in registry) == ["user-1", "user-2"]
    assert len(registry) == 2
    assert "user-1" in registry and "user-3" not in registry
    with pytest.raises(ValueError):
        registry.get("")


def test_registry_stays_bounded() -> None:
    registry = mulligan.BreakerRegistry(max_breakers=100)
    try:
        for i in range(10_000):
            registry.get(f"user-{i}")  # idle, closed and unreferenced: evictable
        assert len(registry) <= 100
    finally:
        # Every breaker name also got metrics, which fill the metrics
        # registry's own bound: later tests reading metrics by name (the
        # HTTP clients' origins) would find them merged under the overflow name.
        _metrics.reset_metrics()


def test_module_registry_and_decorator() -> None:
    @mulligan.circuit_breaker("test-shared")
    def f() -> int:
        return 3

    assert f() == 3
    assert mulligan.circuit_breaker("test-shared") is f.breaker  # type: ignore[attr-defined]
    assert "test-shared" in mulligan.breakers


def test_validation() -> None:
    with pytest.raises(ValueError, match="half_open_max_calls"):
        CircuitBreaker("x", half_open_max_calls=0)
    with pytest.raises(ValueError, match="reset_timeout"):
        CircuitBreaker("x", reset_timeout=float("nan"))
    with pytest.raises(ValueError, match="window"):
        CircuitBreaker("x", window="sliding")
    with pytest.raises(TypeError):
        CircuitBreaker("x", failure_on=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):

        @CircuitBreaker("x")
        def gen() -> Any:
            yield 1


def test_circuit_open_error_pickles() -> None:
    breaker = CircuitBreaker("p", failure_threshold=1, clock=Clock())
    trip(breaker, 1)
    with pytest.raises(CircuitOpenError) as info:
        breaker(lambda: 1)()
    copy = pickle.loads(pickle.dumps(info.value))
    assert (copy.name, copy.retry_in, str(copy)) == ("p", 30.0, str(info.value))


def test_wrapper_keeps_metadata() -> None:
    breaker = CircuitBreaker("meta")

    @breaker
    def documented(x: int) -> int:
        """Doc."""
        return x

    assert documented.__name__ == "documented"
    assert documented.__doc__ == "Doc."
    assert documented(4) == 4
    assert breaker.counts["successes"] == 1


def test_retry_hook_records_one_result_per_call_and_probes_at_once() -> None:
    # The recording rule of a retry loop around a breaker is the pipeline's
    # (core/src/pipeline/pipeline.cc), so it is driven here through @retry.
    clock = mulligan.testing.FakeClock()
    breaker = CircuitBreaker("r", failure_threshold=2, reset_timeout=1.0, clock=clock.monotonic)

    def logical_call(attempts: int, per_attempt: bool = False) -> int:
        made = 0

        @mulligan.retry(on=ConnectionError, attempts=attempts, base_delay=0.0, breaker=breaker,
                        breaker_per_attempt=per_attempt)
        def attempt() -> None:
            nonlocal made
            made += 1
            raise ConnectionError("down")

        with contextlib.suppress(ConnectionError, CircuitOpenError):
            attempt()
        return made

    with clock:
        assert logical_call(5) == 5
        assert breaker.counts["failures"] == 1  # one result per logical call
        assert logical_call(5) == 5
        assert breaker.state == "open"
        clock.advance(1.0)
        # Half-open: the first attempt is a probe; its failure is recorded at once,
        # which reopens the breaker, so the second attempt is refused.
        assert logical_call(5) == 1
        assert breaker.state == "open"
        breaker.reset()
        assert logical_call(5, per_attempt=True) == 2  # tripped by the 2nd attempt


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "name must not be empty"),
        ("a\nb", "name must not contain control characters (CR, LF, TAB, NUL...); found byte 10"),
        ("a\rb", "found byte 13"),
        ("a\x7fb", "found byte 127"),
    ],
)
def test_a_breaker_name_that_is_empty_or_holds_a_control_character_is_refused(
    name: str, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        mulligan.CircuitBreaker(name)
    assert mulligan.CircuitBreaker("payments api \u00e9").name == "payments api \u00e9"
