"""Budgets, throttles, bulkheads, rate limiters and (0.5) adaptive client
rates in configuration files (issue 14), and a gRPC service config's
``retryThrottling``.

One test per schema field of ``budget``, ``throttle``, ``bulkhead``,
``rateLimiter`` and ``adaptiveRate`` (and the references ``policy.budget``...
and ``client.budget``), each comparing a value worked out by hand with what the
file gives without the field (or with another value). ``LIMIT_FIELD_TESTS``
maps them; test_config_fields.py merges it into its ``FIELD_TESTS`` and
checks that every schema field has a test.

The arithmetic (by hand):
- token bucket (gRFC A6): tokens start at max_tokens; a failed attempt takes
  1, a success after a retry adds token_ratio; a retry is allowed only while
  tokens > max_tokens / 2.
- quota (AWS 2020): a retry takes retry_cost (timeout_cost after a timeout,
  throttling_cost after a throttling answer), refused when less is left; a
  call that needed no retry gives back no_retry_increment.
- ratio (Finagle): retries available = (calls * percent) + the reserve
  min_retries_per_second * ttl.
- throttle (SRE book): p = max(0, (requests - k * accepts) / (requests + 1)).
- GCRA: interval T = 1 / rate, burst calls at once, then one every T.
- adaptive rate (the AWS SDKs' adaptive mode, limits/adaptive_rate.h): an
  answer counts 1 in the bucket floor(t / bucket) * bucket; when a later
  bucket starts, measured = smoothing * count / (elapsed buckets' span) +
  (1 - smoothing) * measured. A throttle: W = measured (the first time),
  K = cbrt(W * (1 - beta) / C), calculated = W * beta. A success:
  calculated = C * (t - last_throttle - K)^3 + W. Then fill = max(min(
  calculated, max_rate_scale * measured), min_fill_rate); a token short
  waits (1 - capacity) / fill.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Callable

import pytest

import mulligan
from mulligan import _core
from mulligan.testing import FakeClock


@pytest.fixture
def load(tmp_path: Path) -> Callable[[dict[str, Any]], mulligan.ConfigReport]:
    """Writes a configuration document to a file and loads it."""
    counter = [0]

    def _load(doc: dict[str, Any]) -> mulligan.ConfigReport:
        counter[0] += 1
        path = tmp_path / f"limits{counter[0]}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        return mulligan.load_config(str(path))

    return _load


@pytest.fixture(autouse=True)
def _forget_parts(load: Any) -> Any:
    """Each test starts without parts: a load without them forgets those
    built (the registry keeps a part only while its entry stays loaded)."""
    load({})
    yield
    load({})


class Down(Exception):
    pass


def attempts_per_call(load: Any, budget: dict[str, Any], calls: int, attempts: int = 5) -> list[int]:
    """Loads policy "p" (no waits, `attempts` attempts) naming budget "b",
    and returns the attempts each of `calls` always-failing calls made."""
    load({"budgets": {"b": budget}, "policies": {"p": {"max_attempts": attempts, "base_delay": 0, "budget": "b"}}})
    counts = []
    for _ in range(calls):
        n = [0]

        @mulligan.retry(policy="p", on=Down)
        def op() -> None:
            n[0] += 1
            raise Down()

        with FakeClock(), pytest.raises(Down):
            op()
        counts.append(n[0])
    return counts


def outcomes_fail_once(load: Any, budget: dict[str, Any], calls: int) -> list[bool]:
    """Each call fails once then succeeds if retried; True when it succeeded."""
    load({"budgets": {"b": budget}, "policies": {"p": {"max_attempts": 5, "base_delay": 0, "budget": "b"}}})
    results = []
    for _ in range(calls):
        n = [0]

        @mulligan.retry(policy="p", on=Down)
        def op() -> None:
            n[0] += 1
            if n[0] == 1:
                raise Down()

        with FakeClock():
            try:
                op()
                results.append(True)
            except Down:
                results.append(False)
    return results


# --- budget -----------------------------------------------------------------


def test_budget_kind(load: Any) -> None:
    load({"budgets": {"b": {"kind": "quota"}}, "policies": {"p": {"budget": "b"}}})
    b = mulligan.policy("p").budget
    assert (b.kind, b.tokens()) == ("quota", 500.0)
    load({"budgets": {"b": {}}, "policies": {"p": {"budget": "b"}}})
    b = mulligan.policy("p").budget
    assert (b.kind, b.tokens()) == ("token_bucket", 100.0)


def test_max_tokens(load: Any) -> None:
    # 4 tokens: 4 -> 3 (3 > 2: retry) -> 2 (refused): 2 attempts; then 1, 1.
    assert attempts_per_call(load, {"max_tokens": 4}, 3) == [2, 1, 1]
    # 100 tokens: 25 failures leave 75 > 50: every call makes its 5 attempts.
    assert attempts_per_call(load, {}, 3) == [5, 5, 5]


def test_token_ratio(load: Any) -> None:
    # max 4: 4 -> 3 (retry) -> +0.5 = 3.5 -> 2.5 (retry) -> 3.0 -> 2.0 (refused).
    assert outcomes_fail_once(load, {"max_tokens": 4}, 3) == [True, True, False]
    # ratio 1: 4 -> 3 -> 4 every call.
    assert outcomes_fail_once(load, {"max_tokens": 4, "token_ratio": 1}, 3) == [True, True, True]


def test_capacity(load: Any) -> None:
    # 10 - 5 - 5 = 0: two retries, then refused: 3 attempts; then 1.
    assert attempts_per_call(load, {"kind": "quota", "capacity": 10}, 2) == [3, 1]
    assert attempts_per_call(load, {"kind": "quota"}, 2) == [5, 5]  # 500


def test_retry_cost(load: Any) -> None:
    # 10 -> 8 -> 6 -> 4 -> 2: 5 attempts; 2 -> 0: 2 attempts; then 1.
    assert attempts_per_call(load, {"kind": "quota", "capacity": 10, "retry_cost": 2}, 3) == [5, 2, 1]
    assert attempts_per_call(load, {"kind": "quota", "capacity": 10}, 3) == [3, 1, 1]


def quota_after(load: Any, budget: dict[str, Any], failure: str) -> tuple[int, float]:
    """The cost of one retry after a `failure` and the capacity left."""
    load({"budgets": {"b": {"kind": "quota", **budget}}, "policies": {"p": {"budget": "b"}}})
    b = mulligan.policy("p").budget
    with FakeClock() as clock:
        cost = b._core.try_retry(failure, clock.monotonic())
        return cost, b.tokens()


def test_timeout_cost(load: Any) -> None:
    assert quota_after(load, {"timeout_cost": 7}, "timeout") == (7, 493.0)
    assert quota_after(load, {}, "timeout") == (10, 490.0)


def test_throttling_cost(load: Any) -> None:
    assert quota_after(load, {"throttling_cost": 3}, "throttling") == (3, 497.0)
    assert quota_after(load, {}, "throttling") == (5, 495.0)


def drain_succeed_fail(load: Any, budget: dict[str, Any]) -> int:
    """Drains a quota of 10 (cost 5) with one failing call, then makes one
    call that succeeds at once and one that fails; returns the attempts of
    the last."""
    load({"budgets": {"b": {"kind": "quota", "capacity": 10, **budget}},
          "policies": {"p": {"max_attempts": 5, "base_delay": 0, "budget": "b"}}})
    n = [0]
    fail = [True]

    @mulligan.retry(policy="p", on=Down)
    def op() -> None:
        n[0] += 1
        if fail[0]:
            raise Down()

    with FakeClock():
        with pytest.raises(Down):
            op()
        assert n[0] == 3  # 10 - 5 - 5 = 0
        fail[0] = False
        op()  # no retry: gives back no_retry_increment
        fail[0], n[0] = True, 0
        with pytest.raises(Down):
            op()
    return n[0]


def test_no_retry_increment(load: Any) -> None:
    assert drain_succeed_fail(load, {"no_retry_increment": 5}) == 2  # 0 + 5: one retry
    assert drain_succeed_fail(load, {}) == 1  # 0 + 1 < 5: none


def ratio_tokens(load: Any, budget: dict[str, Any], calls: int) -> float:
    with FakeClock() as clock:
        load({"budgets": {"b": {"kind": "ratio", **budget}}, "policies": {"p": {"budget": "b"}}})
        b = mulligan.policy("p").budget
        for _ in range(calls):
            b._core.on_call_started(clock.monotonic())
        return b.tokens()


def test_ttl(load: Any) -> None:
    assert ratio_tokens(load, {"ttl": "20s"}, 0) == pytest.approx(200.0)  # 10/s * 20 s
    assert ratio_tokens(load, {}, 0) == pytest.approx(100.0)  # 10/s * 10 s


def test_percent(load: Any) -> None:
    assert ratio_tokens(load, {"percent": 0.5}, 10) == pytest.approx(105.0)  # 100 + 10 * 0.5
    assert ratio_tokens(load, {}, 10) == pytest.approx(102.0)  # 100 + 10 * 0.2


def test_min_retries_per_second(load: Any) -> None:
    assert ratio_tokens(load, {"min_retries_per_second": 3}, 0) == pytest.approx(30.0)
    assert ratio_tokens(load, {"min_retries_per_second": 0}, 10) == pytest.approx(2.0)


# --- throttle ---------------------------------------------------------------


def throttle_probability(load: Any, throttle: dict[str, Any], advance: float = 0.0) -> float:
    """10 requests, 4 accepted, then `advance` seconds: the probability."""
    with FakeClock() as clock:
        load({"throttles": {"t": throttle}, "policies": {"p": {"throttle": "t"}}})
        t = mulligan.policy("p").throttle
        for i in range(10):
            t._core.admit(clock.monotonic())
            t._core.record(i < 4)
        clock.advance(advance)
        return t.probability()


def test_k(load: Any) -> None:
    assert throttle_probability(load, {"k": 1.5}) == pytest.approx(4 / 11)  # (10 - 6) / 11
    assert throttle_probability(load, {}) == pytest.approx(2 / 11)  # (10 - 8) / 11


def test_window(load: Any) -> None:
    assert throttle_probability(load, {"window": "30s"}, advance=60) == 0.0  # all expired
    assert throttle_probability(load, {}, advance=60) == pytest.approx(2 / 11)  # 2 min window


def draws(load: Any, name: str, seed: Any) -> list[bool]:
    """Admit decisions at p = 10/11 - 0 accepts... for throttle `name`."""
    with FakeClock() as clock:
        load({"throttles": {name: {"k": 1, "seed": seed}}, "policies": {"p": {"throttle": name}}})
        t = mulligan.policy("p").throttle
        for _ in range(4):
            t._core.admit(clock.monotonic())
            t._core.record(False)
        # p is 4/5 now, then grows: each admit draws.
        return [bool(t._core.admit(clock.monotonic())) for _ in range(40)]


def test_seed(load: Any) -> None:
    a, b, c = draws(load, "s1", 7), draws(load, "s2", 7), draws(load, "s3", 8)
    assert a == b  # the same seed: the same draws
    assert a != c  # another seed: other draws (40 draws at p >= 0.8 all equal: < 1e-3)


# --- bulkhead ---------------------------------------------------------------


def nested_call(load: Any, bulkhead: dict[str, Any]) -> str:
    """A call of policy "p" that makes another call of "p" inside it."""
    load({"bulkheads": {"h": bulkhead}, "policies": {"p": {"max_attempts": 1, "bulkhead": "h"}}})

    @mulligan.retry(policy="p", on=Down)
    def inner() -> str:
        return "inner ran"

    @mulligan.retry(policy="p", on=Down)
    def outer() -> str:
        return inner()

    try:
        return outer()
    except mulligan.BulkheadFullError:
        return "refused"


def test_max_concurrent(load: Any) -> None:
    assert nested_call(load, {"max_concurrent": 1}) == "refused"  # the outer holds the slot
    assert nested_call(load, {"max_concurrent": 2}) == "inner ran"


def queued_acquire(load: Any, bulkhead: dict[str, Any], release: bool) -> str:
    """Holds the only slot; another thread acquires; the slot is released
    once the thread waits (when `release`). Returns what the thread got."""
    load({"bulkheads": {"h": {"max_concurrent": 1, **bulkhead}}, "policies": {"p": {"bulkhead": "h"}}})
    h = mulligan.policy("p").bulkhead
    h.acquire()
    got: list[str] = []

    def waiter() -> None:
        try:
            h.acquire()
            got.append("slot")
            h.release()
        except mulligan.BulkheadFullError:
            got.append("refused")

    thread = threading.Thread(target=waiter)
    thread.start()
    if release:
        while not got and h.queued == 0:
            pass  # until the waiter is queued (or refused at once)
        h.release()
        thread.join()
    else:
        thread.join()
        h.release()
    return got[0]


def test_max_queue(load: Any) -> None:
    assert queued_acquire(load, {"max_queue": 1}, release=True) == "slot"
    assert queued_acquire(load, {}, release=True) == "refused"  # no queue by default


def test_max_wait(load: Any) -> None:
    assert queued_acquire(load, {"max_queue": 1, "max_wait": "20ms"}, release=False) == "refused"
    assert queued_acquire(load, {"max_queue": 1}, release=True) == "slot"  # waits until freed


# --- rate limiter -----------------------------------------------------------


def reservations(load: Any, limiter: dict[str, Any], keys: list[str]) -> list[Any]:
    """The waits (or "refused") of reserving one slot per key, at one instant."""
    with FakeClock():
        load({"rate_limiters": {"r": limiter}, "policies": {"p": {"rate_limiter": "r"}}})
        r = mulligan.policy("p").rate_limiter
        out: list[Any] = []
        for key in keys:
            try:
                out.append(round(r.reserve(key), 9))
            except mulligan.RateLimitedError:
                out.append("refused")
        return out


def test_rate(load: Any) -> None:
    assert reservations(load, {"rate": 4}, ["", ""]) == [0.0, 0.25]
    assert reservations(load, {"rate": 10}, ["", ""]) == [0.0, 0.1]


def test_burst(load: Any) -> None:
    # T = 0.1, tau = 0.2: three at once, the fourth at 0.3 - 0.2 = 0.1.
    assert reservations(load, {"rate": 10, "burst": 3}, [""] * 4) == [0.0, 0.0, 0.0, 0.1]
    assert reservations(load, {"rate": 10}, [""] * 2) == [0.0, 0.1]


def test_rate_limiter_max_wait(load: Any) -> None:
    assert reservations(load, {"rate": 10, "max_wait": 0}, ["", ""]) == [0.0, "refused"]
    assert reservations(load, {"rate": 10, "max_wait": "50ms"}, ["", ""]) == [0.0, "refused"]
    assert reservations(load, {"rate": 10, "max_wait": "100ms"}, ["", ""]) == [0.0, 0.1]


def test_max_keys(load: Any) -> None:
    # One key kept: "b" and "c" share the overflow bucket (rate 1: c waits 1 s).
    assert reservations(load, {"rate": 1, "max_keys": 1}, ["a", "b", "c"]) == [0.0, 0.0, 1.0]
    assert reservations(load, {"rate": 1}, ["a", "b", "c"]) == [0.0, 0.0, 0.0]


def test_penalize_retry_after(load: Any) -> None:
    # What the HTTP clients read to feed a 429's Retry-After to the limiter.
    load({"rate_limiters": {"r": {"rate": 1, "penalize_retry_after": True}}, "policies": {"p": {"rate_limiter": "r"}}})
    assert mulligan.policy("p").rate_limiter._core.penalize_retry_after is True
    load({"rate_limiters": {"r": {"rate": 1}}, "policies": {"p": {"rate_limiter": "r"}}})
    assert mulligan.policy("p").rate_limiter._core.penalize_retry_after is False


# --- adaptive rate (0.5) -----------------------------------------------------


def adaptive_state(load: Any, fields: dict[str, Any], script: list[Any]) -> dict[str, Any]:
    """Loads adaptive rate "a" (named by policy "p") on a FakeClock at 1000 s
    (the rate is built, and so dated, at the first lookup), plays `script`
    (a number: advance that many seconds; True/False: record a throttling
    answer or another answer; "reserve": take a token, its wait or
    "refused" kept) and returns the state, with the waits under "waits"."""
    with FakeClock(start=1000.0) as clock:
        load({"adaptive_rates": {"a": fields}, "policies": {"p": {"adaptive_rate": "a"}}})
        r = mulligan.policy("p").adaptive_rate
        waits: list[Any] = []
        for step in script:
            if isinstance(step, bool):
                r.record(step)
            elif step == "reserve":
                try:
                    waits.append(round(r.reserve(), 9))
                except mulligan.RateLimitedError:
                    waits.append("refused")
            else:
                clock.advance(step)
        state = r.state()
        state["waits"] = waits
        return state


# A success at 1000 (bucket 1000: no later bucket yet, measured 0), a
# throttling answer at 1002 (count 2 over 2 s: rate 1).
THROTTLED = [False, 2, True]


def test_adaptive_beta(load: Any) -> None:
    # measured = 0.8 * 1 = 0.8; calculated = 0.8 * beta.
    assert adaptive_state(load, {}, THROTTLED)["calculated_rate"] == pytest.approx(0.56)
    assert adaptive_state(load, {"beta": 0.5}, THROTTLED)["calculated_rate"] == pytest.approx(0.4)


def test_adaptive_smoothing(load: Any) -> None:
    assert adaptive_state(load, {}, THROTTLED)["measured_rate"] == pytest.approx(0.8)
    assert adaptive_state(load, {"smoothing": 0.5}, THROTTLED)["measured_rate"] == pytest.approx(0.5)


def test_adaptive_bucket(load: Any) -> None:
    # A second answer 0.3 s later: still bucket 1000 of 0.5 s (measured 0);
    # with 0.25 s, bucket 1000.25 starts: 2 / 0.25 = 8, measured 0.8 * 8.
    assert adaptive_state(load, {}, [False, 0.3, False])["measured_rate"] == 0.0
    assert adaptive_state(load, {"bucket": "250ms"}, [False, 0.3, False])["measured_rate"] == pytest.approx(6.4)


def test_adaptive_min_fill_rate(load: Any) -> None:
    # fill = max(min(0.56, 2 * 0.8), floor).
    assert adaptive_state(load, {}, THROTTLED)["fill_rate"] == pytest.approx(0.56)
    assert adaptive_state(load, {"min_fill_rate": 2}, THROTTLED)["fill_rate"] == pytest.approx(2.0)


# Then a success 10 s after the throttle: 1 answer over 10 s, measured =
# 0.8 * 0.1 + 0.2 * 0.8 = 0.24; CUBIC's output is far above the cap.
RECOVERED = [*THROTTLED, 10, False]


def test_adaptive_max_rate_scale(load: Any) -> None:
    # fill = max(min(calculated, scale * 0.24), 0.5): 0.48 -> the floor 0.5; 0.96.
    assert adaptive_state(load, {}, RECOVERED)["fill_rate"] == pytest.approx(0.5)
    assert adaptive_state(load, {"max_rate_scale": 4}, RECOVERED)["fill_rate"] == pytest.approx(0.96)


def test_adaptive_scale_constant(load: Any) -> None:
    # W = 0.8, K = cbrt(0.8 * 0.3 / C), calculated = C * (10 - K)^3 + 0.8;
    # C = 0.24 makes K = 1: 0.24 * 729 + 0.8 = 175.76.
    k = (0.8 * 0.3 / 0.4) ** (1 / 3)
    default = adaptive_state(load, {}, RECOVERED)
    assert default["time_window"] == pytest.approx(k)
    assert default["calculated_rate"] == pytest.approx(0.4 * (10 - k) ** 3 + 0.8)
    other = adaptive_state(load, {"scale_constant": 0.24}, RECOVERED)
    assert other["time_window"] == pytest.approx(1.0)
    assert other["calculated_rate"] == pytest.approx(175.76)


def test_adaptive_max_wait(load: Any) -> None:
    # After the throttle the bucket holds 1 token (2 s at 0.5, bounded by 1):
    # the first reserve goes now, the second waits 1 / 0.56 = 1.785714286 s.
    script = [*THROTTLED, "reserve", "reserve"]
    assert adaptive_state(load, {}, script)["waits"] == [0.0, 1.785714286]
    assert adaptive_state(load, {"max_wait": "1s"}, script)["waits"] == [0.0, "refused"]
    assert adaptive_state(load, {"max_wait": 2}, script)["waits"] == [0.0, 1.785714286]


# --- the references ---------------------------------------------------------


def test_policy_budget(load: Any) -> None:
    assert attempts_per_call(load, {"max_tokens": 4}, 2) == [2, 1]
    load({"policies": {"p": {"max_attempts": 5, "base_delay": 0}}})
    n = [0]

    @mulligan.retry(policy="p", on=Down)
    def op() -> None:
        n[0] += 1
        raise Down()

    for _ in range(2):
        with FakeClock(), pytest.raises(Down):
            op()
    assert n[0] == 10  # no budget: 5 + 5


def test_policy_throttle(load: Any) -> None:
    with FakeClock() as clock:
        load({"throttles": {"t": {"k": 1, "seed": 1}}, "policies": {"p": {"max_attempts": 1, "throttle": "t"}}})
        t = mulligan.policy("p").throttle
        for _ in range(2000):
            t._core.admit(clock.monotonic())
            t._core.record(False)
        assert t.probability() > 0.999  # 2000 / 2001

        @mulligan.retry(policy="p", on=Down)
        def op() -> str:
            return "ran"

        with pytest.raises(mulligan.ThrottledError):
            op()
        load({"policies": {"p": {"max_attempts": 1}}})
        assert op.retry_with()() == "ran"  # a fresh decoration: no throttle


def test_policy_bulkhead(load: Any) -> None:
    assert nested_call(load, {"max_concurrent": 1}) == "refused"
    load({"policies": {"p": {"max_attempts": 1}}})

    @mulligan.retry(policy="p", on=Down)
    def inner() -> str:
        return "inner ran"

    @mulligan.retry(policy="p", on=Down)
    def outer() -> str:
        return inner()

    assert outer() == "inner ran"


def two_calls_sleeps(load: Any, policy: dict[str, Any], doc: dict[str, Any]) -> list[float]:
    load({**doc, "policies": {"p": policy}})

    @mulligan.retry(policy="p", on=Down)
    def op() -> None:
        return None

    with FakeClock() as clock:
        op()
        op()
    return [round(s, 9) for s in clock.sleeps]


def test_policy_rate_limiter(load: Any) -> None:
    limiter = {"rate_limiters": {"r": {"rate": 2}}}
    assert two_calls_sleeps(load, {"rate_limiter": "r"}, limiter) == [0.5]  # T = 1 / 2
    assert two_calls_sleeps(load, {}, limiter) == []


class Throttled(Exception):
    status_code = 429


def test_policy_adaptive_rate(load: Any) -> None:
    # A 429 at 1000 s (no bucket elapsed: measured 0) sets fill = max(0, 0.5)
    # = 0.5 with 0 tokens: the retry waits 1 / 0.5 = 2 s for its token.
    def sleeps(policy: dict[str, Any]) -> list[float]:
        n = [0]
        with FakeClock(start=1000.0) as clock:  # the rate is built (dated) at decoration
            load({"adaptive_rates": {"a": {}}, "policies": {"p": {"max_attempts": 2, "base_delay": 0, **policy}}})

            @mulligan.retry(policy="p", on=Throttled)
            def op() -> str:
                n[0] += 1
                if n[0] == 1:
                    raise Throttled()
                return "ok"

            assert op() == "ok"
            return [round(s, 9) for s in clock.sleeps if s > 0]

    assert sleeps({"adaptive_rate": "a"}) == [2.0]
    assert sleeps({}) == []


def test_client_budget(load: Any, server: Any) -> None:
    doc = {"budgets": {"b": {"max_tokens": 4}},
           "policies": {"p": {"max_attempts": 5, "base_delay": 0}}}
    load({**doc, "clients": {"c": {"policy": "p", "budget": "b"}}})
    with mulligan.Client(policy="c") as c:
        assert [c.get(server.url("/down")).attempts for _ in range(2)] == [2, 1]
    load({**doc, "clients": {"c": {"policy": "p", "budget": None}}})
    with mulligan.Client(policy="c") as c:
        assert [c.get(server.url("/down")).attempts for _ in range(2)] == [5, 5]


LIMIT_FIELD_TESTS: dict[str, dict[str, Any]] = {
    "budget": {
        "kind": test_budget_kind,
        "max_tokens": test_max_tokens,
        "token_ratio": test_token_ratio,
        "capacity": test_capacity,
        "retry_cost": test_retry_cost,
        "timeout_cost": test_timeout_cost,
        "throttling_cost": test_throttling_cost,
        "no_retry_increment": test_no_retry_increment,
        "ttl": test_ttl,
        "percent": test_percent,
        "min_retries_per_second": test_min_retries_per_second,
    },
    "throttle": {"k": test_k, "window": test_window, "seed": test_seed},
    "bulkhead": {
        "max_concurrent": test_max_concurrent,
        "max_queue": test_max_queue,
        "max_wait": test_max_wait,
    },
    "rateLimiter": {
        "rate": test_rate,
        "burst": test_burst,
        "max_wait": test_rate_limiter_max_wait,
        "penalize_retry_after": test_penalize_retry_after,
        "max_keys": test_max_keys,
    },
    "adaptiveRate": {
        "beta": test_adaptive_beta,
        "scale_constant": test_adaptive_scale_constant,
        "smoothing": test_adaptive_smoothing,
        "bucket": test_adaptive_bucket,
        "min_fill_rate": test_adaptive_min_fill_rate,
        "max_rate_scale": test_adaptive_max_rate_scale,
        "max_wait": test_adaptive_max_wait,
    },
    # The references, merged into FIELD_TESTS["policy"] / ["client"].
    "policy": {
        "budget": test_policy_budget,
        "throttle": test_policy_throttle,
        "bulkhead": test_policy_bulkhead,
        "rate_limiter": test_policy_rate_limiter,
        "adaptive_rate": test_policy_adaptive_rate,
    },
    "client": {"budget": test_client_budget},
}


# --- sharing, reports, errors, gRPC ------------------------------------------


def test_named_parts_are_shared_and_reported(load: Any) -> None:
    report = load({
        "budgets": {"b": {}}, "throttles": {"t": {}}, "bulkheads": {"h": {"max_concurrent": 2}},
        "rate_limiters": {"r": {"rate": 5}},
        "policies": {"p": {"budget": "b", "throttle": "t", "bulkhead": "h", "rate_limiter": "r"},
                     "q": {"budget": "b", "bulkhead": "h"}},
    })
    assert (report.budgets, report.throttles, report.bulkheads, report.rate_limiters) == (
        ("b",), ("t",), ("h",), ("r",))
    p, q = mulligan.policy("p"), mulligan.policy("q")
    assert p.budget is q.budget and p.bulkhead is q.bulkhead
    assert isinstance(p.budget, mulligan.RetryBudget) and p.budget.name == "b"
    assert isinstance(p.throttle, mulligan.AdaptiveThrottle)
    assert isinstance(p.bulkhead, mulligan.Bulkhead) and p.bulkhead.max_concurrent == 2
    assert isinstance(p.rate_limiter, mulligan.RateLimiter) and p.rate_limiter.rate == 5.0
    assert q.throttle is None and q.rate_limiter is None
    kwargs = p.retry_kwargs()
    assert kwargs["budget"] is p.budget and kwargs["rate_limiter"] is p.rate_limiter
    # A reload that leaves "b" unchanged keeps the object (and its tokens).
    p.budget._core.on_failure("other", 0.0)
    mulligan.reload_config()
    assert mulligan.policy("p").budget is p.budget
    assert p.budget.tokens() == 99.0


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"rate_limiters": {"r": {"rate": -1}}}, "rate_limiters.r.rate: expected a number > 0"),
        ({"budgets": {"b": {"kind": "ratio", "percent": 1.5}}}, "budgets.b.percent: expected a number in [0, 1]"),
        ({"bulkheads": {"h": {"max_concurrent": 0}}}, "bulkheads.h.max_concurrent: expected an integer >= 1, got 0"),
        ({"budgets": {"b": {"kind": "quota", "capacity": 0}}}, "budgets.b.capacity: expected an integer >= 1, got 0"),
        ({"policies": {"p": {"throttle": "nope"}}}, 'policies.p.throttle: expected the name of an entry of "throttles"'),
        ({"clients": {"c": {"budget": "nope"}}}, 'clients.c.budget: expected the name of a budget in "budgets"'),
        ({"adaptive_rates": {"a": {"beta": 1}}}, "adaptive_rates.a.beta: expected a number in (0, 1)"),
        ({"adaptive_rates": {"a": {"min_fill_rate": 0}}}, "adaptive_rates.a.min_fill_rate: expected a number > 0"),
        ({"adaptive_rates": {"a": {"bucket": 0}}}, "adaptive_rates.a.bucket: expected a duration greater than 0"),
        ({"adaptive_rates": {"a": {"rate": 1}}}, "adaptive_rates.a.rate: unknown field"),
        ({"policies": {"p": {"adaptive_rate": "nope"}}}, 'policies.p.adaptive_rate: expected the name of an entry of "adaptive_rates"'),
    ],
)
def test_bad_values_name_the_field(load: Any, doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=r"limits\d+\.json: " + message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.").replace("(", r"\(").replace(")", r"\)")):
        load(doc)


GRPC = {
    "methodConfig": [{
        "name": [{"service": "pkg.Svc"}],
        "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.1s", "maxBackoff": "1s",
                        "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
    }],
    "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1},
}


def test_grpc_retry_throttling_is_a_budget_every_policy_names(load: Any) -> None:
    report = load(GRPC)
    assert report.budgets == ("retryThrottling",)
    assert not [w for w in report.warnings if "retryThrottling" in w]
    p = mulligan.policy("pkg.Svc")
    assert p.retry_kwargs()["budget"] is p.budget
    b = p.budget
    assert (b.kind, b.name, b.tokens()) == ("token_bucket", "retryThrottling", 10.0)
    # gRFC A6's example (max 10, ratio 0.1), by hand: 5 failures leave 5,
    # which is not > 5: refused; one success makes 5.1: allowed.
    with FakeClock() as clock:
        now = clock.monotonic()
        for _ in range(4):
            b._core.on_failure("other", now)
        assert b._core.try_retry("other", now) >= 0  # 6 > 5
        b._core.on_failure("other", now)
        assert b._core.try_retry("other", now) == -1  # 5
        b._core.on_retried_success(0)
        assert b.tokens() == pytest.approx(5.1)
        assert b._core.try_retry("other", now) >= 0


def test_grpc_retry_throttling_stops_a_decorated_storm(load: Any) -> None:
    load(GRPC)
    n = [0]

    @mulligan.retry(policy="pkg.Svc", on=Down)
    def op() -> None:
        n[0] += 1
        raise Down()

    counts = []
    for _ in range(3):
        n[0] = 0
        with FakeClock(), pytest.raises(Down):
            op()
        counts.append(n[0])
    # 10 -> 9 -> 8 -> 7 -> 6 -> 5 (5 attempts, the last not retried anyway);
    # then 5 -> 4: refused at once.
    assert counts == [5, 1, 1]


@pytest.mark.parametrize(
    ("throttling", "message"),
    [
        ({"maxTokens": 0, "tokenRatio": 1}, r"retryThrottling\.maxTokens: expected a number in \(0, 1000\]"),
        ({"maxTokens": 10, "tokenRatio": 0.0125}, r"retryThrottling\.tokenRatio: expected a number with at most 3 decimal places"),
        ({"maxTokens": 10}, r"retryThrottling\.tokenRatio: missing"),
    ],
)
def test_grpc_retry_throttling_limits(load: Any, throttling: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load({**GRPC, "retryThrottling": throttling})


def test_the_engine_registry_shares_one_object_per_name() -> None:
    registry = _core.PolicyRegistry()
    registry.load_string(json.dumps({"budgets": {"b": {}}}), "x.json")
    assert registry.budget("b") is registry.budget("b")
    with pytest.raises(ValueError, match=r'no budget named "c" in x\.json \(known: b\)'):
        registry.budget("c")


def test_environment_overrides_a_budget(load: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MULLIGAN_BUDGET_B_MAX_TOKENS", "4")
    # The file says 100; the environment 4: 4 -> 3 (retry) -> 2 (refused).
    assert attempts_per_call(load, {"max_tokens": 100}, 2) == [2, 1]
    monkeypatch.setenv("MULLIGAN_BUDGET_B_CAPACITY", "9")
    with pytest.raises(ValueError, match='MULLIGAN_BUDGET_B_CAPACITY: a field of kind "quota"'):
        load({"budgets": {"b": {}}})


def test_adaptive_rates_are_shared_and_reported(load: Any) -> None:
    report = load({"adaptive_rates": {"a": {"beta": 0.5}, "z": {}},
                   "policies": {"p": {"adaptive_rate": "a"}, "q": {"adaptive_rate": "a"}, "r": {}}})
    assert report.adaptive_rates == ("a", "z")
    p, q = mulligan.policy("p"), mulligan.policy("q")
    assert isinstance(p.adaptive_rate, mulligan.AdaptiveRate) and p.adaptive_rate.name == "a"
    assert p.adaptive_rate is q.adaptive_rate
    assert mulligan.policy("r").adaptive_rate is None
    assert p.retry_kwargs()["adaptive_rate"] is p.adaptive_rate
    # A reload that leaves "a" unchanged keeps the object (and its state).
    p.adaptive_rate.record(True)
    mulligan.reload_config()
    assert mulligan.policy("p").adaptive_rate is p.adaptive_rate
    assert p.adaptive_rate.throttles == 1
    registry = _core.PolicyRegistry()
    registry.load_string(json.dumps({"adaptive_rates": {"a": {}}}), "x.json")
    assert registry.adaptive_rate("a") is registry.adaptive_rate("a", 5.0)
    with pytest.raises(ValueError, match=r'no adaptive rate named "b" in x\.json \(known: a\)'):
        registry.adaptive_rate("b")


def test_environment_overrides_an_adaptive_rate(load: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MULLIGAN_ADAPTIVE_RATE_A_BETA", "0.5")
    monkeypatch.setenv("MULLIGAN_ADAPTIVE_RATE_A_MIN_FILL_RATE", "2")
    # The file says beta 0.9; the environment 0.5 (calculated 0.8 * 0.5) and
    # the floor 2.
    state = adaptive_state(load, {"beta": 0.9}, THROTTLED)
    assert state["calculated_rate"] == pytest.approx(0.4)
    assert state["fill_rate"] == pytest.approx(2.0)
    report = load({"adaptive_rates": {"a": {}}})
    assert "adaptive_rates.a.beta: overridden by MULLIGAN_ADAPTIVE_RATE_A_BETA=0.5" in " ".join(report.warnings)
    monkeypatch.setenv("MULLIGAN_ADAPTIVE_RATE_A_SMOOTHING", "0")
    with pytest.raises(ValueError, match=r"MULLIGAN_ADAPTIVE_RATE_A_SMOOTHING: expected a number in \(0, 1\], got 0"):
        load({"adaptive_rates": {"a": {}}})
