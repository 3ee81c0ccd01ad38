"""Backoff options at the edges of their documented ranges, and the zero rules.

DESIGN.md section 5 and mulligan.retry's docstring: base_delay and max_delay
are numbers of seconds in [0, 9.2e9] (the engine's clock holds about 292
years), multiplier any finite number >= 0, jitter_fraction any number in
[0, 1]. The edge and the value just inside are accepted; the next
float outside is refused at decoration with a ValueError that names the field
and spells the value in full. base_delay 0, or multiplier 0 with exponential
backoff, is no wait at every attempt, in particular past the 1024th retry,
where 2**n overflows a double (the wait used to jump to max_delay there).

Expected values are worked out by hand.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import pytest

import mulligan
from mulligan.testing import FakeClock

TINY = 5e-324  # the smallest positive float (a denormal)
ABOVE_LIMIT = math.nextafter(9.2e9, math.inf)  # the next float above 9.2e9 s


def _delays(attempts: int, **options: Any) -> list[float]:
    seen: list[float] = []
    block = mulligan.retrying(on=ValueError, attempts=attempts, seed=1,
                              on_retry=lambda d: seen.append(d.delay), **options)
    with FakeClock(), pytest.raises(ValueError):
        for attempt in block:
            with attempt:
                raise ValueError
    return seen


@pytest.mark.parametrize("jitter", ["none", "full", "equal", "proportional"])
def test_a_zero_base_is_no_wait_past_the_1024th_retry(jitter: str) -> None:
    delays = _delays(1100, base_delay=0, multiplier=2.0, max_delay=10.0, jitter=jitter)
    assert delays == [0.0] * 1099


def test_a_zero_multiplier_is_no_wait_at_every_retry() -> None:
    delays = _delays(1100, base_delay=1.0, multiplier=0, max_delay=10.0, jitter="none")
    assert delays == [0.0] * 1099


def test_an_overflowing_product_saturates_at_the_cap() -> None:
    # 1 s * (1e300)**1 = 1e309 ns: inf as a double, so the cap (30 s).
    assert _delays(4, base_delay=1.0, multiplier=1e300, max_delay=30.0,
                   jitter="none") == [1.0, 30.0, 30.0]


@pytest.mark.parametrize(
    "options",
    [
        {"base_delay": 0},
        {"base_delay": 9.2e9},
        {"max_delay": 0},
        {"max_delay": 9.2e9},
        {"multiplier": 0},
        {"multiplier": sys.float_info.max},
        {"jitter": "proportional", "jitter_fraction": 0},
        {"jitter": "proportional", "jitter_fraction": 1},
    ],
    ids=repr,
)
def test_the_edges_of_each_range_are_accepted(options: dict[str, Any]) -> None:
    mulligan.retry(on=ValueError, **options)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"base_delay": -TINY}, "base_delay must be >= 0 seconds, got -5e-324"),
        ({"max_delay": -TINY}, "max_delay must be >= 0 seconds, got -5e-324"),
        ({"max_delay": math.inf}, "max_delay must be a finite number of seconds, got inf"),
        ({"base_delay": ABOVE_LIMIT},
         "base_delay must be a finite number of seconds below 9.2e9, got 9200000000.000002"),
        ({"max_delay": ABOVE_LIMIT},
         "max_delay must be a finite number of seconds below 9.2e9, got 9200000000.000002"),
        ({"multiplier": -TINY}, "multiplier must be a finite number >= 0, got -5e-324"),
        ({"multiplier": math.inf}, "multiplier must be a finite number >= 0, got inf"),
        ({"jitter_fraction": math.nextafter(1.0, 2.0)},
         r"jitter_fraction must be in \[0, 1\], got 1.0000000000000002"),
        ({"jitter_fraction": -TINY}, r"jitter_fraction must be in \[0, 1\], got -5e-324"),
    ],
    ids=lambda v: repr(v) if isinstance(v, dict) else "",
)
def test_just_outside_each_range_is_refused_at_decoration(options: dict[str, Any],
                                                         message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mulligan.retry(on=ValueError, **options)
