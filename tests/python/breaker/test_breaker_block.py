"""`with breaker:` (native __enter__/__exit__, issue 19) and the lazy refusal.

Which permit a block records is read from the breaker's call events: each
block is entered and left at chosen instants of an injected clock, so the
duration of each recorded call says whose permit it was (a swap between two
blocks would give other durations). Threads and tasks are put in a fixed
interleaving with events, never with sleeps.
"""

from __future__ import annotations

import asyncio
import math
import pickle
import threading
from typing import Any, List, Tuple

import pytest

from mulligan import BreakerCallEvent, CircuitBreaker, CircuitOpenError


class Clock:
    """A monotonic clock that moves only when set."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def recorded(breaker: CircuitBreaker) -> List[Tuple[str, float]]:
    """The (kind, duration) of every call event of `breaker`, as they come."""
    events: List[Tuple[str, float]] = []

    def listener(event: BreakerCallEvent) -> None:
        events.append((event.kind, event.duration))

    breaker.add_call_listener(listener)
    return events


def no_block_open(breaker: CircuitBreaker) -> bool:
    try:
        breaker.__exit__(None, None, None)
    except RuntimeError:
        return True
    return False


def test_blocks_of_two_threads_interleaved_record_their_own_permits() -> None:
    clock = Clock()
    breaker = CircuitBreaker("threads", failure_threshold=5, clock=clock)
    events = recorded(breaker)
    step: List[threading.Event] = [threading.Event() for _ in range(4)]
    errors: List[BaseException] = []

    def first() -> None:  # enters at 100, leaves at 103 with a failure
        try:
            with pytest.raises(ConnectionError):
                with breaker:
                    step[0].set()
                    step[1].wait()
                    clock.now = 103.0
                    raise ConnectionError
            step[2].set()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def second() -> None:  # enters at 102, leaves at 107 with a success
        try:
            step[0].wait()
            clock.now = 102.0
            with breaker:
                step[1].set()
                step[2].wait()
                clock.now = 107.0
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not errors
    assert events == [("failure", 3.0), ("success", 5.0)]
    assert no_block_open(breaker)


def test_interleaved_tasks_with_nested_blocks_record_their_own_permits() -> None:
    clock = Clock()
    breaker = CircuitBreaker("tasks", failure_threshold=5, ignore_on=KeyError, clock=clock)
    events = recorded(breaker)

    async def main() -> None:
        a_in = asyncio.Event()
        b_in = asyncio.Event()
        a_out = asyncio.Event()

        async def a() -> None:  # outer 100-105 ignored, inner 101-104 failure
            with pytest.raises(KeyError):
                async with breaker:
                    clock.now = 101.0
                    with pytest.raises(TimeoutError):
                        with breaker:
                            a_in.set()
                            await b_in.wait()
                            clock.now = 104.0
                            raise TimeoutError
                    clock.now = 105.0
                    raise KeyError("not counted")
            a_out.set()

        async def b() -> None:  # 102-109 success
            await a_in.wait()
            clock.now = 102.0
            with breaker:
                b_in.set()
                await a_out.wait()
                clock.now = 109.0

        await asyncio.gather(a(), b())

    asyncio.run(main())
    assert events == [("failure", 3.0), ("ignored", 5.0), ("success", 7.0)]
    assert no_block_open(breaker)


def test_a_task_started_inside_a_block_does_not_see_it() -> None:
    clock = Clock()
    breaker = CircuitBreaker("child", clock=clock)
    events = recorded(breaker)
    outcome: List[str] = []

    async def child() -> None:
        try:
            breaker.__exit__(None, None, None)
        except RuntimeError as exc:
            outcome.append(str(exc))

    async def main() -> None:
        with breaker:
            await asyncio.create_task(child())
            clock.now = 101.5

    asyncio.run(main())
    assert outcome == [
        "circuit breaker 'child': __exit__ without a matching __enter__ in this thread or task"
    ]
    assert events == [("success", 1.5)]


def test_blocks_of_two_breakers_closed_out_of_order_by_hand() -> None:
    clock = Clock()
    a = CircuitBreaker("a", clock=clock)
    b = CircuitBreaker("b", clock=clock)
    a_events, b_events = recorded(a), recorded(b)
    assert a.__enter__() is a
    clock.now = 101.0
    b.__enter__()
    clock.now = 103.0
    a.__exit__(None, None, None)  # a's block, though b's is inside it
    clock.now = 106.0
    b.__exit__(None, None, None)
    assert a_events == [("success", 3.0)]
    assert b_events == [("success", 5.0)]
    assert no_block_open(a) and no_block_open(b)


@pytest.mark.parametrize(
    "raised, kind",
    [
        (ConnectionError(), "failure"),  # failure_on
        (TimeoutError(), "failure"),  # timeouts always count
        (asyncio.TimeoutError(), "failure"),
        (KeyError("x"), "ignored"),  # ignore_on wins
        (ValueError(), "ignored"),  # neither
        (KeyboardInterrupt(), "ignored"),  # never counted
        (asyncio.CancelledError(), "ignored"),
        (GeneratorExit(), "ignored"),
    ],
)
def test_exceptions_are_recorded_as_the_classifier_says(raised: BaseException, kind: str) -> None:
    clock = Clock()
    breaker = CircuitBreaker(
        "classify", failure_on=(ConnectionError, KeyError), ignore_on=KeyError, clock=clock
    )
    events = recorded(breaker)
    with pytest.raises(type(raised)):
        with breaker:
            clock.now = 100.25
            raise raised
    assert events == [(kind, 0.25)]
    assert no_block_open(breaker)


def test_a_raising_classifier_or_clock_never_leaks_the_probe_permit() -> None:
    clock = Clock()
    calls: List[str] = []

    def failure_on(exc: BaseException) -> bool:
        calls.append(type(exc).__name__)
        raise RuntimeError("broken predicate")

    breaker = CircuitBreaker(
        "leak", failure_threshold=1, reset_timeout=10.0, half_open_max_calls=1,
        failure_on=failure_on, clock=clock,
    )
    breaker.force_open(until=101.0)
    clock.now = 101.0
    assert breaker.state == "half_open"
    with pytest.raises(RuntimeError, match="broken predicate"):
        with breaker:  # the one probe slot
            raise ValueError
    assert calls == ["ValueError"]
    assert breaker.counts["ignored"] == 1
    # The slot is free again: the next block is admitted as the probe.
    with breaker:
        pass
    assert breaker.state == "closed"

    def broken_clock() -> float:
        raise OSError("clock gone")

    other = CircuitBreaker("leak-clock", half_open_max_calls=1, clock=clock)
    other.half_open()
    other.__enter__()  # the one probe slot
    other._bind(other._guard, broken_clock)  # the clock the native __exit__ reads
    with pytest.raises(OSError, match="clock gone"):
        other.__exit__(None, None, None)
    assert other.counts["ignored"] == 1
    other._bind(other._guard, clock)
    with other:  # the probe slot was freed
        pass
    assert other.state == "closed"


def test_a_refused_block_keeps_no_entry_and_counts_one_rejection() -> None:
    clock = Clock()
    breaker = CircuitBreaker("refused", failure_threshold=1, reset_timeout=10.0, clock=clock)
    with pytest.raises(ConnectionError):
        with breaker:
            raise ConnectionError
    clock.now = 102.5
    ran = []
    with pytest.raises(CircuitOpenError) as info:
        with breaker:
            ran.append(1)  # pragma: no cover - must not run
    assert ran == []
    assert no_block_open(breaker)
    assert breaker.counts["rejected"] == 1
    exc = info.value
    assert (exc.name, exc.key, exc.retry_in, exc.attempts) == ("refused", "refused", 7.5, 0)
    assert str(exc) == "circuit breaker 'refused' is open; next probe in 7.500 s"


def test_the_refusal_message_is_made_only_when_read() -> None:
    breaker = CircuitBreaker("lazy")
    breaker.force_open()
    guarded = breaker(lambda: 1)
    with pytest.raises(CircuitOpenError) as info:
        guarded()
    exc = info.value
    assert "_pending" in exc.__dict__  # not formatted yet
    assert (exc.name, exc.key, exc.retry_in, exc.attempts) == ("lazy", "lazy", math.inf, 0)
    message = "circuit breaker 'lazy' is forced open; no probe until it is reset"
    assert exc.args == (message,)
    assert "_pending" not in exc.__dict__
    assert str(exc) == message
    assert repr(exc) == f"CircuitOpenError({message!r})"

    # repr() and pickling read it too; args can be replaced.
    for read in (repr, lambda e: pickle.loads(pickle.dumps(e))):
        with pytest.raises(CircuitOpenError) as again:
            guarded()
        read(again.value)
        assert again.value.args == (message,)
    copy = pickle.loads(pickle.dumps(again.value))
    assert (copy.name, copy.retry_in, str(copy)) == ("lazy", math.inf, message)
    with pytest.raises(CircuitOpenError) as third:
        guarded()
    third.value.args = ("replaced",)
    assert str(third.value) == "replaced"


def test_two_threads_reading_a_fresh_refusal_both_get_its_message() -> None:
    """The first read makes the message; a second thread reading meanwhile
    must get it too, never an empty text (found by review: 126 of 3000 before
    `args` was set ahead of dropping `_pending`). The switch interval of 1 us
    makes the interleaving likely."""
    import sys

    breaker = CircuitBreaker("race")
    breaker.force_open()
    guarded = breaker(lambda: 1)
    message = "circuit breaker 'race' is forced open; no probe until it is reset"
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    bad = []
    try:
        for _ in range(300):
            with pytest.raises(CircuitOpenError) as info:
                guarded()
            exc = info.value
            out: List[Any] = [None, None]
            go = threading.Barrier(2)

            def read(k: int, exc: CircuitOpenError = exc) -> None:
                go.wait()
                out[k] = (str(exc), exc.args)

            threads = [threading.Thread(target=read, args=(k,)) for k in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if out != [(message, (message,))] * 2:
                bad.append(out)
    finally:
        sys.setswitchinterval(old)
    assert bad == []


def test_open_message_matches_the_core_for_any_period() -> None:
    breaker = CircuitBreaker("msg", failure_threshold=1, reset_timeout=12.5, clock=Clock())
    guard: Any = breaker._guard
    assert guard.open_message(12.5) == "circuit breaker 'msg' is open; next probe in 12.500 s"
    assert guard.open_message(math.inf) == (
        "circuit breaker 'msg' is forced open; no probe until it is reset"
    )
    for bad in (-1.0, math.nan):
        with pytest.raises(ValueError, match="retry_in must be >= 0 seconds"):
            guard.open_message(bad)
    with pytest.raises(TypeError):
        guard.open_message("12")


def test_bind_refuses_wrong_arguments_and_an_unbound_base_refuses_blocks() -> None:
    breaker = CircuitBreaker("bind")
    with pytest.raises(TypeError, match=r"_bind\(guard: BreakerGuard"):
        breaker._bind(object(), None)
    with pytest.raises(TypeError, match=r"_bind\(guard: BreakerGuard"):
        breaker._bind(breaker._guard, 3)
    bare = CircuitBreaker.__new__(CircuitBreaker)
    with pytest.raises(RuntimeError, match="not initialized"):
        bare.__enter__()
    with pytest.raises(TypeError, match="takes 3 arguments"):
        breaker.__exit__(None, None)  # type: ignore[call-arg]
