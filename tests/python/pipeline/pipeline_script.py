"""tests/vectors/pipeline.json for the Python front doors: the cases, their
scripts, and the nginx side of the HTTP runs.

Shared by test_pipeline_vectors_retry.py (``@mulligan.retry`` on plain and
coroutine functions) and test_pipeline_vectors_http.py (``mulligan.Client``
and ``mulligan.AsyncClient`` against nginx's /script location). Nothing here
computes an expected value: every one is read from the vector file.
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass
from typing import Any, Optional

from conftest import load_vectors

__all__ = [
    "CASES",
    "Step",
    "breaker_state_of",
    "check_keys",
    "logged_for",
    "metrics_of",
    "script_url",
    "steps_of",
    "unique",
]

CASES: list[dict[str, Any]] = load_vectors("pipeline.json")

# The keys a case, a call, a step and an expectation may have. A key added to
# the file that no runner here knows fails these tests instead of being
# ignored silently.
CASE_KEYS = {"name", "policy", "breaker", "calls", "expect_metrics"}
POLICY_KEYS = {"max_attempts", "backoff", "base_delay", "multiplier", "retry_after_max", "deadline"}
BREAKER_KEYS = {"failure_threshold", "reset_timeout", "half_open_max_calls"}
CALL_KEYS = {"advance", "script", "expect"}
EXPECT_KEYS = {"attempts", "delays", "stop_reason", "refused", "breaker_state"}
METRICS_KEYS = ("calls", "attempts", "retries", "successes", "failures")


@dataclass(frozen=True)
class Step:
    """One scripted attempt: "success", "retryable" or "terminal", and the
    Retry-After hint in whole seconds (None without one)."""

    outcome: str
    retry_after: Optional[int] = None


def steps_of(call: dict[str, Any]) -> list[Step]:
    """The steps of one call's script."""
    steps = []
    for raw in call["script"]:
        if isinstance(raw, str):
            steps.append(Step(raw))
        else:
            assert set(raw) <= {"outcome", "retry_after"}, raw
            steps.append(Step(raw["outcome"], raw.get("retry_after")))
    for step in steps:
        assert step.outcome in ("success", "retryable", "terminal"), step
        assert step.retry_after is None or step.outcome == "retryable", step
    return steps


def check_keys(case: dict[str, Any]) -> None:
    """Fails on a key of the vector file that the runners do not know."""
    assert set(case) <= CASE_KEYS, (case["name"], set(case) - CASE_KEYS)
    assert set(case["policy"]) <= POLICY_KEYS, (case["name"], case["policy"])
    assert set(case.get("breaker", {})) <= BREAKER_KEYS, (case["name"], case["breaker"])
    assert set(case["expect_metrics"]) == set(METRICS_KEYS), case["name"]
    for call in case["calls"]:
        assert set(call) <= CALL_KEYS, (case["name"], call)
        assert set(call["expect"]) <= EXPECT_KEYS, (case["name"], call["expect"])


_serial = itertools.count(1)


def unique(label: str) -> str:
    """A name no other call of this process or an earlier run of the session's
    nginx used: /script ids (its per-id counters outlive a test) and
    metrics names. [A-Za-z0-9_-] only, as /script requires."""
    return f"py-{label}-{os.getpid()}-{next(_serial)}"


def script_url(base_url: str, steps: list[Step], call_id: str) -> str:
    """The /script URL whose n-th request answers the n-th step: success 200,
    retryable 503 (with Retry-After when hinted), terminal 404."""
    parts = []
    for step in steps:
        if step.outcome == "success":
            parts.append("200")
        elif step.outcome == "terminal":
            parts.append("404")
        elif step.retry_after is None:
            parts.append("503")
        else:
            parts.append(f"503:{step.retry_after}")
    return f"{base_url}/script?id={call_id}&steps={','.join(parts)}"


def logged_for(server: Any, call_id: str, expected: int, timeout: float = 5.0) -> int:
    """The number of access-log lines of /script requests with ``call_id``,
    once they reach ``expected`` or after ``timeout`` seconds. nginx writes a
    line just after answering, so the last attempt's line may land after the
    client has its response; every earlier line is there already, so a
    client that sent more than ``expected`` shows it at once. With
    ``expected`` 0 the log is read after a short quiet period."""
    marker = f"id={call_id}&"
    deadline = time.monotonic() + timeout
    if expected == 0:
        time.sleep(0.05)
    while True:
        n = sum(1 for e in server.access_log() if marker in e.get("uri", ""))
        if n >= expected or time.monotonic() >= deadline:
            return n
        time.sleep(0.01)


def metrics_of(name: str) -> dict[str, int]:
    """The five counters the vector file gives, of metrics ``name`` (zeros
    when nothing reported under that name)."""
    import mulligan

    for snap in mulligan.metrics_snapshot():
        if snap["name"] == name:
            return {key: snap[key] for key in METRICS_KEYS}
    return {key: 0 for key in METRICS_KEYS}


def breaker_state_of(name: str) -> Optional[str]:
    """The breaker state the metrics of ``name`` show (the last transition
    of the breaker reporting under that name), or None."""
    import mulligan

    for snap in mulligan.metrics_snapshot():
        if snap["name"] == name:
            state: Optional[str] = snap["breaker_state"]
            return state
    return None
