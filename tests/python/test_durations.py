"""Every duration argument of every front door: seconds as an int or a float,
or a datetime.timedelta, and one error text for anything else.

The cases list each argument by hand (a new duration argument belongs here);
each builds the object with the value and reads back, where the object
shows it, the seconds it kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Optional

import pytest

import mulligan
from mulligan.testing import FakeClock


def _retry(field: str, value: Any) -> Optional[float]:
    fn = mulligan.retry(on=ValueError, **{field: value})(lambda: None)
    return float(getattr(fn.retry_policy, field))  # type: ignore[attr-defined]


def _retrying(field: str, value: Any) -> Optional[float]:
    mulligan.retrying(on=ValueError, **{field: value})
    return None


def _breaker(field: str, value: Any) -> Optional[float]:
    extra = {"window": "count"} if field == "slow_call_duration" else {}
    breaker = mulligan.CircuitBreaker("durations", **extra, **{field: value})
    return float(breaker.options[field])


def _registry(field: str, value: Any) -> Optional[float]:
    extra = {"window": "count"} if field == "slow_call_duration" else {}
    registry = mulligan.BreakerRegistry(**extra, **{field: value})
    return float(registry.get("durations").options[field])


# The client's engine policy (private) is where its durations end up.
_CLIENT_POLICY_FIELD = {"timeout": "attempt_timeout"}


def _client(field: str, value: Any) -> Optional[float]:
    with mulligan.Client(**{field: value}) as client:
        if field == "connect_timeout":
            return float(client._native_args["connect_timeout"])
        return float(getattr(client._default_policy, _CLIENT_POLICY_FIELD.get(field, field)))


def _async_client(field: str, value: Any) -> Optional[float]:
    client = mulligan.AsyncClient(**{field: value})  # no loop, no driver: nothing to close
    if field == "connect_timeout":
        return float(client._native_args["connect_timeout"])
    return float(getattr(client._default_policy, _CLIENT_POLICY_FIELD.get(field, field)))


def _request(field: str, value: Any) -> Optional[float]:
    # Checked before anything is sent; nothing listens on port 9, and the
    # fallback turns the refused connection into a return.
    with mulligan.Client() as client:
        client.get("http://127.0.0.1:9/", attempts=1, fallback=lambda e: None, **{field: value})
    return None


def _client_breaker(field: str, value: Any) -> Optional[float]:
    assert field == 'breaker["reset_timeout"]'
    with mulligan.Client(breaker={"reset_timeout": value}) as client:
        return float(client._native_args["breaker_reset_timeout"])


def _store(field: str, value: Any) -> Optional[float]:
    mulligan.IdempotencyStore(**{field: value})
    return None


RETRY_FIELDS = ["deadline", "base_delay", "max_delay", "retry_after_max"]
BREAKER_FIELDS = [
    "window_duration", "slow_call_duration", "reset_timeout", "max_reset_timeout",
    "permit_timeout",
]
CLIENT_FIELDS = ["connect_timeout", "timeout", "deadline", "base_delay", "max_delay",
                 "retry_after_max"]
REQUEST_FIELDS = ["timeout", "deadline", "base_delay", "max_delay", "retry_after_max"]
STORE_FIELDS = ["ttl", "lease", "in_flight_retry_after"]

Setter = Callable[[str, Any], Optional[float]]
CASES: list[tuple[str, Setter, str]] = [
    *(("mulligan.retry", _retry, f) for f in RETRY_FIELDS),
    *(("mulligan.retry", _retrying, f) for f in RETRY_FIELDS),
    *(("mulligan.CircuitBreaker", _breaker, f) for f in BREAKER_FIELDS),
    *(("mulligan.BreakerRegistry", _registry, f) for f in BREAKER_FIELDS),
    *(("mulligan.Client", _client, f) for f in CLIENT_FIELDS),
    *(("mulligan.AsyncClient", _async_client, f) for f in CLIENT_FIELDS),
    *(("mulligan.Client", _request, f) for f in REQUEST_FIELDS),
    ("mulligan.Client", _client_breaker, 'breaker["reset_timeout"]'),
    *(("mulligan.IdempotencyStore", _store, f) for f in STORE_FIELDS),
]
IDS = [f"{owner}-{setter.__name__.strip('_')}-{field}" for owner, setter, field in CASES]


@pytest.mark.parametrize(("owner", "setter", "field"), CASES, ids=IDS)
@pytest.mark.parametrize(
    ("value", "seconds"), [(1, 1.0), (1.5, 1.5), (timedelta(seconds=1.5), 1.5)],
    ids=["int", "float", "timedelta"],
)
def test_accepts_int_float_and_timedelta(
    owner: str, setter: Setter, field: str, value: Any, seconds: float
) -> None:
    kept = setter(field, value)
    if kept is not None:
        assert kept == seconds


@pytest.mark.parametrize(("owner", "setter", "field"), CASES, ids=IDS)
@pytest.mark.parametrize(("value", "shown"), [("1", "'1'"), (True, "True")], ids=["str", "bool"])
def test_rejects_str_and_bool_with_one_text(
    owner: str, setter: Setter, field: str, value: Any, shown: str
) -> None:
    text = (
        rf"{re.escape(owner)}: {re.escape(field)} must be a number of seconds or a "
        rf"datetime\.timedelta( or None)?, got {shown}"
    )
    with pytest.raises(TypeError) as info:
        setter(field, value)
    assert re.fullmatch(text, str(info.value)), str(info.value)


@pytest.mark.parametrize(("owner", "setter", "field"), CASES, ids=IDS)
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0], ids=["nan", "inf", "negative"])
def test_rejects_nan_infinity_and_negatives(
    owner: str, setter: Setter, field: str, value: float
) -> None:
    with pytest.raises(ValueError, match=rf"^{re.escape(owner)}: {re.escape(field)} must be "):
        setter(field, value)


def test_store_durations_given_as_timedelta_take_effect() -> None:
    # ttl 1.5 s: replayed at 1.4 s, forgotten (reserved afresh) at 1.6 s;
    # in_flight_retry_after 0.25 s is the 409 hint while the lease has 10 s left.
    clock = FakeClock(start=0.0)
    store = mulligan.IdempotencyStore(
        ttl=timedelta(seconds=1.5), lease=timedelta(seconds=10),
        in_flight_retry_after=timedelta(milliseconds=250), clock=clock.monotonic,
    )
    first = store.reserve("k", b"fp")
    assert store.reserve("k", b"fp").retry_after == 0.25
    store.complete(first, body=b"done")
    clock.advance(1.4)
    assert store.reserve("k", b"fp").state == "replay"
    clock.advance(0.2)
    assert store.reserve("k", b"fp").state == "reserved"


def test_positive_durations_refuse_zero_with_the_same_shape() -> None:
    with pytest.raises(ValueError, match=r"^mulligan\.IdempotencyStore: ttl must be > 0 seconds, got 0$"):
        mulligan.IdempotencyStore(ttl=0)
    with pytest.raises(ValueError, match=r"^mulligan\.retry: deadline must be > 0 seconds, got 0$"):
        mulligan.retry(on=ValueError, deadline=0)
    with pytest.raises(ValueError, match=r"^mulligan\.CircuitBreaker: reset_timeout must be > 0 seconds"):
        mulligan.CircuitBreaker("x", reset_timeout=timedelta(0))
    # Zero is a valid backoff base and cap.
    fn = mulligan.retry(on=ValueError, base_delay=0, max_delay=timedelta(0))(lambda: None)
    assert fn.retry_policy.max_delay == 0.0  # type: ignore[attr-defined]
