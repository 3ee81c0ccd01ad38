"""gRPC statuses reach the engine from Python as they do from C++ and C.

``_core.Outcome.grpc(code)`` is what a gRPC front door (the grpcio
interceptors) records: OK is a success, a code of the policy's
``retryable_grpc_codes`` is retryable (UNAVAILABLE by default), any other
code is terminal (gRFC A6, "Retryable Status Codes").
"""

from __future__ import annotations

import pytest

from mulligan import _core

SUCCESS = _core.Classification.SUCCESS
RETRYABLE = _core.Classification.RETRYABLE
TERMINAL = _core.Classification.TERMINAL


def test_the_default_policy_retries_only_unavailable() -> None:
    policy = _core.RetryPolicy()
    assert policy.retryable_grpc_codes == [14]
    assert [policy.classify(_core.Outcome.grpc(code)) for code in (0, 14, 4, 8, 13)] == [
        SUCCESS, RETRYABLE, TERMINAL, TERMINAL, TERMINAL]
    assert _core.Outcome.grpc(14).grpc_status == 14
    assert _core.Outcome.http(503).grpc_status == -1


def test_a_service_config_s_codes_reach_the_python_engine() -> None:
    registry = _core.PolicyRegistry()
    registry.load_string(
        '{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3,'
        ' "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2,'
        ' "retryableStatusCodes": ["resource_exhausted", 14]}}]}', "svc.json")
    policy = registry.policy("default")
    assert policy.retryable_grpc_codes == [8, 14]
    session = policy.begin(0.0)
    first = session.on_outcome(_core.Outcome.grpc(8), 0.0)
    assert (first.retry, first.classification) == (True, RETRYABLE)
    # A6 jitter: min(0.1 * 2^0, 1) * random(0.8, 1.2)
    assert 0.08 <= first.delay <= 0.12
    second = session.on_outcome(_core.Outcome.grpc(3), 0.0)  # INVALID_ARGUMENT
    assert (second.retry, second.classification, second.reason) == (False, TERMINAL, "terminal")


@pytest.mark.parametrize("code", [-1, 17, 1000])
def test_a_code_outside_the_grpc_range_is_refused(code: int) -> None:
    with pytest.raises(ValueError, match=r"code must be a gRPC status code in \[0, 16\]"):
        _core.Outcome.grpc(code)
