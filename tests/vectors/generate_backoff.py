#!/usr/bin/env python3
"""Writes backoff.json: exact backoff sequences for seeded generators.

This is an independent, pure-Python model of DESIGN.md section 4 (xoshiro256**
seeded by splitmix64, doubles from the top 53 bits, then the strategy, the cap
and the jitter formulas). The C++, C and Python suites check that the engine
produces the same delays, to the nanosecond. Re-run after changing the model:

    python3 tests/vectors/generate_backoff.py > tests/vectors/backoff.json
"""
from __future__ import annotations

import json
import math

MASK = (1 << 64) - 1


class Xoshiro256StarStar:
    def __init__(self, seed: int) -> None:
        s = seed & MASK
        self.state = []
        for _ in range(4):
            s = (s + 0x9E3779B97F4A7C15) & MASK
            z = s
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
            self.state.append(z ^ (z >> 31))

    @staticmethod
    def _rotl(x: int, k: int) -> int:
        return ((x << k) | (x >> (64 - k))) & MASK

    def next_u64(self) -> int:
        s = self.state
        result = (self._rotl((s[1] * 5) & MASK, 7) * 9) & MASK
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = self._rotl(s[3], 45)
        return result

    def uniform(self, low: float, high: float) -> float:
        if not low < high:
            return low
        return low + (high - low) * ((self.next_u64() >> 11) * 2.0**-53)


def delays(case: dict) -> list[int]:
    """Returns the delays in nanoseconds for retries 0..count-1 of one case."""
    rng = Xoshiro256StarStar(case["seed"])
    base = float(case["base_ns"])
    cap = float(case["max_delay_ns"])
    mult = case["multiplier"]
    f = case["jitter_fraction"]
    previous = base
    out = []
    for n in range(case["count"]):
        if case["backoff"] == "decorrelated":
            # uniform(0, 3 * 0) draws nothing: base 0 is no wait.
            d = rng.uniform(base, 3.0 * max(previous, base))
        else:
            if case["backoff"] == "constant":
                d = base
            elif case["backoff"] == "linear":
                d = base * (n + 1.0)
            elif mult == 0 or base == 0:
                # DESIGN.md section 5: multiplier 0 or base 0 mean no wait, at
                # every n (0 * mult**n is 0 even where mult**n overflows).
                d = 0.0
            else:
                try:
                    d = base * math.pow(mult, n)
                except OverflowError:
                    d = math.inf
            if not d <= cap:
                d = cap
            jitter = case["jitter"]
            if jitter == "full":
                d = rng.uniform(0.0, d)
            elif jitter == "equal":
                d = d / 2.0 + rng.uniform(0.0, d / 2.0)
            elif jitter == "proportional":
                d = min(d, cap / (1.0 + f)) * rng.uniform(1.0 - f, 1.0 + f)
        if not d < cap:
            ns = case["max_delay_ns"]
        elif not d > 0.0:
            ns = 0
        else:
            ns = int(d)
        previous = float(ns)
        out.append(ns)
    return out


CASES = [
    dict(name="defaults_full_jitter", backoff="exponential", base_ns=200_000_000, multiplier=2.0,
         max_delay_ns=10_000_000_000, jitter="full", jitter_fraction=0.2, seed=42, count=8),
    dict(name="exponential_no_jitter", backoff="exponential", base_ns=200_000_000, multiplier=2.0,
         max_delay_ns=10_000_000_000, jitter="none", jitter_fraction=0.2, seed=1, count=8),
    dict(name="exponential_1s_cap_5s_equal", backoff="exponential", base_ns=1_000_000_000,
         multiplier=2.0, max_delay_ns=5_000_000_000, jitter="equal", jitter_fraction=0.2, seed=7,
         count=6),
    dict(name="exponential_proportional_at_cap", backoff="exponential", base_ns=1_000_000_000,
         multiplier=3.0, max_delay_ns=1_200_000_000, jitter="proportional", jitter_fraction=0.25,
         seed=2024, count=6),
    dict(name="linear_full", backoff="linear", base_ns=100_000_000, multiplier=2.0,
         max_delay_ns=1_000_000_000, jitter="full", jitter_fraction=0.2, seed=99, count=12),
    dict(name="constant_none", backoff="constant", base_ns=250_000_000, multiplier=2.0,
         max_delay_ns=10_000_000_000, jitter="none", jitter_fraction=0.2, seed=3, count=4),
    dict(name="decorrelated", backoff="decorrelated", base_ns=100_000_000, multiplier=2.0,
         max_delay_ns=2_000_000_000, jitter="none", jitter_fraction=0.2, seed=12345, count=10),
    dict(name="exponential_multiplier_1_5", backoff="exponential", base_ns=10_000_000,
         multiplier=1.5, max_delay_ns=60_000_000_000, jitter="none", jitter_fraction=0.2,
         seed=5, count=10),
    # Zero base or zero multiplier: no wait at every n, whatever the other
    # options. The exponential cases run past the n where multiplier**n
    # overflows a double (2**1024, 10**309), where 0 * inf would be NaN.
    dict(name="zero_base_exponential_full_past_2_pow_1024", backoff="exponential", base_ns=0,
         multiplier=2.0, max_delay_ns=10_000_000_000, jitter="full", jitter_fraction=0.2,
         seed=11, count=1030),
    dict(name="zero_base_exponential_none_multiplier_10", backoff="exponential", base_ns=0,
         multiplier=10.0, max_delay_ns=60_000_000_000, jitter="none", jitter_fraction=0.2,
         seed=12, count=312),
    dict(name="zero_base_exponential_equal", backoff="exponential", base_ns=0, multiplier=2.0,
         max_delay_ns=10_000_000_000, jitter="equal", jitter_fraction=0.2, seed=13, count=1030),
    dict(name="zero_base_exponential_proportional", backoff="exponential", base_ns=0,
         multiplier=2.0, max_delay_ns=10_000_000_000, jitter="proportional",
         jitter_fraction=0.5, seed=14, count=1030),
    dict(name="zero_base_linear_full", backoff="linear", base_ns=0, multiplier=2.0,
         max_delay_ns=10_000_000_000, jitter="full", jitter_fraction=0.2, seed=15, count=6),
    dict(name="zero_base_constant_none", backoff="constant", base_ns=0, multiplier=2.0,
         max_delay_ns=10_000_000_000, jitter="none", jitter_fraction=0.2, seed=16, count=6),
    dict(name="zero_base_decorrelated", backoff="decorrelated", base_ns=0, multiplier=2.0,
         max_delay_ns=10_000_000_000, jitter="none", jitter_fraction=0.2, seed=17, count=6),
    dict(name="zero_multiplier_exponential_none", backoff="exponential", base_ns=1_000_000_000,
         multiplier=0.0, max_delay_ns=10_000_000_000, jitter="none", jitter_fraction=0.2,
         seed=18, count=1030),
    dict(name="zero_multiplier_exponential_full_zero_cap", backoff="exponential",
         base_ns=1_000_000_000, multiplier=0.0, max_delay_ns=0, jitter="full",
         jitter_fraction=0.2, seed=19, count=4),
    # An overflowing product saturates at the cap: 1 s * (1e300)**1 is 1e309 ns,
    # inf as a double.
    dict(name="overflow_saturates_at_the_cap", backoff="exponential", base_ns=1_000_000_000,
         multiplier=1e300, max_delay_ns=30_000_000_000, jitter="none", jitter_fraction=0.2,
         seed=20, count=4),
    dict(name="largest_multiplier_proportional_at_the_cap", backoff="exponential",
         base_ns=1_000_000, multiplier=1.7976931348623157e308, max_delay_ns=2_000_000_000,
         jitter="proportional", jitter_fraction=1.0, seed=21, count=5),
]


def main() -> None:
    doc = {
        "description": "Backoff delays in nanoseconds for retries 0..count-1 (n = retries "
                       "already made), seeded xoshiro256**; see generate_backoff.py.",
        "cases": [dict(case, expected_ns=delays(case)) for case in CASES],
    }
    # One case per block, its expected delays on one line (some cases hold a
    # thousand retries).
    text = json.dumps(doc, indent=2)
    for case in doc["cases"]:
        spread = json.dumps(case["expected_ns"], indent=2).replace("\n", "\n      ")
        text = text.replace(spread, json.dumps(case["expected_ns"]), 1)
    print(text)


if __name__ == "__main__":
    main()
