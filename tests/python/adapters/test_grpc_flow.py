"""The pieces under the gRPC interceptors, without a server: the A6 pushback
parser, and the engine's gRPC outcome with a delay hint and its policy's
retryable codes (added in 0.4). Expected values by hand from gRFC A6."""

from __future__ import annotations

from typing import Optional

import pytest

from mulligan import _core
from mulligan._adapter.grpc_flow import REFUSE, pushback


@pytest.mark.parametrize(
    ("trailers", "expected"),
    [
        (None, None),
        ((), None),
        ((("other", "1"),), None),
        ((("grpc-retry-pushback-ms", "100"),), 0.1),
        ((("grpc-retry-pushback-ms", "0"),), 0.0),
        ((("grpc-retry-pushback-ms", "2500"),), 2.5),
        ((("grpc-retry-pushback-ms", b"7"),), 0.007),
        ((("grpc-retry-pushback-ms", "-1"),), REFUSE),
        ((("grpc-retry-pushback-ms", "1.5"),), REFUSE),
        ((("grpc-retry-pushback-ms", "soon"),), REFUSE),
        ((("grpc-retry-pushback-ms", ""),), REFUSE),
        ((("grpc-retry-pushback-ms", "+5"),), REFUSE),
    ],
)
def test_pushback(trailers: Optional[tuple[tuple[str, object], ...]], expected: Optional[float]) -> None:
    assert pushback(trailers) == expected


def test_grpc_outcome_hint_replaces_the_backoff() -> None:
    policy = _core.RetryPolicy(attempts=3, base_delay=1.0, jitter="none")
    outcome = _core.Outcome.grpc(14, 0.25)
    assert outcome.grpc_status == 14
    assert outcome.retry_after == 0.25
    decision = policy.begin(0.0).on_outcome(outcome, 0.0)
    assert decision.retry and decision.delay == 0.25 and decision.from_retry_after
    plain = policy.begin(0.0).on_outcome(_core.Outcome.grpc(14), 0.0)
    assert plain.delay == 1.0 and not plain.from_retry_after


def test_policy_replace_retryable_grpc_codes() -> None:
    policy = _core.RetryPolicy().replace(retryable_grpc_codes=[8, 10])
    assert policy.retryable_grpc_codes == [8, 10]
    assert policy.classify(_core.Outcome.grpc(8)) == _core.Classification.RETRYABLE
    assert policy.classify(_core.Outcome.grpc(14)) == _core.Classification.TERMINAL
    assert policy.replace(attempts=5).retryable_grpc_codes == [8, 10]  # kept
    with pytest.raises(ValueError):
        _core.RetryPolicy().replace(retryable_grpc_codes=[0])
