"""Metrics, status and events of decorated Python functions (exact counts)."""

from __future__ import annotations

import asyncio
import json
import sys
import threading

import pytest

import mulligan
from mulligan._telemetry import metrics as _metrics
from mulligan.testing import FakeClock


@pytest.fixture(autouse=True)
def fresh_metrics() -> None:
    _metrics.reset_metrics()


def by_name(name: str) -> dict:
    for snap in mulligan.metrics_snapshot():
        if snap["name"] == name:
            return snap
    raise AssertionError(f"no metrics named {name!r}")


def flaky(failures: int):
    calls = {"n": 0}

    def fn() -> str:
        calls["n"] += 1
        if calls["n"] <= failures:
            raise ConnectionError(f"attempt {calls['n']}")
        return "ok"

    return fn


def test_a_call_that_succeeds_on_its_third_attempt_is_one_success_and_two_retries() -> None:
    fn = mulligan.retry(on=ConnectionError, attempts=5, base_delay=0.1, jitter="none")(flaky(2))
    with FakeClock() as clock:
        assert fn() == "ok"
    snap = by_name(fn.__qualname__)
    assert (snap["calls"], snap["attempts"], snap["retries"]) == (1, 3, 2)
    assert (snap["successes"], snap["failures"], snap["fallbacks"]) == (1, 0, 0)
    assert snap["retries_by_reason"]["exception"] == 2
    assert snap["in_flight"] == 0 and snap["waiting_to_retry"] == 0
    assert snap["retry_delay_seconds"]["sum"] == pytest.approx(0.1 + 0.2)
    assert clock.sleeps == [0.1, 0.2]


def test_scripted_run_gives_exact_totals() -> None:
    @mulligan.retry(on=ValueError, attempts=3, base_delay=0.0)
    def work(fail_times: list[int]) -> int:
        if fail_times and fail_times[0] > 0:
            fail_times[0] -= 1
            raise ValueError("boom")
        return 1

    # 10 first-attempt successes, 3 calls needing 2 attempts, 2 calls giving up after 3.
    for _ in range(10):
        work([0])
    for _ in range(3):
        work([1])
    for _ in range(2):
        with pytest.raises(ValueError):
            work([5])
    snap = by_name(work.__qualname__)
    assert snap["calls"] == 15
    assert snap["attempts"] == 10 + 3 * 2 + 2 * 3
    assert snap["retries"] == 3 + 2 * 2
    assert snap["successes"] == 13
    assert snap["failures"] == 2
    assert snap["attempts_per_call"]["counts"][:3] == [10, 3, 2]
    assert snap["in_flight"] == 0
    totals = json.loads(mulligan.metrics_json())["totals"]
    assert totals == {
        "calls": 15, "retries": 7, "circuit_opens": 0, "fallbacks": 0, "successes": 13, "failures": 2, "rejections": 0,
    }


def test_async_calls_and_a_cancelled_wait_leave_no_call_in_flight() -> None:
    @mulligan.retry(on=ConnectionError, attempts=5, base_delay=30.0, jitter="none")
    async def slow_to_recover() -> None:
        raise ConnectionError("down")

    async def main() -> None:
        task = asyncio.create_task(slow_to_recover())
        await asyncio.sleep(0.05)  # the task is now waiting 30 s before attempt 2
        status = mulligan.status()
        assert status.retrying
        assert status.by_name[slow_to_recover.__qualname__] == (1, 1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    snap = by_name(slow_to_recover.__qualname__)
    # A cancelled call is counted cancelled, never failed (DESIGN.md; 0.6).
    assert (snap["calls"], snap["failures"], snap["cancelled"], snap["in_flight"],
            snap["waiting_to_retry"]) == (1, 0, 1, 0, 0)
    assert mulligan.status().in_flight == 0


def test_threads_counting_at_once_lose_nothing() -> None:
    @mulligan.retry(on=KeyError)
    def ok() -> int:
        return 1

    def run() -> None:
        for _ in range(20000):
            ok()

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snap = by_name(ok.__qualname__)
    assert snap["calls"] == snap["successes"] == snap["attempts"] == 80000


def test_retrying_blocks_are_counted_under_the_block_name() -> None:
    attempts = 0
    with FakeClock():
        for attempt in mulligan.retrying(on=OSError, attempts=4, base_delay=0.0):
            with attempt:
                attempts += 1
                if attempts < 3:
                    raise OSError("again")
    names = [s["name"] for s in mulligan.metrics_snapshot()]
    assert len(names) == 1
    snap = mulligan.metrics_snapshot()[0]
    assert (snap["calls"], snap["attempts"], snap["retries"], snap["successes"]) == (1, 3, 2, 1)


def test_prometheus_text_parses_with_prometheus_client() -> None:
    parser = pytest.importorskip("prometheus_client.parser")
    fn = mulligan.retry(on=ConnectionError, attempts=3, base_delay=0.0)(flaky(1))
    fn()
    families = {f.name: f for f in parser.text_string_to_metric_families(mulligan.prometheus_text())}
    calls = {s.labels["name"]: s.value for s in families["mulligan_calls"].samples}
    assert calls[fn.__qualname__] == 1
    retries = {
        (s.labels["name"], s.labels["reason"]): s.value for s in families["mulligan_retries"].samples
    }
    assert retries[(fn.__qualname__, "exception")] == 1
    assert families["mulligan_call_duration_seconds"].type == "histogram"
    assert families["mulligan_attempts_per_call"].type == "histogram"


def test_event_listener_sees_the_retry_stream() -> None:
    events: list[tuple[str, int]] = []
    listener = mulligan.add_event_listener(
        lambda e: events.append((e["kind"], e["attempt"])),
        kinds=["attempt_failed", "retry_scheduled", "succeeded", "gave_up"],
    )
    try:
        fn = mulligan.retry(on=ConnectionError, attempts=3, base_delay=0.0)(flaky(1))
        fn()
    finally:
        assert mulligan.remove_event_listener(listener)
    assert events == [("attempt_failed", 1), ("retry_scheduled", 1), ("succeeded", 2)]


def test_bad_listener_arguments() -> None:
    with pytest.raises(TypeError):
        mulligan.add_event_listener(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown event kind"):
        mulligan.add_event_listener(print, kinds=["attempt_exploded"])
    assert mulligan.remove_event_listener(123456789) is False


def test_a_listener_that_raises_does_not_break_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    reported: list[BaseException] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u.exc_value))

    def bad(_: dict) -> None:
        raise RuntimeError("listener bug")

    listener = mulligan.add_event_listener(bad, kinds=["attempt_failed"])
    try:
        fn = mulligan.retry(on=ConnectionError, attempts=3, base_delay=0.0)(flaky(1))
        assert fn() == "ok"
    finally:
        mulligan.remove_event_listener(listener)
    assert [str(e) for e in reported] == ["listener bug"]


def test_only_decorated_callables_get_metrics_names() -> None:
    @mulligan.retry(on=KeyError)
    def only_me() -> int:
        return 1

    mulligan.retry(on=KeyError, attempts=2)  # a decorator never applied
    assert only_me() == 1
    assert [s["name"] for s in mulligan.metrics_snapshot()] == [only_me.__qualname__]
