"""The adapters' native fast path (0.6): HttpPipeline.begin_admit, and
AdapterCall.admit_bound / finish_response as raw CPython methods.

Driven on explicit clock readings (monotonic seconds passed in), so every
bound and delay is exact; no server is needed: these steps never send.
"""

from __future__ import annotations

import math

import pytest

from mulligan._adapter.flow import AdapterConfig

URL = "http://127.0.0.1:9/ok"


def _begin(cfg: AdapterConfig, now: float, *, url: str = URL, max_attempts: int = 0):
    return cfg.pipeline.begin_admit(now, "GET", url, False, True, "", False, max_attempts, False)


def test_begin_admit_answers_the_first_admission_with_its_bound() -> None:
    cfg = AdapterConfig("test", attempts=3, timeout=2.0, deadline=5.0)
    call, bound = _begin(cfg, 100.0)
    assert bound == 2.0  # timeout= 2 s, under the 5 s deadline
    assert call.attempts == 0 and not call.finished
    assert call.key == "http://127.0.0.1:9"
    decision = call.finish_response(503, None, 0.0, 104.0)
    assert decision is not None and decision.retry
    assert call.attempts == 1
    # The second attempt at 104.5: the deadline (105.0) trims the 2 s timeout.
    assert call.admit_bound(104.5) == pytest.approx(0.5, abs=1e-9)


def test_begin_admit_without_a_bound_is_inf_and_a_success_is_answered() -> None:
    cfg = AdapterConfig("test", attempts=3)
    call, bound = _begin(cfg, 10.0)
    assert bound == math.inf
    assert call.finish_response(200, None, 0.0, 10.25) is None  # the answer as it is
    assert call.finished and call.attempts == 1


def test_finish_response_reads_retry_after_as_the_delay() -> None:
    cfg = AdapterConfig("test", attempts=3, retry_after_max=60.0)
    call, _ = _begin(cfg, 10.0)
    decision = call.finish_response(503, "7", 0.0, 10.5)
    assert decision.retry and decision.from_retry_after
    assert decision.delay == 7.0


def test_begin_admit_refused_by_an_open_breaker_is_none() -> None:
    cfg = AdapterConfig("test", attempts=1, breaker={"failure_threshold": 1, "reset_timeout": 30.0})
    url = "http://127.0.0.1:10/ok"  # an origin of its own: its own breaker
    call, bound = _begin(cfg, 50.0, url=url)
    assert bound == math.inf
    decision = call.finish_response(503, None, 0.0, 50.1)
    assert decision is not None and not decision.retry  # one attempt: gave up, breaker opens
    refused, bound = _begin(cfg, 51.0, url=url)
    assert bound is None
    assert refused.refused
    assert refused.retry_in == pytest.approx(29.1, abs=1e-6)  # opened at 50.1 for 30 s


def test_the_fast_methods_reject_bad_arguments_with_clear_errors() -> None:
    cfg = AdapterConfig("test", attempts=3)
    with pytest.raises(TypeError, match=r"begin_admit\(\) takes 9 positional arguments \(8 given\)"):
        cfg.pipeline.begin_admit(1.0, "GET", URL, False, True, "", False, 0)
    with pytest.raises(TypeError):
        cfg.pipeline.begin_admit(1.0, b"GET", URL, False, True, "", False, 0, False)
    with pytest.raises(TypeError):
        cfg.pipeline.begin_admit("now", "GET", URL, False, True, "", False, 0, False)
    with pytest.raises(TypeError):
        cfg.pipeline.begin_admit(1.0, "GET", URL, False, True, "", False, "0", False)
    call, _ = _begin(cfg, 1.0)
    with pytest.raises(ValueError, match=r"status must be 0-999, got 1000"):
        call.finish_response(1000, None, 0.0, 2.0)
    with pytest.raises(TypeError):
        call.finish_response("200", None, 0.0, 2.0)
    with pytest.raises(TypeError):
        call.finish_response(200, 7, 0.0, 2.0)
    with pytest.raises(TypeError, match=r"admit_bound\(\) takes 1 positional arguments \(0 given\)"):
        call.admit_bound()
    # Nothing was recorded by the rejected calls: the call still answers.
    assert call.attempts == 0
    assert call.finish_response(200, None, 0.0, 2.0) is None
    assert call.attempts == 1
