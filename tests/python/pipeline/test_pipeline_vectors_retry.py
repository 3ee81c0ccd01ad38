"""tests/vectors/pipeline.json through ``@mulligan.retry``, on a plain
function and on a coroutine function (the sync and the async driver).

Each scripted attempt is one call of the decorated function: success returns,
retryable raises ConnectionError (which ``on=ConnectionError`` names; its
Retry-After hint is an attribute read by ``delay_hint=``), terminal raises
ValueError (which ``on=`` does not name). A case's breaker is a
``mulligan.CircuitBreaker`` on the FakeClock, passed as ``breaker=``, and
each case reports under a metrics name of its own. The waits are the
FakeClock's sleeps, so nothing sleeps for real.

What each call is checked for, and where it is read:

- attempts: the times the function ran;
- waits: ``FakeClock.sleeps`` during the call;
- stop reason: ``fn.statistics.last.stop_reason``, which a call that went
  through the retry loop publishes. Two kinds of call never enter that loop
  and publish nothing (the success path stays free of allocations): a
  first-attempt success, and a first attempt that raised an exception
  ``on=`` does not name (it propagates as it is). For those the test
  checks that ``last`` stays None and reads the reason from the result (a
  return is "succeeded", the ValueError "terminal"). A refusal is the
  CircuitOpenError ("circuit_open");
- the exception that ends a failed call is the last attempt's own;
- the breaker's state after the call (``breaker.state``);
- after the case, the metrics totals (calls, attempts, retries, successes,
  failures) of the function's name.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Optional

import pytest

import mulligan
from mulligan.testing import FakeClock

from pipeline_script import CASES, Step, check_keys, metrics_of, steps_of, unique


class Retryable(ConnectionError):
    """A retryable failure; ``retry_after`` is its delay hint (seconds) or None."""

    def __init__(self, retry_after: Optional[int]) -> None:
        super().__init__("retryable")
        self.retry_after = retry_after


class Scripted:
    """The decorated operation: each call runs the next step of the script loaded."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.made = 0

    def load(self, steps: list[Step]) -> None:
        self.steps = steps
        self.made = 0

    def run(self) -> str:
        # A call that ran out of script made more attempts than the vector
        # says could ever be made: fail loudly (AssertionError is not
        # retried).
        assert self.made < len(self.steps), f"attempt {self.made + 1}: the script ran out"
        step = self.steps[self.made]
        self.made += 1
        if step.outcome == "success":
            return "ok"
        if step.outcome == "terminal":
            raise ValueError("terminal")
        raise Retryable(step.retry_after)


def retry_options(case: dict[str, Any], breaker: Optional[mulligan.CircuitBreaker]) -> dict[str, Any]:
    """``@mulligan.retry`` keywords for the case's policy: no jitter, so every wait is exact."""
    policy = case["policy"]
    options: dict[str, Any] = {
        "on": ConnectionError,
        "attempts": policy["max_attempts"],
        "backoff": policy["backoff"],
        "base_delay": policy["base_delay"],
        "jitter": "none",
        "delay_hint": lambda exc: getattr(exc, "retry_after", None),
        "breaker": breaker,
    }
    for key in ("multiplier", "retry_after_max", "deadline"):
        if key in policy:
            options[key] = policy[key]
    return options


def breaker_for(case: dict[str, Any], clock: FakeClock, door: str) -> Optional[mulligan.CircuitBreaker]:
    if "breaker" not in case:
        return None
    return mulligan.CircuitBreaker(unique(f"{door}-breaker"), clock=clock.monotonic, **case["breaker"])


def named(door: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` under a qualified name of its own: the decorator reports its
    metrics under it, so every case has its own totals."""
    fn.__name__ = fn.__qualname__ = unique(door).replace("-", "_")
    return fn


def check_call(
    where: str,
    call: dict[str, Any],
    op: Scripted,
    waits: list[float],
    raised: Optional[BaseException],
    stats: Optional[mulligan.RetryStatistics],
    breaker: Optional[mulligan.CircuitBreaker],
) -> None:
    """Checks one decorated call against the call's ``expect``."""
    want = call["expect"]
    refused = isinstance(raised, mulligan.CircuitOpenError)
    last = op.steps[op.made - 1] if op.made else None
    if refused:
        assert isinstance(raised, mulligan.CircuitOpenError)
        reason = "circuit_open"
        assert raised.attempts == op.made, where
        if op.made == 0:
            assert stats is None, where  # refused before the first attempt: no loop ran
        else:
            assert stats is not None, where
            assert (stats.stop_reason, stats.attempts) == ("circuit_open", op.made), where
    elif op.made == 1 and stats is None and (
        raised is None or (isinstance(raised, ValueError) and last is not None and last.outcome == "terminal")
    ):
        # The two calls that never enter the retry loop (see the module docstring).
        reason = "succeeded" if raised is None else "terminal"
    else:
        assert stats is not None, (where, raised)
        reason = stats.stop_reason
        assert stats.attempts == op.made, where
        assert stats.waited == pytest.approx(sum(waits)), where
    if not refused:
        # A failed call raises its last attempt's own exception.
        assert last is not None, where
        expected_type = {"success": type(None), "retryable": Retryable, "terminal": ValueError}[last.outcome]
        assert type(raised) is expected_type, (where, raised)
    assert op.made == want["attempts"], where
    assert waits == want["delays"], where
    assert reason == want["stop_reason"], where
    assert refused == want["refused"], where
    if "breaker_state" in want:
        assert breaker is not None, where
        assert breaker.state == want["breaker_state"], where


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_pipeline_vectors_through_the_sync_decorator(case: dict[str, Any]) -> None:
    check_keys(case)
    op = Scripted()
    with FakeClock() as clock:
        breaker = breaker_for(case, clock, "sync")
        fn = mulligan.retry(**retry_options(case, breaker))(named("sync", lambda: op.run()))
        for i, call in enumerate(case["calls"]):
            where = f"{case['name']}, call {i + 1}"
            clock.advance(call.get("advance", 0))
            op.load(steps_of(call))
            fn.statistics.clear()
            before = len(clock.sleeps)
            raised: Optional[BaseException] = None
            try:
                assert fn() == "ok"
            except (ConnectionError, ValueError, mulligan.CircuitOpenError) as e:
                raised = e
            check_call(where, call, op, clock.sleeps[before:], raised, fn.statistics.last, breaker)
    assert metrics_of(fn.__qualname__) == case["expect_metrics"], case["name"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_pipeline_vectors_through_the_async_decorator(case: dict[str, Any]) -> None:
    check_keys(case)
    op = Scripted()

    async def attempt() -> str:
        await asyncio.sleep(0)  # a real suspension point, as an awaited call has
        return op.run()

    async def run_case(clock: FakeClock) -> Callable[..., Any]:
        breaker = breaker_for(case, clock, "async")
        fn = mulligan.retry(**retry_options(case, breaker))(named("async", attempt))
        for i, call in enumerate(case["calls"]):
            where = f"{case['name']}, call {i + 1}"
            clock.advance(call.get("advance", 0))
            op.load(steps_of(call))
            # Statistics are per task: cleared and read inside this one.
            fn.statistics.clear()
            before = len(clock.sleeps)
            raised: Optional[BaseException] = None
            try:
                assert await fn() == "ok"
            except (ConnectionError, ValueError, mulligan.CircuitOpenError) as e:
                raised = e
            check_call(where, call, op, clock.sleeps[before:], raised, fn.statistics.last, breaker)
        return fn

    with FakeClock() as clock:
        fn = asyncio.run(run_case(clock))
    assert metrics_of(fn.__qualname__) == case["expect_metrics"], case["name"]
