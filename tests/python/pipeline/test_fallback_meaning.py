"""``fallback=`` has one meaning at every front door (DESIGN.md section 2,
strategy 1; the pipeline says when): it answers a give-up on retryable
failures and a refusal (CircuitOpenError), never a terminal outcome.

- ``@mulligan.retry`` (sync and async): a give-up on a retried exception
  hands the fallback that last exception; a give-up on values ``on_result``
  rejects hands it a RetriesExhausted; a breaker's refusal hands it the
  CircuitOpenError (and the function does not run); an exception ``on=``
  does not name propagates, the fallback untouched.
- ``mulligan.Client`` and ``mulligan.AsyncClient`` against nginx: a 503
  after its retries hands the fallback a RetriesExhausted carrying that
  response; a transport error after its retries hands it the
  TransportError; the origin's open breaker hands it the CircuitOpenError;
  a 404 is returned as the response.

The ``fallbacks`` metric counts exactly the fallbacks used. Waits are on a
FakeClock.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any, Callable

import pytest

import mulligan
from mulligan._telemetry import metrics as _metrics
from mulligan.testing import FakeClock

from pipeline_script import unique

# The decorators' waits without jitter, so exact; the clients' backoff
# always has full jitter, so their waits are at most 0.5 s.
FAST = {"base_delay": 0.5, "max_delay": 0.5}
EXACT = {**FAST, "jitter": "none"}


class Fallback:
    """A fallback that records what it is handed and answers "fallback"."""

    def __init__(self) -> None:
        self.given: list[BaseException] = []

    def __call__(self, exc: BaseException) -> str:
        self.given.append(exc)
        return "fallback"


def fallbacks_of(name: str) -> int:
    for snap in mulligan.metrics_snapshot():
        if snap["name"] == name:
            return int(snap["fallbacks"])
    return 0


# -- the decorators ---------------------------------------------------------------


def decorate(kind: str, body: Callable[[], Any], **options: Any) -> Any:
    """``body`` as a plain or a coroutine function with a metrics name of
    its own, decorated with ``@mulligan.retry(**options)``."""
    if kind == "sync":
        def op() -> Any:
            return body()
    else:
        async def op() -> Any:
            await asyncio.sleep(0)
            return body()
    op.__name__ = op.__qualname__ = unique(f"fallback-{kind}").replace("-", "_")
    return mulligan.retry(**options)(op)


def run(kind: str, fn: Any) -> Any:
    return fn() if kind == "sync" else asyncio.run(fn())


KINDS = ["sync", "async"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_decorator_s_give_up_on_a_retried_exception_gets_the_fallback(kind: str) -> None:
    raised: list[ConnectionError] = []

    def body() -> None:
        raised.append(ConnectionError(f"attempt {len(raised) + 1}"))
        raise raised[-1]

    fallback = Fallback()
    fn = decorate(kind, body, on=ConnectionError, attempts=2, fallback=fallback, **EXACT)
    with FakeClock() as clock:
        assert run(kind, fn) == "fallback"
    assert len(raised) == 2 and clock.sleeps == [0.5]
    assert fallback.given == [raised[-1]]  # the last attempt's own exception
    assert fallbacks_of(fn.__qualname__) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_decorator_s_give_up_on_rejected_values_hands_over_retries_exhausted(kind: str) -> None:
    values = iter(["first", "second", "third"])
    fallback = Fallback()
    fn = decorate(kind, lambda: next(values), on_result=lambda value: True, attempts=2,
                  fallback=fallback, **EXACT)
    with FakeClock():
        assert run(kind, fn) == "fallback"
    assert len(fallback.given) == 1
    exhausted = fallback.given[0]
    assert isinstance(exhausted, mulligan.RetriesExhausted)
    assert (exhausted.attempts, exhausted.stop_reason) == (2, "attempts_exhausted")
    assert [(o.attempt, o.result, o.exception) for o in exhausted.outcomes] == [
        (1, "first", None), (2, "second", None)]
    assert fallbacks_of(fn.__qualname__) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_decorator_s_refusal_gets_the_fallback_without_running(kind: str) -> None:
    runs: list[int] = []

    def body() -> None:
        runs.append(1)
        raise ConnectionError("down")

    fallback = Fallback()
    with FakeClock() as clock:
        breaker = mulligan.CircuitBreaker(unique("fallback-breaker"), failure_threshold=1,
                                          reset_timeout=30, clock=clock.monotonic)
        fn = decorate(kind, body, on=ConnectionError, attempts=1, breaker=breaker, fallback=fallback)
        assert run(kind, fn) == "fallback"  # a give-up: the one failed call opens the breaker
        assert breaker.state == "open"
        assert run(kind, fn) == "fallback"  # refused
    assert len(runs) == 1
    assert [type(e) for e in fallback.given] == [ConnectionError, mulligan.CircuitOpenError]
    refused = fallback.given[1]
    assert isinstance(refused, mulligan.CircuitOpenError)
    assert (refused.name, refused.attempts) == (breaker.name, 0)
    assert fallbacks_of(fn.__qualname__) == 2


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("retried_first", [False, True])
def test_a_decorator_s_terminal_exception_propagates_past_the_fallback(kind: str, retried_first: bool) -> None:
    # ValueError is not named by on=: a terminal outcome, at the first
    # attempt or after a retry.
    script: list[BaseException] = [ConnectionError("down")] if retried_first else []
    script.append(ValueError("a bug"))
    steps = iter(script)

    def body() -> None:
        raise next(steps)

    fallback = Fallback()
    fn = decorate(kind, body, on=ConnectionError, attempts=3, fallback=fallback, **EXACT)
    with FakeClock():
        with pytest.raises(ValueError, match="a bug"):
            run(kind, fn)
    assert fallback.given == []
    assert fallbacks_of(fn.__qualname__) == 0


# -- the HTTP clients -------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Door:
    """One client call with options, sync or async: ``door.get(url, **kw)``."""

    def __init__(self, kind: str, **options: Any) -> None:
        self.kind = kind
        self.options = options

    def get(self, url: str, **kwargs: Any) -> Any:
        if self.kind == "sync":
            with mulligan.Client(**self.options) as client:
                return client.get(url, **kwargs)

        async def main() -> Any:
            async with mulligan.AsyncClient(**self.options) as client:
                return await client.get(url, **kwargs)

        return asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_a_client_s_give_up_on_a_503_gets_the_fallback(server: Any, kind: str) -> None:
    _metrics.reset_metrics()
    origin = server.base_url
    fallback = Fallback()
    with FakeClock() as clock:
        assert Door(kind, attempts=2, **FAST).get(server.url("/down"), fallback=fallback) == "fallback"
        assert len(clock.sleeps) <= 1  # one wait (full jitter: it may be 0, not slept)
    assert len(server.wait_for_requests("/down", 2)) == 2
    assert len(fallback.given) == 1
    exhausted = fallback.given[0]
    assert isinstance(exhausted, mulligan.RetriesExhausted)
    assert exhausted.response is not None
    assert exhausted.response.status_code == 503
    assert (exhausted.attempts, exhausted.stop_reason) == (2, "attempts_exhausted")
    assert fallbacks_of(origin) == 1
    # A fallback that is not callable is the answer itself.
    with FakeClock():
        assert Door(kind, attempts=2, **FAST).get(server.url("/down"), fallback="cached") == "cached"
    assert fallbacks_of(origin) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_a_client_s_terminal_404_is_returned_past_the_fallback(server: Any, kind: str) -> None:
    _metrics.reset_metrics()
    fallback = Fallback()
    url = server.url(f"/script?id={unique('fallback-404')}&steps=503,404")
    with FakeClock():
        r = Door(kind, attempts=3, **FAST).get(url, fallback=fallback)
    assert isinstance(r, mulligan.Response)
    assert (r.status_code, r.attempts, r.stop_reason) == (404, 2, "terminal")
    assert fallback.given == []
    assert fallbacks_of(server.base_url) == 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_client_s_refusal_gets_the_fallback(server: Any, kind: str) -> None:
    _metrics.reset_metrics()
    origin = server.base_url
    fallback = Fallback()
    breaker = {"failure_threshold": 1, "reset_timeout": 30}

    async def two_calls() -> tuple[Any, Any]:
        async with mulligan.AsyncClient(attempts=1, breaker=breaker) as client:
            return await client.get(server.url("/down")), await client.get(server.url("/ok"), fallback=fallback)

    with FakeClock():
        if kind == "sync":
            with mulligan.Client(attempts=1, breaker=breaker) as client:
                first, second = client.get(server.url("/down")), client.get(server.url("/ok"), fallback=fallback)
        else:
            first, second = asyncio.run(two_calls())
    # The failed call (no fallback: the 503 is returned) opens the origin's
    # breaker; the next call is refused before any request and answered.
    assert (first.status_code, first.stop_reason) == (503, "attempts_exhausted")
    assert second == "fallback"
    assert len(fallback.given) == 1
    refused = fallback.given[0]
    assert isinstance(refused, mulligan.CircuitOpenError)
    assert (refused.key, refused.attempts) == (origin, 0)
    assert len(server.wait_for_requests("/down", 1)) == 1
    assert server.wait_for_requests("/ok", 0) == []
    assert fallbacks_of(origin) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_client_s_give_up_on_a_transport_error_gets_the_fallback(kind: str) -> None:
    _metrics.reset_metrics()
    port = closed_port()
    fallback = Fallback()
    with FakeClock():
        assert Door(kind, attempts=2, **FAST).get(f"http://127.0.0.1:{port}/", fallback=fallback) == "fallback"
    assert len(fallback.given) == 1
    refused = fallback.given[0]
    assert isinstance(refused, mulligan.ConnectionRefused)
    assert refused.attempts == 2
    assert fallbacks_of(f"http://127.0.0.1:{port}") == 1
