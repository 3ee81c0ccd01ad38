"""@mulligan.retry(budget=..., throttle=...): a refused retry keeps the last
failure with stop reason "budget"; a throttled call raises ThrottledError and
is never retried; bad options are refused naming the field."""

from __future__ import annotations

import asyncio

import pytest

import mulligan
from mulligan import _budget
from mulligan.testing import FakeClock, set_clock


@pytest.fixture(autouse=True)
def _clock() -> object:
    _budget._clear()
    clock = FakeClock()
    with set_clock(clock):
        yield clock
    _budget._clear()


class Down(Exception):
    pass


def test_a6_budget_stops_retries_and_keeps_the_last_failure() -> None:
    # max 10: see budget_test.cc's RetryCall case: 3, 2, 1, 1 attempts.
    budget = mulligan.RetryBudget.token_bucket(10, 0.1)
    attempts: list[int] = []
    reasons: list[str] = []

    @mulligan.retry(on=Down, attempts=3, base_delay=0, budget=budget,
                    on_give_up=lambda d: reasons.append(d.stop_reason))
    def call() -> None:
        attempts[-1] += 1
        raise Down(f"down {attempts[-1]}")

    for _ in range(4):
        attempts.append(0)
        with pytest.raises(Down) as info:
            call()
        assert str(info.value) == f"down {attempts[-1]}"
    assert attempts == [3, 2, 1, 1]
    assert reasons == ["attempts_exhausted", "budget", "budget", "budget"]
    assert budget.tokens() == pytest.approx(3.0)
    assert budget.refused == 3


def test_successes_earn_lazily() -> None:
    budget = mulligan.RetryBudget.token_bucket(10, 0.5)

    @mulligan.retry(on=Down, attempts=2, base_delay=0, budget=budget)
    def fail() -> None:
        raise Down()

    @mulligan.retry(on=Down, budget=budget)
    def ok() -> int:
        return 1

    for _ in range(4):
        with pytest.raises(Down):
            fail()
    # Tokens 10: call 1 leaves 8 (retry granted at 9), call 2 leaves 6 (granted
    # at 7), calls 3 and 4 are refused at 5 and 4. Then 4 successes add 0.5 each.
    tokens = budget.tokens()
    assert tokens == pytest.approx(4.0)
    for _ in range(4):
        assert ok() == 1
    assert budget.tokens() == pytest.approx(min(10.0, tokens + 2.0))


def test_named_budgets_are_shared() -> None:
    a = mulligan.RetryBudget.quota(name="payments")
    b = mulligan.RetryBudget.quota(capacity=500, name="payments")  # the same options, spelt out
    assert a is b and a.tokens() == 500.0 and a.kind == "quota"


def test_a_name_in_use_with_other_options_is_refused() -> None:
    a = mulligan.RetryBudget.token_bucket(max_tokens=10, name="dup")
    with pytest.raises(ValueError, match=r"'dup' already exists with other options: max_tokens=10\.0 \(asked 500\.0\)"):
        mulligan.RetryBudget.token_bucket(max_tokens=500, name="dup")
    with pytest.raises(ValueError, match="'dup' is already a token_bucket budget, asked for a quota one"):
        mulligan.RetryBudget.quota(name="dup")
    assert a.tokens() == 10.0  # the first one is untouched
    t = mulligan.AdaptiveThrottle(window=10, name="dup-t")
    assert mulligan.AdaptiveThrottle(window=10.0, name="dup-t") is t
    with pytest.raises(ValueError, match=r"window=10\.0 \(asked 100\.0\), k=2\.0 \(asked 5\.0\)"):
        mulligan.AdaptiveThrottle(window=100, k=5, name="dup-t")


@pytest.mark.parametrize(
    "make, error, field",
    [
        (lambda: mulligan.RetryBudget.token_bucket(max_tokens="5"), TypeError, "max_tokens must be a number"),
        (lambda: mulligan.RetryBudget.quota(capacity=True), TypeError, "capacity must be an int"),
        (lambda: mulligan.RetryBudget.quota(capacity=1.9), TypeError, "capacity must be an int"),
        (lambda: mulligan.RetryBudget.quota(capacity=10**30), ValueError, "capacity must be in int64"),
        (lambda: mulligan.RetryBudget.ratio(percent=True), TypeError, "percent must be a number"),
        (lambda: mulligan.RetryBudget.ratio(ttl=-1), ValueError, "ttl"),
        (lambda: mulligan.AdaptiveThrottle(window="5"), TypeError, "window"),
        (lambda: mulligan.AdaptiveThrottle(seed=True), TypeError, "seed must be an int"),
        (lambda: mulligan.AdaptiveThrottle(seed=-1), ValueError, r"seed must be in \[0, 2\*\*64\)"),
    ],
)
def test_option_types_are_checked(make: object, error: type, field: str) -> None:
    with pytest.raises(error, match=field):  # type: ignore[call-overload]
        make()  # type: ignore[operator]


@pytest.mark.parametrize(
    "make, field",
    [
        (lambda: mulligan.RetryBudget.token_bucket(0, 0.1), "token_bucket.max_tokens"),
        (lambda: mulligan.RetryBudget.token_bucket(10, -1), "token_bucket.token_ratio"),
        (lambda: mulligan.RetryBudget.quota(capacity=0), "quota.capacity"),
        (lambda: mulligan.RetryBudget.quota(retry_cost=-5), "quota.retry_cost"),
        (lambda: mulligan.RetryBudget.ratio(percent=1.5), "ratio.percent"),
        (lambda: mulligan.RetryBudget.ratio(ttl=0.5), "ratio.ttl"),
        (lambda: mulligan.RetryBudget.ratio(min_retries_per_second=-1), "ratio.min_retries_per_second"),
        (lambda: mulligan.AdaptiveThrottle(k=0), "k must be >= 1"),
        (lambda: mulligan.AdaptiveThrottle(window=0), "window"),
    ],
)
def test_bad_options_name_the_field(make: object, field: str) -> None:
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        make()  # type: ignore[operator]


def test_wrong_types_are_refused() -> None:
    with pytest.raises(TypeError, match="budget must be a mulligan.RetryBudget"):
        mulligan.retry(on=Down, budget=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="throttle must be a mulligan.AdaptiveThrottle"):
        mulligan.retry(on=Down, throttle="x")  # type: ignore[arg-type]


def test_throttle_rejects_locally_and_never_retries(_clock: FakeClock) -> None:
    throttle = mulligan.AdaptiveThrottle(seed=3, name="api")
    # Fill the window with overload answers through the core.
    for _ in range(1000):
        throttle._core.admit(_clock.monotonic())
        throttle._core.record(False)
    assert throttle.probability() > 0.99
    runs = []

    @mulligan.retry(on=Down, attempts=3, base_delay=0, throttle=throttle)
    def call() -> None:
        runs.append(1)
        raise Down()

    rejected = 0
    for _ in range(20):
        try:
            call()
        except mulligan.ThrottledError as e:
            rejected += 1
            assert e.name == "api" and isinstance(e, mulligan.MulliganError)
        except Down:
            pass
    assert rejected >= 18
    assert len(runs) <= 3 * (20 - rejected) + 2


def test_async_decorator_honours_the_budget() -> None:
    budget = mulligan.RetryBudget.token_bucket(10, 0.1)
    counts = []

    @mulligan.retry(on=Down, attempts=3, base_delay=0, budget=budget)
    async def call() -> None:
        counts[-1] += 1
        raise Down()

    async def main() -> None:
        for _ in range(3):
            counts.append(0)
            with pytest.raises(Down):
                await call()

    asyncio.run(main())
    assert counts == [3, 2, 1]


class TooMany(Exception):
    """An HTTP 429 as client libraries raise it (a ``status_code`` attribute)."""

    status_code = 429


def _script(call: object, failures: int) -> None:
    """Four successes, then ``failures`` failed calls (attempts=1: one attempt each)."""
    for _ in range(4):
        call(False)  # type: ignore[operator]
    for _ in range(failures):
        with pytest.raises(Exception):
            call(True)  # type: ignore[operator]


# SRE "Handling Overload", K = 2: after 4 accepted requests and 5 that the
# backend refused as overloaded, p = max(0, (9 - 2 * 4) / (9 + 1)) = 0.1;
# had the 5 counted as accepted, p = max(0, (9 - 18) / 10) = 0.


@pytest.mark.parametrize("on", [TooMany, Down], ids=["retryable", "terminal"])
def test_throttling_answers_count_as_not_accepted(on: type) -> None:
    # Retryable (on=TooMany) or terminal (on=Down: the 429 is not retried),
    # a 429 is a request the backend did not accept.
    throttle = mulligan.AdaptiveThrottle(k=2.0, seed=1)

    @mulligan.retry(on=on, attempts=1, throttle=throttle)
    def call(fail: bool) -> str:
        if fail:
            raise TooMany()
        return "ok"

    _script(call, 5)
    assert throttle.probability() == pytest.approx(0.1)


def test_other_failures_count_as_accepted() -> None:
    throttle = mulligan.AdaptiveThrottle(k=2.0, seed=1)

    @mulligan.retry(on=Down, attempts=1, throttle=throttle)
    def call(fail: bool) -> str:
        if fail:
            raise Down()
        return "ok"

    _script(call, 5)
    assert throttle.probability() == 0.0


def test_is_throttling_judges_for_the_throttle() -> None:
    throttle = mulligan.AdaptiveThrottle(k=2.0, seed=1)
    seen: list[object] = []

    def judge(value: object) -> bool:
        seen.append(value)
        return isinstance(value, Down)

    @mulligan.retry(on=(Down, TooMany), attempts=1, throttle=throttle, is_throttling=judge)
    def call(fail: bool) -> str:
        if fail:
            raise Down()
        return "ok"

    _script(call, 5)
    assert throttle.probability() == pytest.approx(0.1)
    assert len(seen) == 5 and all(isinstance(v, Down) for v in seen)  # failures only

    # The judge's False wins over the default's True for a 429.
    quiet = mulligan.AdaptiveThrottle(k=2.0, seed=1)

    @mulligan.retry(on=TooMany, attempts=1, throttle=quiet, is_throttling=lambda v: False)
    def refused(fail: bool) -> str:
        if fail:
            raise TooMany()
        return "ok"

    _script(refused, 5)
    assert quiet.probability() == 0.0


def test_async_throttling_answers_count_as_not_accepted() -> None:
    throttle = mulligan.AdaptiveThrottle(k=2.0, seed=1)

    @mulligan.retry(on=TooMany, attempts=1, throttle=throttle)
    async def call(fail: bool) -> str:
        if fail:
            raise TooMany()
        return "ok"

    async def main() -> None:
        for _ in range(4):
            await call(False)
        for _ in range(5):
            with pytest.raises(TooMany):
                await call(True)

    asyncio.run(main())
    assert throttle.probability() == pytest.approx(0.1)


def test_a_failure_whose_attributes_raise_keeps_its_own_exception() -> None:
    # The default judge reads status_code; a property that raises there is
    # no answer (not an overload), and the caller's exception propagates.
    class ApiError(Exception):
        @property
        def status_code(self) -> int:
            raise RuntimeError("no response attached")

    throttle = mulligan.AdaptiveThrottle(k=2.0, seed=1)

    @mulligan.retry(on=ApiError, attempts=1, throttle=throttle)
    def call() -> None:
        raise ApiError("boom")

    with pytest.raises(ApiError, match="boom"):
        call()
    assert throttle.probability() == 0.0
