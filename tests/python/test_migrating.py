"""docs/migrating.md: its examples run, and its claims about each peer hold.

Every ``python`` block of the guide runs here (with the suite's nginx as
``base_url``). The rows the guide marks *tested* are checked against the
peer itself: the peer and its mulligan port go through the same scripted
failures, and what each does is compared with what the guide says.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

import mulligan
from mulligan.testing import FakeClock

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "migrating.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```$", GUIDE.read_text(encoding="utf-8"),
                    flags=re.MULTILINE | re.DOTALL)


def _section_of(block: str) -> str:
    text = GUIDE.read_text(encoding="utf-8")
    heading = ""
    for line in text[: text.index(block)].splitlines():
        if line.startswith("## "):
            heading = line[3:]
    return heading


class Boom(Exception):
    pass


class Business(Exception):
    pass


def script(*errors: Optional[type[BaseException]]) -> Callable[[], str]:
    """A function that raises the given errors in turn (None: returns "ok")."""
    steps = iter(errors)

    def fn() -> str:
        error = next(steps)
        if error is not None:
            raise error("scripted")
        return "ok"

    return fn


def outcomes(fn: Callable[[], Any], calls: int) -> list[str]:
    """What `calls` calls of `fn` did: the value returned, or the exception's type name."""
    seen = []
    for _ in range(calls):
        try:
            seen.append(fn())
        except Exception as e:
            seen.append(type(e).__name__)
    return seen


def test_the_guide_has_a_section_and_an_example_per_peer() -> None:
    sections = {_section_of(b) for b in BLOCKS}
    assert sections == {
        "tenacity", "stamina", "backoff", "urllib3 `Retry` (and requests)", "pybreaker",
        "circuitbreaker", "resilience4j (Java)", "gRPC service config (gRFC A6)"}
    text = GUIDE.read_text(encoding="utf-8")
    assert "## Polly (.NET) and Microsoft.Extensions.Http.Resilience" in text


@pytest.mark.parametrize("block", BLOCKS, ids=[_section_of(b) for b in BLOCKS])
def test_every_example_of_the_guide_runs(block: str, server: Any) -> None:
    exec(compile(block, f"{GUIDE.name}: {_section_of(block)}", "exec"),
         {"base_url": server.base_url, "__name__": "migrating_example"})


# -- tenacity -------------------------------------------------------------------


def test_tenacity_wait_exponential_and_its_port_wait_the_same() -> None:
    tenacity = pytest.importorskip("tenacity")
    slept: list[float] = []
    peer = tenacity.retry(stop=tenacity.stop_after_attempt(6),
                          wait=tenacity.wait_exponential(multiplier=1, max=10),
                          retry=tenacity.retry_if_exception_type(Boom), reraise=True,
                          sleep=slept.append)(script(*[Boom] * 6))
    with pytest.raises(Boom):
        peer()
    port = mulligan.retry(on=Boom, attempts=6, base_delay=1, multiplier=2, max_delay=10,
                          jitter="none")(script(*[Boom] * 6))
    with FakeClock() as clock, pytest.raises(Boom):
        port()
    assert slept == clock.sleeps == [1.0, 2.0, 4.0, 8.0, 10.0]


def test_tenacity_wraps_the_last_error_where_mulligan_raises_it() -> None:
    tenacity = pytest.importorskip("tenacity")
    peer = tenacity.retry(stop=tenacity.stop_after_attempt(2), sleep=lambda s: None)(
        script(Boom, Boom))
    with pytest.raises(tenacity.RetryError):
        peer()
    port = mulligan.retry(on=Boom, attempts=2)(script(Boom, Boom))
    with FakeClock(), pytest.raises(Boom):
        port()


# -- stamina -----------------------------------------------------------------------


def test_stamina_defaults_are_the_ones_the_guide_gives() -> None:
    stamina = pytest.importorskip("stamina")
    defaults = {k: p.default for k, p in inspect.signature(stamina.retry).parameters.items()}
    assert (defaults["attempts"], defaults["timeout"], defaults["wait_initial"],
            defaults["wait_max"], defaults["wait_jitter"], defaults["wait_exp_base"]) == (
        10, 45.0, 0.1, 5.0, 1.0, 2)


# -- backoff -----------------------------------------------------------------------


def test_backoff_expo_and_its_port_wait_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    backoff = pytest.importorskip("backoff")
    import backoff._sync as backoff_sync

    slept: list[float] = []
    monkeypatch.setattr(backoff_sync.time, "sleep", slept.append)
    peer = backoff.on_exception(backoff.expo, Boom, max_tries=4, jitter=None, logger=None)(
        script(*[Boom] * 4))
    with pytest.raises(Boom):
        peer()
    port = mulligan.retry(on=Boom, attempts=4, base_delay=1, multiplier=2, jitter="none")(
        script(*[Boom] * 4))
    with FakeClock() as clock, pytest.raises(Boom):
        port()
    assert slept == clock.sleeps == [1.0, 2.0, 4.0]


# -- urllib3 -----------------------------------------------------------------------


def test_urllib3_backoff_waits_nothing_before_its_first_retry() -> None:
    urllib3 = pytest.importorskip("urllib3")
    retry = urllib3.util.Retry(total=5, backoff_factor=0.5, status_forcelist=[503])
    waits = []
    for _ in range(5):
        retry = retry.increment(method="GET", url="/down",
                                response=urllib3.response.HTTPResponse(status=503))
        waits.append(retry.get_backoff_time())
    assert waits == [0, 1.0, 2.0, 4.0, 8.0]


def test_urllib3_defaults_are_the_ones_the_guide_gives() -> None:
    urllib3 = pytest.importorskip("urllib3")
    assert urllib3.util.Retry.DEFAULT_ALLOWED_METHODS == frozenset(
        {"GET", "HEAD", "PUT", "OPTIONS", "DELETE", "TRACE"})
    assert urllib3.util.Retry.RETRY_AFTER_STATUS_CODES == frozenset({413, 429, 503})
    defaults = {k: p.default
                for k, p in inspect.signature(urllib3.util.Retry.__init__).parameters.items()}
    assert (defaults["backoff_max"], defaults["retry_after_max"]) == (120, 21600)


def test_mulligan_retries_a_keyed_post_that_urllib3_would_not(server: Any) -> None:
    with FakeClock(), mulligan.Client(attempts=3, retry_on=[503]) as client:
        keyed = client.post(server.url("/down"), data="pay", idempotency_key="order-17")
        plain = client.post(server.url("/down"), data="pay")
    assert (keyed.attempts, plain.attempts) == (3, 1)


# -- pybreaker ---------------------------------------------------------------------


def test_pybreaker_raises_its_own_error_on_the_tripping_call() -> None:
    pybreaker = pytest.importorskip("pybreaker")
    peer = pybreaker.CircuitBreaker(fail_max=2, reset_timeout=60)(script(Boom, Boom, None))
    assert outcomes(peer, 3) == ["Boom", "CircuitBreakerError", "CircuitBreakerError"]
    port = mulligan.CircuitBreaker("migrating-trip", failure_threshold=2, reset_timeout=60)(
        script(Boom, Boom, None))
    assert outcomes(port, 3) == ["Boom", "Boom", "CircuitOpenError"]


def test_pybreaker_counts_an_excluded_error_as_a_success() -> None:
    pybreaker = pytest.importorskip("pybreaker")
    # fail, excluded, fail, fail: the excluded error reset pybreaker's count,
    # so only the fourth call trips it; mulligan's ignored error does not
    # reset the count, so the third call trips it.
    peer_breaker = pybreaker.CircuitBreaker(fail_max=2, exclude=[Business])
    peer = peer_breaker(script(Boom, Business, Boom, Boom, None))
    assert outcomes(peer, 5) == ["Boom", "Business", "Boom", "CircuitBreakerError",
                                 "CircuitBreakerError"]
    port_breaker = mulligan.CircuitBreaker("migrating-exclude", failure_threshold=2,
                                           ignore_on=Business)
    port = port_breaker(script(Boom, Business, Boom, Boom, None))
    assert outcomes(port, 5) == ["Boom", "Business", "Boom", "CircuitOpenError",
                                 "CircuitOpenError"]


def test_pybreaker_defaults_are_the_ones_the_guide_gives() -> None:
    pybreaker = pytest.importorskip("pybreaker")
    defaults = {k: p.default
                for k, p in inspect.signature(pybreaker.CircuitBreaker.__init__).parameters.items()}
    assert (defaults["fail_max"], defaults["reset_timeout"], defaults["success_threshold"],
            defaults["throw_new_error_on_trip"]) == (5, 60, 1, True)
    ours = {k: p.default
            for k, p in inspect.signature(mulligan.CircuitBreaker.__init__).parameters.items()}
    assert (ours["failure_threshold"], ours["reset_timeout"], ours["half_open_max_calls"]) == (
        5, 30.0, 1)


# -- circuitbreaker ----------------------------------------------------------------


def test_circuitbreaker_raises_the_tripping_error_then_its_own() -> None:
    circuitbreaker = pytest.importorskip("circuitbreaker")
    peer = circuitbreaker.CircuitBreaker(failure_threshold=2, recovery_timeout=30,
                                         name="migrating-peer")(script(Boom, Boom, None))
    assert outcomes(peer, 3) == ["Boom", "Boom", "CircuitBreakerError"]
    assert (circuitbreaker.CircuitBreaker.FAILURE_THRESHOLD,
            circuitbreaker.CircuitBreaker.RECOVERY_TIMEOUT) == (5, 30)
    port = mulligan.CircuitBreaker("migrating-cb", failure_threshold=2, reset_timeout=30)(
        script(Boom, Boom, None))
    assert outcomes(port, 3) == ["Boom", "Boom", "CircuitOpenError"]


def test_tenacity_composed_waits_and_their_ports_wait_the_same() -> None:
    tenacity = pytest.importorskip("tenacity")
    from mulligan import stop, wait

    def peer_sleeps(w: Any, s: Any) -> list[float]:
        slept: list[float] = []
        fn = tenacity.retry(stop=s, wait=w, retry=tenacity.retry_if_exception_type(Boom),
                            reraise=True, sleep=slept.append)(script(*[Boom] * 20))
        with pytest.raises(Boom):
            fn()
        return slept

    def port_sleeps(**options: Any) -> list[float]:
        fn = mulligan.retry(on=Boom, max_delay=60, **options)(script(*[Boom] * 20))
        with FakeClock() as clock, pytest.raises(Boom):
            fn()
        return list(clock.sleeps)

    t = tenacity
    peer = peer_sleeps(t.wait_incrementing(start=1, increment=0.5, max=2.5), t.stop_after_attempt(6))
    assert peer == port_sleeps(wait=wait.linear(1, 0.5, max=2.5), stop=stop.after_attempts(6))
    assert peer == [1.0, 1.5, 2.0, 2.5, 2.5]
    chained = t.wait_chain(t.wait_fixed(1), t.wait_fixed(2)) + t.wait_fixed(0.5)
    peer = peer_sleeps(chained, t.stop_after_attempt(5))
    assert peer == port_sleeps(wait=wait.chain(wait.constant(1), wait.constant(2)) + wait.constant(0.5),
                               stop=stop.after_attempts(5))
    assert peer == [1.5, 2.5, 2.5, 2.5]
