"""@mulligan.retry(policy=...) and retrying(policy=...) with named policies from a file."""

from __future__ import annotations

import json
import pathlib

import pytest

import mulligan
from mulligan.testing import FakeClock


def write_config(path: pathlib.Path, attempts: int, base_delay: str) -> pathlib.Path:
    path.write_text(
        json.dumps(
            {
                "policies": {
                    "payments": {
                        "max_attempts": attempts,
                        "backoff": "exponential",
                        "base_delay": base_delay,
                        "multiplier": 2,
                        "jitter": "none",
                    }
                }
            }
        )
    )
    return path


def always_failing(counter: list[int]):
    def fn() -> None:
        counter.append(1)
        raise ConnectionError("down")

    return fn


def test_policy_values_apply_and_explicit_arguments_override(tmp_path: pathlib.Path) -> None:
    mulligan.load_config(str(write_config(tmp_path / "m.json", 4, "100ms")))
    calls: list[int] = []
    fn = mulligan.retry(on=ConnectionError, policy="payments")(always_failing(calls))
    with FakeClock() as clock, pytest.raises(ConnectionError):
        fn()
    assert len(calls) == 4
    assert clock.sleeps == [0.1, 0.2, 0.4]

    calls.clear()
    fewer = mulligan.retry(on=ConnectionError, policy="payments", attempts=2)(always_failing(calls))
    with FakeClock() as clock, pytest.raises(ConnectionError):
        fewer()
    assert len(calls) == 2
    assert clock.sleeps == [0.1]


def test_a_reload_applies_to_later_calls(tmp_path: pathlib.Path) -> None:
    path = write_config(tmp_path / "m.json", 3, "1s")
    mulligan.load_config(str(path))
    calls: list[int] = []
    fn = mulligan.retry(on=ConnectionError, policy="payments")(always_failing(calls))
    with FakeClock() as clock, pytest.raises(ConnectionError):
        fn()
    assert (len(calls), clock.sleeps) == (3, [1.0, 2.0])

    write_config(path, 2, "250ms")
    mulligan.reload_config()
    calls.clear()
    with FakeClock() as clock, pytest.raises(ConnectionError):
        fn()
    assert (len(calls), clock.sleeps) == (2, [0.25])


def test_retrying_blocks_take_a_policy_too(tmp_path: pathlib.Path) -> None:
    mulligan.load_config(str(write_config(tmp_path / "m.json", 3, "50ms")))
    attempts = 0
    with FakeClock() as clock:
        for attempt in mulligan.retrying(on=OSError, policy="payments"):
            with attempt:
                attempts += 1
                if attempts < 3:
                    raise OSError("again")
    assert attempts == 3
    assert clock.sleeps == [0.05, 0.1]


def test_unknown_policy_and_bad_type_fail_at_decoration(tmp_path: pathlib.Path) -> None:
    mulligan.load_config(str(write_config(tmp_path / "m.json", 3, "50ms")))
    with pytest.raises(ValueError, match="nope"):
        mulligan.retry(on=ConnectionError, policy="nope")
    with pytest.raises(TypeError, match="policy must be a str"):
        mulligan.retry(on=ConnectionError, policy=3)  # type: ignore[arg-type]
