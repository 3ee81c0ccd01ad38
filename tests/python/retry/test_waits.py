"""mulligan.wait and mulligan.stop: composed waits and stop conditions.

The delays are the engine's (tests/vectors/waits.json, shared with the C++
and C suites); the stop scripts are worked out by hand on a FakeClock.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest

import mulligan
from conftest import load_vectors
from mulligan import stop, wait
from mulligan.testing import FakeClock


def _wait_of(spec: dict[str, Any]) -> wait.Wait:
    kind = spec["kind"]
    ns = 1e9
    if kind == "constant":
        return wait.constant(spec["delay_ns"] / ns)
    if kind == "linear":
        m = spec.get("max_ns")
        return wait.linear(spec["start_ns"] / ns, spec["increment_ns"] / ns, None if m is None else m / ns)
    if kind == "exponential":
        m = spec.get("max_ns")
        return wait.exponential(spec["base_ns"] / ns, spec["multiplier"], None if m is None else m / ns)
    if kind == "uniform":
        return wait.uniform(spec["low_ns"] / ns, spec["high_ns"] / ns)
    if kind == "jitter":
        return wait.jitter(spec["max_ns"] / ns)
    terms = [_wait_of(t) for t in spec["terms"]]
    if kind == "sum":
        return sum(terms[1:], terms[0])
    return wait.chain(*terms)


@pytest.mark.parametrize("case", load_vectors("waits.json"), ids=lambda c: c["name"])
def test_wait_vectors_through_retrying(case: dict[str, Any]) -> None:
    seen: list[float] = []
    block = mulligan.retrying(
        on=ValueError,
        wait=_wait_of(case["wait"]),
        stop=stop.after_attempts(case["count"] + 1),
        min_delay=case["min_delay_ns"] / 1e9,
        max_delay=case["max_delay_ns"] / 1e9,
        seed=case["seed"],
        on_retry=lambda d: seen.append(d.delay),
    )
    with FakeClock(), pytest.raises(ValueError):
        for attempt in block:
            with attempt:
                raise ValueError
    assert [round(d * 1e9) for d in seen] == case["expected_ns"]


def _delays(**options: Any) -> tuple[list[float], str]:
    seen: list[float] = []

    @mulligan.retry(on=ValueError, on_retry=lambda d: seen.append(d.delay), **options)
    def fail() -> None:
        raise ValueError("no")

    with FakeClock():
        with pytest.raises(ValueError):
            fail()
    stats = fail.statistics.last
    assert stats is not None
    return seen, stats.stop_reason


def test_sum_of_constant_and_linear_by_hand() -> None:
    # 1 + (0.5 + 0.5 n): 1.5, 2.0, 2.5; four attempts.
    seen, reason = _delays(wait=wait.constant(1) + wait.linear(0.5, 0.5), stop=stop.after_attempts(4))
    assert seen == [1.5, 2.0, 2.5]
    assert reason == "attempts_exhausted"


def test_chain_per_attempt_and_timedelta() -> None:
    w = wait.chain(wait.constant(datetime.timedelta(milliseconds=100)), wait.constant(1), wait.exponential(2, 3))
    # retry 1: 0.1; retry 2: 1; then 2 * 3**n with n = 2, 3: 18, 54 (max_delay 60).
    seen, _ = _delays(wait=w, attempts=5, max_delay=60)
    assert seen == [0.1, 1.0, 18.0, 54.0]


def test_min_delay_raises_the_classic_backoff() -> None:
    # Exponential 0.2 s without jitter: 0.2, 0.4, 0.8 -> floor 0.5: 0.5, 0.5, 0.8.
    seen, _ = _delays(attempts=4, jitter="none", min_delay=0.5)
    assert seen == [0.5, 0.5, 0.8]


def test_after_elapsed_is_a_deadline() -> None:
    # Waits of 1 s; attempts end at 0, 1, 2 s; the wait after the one at 3 s
    # would reach 3.5 s: stop with "deadline" after 4 attempts.
    seen, reason = _delays(wait=wait.constant(1), stop=stop.after_attempts(100) | stop.after_elapsed(3.5))
    assert seen == [1.0, 1.0, 1.0]
    assert reason == "deadline"


def test_all_needs_both_conditions() -> None:
    # Stop when >= 2 attempts AND the next attempt would start at >= 3 s:
    # waits of 1 s: attempts end at 0, 1, 2 s; at 2 s the wait reaches 3 s.
    seen, reason = _delays(wait=wait.constant(1), stop=stop.after_attempts(2) & stop.after_elapsed(3))
    assert seen == [1.0, 1.0]
    assert reason == "deadline"


def test_when_predicate_runs_on_failures_and_stops() -> None:
    contexts: list[stop.StopContext] = []

    def third(ctx: stop.StopContext) -> bool:
        contexts.append(ctx)
        return ctx.attempt >= 3

    seen, reason = _delays(wait=wait.constant(0.25), stop=stop.after_attempts(10) | stop.when(third))
    assert seen == [0.25, 0.25]
    assert reason == "stop_condition"
    assert [(c.attempt, c.elapsed, type(c.exception)) for c in contexts] == [
        (1, 0.0, ValueError), (2, 0.25, ValueError), (3, 0.5, ValueError)
    ]


def test_when_is_not_called_on_success() -> None:
    calls: list[int] = []

    @mulligan.retry(on=ValueError, stop=stop.after_attempts(3) | stop.when(lambda c: bool(calls.append(1))))
    def ok() -> int:
        return 7

    assert ok() == 7
    assert calls == []


def test_never_bounded_by_a_deadline() -> None:
    seen, reason = _delays(wait=wait.constant(1), stop=stop.never, deadline=10)
    # Attempts end at 0..8 s and retry; at 9 s the wait would reach 10 s.
    assert seen == [1.0] * 9
    assert reason == "deadline"


def test_never_alone_is_refused_at_decoration() -> None:
    with pytest.raises(ValueError, match="unlimited attempts"):
        mulligan.retry(on=ValueError, stop=stop.never)
    with pytest.raises(ValueError, match="unlimited attempts"):
        mulligan.retry(on=ValueError, stop=stop.never | stop.when(lambda c: True))


def test_conflicting_options_are_refused() -> None:
    with pytest.raises(TypeError, match="wait= replaces backoff"):
        mulligan.retry(on=ValueError, wait=wait.constant(1), backoff="linear")
    with pytest.raises(TypeError, match="stop= replaces attempts="):
        mulligan.retry(on=ValueError, stop=stop.after_attempts(2), attempts=3)
    with pytest.raises(TypeError, match="mulligan.wait.Wait"):
        mulligan.retry(on=ValueError, wait=1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="mulligan.stop.Stop"):
        mulligan.retry(on=ValueError, stop=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_delay"):
        mulligan.retry(on=ValueError, min_delay=11)  # above max_delay 10 s


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: wait.constant(-1), "constant must be >= 0"),
        (lambda: wait.uniform(3, 2), "uniform max must be >= min"),
        (lambda: wait.exponential(1, float("nan")), "exponential multiplier"),
        (lambda: wait.exponential(1, -2), "exponential multiplier"),
        (lambda: wait.linear(0, float("inf")), "linear increment must be a finite"),
        (lambda: wait.jitter(-0.5), "jitter max must be >= 0"),
        (lambda: wait.chain(), "chain needs at least one wait"),
        (lambda: stop.after_attempts(0), "after_attempts must be in"),
        (lambda: stop.after_elapsed(0), "after_elapsed must be > 0"),
    ],
)
def test_bad_arguments_raise_at_construction(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


def test_bad_types() -> None:
    with pytest.raises(TypeError):
        wait.constant("1s")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        wait.chain(wait.constant(1), 2)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        stop.when(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _ = wait.constant(1) + 2  # type: ignore[operator]
    with pytest.raises(TypeError):
        _ = stop.never | 2  # type: ignore[operator]


def test_reprs_and_sum_builtin() -> None:
    w = sum([wait.exponential(0.1, 2, max=5), wait.jitter(1)])
    assert repr(w) == "<mulligan.wait exponential(0.1, 2, max=5) + jitter(1)>"
    s = stop.after_attempts(5) | (stop.after_elapsed(30) & stop.never)
    assert repr(s) == "<mulligan.stop after_attempts(5) | (after_elapsed(30) & never)>"


def test_async_driver_uses_the_same_engine() -> None:
    import asyncio

    seen: list[float] = []

    @mulligan.retry(on=ValueError, wait=wait.linear(1, 1), stop=stop.after_attempts(4),
                    on_retry=lambda d: seen.append(d.delay))
    async def fail() -> None:
        raise ValueError

    async def main() -> None:
        with pytest.raises(ValueError):
            await fail()

    with FakeClock():
        asyncio.run(main())
    assert seen == [1.0, 2.0, 3.0]


def test_a_config_files_wait_and_stop_reach_the_decorator(tmp_path: Any) -> None:
    path = tmp_path / "w.json"
    path.write_text(
        '{"policies": {"w": {"wait": {"linear": {"start": "1s", "increment": "500ms"}},'
        ' "stop": {"any": [{"after_attempts": 4}, {"after_elapsed": "1h"}]}, "min_delay": "1.2s"}}}'
    )
    mulligan.load_config(str(path))
    p = mulligan.policy("w")
    assert repr(p.wait) == "<mulligan.wait linear(1s, 0.5s)>"
    assert p.min_delay == 1.2
    # 1 -> floor 1.2, 1.5, 2.0; four attempts.
    seen, reason = _delays(policy="w")
    assert seen == [1.2, 1.5, 2.0]
    assert reason == "attempts_exhausted"
    # The decorator's attempts= wins over the file's stop (and backoff= over its wait).
    seen, _ = _delays(policy="w", attempts=2, backoff="constant", base_delay=0.5, jitter="none")
    assert seen == [1.2]  # min_delay still applies: 0.5 -> 1.2


def test_retry_with_attempts_replaces_a_composed_stop() -> None:
    seen: list[float] = []

    @mulligan.retry(on=ValueError, wait=wait.constant(1), stop=stop.after_attempts(5),
                    on_retry=lambda d: seen.append(d.delay))
    def fail() -> None:
        raise ValueError

    variant = fail.retry_with(attempts=2, backoff="constant", base_delay=0.5, jitter="none")
    with FakeClock(), pytest.raises(ValueError):
        variant()
    assert seen == [0.5]


def test_tenacity_spellings_are_the_same_conditions() -> None:
    assert stop.after_attempt is stop.after_attempts
    seen, reason = _delays(wait=wait.constant(1), stop=stop.after_attempt(9) | stop.after_delay(2.5))
    assert (seen, reason) == ([1.0, 1.0], "deadline")
