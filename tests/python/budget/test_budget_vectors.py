"""tests/vectors/budget.json (tests/core/gen_budget_vectors.py) through the
Python binding: the same retry budget and adaptive throttling scripts the C++
suite runs (tests/core/budget_vectors_test.cc)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from mulligan import _core

VECTORS = json.loads(
    (pathlib.Path(__file__).parents[2] / "vectors" / "budget.json").read_text(encoding="utf-8")
)


def _make(case: dict[str, Any]) -> Any:
    o = case["options"]
    if case["kind"] == "token_bucket":
        return _core.RetryBudget.token_bucket(o["max_tokens"], o["token_ratio"], case["name"])
    if case["kind"] == "quota":
        return _core.RetryBudget.quota(o["capacity"], o["retry_cost"], o["timeout_cost"],
                                       o["throttling_cost"], o["no_retry_increment"], case["name"])
    return _core.RetryBudget.ratio(o["ttl"], o["percent"], o["min_retries_per_second"],
                                   case["name"], case.get("start", 0.0))


@pytest.mark.parametrize("case", VECTORS["budgets"], ids=lambda c: c["name"])
def test_budget_script(case: dict[str, Any]) -> None:
    budget = _make(case)
    for i, step in enumerate(case["steps"]):
        op, t = step["op"], step["t"]
        if op == "failure":
            budget.on_failure(step["kind"], t)
        elif op == "retry":
            for _ in range(step.get("repeat", 1)):
                cost = budget.try_retry(step["kind"], t)
                assert (cost >= 0) == step["allowed"], (i, step)
                if "cost" in step:
                    assert cost == step["cost"], (i, step)
        elif op == "success":
            budget.add_successes(step.get("count", 1))
        elif op == "retried_success":
            budget.on_retried_success(step["cost"])
        elif op == "call":
            budget.on_call_started(t)
        else:
            raise AssertionError(f"unknown op {op}")
        assert budget.tokens(t) == pytest.approx(step["tokens"], abs=1e-12), (i, step)


@pytest.mark.parametrize("case", VECTORS["throttles"], ids=lambda c: c["name"])
def test_throttle_script(case: dict[str, Any]) -> None:
    o = case["options"]
    throttle = _core.AdaptiveThrottle(o["window"], o["k"], o["seed"])
    for i, step in enumerate(case["steps"]):
        if step["op"] == "admit":
            assert throttle.probability(step["t"]) == step["p"], (i, step)
            assert throttle.admit(step["t"]) == step["admitted"], (i, step)
        else:
            throttle.record(step["outcome"] == "accept")
