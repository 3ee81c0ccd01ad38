"""The shared vectors (tests/vectors/*.json) through the Python front doors.

backoff.json runs through ``mulligan.retrying`` (retry/test_retry.py runs it through
the decorator too); deadline.json's session scripts run through the engine's
policy and session as bound in ``_core`` and, for the exception-only scripts,
through ``@mulligan.retry`` on a FakeClock; retry_after.json is in
http/test_retry_after.py.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

import mulligan
from conftest import load_vectors
from mulligan import _core
from mulligan.testing import FakeClock

START = 1000.0


@pytest.mark.parametrize("case", load_vectors("backoff.json"), ids=lambda c: c["name"])
def test_backoff_vectors_through_retrying(case: dict[str, Any]) -> None:
    seen: list[float] = []
    block = mulligan.retrying(
        on=ValueError,
        attempts=case["count"] + 1,
        backoff=case["backoff"],
        base_delay=case["base_ns"] / 1e9,
        multiplier=case["multiplier"],
        max_delay=case["max_delay_ns"] / 1e9,
        jitter=case["jitter"],
        jitter_fraction=case["jitter_fraction"],
        seed=case["seed"],
        on_retry=lambda d: seen.append(d.delay),
    )
    with FakeClock(), pytest.raises(ValueError):
        for attempt in block:
            with attempt:
                raise ValueError
    # Exact to the nanosecond: the engine's Duration is integer nanoseconds.
    assert [round(d * 1e9) for d in seen] == case["expected_ns"]


def _policy(spec: dict[str, Any]) -> _core.RetryPolicy:
    names = {"max_attempts": "attempts", "retry_after_clamp": "clamp_retry_after"}
    return _core.RetryPolicy(**{names.get(k, k): v for k, v in spec.items()})


def _outcome(spec: dict[str, Any]) -> _core.Outcome:
    if "http_status" in spec:
        return _core.Outcome.http(spec["http_status"], spec.get("retry_after"))
    if spec["error"] == "retryable":
        return _core.Outcome.failure(True, spec.get("retry_after"))
    return _core.Outcome.transport(_core.ErrorKind.__members__[spec["error"].upper()])


@pytest.mark.parametrize("case", load_vectors("deadline.json"), ids=lambda c: c["name"])
def test_deadline_scripts_through_the_session(case: dict[str, Any]) -> None:
    session = _policy(case["policy"]).begin(START, case.get("replay_safe", True))
    for step in case["steps"]:
        decision = session.on_outcome(_outcome(step["outcome"]), START + step["at"])
        expect = step["expect"]
        assert decision.retry == (expect["action"] == "retry"), step
        if expect["action"] == "retry":
            assert decision.delay == expect["delay"]
            assert decision.from_retry_after == expect.get("from_retry_after", False)
        else:
            assert (decision.reason, decision.delay) == (expect["reason"], 0.0)


def _decorator_cases() -> list[dict[str, Any]]:
    # Scripts made only of retryable failures reported back to back (each `at`
    # is the previous `at` plus its delay) replay exactly through the decorator.
    out = []
    for case in load_vectors("deadline.json"):
        steps = case["steps"]
        if all(s["outcome"] == {"error": "retryable"} for s in steps) and steps[0]["at"] == 0.0:
            out.append(case)
    return out


@pytest.mark.parametrize("case", _decorator_cases(), ids=lambda c: c["name"])
def test_deadline_scripts_through_the_decorator(case: dict[str, Any]) -> None:
    policy = dict(case["policy"])
    policy["attempts"] = policy.pop("max_attempts")
    calls = 0

    @mulligan.retry(on=ValueError, **policy)
    def fails() -> None:
        nonlocal calls
        calls += 1
        raise ValueError

    with FakeClock(start=START) as clock, pytest.raises(ValueError) as info:
        fails()
    steps = case["steps"]
    assert calls == len(steps)
    assert clock.sleeps == [s["expect"]["delay"] for s in steps[:-1]]
    assert [START + s["at"] for s in steps[1:]] == [
        START + sum(clock.sleeps[: i + 1]) for i in range(len(steps) - 1)
    ]
    if sys.version_info >= (3, 11):
        n = len(steps)
        assert info.value.__notes__ == [
            f"mulligan: gave up after {n} attempt{'' if n == 1 else 's'}"
            f" ({steps[-1]['expect']['reason']})"
        ]
