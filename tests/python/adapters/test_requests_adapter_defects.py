"""mulligan.adapters.requests.Adapter: defects fresh users found (0.6).

Against the suite's real nginx, as test_requests_adapter.py: a fallback's
answer must be a requests.Response, a pickled Session keeps its adapter, a
urllib3.Timeout is trimmed like a number, and bad pool options are refused
at construction. The FakeClock records every wait, so nothing sleeps.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest

requests = pytest.importorskip("requests")
urllib3 = pytest.importorskip("urllib3")

from mulligan.adapters.requests import Adapter, RetriesExhausted, _trim  # noqa: E402

from adapter_helpers import FAST, clock, lines, requests_session as session, script  # noqa: E402,F401


def _not_a_response(exc: BaseException) -> Any:
    return "offline"


def test_a_fallback_returning_no_response_is_a_type_error_naming_it(server: Any, clock: Any) -> None:
    url, call_id = script(server, "503")
    with session(attempts=2, fallback=_not_a_response, **FAST) as s:
        with pytest.raises(TypeError, match=r"fallback .*_not_a_response.* returned str, not a requests\.Response"):
            s.get(url, timeout=5)
    assert len(lines(server, call_id, 2)) == 2


def test_a_non_callable_fallback_that_is_no_response_is_refused_at_construction() -> None:
    with pytest.raises(TypeError, match=r"fallback must be .*requests\.Response.*got str"):
        Adapter(fallback="offline")


def test_a_fallback_response_goes_through_session_send(server: Any, clock: Any) -> None:
    """A Response the fallback built from nothing runs requests' response
    hooks and comes back with the request and the URL, as HTTPAdapter's."""
    seen: list[Any] = []

    def fallback(exc: BaseException) -> Any:
        seen.append(exc)
        r = requests.Response()
        r.status_code = 299
        r._content = b"cached"
        return r

    hooked: list[str] = []
    url, _ = script(server, "503")
    with session(attempts=2, fallback=fallback, **FAST) as s:
        r = s.get(url, timeout=5, hooks={"response": lambda r, **kw: hooked.append(r.url)})
    assert (r.status_code, r.text, r.url) == (299, "cached", url)
    assert r.request.url == url and r.request.method == "GET"
    assert hooked == [url]
    assert isinstance(seen[0], RetriesExhausted)


def test_a_response_object_as_fallback_is_returned(server: Any, clock: Any) -> None:
    canned = requests.Response()
    canned.status_code = 298
    url, _ = script(server, "503")
    with session(attempts=1, fallback=canned, **FAST) as s:
        assert s.get(url, timeout=5).status_code == 298


def test_a_pickled_session_keeps_its_adapter_and_retries(server: Any, clock: Any) -> None:
    with session(attempts=3, **FAST) as s:
        restored = pickle.loads(pickle.dumps(s))
    adapter = restored.get_adapter("http://127.0.0.1/")
    assert isinstance(adapter, Adapter)
    url, call_id = script(server, "503,503,200")
    with restored:
        r = restored.get(url, timeout=5)
    assert r.status_code == 200
    assert len(lines(server, call_id, 3)) == 3
    assert clock.sleeps == [0.5, 0.5]


def test_a_pickled_adapter_keeps_its_pool_options() -> None:
    adapter = pickle.loads(pickle.dumps(Adapter(pool_connections=3, pool_maxsize=7, pool_block=True)))
    assert (adapter._pool_connections, adapter._pool_maxsize, adapter._pool_block) == (3, 7, True)
    assert adapter.poolmanager.connection_pool_kw["maxsize"] == 7


def test_an_adapter_with_an_option_that_cannot_pickle_says_so() -> None:
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(Adapter(on_retry=lambda event: None))


def test_a_urllib3_timeout_is_trimmed_to_the_attempt_timeout(server: Any, clock: Any) -> None:
    timeout = urllib3.Timeout(connect=5, read=5)
    with session(attempts=1, timeout=0.2, **FAST) as s:
        with pytest.raises(requests.exceptions.ReadTimeout):
            s.get(server.url("/slow?s=1"), timeout=timeout)  # 5 s read, trimmed to 0.2 s


def test_a_urllib3_timeout_is_trimmed_to_the_deadline(server: Any, clock: Any) -> None:
    with session(attempts=3, deadline=0.3, **FAST) as s:
        with pytest.raises(requests.exceptions.ReadTimeout):
            s.get(server.url("/slow?s=2"), timeout=urllib3.Timeout(read=10))
    assert clock.sleeps == []


def test_trim_bounds_each_phase_of_a_timeout() -> None:
    t = _trim(urllib3.Timeout(connect=5, read=0.25, total=9), 1.0)
    assert (t._connect, t._read, t.total) == (1.0, 0.25, 1.0)
    default = _trim(urllib3.Timeout(), 2.0)  # the socket default: no bound of its own
    assert (default._connect, default._read, default.total) == (2.0, 2.0, None)
    given = urllib3.Timeout(read=3)
    assert _trim(given, None) is given


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"pool_connections": 0}, "pool_connections must be >= 1, got 0"),
        ({"pool_connections": -2}, "pool_connections must be >= 1, got -2"),
        ({"pool_maxsize": 0}, "pool_maxsize must be >= 1, got 0"),
        ({"pool_maxsize": 2.5}, "pool_maxsize must be an int, got 2.5"),
        ({"pool_connections": "10"}, "pool_connections must be an int, got '10'"),
        ({"pool_maxsize": True}, "pool_maxsize must be an int, got True"),
        ({"pool_block": 1}, "pool_block must be a bool, got 1"),
        ({"multiplier": -1}, "multiplier must be a finite number >= 0, got -1"),
        ({"multiplier": float("nan")}, "multiplier must be a finite number >= 0"),
        ({"multiplier": "2"}, "multiplier must be a number, got '2'"),
    ],
)
def test_bad_pool_and_backoff_options_raise_at_construction(options: dict[str, Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError)) as info:
        Adapter(**options)
    assert message in str(info.value)
    assert "mulligan.adapters.requests.Adapter" in str(info.value) or "multiplier" in message


def test_multiplier_zero_is_no_wait(server: Any, clock: Any) -> None:
    """DESIGN.md: multiplier 0 (or base 0) means no wait at every retry;
    the core accepts it, so the adapter does too."""
    url, call_id = script(server, "503,503,200")
    with session(attempts=3, backoff="exponential", base_delay=0.5, multiplier=0, jitter="none") as s:
        assert s.get(url, timeout=5).status_code == 200
    assert len(lines(server, call_id, 3)) == 3
    assert clock.sleeps == []


def test_raise_on_give_up_raises_for_a_post_not_replayed(server: Any, clock: Any) -> None:
    """A 503 to a POST without Idempotency-Key stops at once
    (not_replay_safe): the retries gave up on a retryable status, so
    raise_on_give_up raises, as a fallback answers it."""
    url, call_id = script(server, "503,200")
    with session(attempts=3, raise_on_give_up=True, **FAST) as s:
        with pytest.raises(RetriesExhausted) as info:
            s.post(url, data=b"x", timeout=5)
    assert (info.value.stop_reason, info.value.attempts) == ("not_replay_safe", 1)
    assert info.value.response.status_code == 503
    assert len(lines(server, call_id, 1)) == 1


def test_a_fallback_answers_the_same_post_not_replayed(server: Any, clock: Any) -> None:
    seen: list[Any] = []

    def fallback(exc: BaseException) -> Any:
        seen.append(exc)
        r = requests.Response()
        r.status_code = 299
        return r

    url, call_id = script(server, "503,200")
    with session(attempts=3, fallback=fallback, **FAST) as s:
        assert s.post(url, data=b"x", timeout=5).status_code == 299
    assert [(e.stop_reason, e.attempts) for e in seen] == [("not_replay_safe", 1)]
    assert len(lines(server, call_id, 1)) == 1


def test_the_client_follows_the_same_rule(server: Any) -> None:
    import mulligan

    url, call_id = script(server, "503,200")
    with mulligan.testing.FakeClock():
        with pytest.raises(mulligan.RetriesExhausted) as info:
            mulligan.post(url, data=b"x", attempts=3, raise_on_give_up=True, **FAST)
    assert (info.value.stop_reason, info.value.attempts) == ("not_replay_safe", 1)
    assert len(lines(server, call_id, 1)) == 1


def test_a_terminal_status_is_no_give_up(server: Any, clock: Any) -> None:
    url, _ = script(server, "404")
    with session(attempts=3, raise_on_give_up=True, **FAST) as s:
        assert s.post(url, data=b"x", timeout=5).status_code == 404
