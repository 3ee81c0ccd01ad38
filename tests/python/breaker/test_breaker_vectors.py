"""The shared circuit breaker scripts of tests/vectors/breaker.json (also run by C++ and C)."""

from __future__ import annotations

import json
import math
import pathlib
from typing import Any, Dict

import pytest

from mulligan import CircuitBreaker, CircuitOpenError

VECTORS = pathlib.Path(__file__).resolve().parents[2] / "vectors" / "breaker.json"
CASES = json.loads(VECTORS.read_text(encoding="utf-8"))["cases"]
START = 1000.0


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_breaker_script(case: Dict[str, Any]) -> None:
    clock = Clock()
    breaker = CircuitBreaker("vector", clock=clock, **case["options"])
    permits: Dict[str, Any] = {}
    for index, step in enumerate(case["steps"]):
        where = f"step {index}: {step}"
        clock.now = START + step["at"]
        op = step["op"]
        expect = step.get("expect", {})
        admitted = None
        retry_in = None
        if op == "acquire":
            try:
                permits[step["permit"]] = breaker._acquire()
                admitted, retry_in = True, 0.0
            except CircuitOpenError as e:
                permits[step["permit"]] = None
                admitted, retry_in = False, e.retry_in
        elif op == "record":
            permit = permits[step["permit"]]
            result = {"success": 0, "failure": 1, "ignored": 2}[step["result"]]
            # The breaker measures the duration from the permit's acquisition
            # to `now`; the scripts give durations that agree with that.
            breaker._record(permit, result)
        elif op in ("force_open", "disable", "metrics_only", "reset"):
            getattr(breaker, op)()
        else:
            assert op == "check", where

        if "admitted" in expect:
            assert admitted == expect["admitted"], where
        if "state" in expect:
            assert breaker.state == expect["state"], where
        if "retry_in" in expect:
            actual = retry_in if op == "acquire" else breaker.time_until_probe
            wanted = math.inf if expect["retry_in"] is None else expect["retry_in"]
            assert actual == pytest.approx(wanted, abs=1e-6), where
        counts = breaker.counts
        for key in ("consecutive_failures", "successes", "failures", "ignored", "rejected"):
            if key in expect:
                assert counts[key] == expect[key], (where, key, counts)
