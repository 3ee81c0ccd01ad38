"""Writes tests/vectors/budget.json: scripted retry budgets and adaptive
throttles, with every expected value computed here, independently of the
engine (DESIGN.md section 8). The C++ (tests/core/budget_vectors_test.cc) and
Python (tests/python/budget/test_budget_vectors.py) suites replay them.

    python3 tests/core/gen_budget_vectors.py   # rewrites tests/vectors/budget.json

Models (exact integer arithmetic, as the sources specify):
- token bucket, gRPC A6 retryThrottling: milli-tokens; start full; a
  retryable failure takes 1000, a success adds ratio*1000, clamped to
  [0, max]; a retry is allowed while 2*tokens > max.
- quota, AWS SDK standard mode (2020): capacity units; a retry takes its
  cost (retry 5, timeout 10, throttling 5) when the capacity left covers it;
  a success with no retry adds 1, one after retries refunds the last cost.
- ratio, Finagle RetryBudget: deposits of 1000 per call in a window of ttl
  (10 slices); a retry withdraws 1000/percent while sum + reserve covers it;
  reserve = min_retries_per_second * ttl * withdrawal.
- adaptive throttle, SRE book: p = max(0, (R - K*A) / (R + 1)); a draw
  u = splitmix64 / 2^53 happens only when p > 0; reject when u < p.
Every step is {"t": seconds, "op": ..., "kind": ...} with its expectation.
"""

from __future__ import annotations

import json
import os
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "vectors", "budget.json")
MASK = (1 << 64) - 1


class Window:
    """Ten slices of window/10 seconds; slice i holds [i*s, (i+1)*s)."""

    def __init__(self, window_s: float) -> None:
        self.slice_ns = int(window_s * 1e9) // 10
        self.slices: dict[int, int] = {}

    def add(self, t: float, amount: int) -> None:
        index = int(round(t * 1e9)) // self.slice_ns
        self.slices[index] = self.slices.get(index, 0) + amount

    def sum(self, t: float) -> int:
        current = int(round(t * 1e9)) // self.slice_ns
        return sum(v for i, v in self.slices.items() if current - 10 < i <= current)


def token_bucket_case() -> dict[str, Any]:
    # A6's example, worked by hand: max_tokens 10, token_ratio 0.1, so
    # 10000 milli-tokens, the threshold is 5000 (retry while 2*t > 10000).
    # fail 1: 9000 -> retry ok; fail 2: 8000 ok; fail 3: 7000 ok;
    # fail 4: 6000 ok; fail 5: 5000 -> 2*5000 = 10000 is not > 10000: refused.
    # Then successes add 100 each: 5100 after one -> retry allowed again
    # after the next failure? 5100 - 1000 = 4100: refused. It takes 10
    # successes to get back to 6000, then a failure leaves 5000: refused; 11
    # successes give 6100, a failure 5100: allowed.
    max_milli, ratio = 10000, 100
    level = max_milli
    steps = []

    def failure_then_retry() -> None:
        nonlocal level
        level = max(0, level - 1000)
        allowed = 2 * level > max_milli
        steps.append({"t": 0.0, "op": "failure", "kind": "other", "tokens": level / 1000})
        steps.append({"t": 0.0, "op": "retry", "kind": "other", "allowed": allowed,
                      "tokens": level / 1000})

    for _ in range(5):
        failure_then_retry()
    for _ in range(11):
        level = min(max_milli, level + ratio)
        steps.append({"t": 0.0, "op": "success", "tokens": level / 1000})
    failure_then_retry()
    # Many successes saturate at max_tokens.
    for _ in range(60):
        level = min(max_milli, level + ratio)
    steps.append({"t": 0.0, "op": "success", "count": 60, "tokens": level / 1000})
    # A retried success adds token_ratio too (it is one successful attempt).
    for _ in range(3):
        failure_then_retry()
    level = min(max_milli, level + ratio)
    steps.append({"t": 0.0, "op": "retried_success", "cost": 0, "tokens": level / 1000})
    return {"name": "a6_example", "kind": "token_bucket",
            "options": {"max_tokens": 10, "token_ratio": 0.1}, "steps": steps}


def quota_case() -> dict[str, Any]:
    capacity = 500
    level = capacity
    steps = []
    costs = {"other": 5, "timeout": 10, "throttling": 5}

    def retry(kind: str) -> int:
        nonlocal level
        cost = costs[kind]
        allowed = level >= cost
        if allowed:
            level -= cost
        steps.append({"t": 0.0, "op": "retry", "kind": kind, "allowed": allowed,
                      "cost": cost if allowed else -1, "tokens": level})
        return cost if allowed else -1

    retry("other")          # 495
    retry("timeout")        # 485
    retry("throttling")     # 480
    last = retry("timeout")  # 470
    level = min(capacity, level + last)  # the call succeeded: refund 10 -> 480
    steps.append({"t": 0.0, "op": "retried_success", "cost": last, "tokens": level})
    level = min(capacity, level + 1)  # a success with no retry: +1 -> 481
    steps.append({"t": 0.0, "op": "success", "tokens": level})
    # Drain with timeouts: 481 -> 1 after 48 retries; the 49th is refused.
    for _ in range(48):
        cost = costs["timeout"]
        level -= cost
    steps.append({"t": 0.0, "op": "retry", "kind": "timeout", "repeat": 48, "allowed": True,
                  "cost": 10, "tokens": level})
    retry("timeout")   # 1 < 10: refused
    retry("other")     # 1 < 5: refused
    level = min(capacity, level + 4)
    steps.append({"t": 0.0, "op": "success", "count": 4, "tokens": level})
    retry("other")     # 5 >= 5: allowed -> 0
    # Refunds never exceed capacity.
    level = min(capacity, level + 1000)
    steps.append({"t": 0.0, "op": "success", "count": 1000, "tokens": level})
    return {"name": "aws_standard_quota", "kind": "quota",
            "options": {"capacity": 500, "retry_cost": 5, "timeout_cost": 10,
                        "throttling_cost": 5, "no_retry_increment": 1},
            "steps": steps}


def ratio_case() -> dict[str, Any]:
    # ttl 10 s (slices of 1 s), percent 0.2 -> withdrawal 5000, min 1/s ->
    # reserve 1 * 10 * 5000 = 50000 (10 retries).
    ttl, withdrawal = 10.0, 5000
    reserve = 1 * 10 * withdrawal
    window = Window(ttl)
    steps = []

    def tokens(t: float) -> float:
        return (window.sum(t) + reserve) / withdrawal

    def call(t: float) -> None:
        window.add(t, 1000)
        steps.append({"t": t, "op": "call", "tokens": tokens(t)})

    def retry(t: float) -> None:
        allowed = window.sum(t) + reserve >= withdrawal
        if allowed:
            window.add(t, -withdrawal)
        steps.append({"t": t, "op": "retry", "kind": "other", "allowed": allowed,
                      "cost": withdrawal if allowed else -1, "tokens": tokens(t)})

    for i in range(50):
        call(0.5 + i * 0.01)  # 50 calls in slice 0: 50000 -> 10 retries' worth
    for i in range(21):
        retry(1.5)  # 20 allowed (10 from deposits + 10 reserve), the 21st refused
    # At t = 10.5 slice 0 has expired (current slice 10 keeps 1..10): the
    # withdrawals of slice 1 (-100000) remain and outweigh the reserve.
    retry(10.5)
    # At t = 11.5 slice 1 expires too: only the reserve is left.
    retry(11.5)
    return {"name": "finagle_ratio", "kind": "ratio",
            "options": {"ttl": 10, "percent": 0.2, "min_retries_per_second": 1},
            "start": 0.0, "steps": steps}


def splitmix(state: int) -> tuple[int, float]:
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    z ^= z >> 31
    return state, (z >> 11) / 9007199254740992.0


def throttle_case() -> dict[str, Any]:
    k = 2.0
    window_s = 120.0
    requests, accepts = Window(window_s), Window(window_s)
    state = 42
    steps = []

    def admit(t: float, outcome: str) -> None:
        nonlocal state
        r, a = requests.sum(t), accepts.sum(t)
        p = max(0.0, (r - k * a) / (r + 1.0))
        requests.add(t, 1)
        step: dict[str, Any] = {"t": t, "op": "admit", "p": p}
        admitted = True
        if p > 0.0:
            state, u = splitmix(state)
            step["u"] = u
            admitted = not (u < p)
        step["admitted"] = admitted
        steps.append(step)
        if admitted:
            steps.append({"t": t, "op": "record", "outcome": outcome})
            if outcome == "accept":
                accepts.add(t, 1)

    # A healthy minute: 20 requests, all accepted: p stays 0.
    for i in range(20):
        admit(1.0 + i, "accept")
    # The backend starts answering 503: after 40 overloaded answers R - 2A
    # turns positive (R > 40) and local rejections begin.
    for i in range(80):
        admit(30.0 + i * 0.5, "overload")
    # Two minutes later the healthy slices have expired: only overload left.
    for i in range(10):
        admit(200.0 + i, "overload")
    return {"name": "sre_k2_scripted", "options": {"window": window_s, "k": k, "seed": 42},
            "steps": steps}


def main() -> None:
    data = {
        "description": "Retry budgets and adaptive throttling; see tests/core/gen_budget_vectors.py",
        "budgets": [token_bucket_case(), quota_case(), ratio_case()],
        "throttles": [throttle_case()],
    }
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
