"""mulligan.adapters.requests.Adapter against the suite's real nginx.

Each test mounts the adapter on a requests.Session (proxies from the
environment off: nginx is on loopback) and counts what nginx saw in its
access log; the FakeClock records every wait, so nothing sleeps.
"""

from __future__ import annotations

import datetime
import time
from typing import Any

import pytest

requests = pytest.importorskip("requests")

import mulligan  # noqa: E402
from mulligan.adapters.requests import Adapter, CircuitOpenError, RetriesExhausted  # noqa: E402

from adapter_helpers import FAST, clock, closed_port, lines, requests_session as session, script  # noqa: E402,F401


def test_503_then_200_exact_attempts(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,503,200")
    with session(attempts=5, **FAST) as s:
        r = s.get(url, timeout=5)
    assert r.status_code == 200
    assert r.text.startswith("step 3 of")
    assert len(lines(server, call_id, 3)) == 3
    assert clock.sleeps == [0.5, 0.5]


def test_gives_up_after_attempts_and_returns_last_response(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503")
    with session(attempts=3, **FAST) as s:
        r = s.get(url, timeout=5)
    assert r.status_code == 503
    assert len(lines(server, call_id, 3)) == 3


def test_raise_on_give_up_is_a_requests_retry_error(server: Any, clock: Any) -> None:
    url, _ = script(server, "503")
    with session(attempts=2, raise_on_give_up=True, **FAST) as s:
        with pytest.raises(requests.exceptions.RetryError) as info:
            s.get(url, timeout=5)
    assert isinstance(info.value, RetriesExhausted)
    assert isinstance(info.value, mulligan.RetriesExhausted)
    assert info.value.attempts == 2
    assert info.value.stop_reason == "attempts_exhausted"
    assert info.value.response.status_code == 503


def test_retry_after_is_honoured_exactly(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503:3,429:1,200")
    events: list[Any] = []
    with session(attempts=4, on_retry=events.append, **FAST) as s:
        r = s.get(url, timeout=5)
    assert r.status_code == 200
    assert clock.sleeps == [3.0, 1.0]
    assert [e.from_retry_after for e in events] == [True, True]
    assert [e.status for e in events] == [503, 429]
    assert len(lines(server, call_id, 3)) == 3


def test_retry_after_longer_than_max_stops(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503:120,200")
    with session(attempts=4, retry_after_max=60, **FAST) as s:
        r = s.get(url, timeout=5)
    assert r.status_code == 503
    assert clock.sleeps == []
    assert len(lines(server, call_id, 1)) == 1


def test_keyed_post_same_key_on_every_attempt(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,503,200")
    with session(attempts=3, idempotency_key=True, **FAST) as s:
        r = s.post(url, data=b"order", timeout=5)
    assert r.status_code == 200
    seen = lines(server, call_id, 3)
    keys = {line["idempotency_key"] for line in seen}
    assert len(seen) == 3 and len(keys) == 1
    (key,) = keys
    assert len(key) == 36
    assert r.headers["Echo-Idempotency-Key"] == key
    assert r.request.headers["Idempotency-Key"] == key


def test_callers_own_key_is_kept(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,200")
    with session(attempts=3, **FAST) as s:
        r = s.post(url, data=b"x", headers={"Idempotency-Key": "order-42"}, timeout=5)
    assert r.status_code == 200
    assert [line["idempotency_key"] for line in lines(server, call_id, 2)] == ["order-42"] * 2


def test_post_without_key_is_not_retried_after_send(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,200")
    with session(attempts=3, **FAST) as s:
        r = s.post(url, data=b"x", timeout=5)
    assert r.status_code == 503
    assert len(lines(server, call_id, 1)) == 1
    assert lines(server, call_id, 1)[0]["idempotency_key"] == ""


def test_new_key_per_logical_call(server: Any, clock: Any) -> None:
    with session(attempts=2, idempotency_key=True, **FAST) as s:
        a = s.post(script(server, "200")[0], timeout=5).headers["Echo-Idempotency-Key"]
        b = s.post(script(server, "200")[0], timeout=5).headers["Echo-Idempotency-Key"]
    assert a != b


def test_strict_does_not_replay_a_keyed_post(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,200")
    with session(attempts=3, strict=True, idempotency_key=True, **FAST) as s:
        assert s.post(url, timeout=5).status_code == 503
    assert len(lines(server, call_id, 1)) == 1


def test_allowed_methods_replays_a_post(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,200")
    with session(attempts=3, allowed_methods=["POST"], **FAST) as s:
        assert s.post(url, timeout=5).status_code == 200
    assert len(lines(server, call_id, 2)) == 2


def test_breaker_opens_and_refuses_without_contacting_nginx(server: Any, clock: Any) -> None:
    with session(attempts=1, breaker={"failure_threshold": 2, "reset_timeout": 30}) as s:
        for _ in range(2):
            assert s.get(server.url("/down"), timeout=5).status_code == 503
        server.wait_for_requests("/down", 2)
        with pytest.raises(CircuitOpenError) as info:
            s.get(server.url("/down"), timeout=5)
        # and /ok on the same origin: the breaker is per origin
        with pytest.raises(requests.exceptions.RequestException):
            s.get(server.url("/ok"), timeout=5)
    assert isinstance(info.value, mulligan.CircuitOpenError)
    assert info.value.key == server.base_url
    assert 0 < info.value.retry_in <= 30
    assert len(server.wait_for_requests("/down", 3)) == 2
    assert server.wait_for_requests("/ok", 1, timeout=0.2) == []


def test_breaker_half_open_probe_after_reset_timeout(server: Any, clock: Any) -> None:
    with session(attempts=1, breaker={"failure_threshold": 1, "reset_timeout": 10}) as s:
        assert s.get(server.url("/down"), timeout=5).status_code == 503
        with pytest.raises(CircuitOpenError):
            s.get(server.url("/ok"), timeout=5)
        clock.advance(10)
        assert s.get(server.url("/ok"), timeout=5).status_code == 200


def test_connection_refused_gives_up_with_requests_connection_error(clock: Any) -> None:
    url = f"http://127.0.0.1:{closed_port()}/x"
    with session(attempts=3, **FAST) as s:
        with pytest.raises(requests.exceptions.ConnectionError) as info:
            s.get(url, timeout=5)
    assert clock.sleeps == [0.5, 0.5]
    notes = getattr(info.value, "__notes__", [])
    assert notes == ["mulligan: gave up after 3 attempts (attempts_exhausted)"] or not hasattr(
        BaseException, "add_note"
    )


def test_refused_post_without_key_is_retried(clock: Any) -> None:
    # nothing was sent: even an unkeyed POST may be retried
    url = f"http://127.0.0.1:{closed_port()}/x"
    with session(attempts=3, **FAST) as s:
        with pytest.raises(requests.exceptions.ConnectionError):
            s.post(url, data=b"x", timeout=5)
    assert clock.sleeps == [0.5, 0.5]


def test_read_timeout_is_requests_read_timeout(server: Any, clock: Any) -> None:
    with session(attempts=2, **FAST) as s:
        with pytest.raises(requests.exceptions.ReadTimeout):
            s.get(server.url("/slow?s=1"), timeout=0.2)
    assert clock.sleeps == [0.5]
    assert len(server.wait_for_requests("/slow", 2, timeout=3)) == 2


def test_a_body_that_cannot_be_decoded_is_terminal(server: Any, clock: Any) -> None:
    """A gzip body that is not gzip fails the same way every time: raised at
    once as requests' ContentDecodingError, sent once (httpx's DecodingError
    is terminal too)."""
    with session(attempts=3, **FAST) as s:
        with pytest.raises(requests.exceptions.ContentDecodingError):
            s.get(server.url("/bad-gzip"))
    assert clock.sleeps == []
    assert len(server.wait_for_requests("/bad-gzip", 2, timeout=0.5)) == 1


def test_adapter_timeout_bounds_attempts(server: Any, clock: Any) -> None:
    with session(attempts=1, timeout=0.2, **FAST) as s:
        with pytest.raises(requests.exceptions.ReadTimeout):
            s.get(server.url("/slow?s=1"))  # no requests timeout: the adapter's


def test_fallback_answers_a_give_up(server: Any, clock: Any) -> None:
    seen: list[BaseException] = []

    def fallback(exc: BaseException) -> Any:
        seen.append(exc)
        r = requests.Response()
        r.status_code = 299
        return r

    url, _ = script(server, "503")
    with session(attempts=2, fallback=fallback, **FAST) as s:
        assert s.get(url, timeout=5).status_code == 299
    assert isinstance(seen[0], RetriesExhausted) and seen[0].response.status_code == 503


def test_terminal_404_is_returned_at_once(server: Any, clock: Any) -> None:
    url, call_id = script(server, "404,200")
    with session(attempts=3, **FAST) as s:
        assert s.get(url, timeout=5).status_code == 404
    assert len(lines(server, call_id, 1)) == 1


def test_stream_true_retries_on_the_head(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,200")
    with session(attempts=3, **FAST) as s:
        with s.get(url, timeout=5, stream=True) as r:
            assert r.status_code == 200
            assert b"step 2" in r.raw.read()
    assert len(lines(server, call_id, 2)) == 2


def test_generator_body_is_not_replayed(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503,200")
    with session(attempts=3, **FAST) as s:
        r = s.put(url, data=(chunk for chunk in [b"a", b"b"]), timeout=5)
    assert r.status_code == 503
    assert len(lines(server, call_id, 1)) == 1


def test_file_body_is_rewound_for_the_retry(server: Any, clock: Any, tmp_path: Any) -> None:
    path = tmp_path / "body"
    path.write_bytes(b"0123456789")
    url, call_id = script(server, "503,200")
    with session(attempts=3, **FAST) as s, open(path, "rb") as f:
        assert s.put(url, data=f, timeout=5).status_code == 200
    assert len(lines(server, call_id, 2)) == 2


def test_metrics_by_origin(server: Any, clock: Any) -> None:
    url, _ = script(server, "503,200")
    before = _retries(server.base_url)
    with session(attempts=3, **FAST) as s:
        s.get(url, timeout=5)
    assert _retries(server.base_url) == before + 1


def _retries(name: str) -> int:
    import json

    for entry in json.loads(mulligan.metrics_json()).get("metrics", []):
        if entry.get("name") == name:
            return int(entry.get("retries", 0))
    return 0


def test_testing_switches_apply(server: Any) -> None:
    url, call_id = script(server, "503")
    with mulligan.testing.set_testing(True, attempts=2):
        with session(attempts=5, base_delay=30) as s:
            assert s.get(url, timeout=5).status_code == 503
    assert len(lines(server, call_id, 2)) == 2


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"attempts": 0}, "attempts"),
        ({"deadline": -1}, "deadline"),
        ({"base_delay": "x"}, "base_delay"),
        ({"retry_on": [200]}, "retry_on"),
        ({"method_rule": "sometimes"}, "method_rule"),
        ({"breaker": {"failure_threshold": -1}}, "failure_threshold"),
        ({"timeout": 0}, "timeout"),
        ({"on_retry": 3}, "on_retry"),
        ({"jitter": "lots"}, "jitter"),
    ],
)
def test_bad_options_raise_at_construction_naming_the_field(options: dict[str, Any], field: str) -> None:
    with pytest.raises((ValueError, TypeError), match=field):
        Adapter(**options)


def test_unknown_option_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="max_retries"):
        Adapter(max_retries=3)


def test_timedelta_durations() -> None:
    Adapter(deadline=datetime.timedelta(seconds=3), base_delay=datetime.timedelta(milliseconds=5))


def test_keyed_409_with_retry_after_is_waited_out(server: Any, clock: Any) -> None:
    # An idempotency store's "the first request with this key still runs".
    url, call_id = script(server, "409:2,201")
    with session(attempts=3, idempotency_key=True, **FAST) as s:
        assert s.post(url, timeout=5).status_code == 201
    assert clock.sleeps == [2.0]
    assert len({line["idempotency_key"] for line in lines(server, call_id, 2)}) == 1


def test_unkeyed_409_is_an_answer(server: Any, clock: Any) -> None:
    url, call_id = script(server, "409:2,201")
    with session(attempts=3, **FAST) as s:
        assert s.get(url, timeout=5).status_code == 409
    assert clock.sleeps == []
    assert len(lines(server, call_id, 1)) == 1


def test_deadline_trims_the_attempt_and_stops_the_retries(server: Any, clock: Any) -> None:
    started = time.monotonic()
    with session(attempts=5, deadline=0.3, **FAST) as s:
        with pytest.raises(requests.exceptions.ReadTimeout) as info:
            s.get(server.url("/slow?s=2"), timeout=5)  # trimmed to the 0.3 s left
    assert time.monotonic() - started < 1.5
    assert clock.sleeps == []  # a 0.5 s wait would cross the deadline
    if hasattr(BaseException, "add_note"):
        assert info.value.__notes__ == ["mulligan: gave up after 1 attempt (deadline)"]


def test_breaker_key_by_path(server: Any, clock: Any) -> None:
    with session(attempts=1, breaker={"failure_threshold": 1, "key": "path"}) as s:
        assert s.get(server.url("/down"), timeout=5).status_code == 503
        with pytest.raises(CircuitOpenError):
            s.get(server.url("/down"), timeout=5)
        assert s.get(server.url("/ok"), timeout=5).status_code == 200  # another breaker


def test_a_retry_budget_bounds_the_retries(server: Any, clock: Any) -> None:
    # A6 by hand: 10 tokens, 3 attempts against an always-503 script. Call 1
    # takes 10 -> 7 (3 attempts); call 2 7 -> 5, refused at 5 (5 > 5 is
    # false); call 3 5 -> 4, refused after its first attempt.
    budget = mulligan.RetryBudget.token_bucket(max_tokens=10, token_ratio=0.5)
    seen = []
    with session(attempts=3, budget=budget, **FAST) as s:
        for _ in range(3):
            url, call_id = script(server, "503")
            assert s.get(url, timeout=5).status_code == 503
            seen.append(call_id)
    assert [len(lines(server, call_id, 1)) for call_id in seen] == [3, 2, 1]
    with pytest.raises(ValueError, match="budget"):
        Adapter(budget="global")
