"""mulligan.parse_retry_after: RFC 9110 delay-seconds and the three HTTP-date forms."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from email.utils import format_datetime
from datetime import datetime, timezone
from typing import Any

import pytest

import mulligan
from conftest import load_vectors

# 1994-11-06T08:47:37Z, two minutes before RFC 9110's example date.
NOW = 784111657.0


@pytest.fixture
def new_york_tz() -> Iterator[None]:
    """Sets TZ to America/New_York (and restores it): parsing must ignore it."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "America/New_York"
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()


def test_delay_seconds() -> None:
    assert mulligan.parse_retry_after("120", NOW) == 120.0
    assert mulligan.parse_retry_after("0", NOW) == 0.0


def test_imf_fixdate_is_gmt_whatever_tz(new_york_tz: None) -> None:
    assert time.tzname[0] != "UTC"
    assert mulligan.parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", NOW) == 120.0


def test_imf_fixdate_from_a_real_clock(new_york_tz: None) -> None:
    now = float(int(time.time()))
    later = datetime.fromtimestamp(now + 120, tz=timezone.utc)
    assert mulligan.parse_retry_after(format_datetime(later, usegmt=True), now) == 120.0


def test_obsolete_forms() -> None:
    assert mulligan.parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", NOW) == 120.0
    assert mulligan.parse_retry_after("Sun Nov  6 08:49:37 1994", NOW) == 120.0


def test_past_date_means_now() -> None:
    assert mulligan.parse_retry_after("Sun, 06 Nov 1994 08:45:37 GMT", NOW) == 0.0


@pytest.mark.parametrize("value", ["-5", "1m0s", "0.5", "abc", "", "  ", "12 34", "+5"])
def test_invalid_values_are_none(value: str) -> None:
    assert mulligan.parse_retry_after(value, NOW) is None


def test_huge_value_saturates() -> None:
    assert mulligan.parse_retry_after("99999999999999999999", NOW) == math.inf


def test_default_now_is_the_wall_clock() -> None:
    assert mulligan.parse_retry_after("7") == 7.0


def test_non_str_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        mulligan.parse_retry_after(120)  # type: ignore[arg-type]


@pytest.mark.parametrize("case", load_vectors("retry_after.json"), ids=lambda c: repr(c["value"]))
def test_shared_retry_after_vectors(case: dict[str, Any]) -> None:
    got = mulligan.parse_retry_after(case["value"], float(case["now_unix"]))
    if case.get("saturated"):
        assert got == math.inf
    elif case["expected_seconds"] is None:
        assert got is None
    else:
        assert got == float(case["expected_seconds"])
