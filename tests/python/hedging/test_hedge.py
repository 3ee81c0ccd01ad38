"""@mulligan.hedge on coroutine functions, on an event loop with virtual time.

The loop's clock only moves when every task waits: its selector jumps to the
next timer instead of sleeping, so `await asyncio.sleep(0.3)` takes no real
time and each copy's start time is exact. Expected values are worked out
from gRPC A6's hedging rules (hedging/hedging.h).
"""

from __future__ import annotations

import asyncio
import selectors
from typing import Any

import pytest

import mulligan


class _VirtualSelector(selectors.DefaultSelector):
    def __init__(self, loop_ref: list[Any]) -> None:
        super().__init__()
        self._loop_ref = loop_ref

    def select(self, timeout: Any = None) -> Any:
        ready = super().select(0)
        if not ready and timeout is not None and timeout > 0:
            self._loop_ref[0]._virtual += timeout
        return ready


class VirtualLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        ref: list[Any] = []
        super().__init__(_VirtualSelector(ref))
        ref.append(self)
        self._virtual = 1000.0

    def time(self) -> float:
        return self._virtual


def run(coro: Any) -> Any:
    loop = VirtualLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


class Service:
    """Copies whose latency and outcome are scripted per copy number."""

    def __init__(self, script: list[tuple[float, Any]]) -> None:
        self.script = script
        self.starts: list[float] = []
        self.keys: list[Any] = []
        self.cancelled: list[int] = []

    async def __call__(self, idempotency_key: Any = None) -> Any:
        n = len(self.starts)
        self.starts.append(round(asyncio.get_running_loop().time() - 1000.0, 6))
        self.keys.append(idempotency_key)
        latency, result = self.script[n]
        try:
            await asyncio.sleep(latency)
        except asyncio.CancelledError:
            self.cancelled.append(n + 1)
            raise
        if isinstance(result, BaseException):
            raise result
        return result


def test_fixed_delay_exact_start_times_and_losers_cancelled() -> None:
    svc = Service([(1.0, "slow"), (0.05, "fast"), (1.0, "never")])
    fn = mulligan.hedge(max_attempts=3, delay=0.1, name="hedge-fixed")(svc.__call__)
    assert run(fn()) == "fast"
    # Copy 1 at 0, copy 2 at 0.1; copy 2 wins at 0.15, before copy 3 is due
    # (0.2): copy 3 never starts, copy 1 is cancelled.
    assert svc.starts == [0.0, 0.1]
    assert svc.cancelled == [1]
    snap = {m["name"]: m for m in mulligan.metrics_snapshot()}["hedge-fixed"]
    assert (snap["hedges"], snap["hedges_won"], snap["hedge_cancelled"]) == (1, 1, 1)
    assert (snap["successes"], snap["failures"]) == (1, 0)


def test_never_more_than_max_attempts() -> None:
    svc = Service([(1.0, "a"), (1.0, "b"), (1.0, "c"), (1.0, "d")])
    fn = mulligan.hedge(max_attempts=3, delay=0.1, report_metrics=False)(svc.__call__)
    assert run(fn()) == "a"
    assert svc.starts == [0.0, 0.1, 0.2]
    assert svc.cancelled == [2, 3]


def test_non_fatal_failure_starts_the_next_copy_at_once() -> None:
    svc = Service([(0.02, ConnectionError("down")), (0.03, "ok")])
    fn = mulligan.hedge(max_attempts=2, delay=5.0, on=ConnectionError, report_metrics=False)(svc.__call__)
    assert run(fn()) == "ok"
    assert svc.starts == [0.0, 0.02]


def test_fatal_failure_is_raised_and_cancels_the_rest() -> None:
    svc = Service([(1.0, "slow"), (0.01, ValueError("bad request"))])
    fn = mulligan.hedge(max_attempts=2, delay=0.1, on=ConnectionError, report_metrics=False)(svc.__call__)
    with pytest.raises(ValueError, match="bad request"):
        run(fn())
    assert svc.starts == [0.0, 0.1]
    assert svc.cancelled == [1]


def test_every_copy_failing_raises_the_last_failure() -> None:
    svc = Service([(0.5, ConnectionError("one")), (0.1, ConnectionError("two"))])
    fn = mulligan.hedge(max_attempts=2, delay=0.2, report_metrics=False)(svc.__call__)
    with pytest.raises(ConnectionError, match="one"):
        run(fn())
    # Copy 2 (0.2 .. 0.3) fails first, copy 1 (0 .. 0.5) last.
    assert svc.starts == [0.0, 0.2]


def test_keyed_calls_send_one_key_on_every_copy() -> None:
    svc = Service([(1.0, "a"), (1.0, "b"), (0.5, "c")])
    fn = mulligan.hedge(max_attempts=3, delay=0.1, report_metrics=False)(svc.__call__)
    assert run(fn()) == "c"
    assert len(svc.keys) == 3 and len(set(svc.keys)) == 1 and svc.keys[0] is not None
    svc2 = Service([(1.0, "a"), (0.1, "b")])
    fn2 = mulligan.hedge(max_attempts=2, delay=0.1, report_metrics=False)(svc2.__call__)
    assert run(fn2(idempotency_key="k-1")) == "b"
    assert svc2.keys == ["k-1", "k-1"]
    # By position too: the caller's key, not a new one on top of it.
    svc3 = Service([(1.0, "a"), (0.1, "b")])
    fn3 = mulligan.hedge(max_attempts=2, delay=0.1, report_metrics=False)(svc3.__call__)
    assert run(fn3("k-2")) == "b"
    assert svc3.keys == ["k-2", "k-2"]


def test_quantile_delay_after_a_latency_history() -> None:
    latencies = [0.01 * i for i in range(1, 11)]
    svc = Service([(lat, "ok") for lat in latencies] + [(1.0, "slow"), (0.01, "hedge")])
    fn = mulligan.hedge(
        max_attempts=2, delay=1.0, quantile=0.9, quantile_window=10, quantile_min_samples=10,
        report_metrics=False,
    )(svc.__call__)

    async def script() -> Any:
        for _ in latencies:
            await fn()
        return await fn()

    assert run(script()) == "hedge"
    # p90 of 10..100 ms by nearest rank: 90 ms after the last call began.
    last_call = sum(latencies)
    assert svc.starts[-1] == pytest.approx(last_call + 0.09, abs=1e-9)


def test_open_breaker_refuses_the_first_copy() -> None:
    breaker = mulligan.CircuitBreaker("hedge-db", failure_threshold=1)
    breaker.force_open()
    svc = Service([(0.1, "a")])
    fn = mulligan.hedge(max_attempts=2, delay=0.1, breaker=breaker, report_metrics=False)(svc.__call__)
    with pytest.raises(mulligan.CircuitOpenError) as raised:
        run(fn())
    assert raised.value.retry_in == float("inf")  # forced open
    assert svc.starts == []


def test_cancelling_the_caller_cancels_every_copy() -> None:
    svc = Service([(5.0, "a"), (5.0, "b")])
    fn = mulligan.hedge(max_attempts=2, delay=0.1, name="hedge-caller-cancel")(svc.__call__)

    async def script() -> None:
        task = asyncio.ensure_future(fn())
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(script())
    assert svc.starts == [0.0, 0.1]
    assert sorted(svc.cancelled) == [1, 2]
    # The caller's cancel counts the call cancelled, never failed (DESIGN.md;
    # HedgedCall::Cancel, 0.6): 2 copies started, both cancelled.
    snap = {m["name"]: m for m in mulligan.metrics_snapshot()}["hedge-caller-cancel"]
    assert (snap["calls"], snap["attempts"], snap["successes"], snap["failures"]) == (1, 2, 0, 0)
    assert (snap["cancelled"], snap["hedges"], snap["hedge_cancelled"], snap["in_flight"]) == (1, 1, 2, 0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_attempts": 1}, "^mulligan.hedge: max_attempts must be >= 2, got 1$"),
        ({"delay": -1.0}, "^mulligan.hedge: delay must be >= 0 seconds"),
        # The user's names and the owner, not the engine's (found by a fresh user).
        ({"quantile": 1.5}, "^mulligan.hedge: quantile must be in \\(0, 1\\], got 1.5$"),
        ({"quantile": 0}, "^mulligan.hedge: quantile must be in \\(0, 1\\], got 0$"),
        ({"delay": 1e300}, "^mulligan.hedge: delay must be a finite number of seconds below 9.2e9, got 1e\\+300$"),
        ({"quantile_window": 0}, "^mulligan.hedge: quantile_window must be >= 1"),
        ({"quantile_window": 10, "quantile_min_samples": 11}, "^mulligan.hedge: .*quantile_min_samples"),
    ],
)
def test_bad_options_are_refused_naming_the_field(options: dict[str, Any], message: str) -> None:
    async def f() -> None: ...

    with pytest.raises(ValueError, match=message):
        mulligan.hedge(**options)(f)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"budget": 3}, "^mulligan.hedge: budget must be a mulligan.RetryBudget, got 3$"),
        ({"breaker": "x"}, "^mulligan.hedge: breaker must be a mulligan.CircuitBreaker, got 'x'$"),
        ({"max_attempts": 2.5}, "^mulligan.hedge: max_attempts must be an int, got 2.5$"),
    ],
)
def test_wrong_types_are_a_type_error(options: dict[str, Any], message: str) -> None:
    # They raised AttributeError ('int' object has no attribute '_core').
    async def f() -> None: ...

    with pytest.raises(TypeError, match=message):
        mulligan.hedge(**options)(f)


@pytest.mark.parametrize("copies", [7, 10**20])
def test_any_count_above_five_is_five(copies: int) -> None:
    # gRPC A6: above 5 is 5, however large (10**20 was refused as > INT_MAX).
    svc = Service([(1.0, "slow")] * 4 + [(0.5, "fifth")] + [(0.0, "sixth")])
    fn = mulligan.hedge(max_attempts=copies, delay=0.1, report_metrics=False)(svc.__call__)
    assert run(fn()) == "fifth"
    assert svc.starts == [0.0, 0.1, 0.2, 0.3, 0.4]
    assert sorted(svc.cancelled) == [1, 2, 3, 4]
