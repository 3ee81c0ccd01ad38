"""A typed tour of the public retry API: checked by `mypy --strict`, never run.

tests/python/test_typing.py runs mypy on this file; every `assert_type` is a
claim about what users' type checkers see.
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Optional

from typing_extensions import assert_type

import mulligan
import mulligan.testing


@mulligan.retry(on=ConnectionError, attempts=5, deadline=datetime.timedelta(seconds=30))
def fetch(url: str, *, timeout: float = 1.0) -> bytes:
    return url.encode()


@mulligan.retry(on=lambda e: isinstance(e, OSError) and e.errno == 111, jitter="equal")
async def fetch_async(url: str) -> bytes:
    await asyncio.sleep(0)
    return url.encode()


@mulligan.retry(on_result=lambda r: r is None, backoff="constant", base_delay=0.5)
def poll() -> Optional[int]:
    return 1


class Repository:
    @mulligan.retry(on=(KeyError, TimeoutError), max_delay=2.0)
    def load(self, key: str) -> dict[str, int]:
        return {key: 1}

    @mulligan.retry(on=KeyError)
    async def load_async(self, key: str) -> list[str]:
        return [key]


def log_retry(details: mulligan.RetryDetails) -> None:
    assert_type(details.attempt, int)
    assert_type(details.delay, float)
    assert_type(details.exception, Optional[BaseException])
    assert_type(details.time_left, Optional[float])
    assert_type(details.stop_reason, Optional[str])


hook: mulligan.RetryHook = log_retry


def retry_after_of(exc: object) -> Optional[float]:
    return getattr(exc, "retry_after", None)


@mulligan.retry(
    on=ConnectionError,
    on_retry=hook,
    on_give_up=[log_retry],
    delay_hint=retry_after_of,
    retry_after_max=60.0,
    clamp_retry_after=True,
    raise_on_give_up=True,
    seed=42,
    jitter="proportional",
    jitter_fraction=0.25,
)
def hooked(n: int) -> int:
    return n


def sync_usage() -> None:
    assert_type(fetch("https://example.org", timeout=2.0), bytes)
    assert_type(poll(), Optional[int])
    assert_type(Repository().load("k"), dict[str, int])
    assert_type(hooked(1), int)
    variant = fetch.retry_with(attempts=1, base_delay=0.0)
    assert_type(variant("u"), bytes)
    stats = fetch.statistics.last
    if stats is not None:
        assert_type(stats.attempts, int)
        assert_type(stats.retries, int)
        assert_type(stats.stop_reason, str)
    fetch.statistics.clear()

    for attempt in mulligan.retrying(on=ConnectionError, attempts=3):
        with attempt:
            assert_type(attempt.number, int)
            fetch("u")

    with mulligan.testing.set_testing(True, attempts=2):
        pass
    mulligan.testing.set_active(True)
    with mulligan.testing.FakeClock() as clock:
        assert_type(clock.monotonic(), float)
        assert_type(clock.sleeps, list[float])

    try:
        hooked(2)
    except mulligan.RetriesExhausted as e:
        for outcome in e.outcomes:
            assert_type(outcome, mulligan.AttemptOutcome)
            assert_type(outcome.exception, Optional[BaseException])


def redaction_usage() -> None:
    assert_type(mulligan.redact_url("https://u:p@h/?token=t"), str)
    previous = mulligan.set_redaction(
        query_params=(*mulligan.RedactionRules.DEFAULT_QUERY_PARAMS, "session"),
        extra_headers=["X-Api-Key"],
    )
    assert_type(previous, mulligan.RedactionRules)
    assert_type(mulligan.redaction().query_params, tuple[str, ...])
    assert_type(mulligan.RedactionRules.ALWAYS_MASKED_HEADERS, tuple[str, ...])
    mulligan.set_redaction()


def breaker_usage() -> None:
    db = mulligan.circuit_breaker("typing-db", failure_threshold=3, reset_timeout=10.0)
    assert_type(db, mulligan.CircuitBreaker)
    db.force_open(datetime.timedelta(seconds=5))
    db.force_open(until=123.0)
    db.half_open()

    def on_call(event: mulligan.BreakerCallEvent) -> None:
        assert_type(event.kind, str)
        assert_type(event.stale, bool)

    db.add_call_listener(on_call)
    assert_type(db.last_trip, Optional[mulligan.BreakerTrip])
    assert_type(db.metrics_name, str)
    mulligan.CircuitBreaker("typing-limit", max_half_open_duration=20.0)


async def async_usage() -> None:
    assert_type(await fetch_async("u"), bytes)
    assert_type(await Repository().load_async("k"), list[str])
    assert_type(await fetch_async.retry_with(attempts=2)("u"), bytes)
    async for attempt in mulligan.retrying(on=OSError, deadline=5.0):
        with attempt:
            await fetch_async("u")


def misuse() -> None:
    mulligan.redact_url(b"http://h/")  # type: ignore[arg-type]
    mulligan.set_redaction(extra_headers=[1])  # type: ignore[list-item]
    fetch(1)  # type: ignore[arg-type]
    Repository().load(2)  # type: ignore[arg-type]
    fetch("u", timeout="slow")  # type: ignore[arg-type]
    fetch.retry_with(attempts="3")  # type: ignore[arg-type]


def composed_waits_and_stops() -> None:
    from mulligan import stop, wait

    w = wait.exponential(base=0.1, max=5) + wait.jitter(1)
    assert_type(w, wait.Wait)
    s = stop.after_attempts(5) | (stop.after_elapsed(30) & stop.when(lambda c: c.attempt > 2))
    assert_type(s, stop.Stop)

    @mulligan.retry(on=OSError, wait=wait.chain(wait.constant(1), w), stop=s, min_delay=0.1)
    def composed(x: int) -> str:
        return str(x)

    assert_type(composed(1), str)
    mulligan.retry(on=OSError, wait=1.0)  # type: ignore[arg-type]
    mulligan.Client(allowed_methods=None, method_rule="safe", status_retries=2)


def outbox_jobs() -> None:
    # The decorator that enqueues (0.6): calling runs, .delay enqueues, both typed
    # by the function's own signature.
    box = mulligan.Outbox("typing-outbox.db")

    @box.job("send_email")
    def send_email(to: str, subject: str = "") -> int:
        return len(to + subject)

    assert_type(send_email("ann@example.com"), int)
    assert_type(send_email.delay("ann@example.com", subject="paid"), mulligan.OutboxEntry)
    assert_type(send_email.enqueue(["ann"], idempotency_key="k"), mulligan.OutboxEntry)
    send_email.delay(17)  # type: ignore[arg-type]
    send_email.delay("a", subjekt="x")  # type: ignore[call-arg]
