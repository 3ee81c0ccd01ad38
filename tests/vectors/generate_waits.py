#!/usr/bin/env python3
"""Writes waits.json: exact delays of composed waits for seeded generators.

An independent, pure-Python model of core/include/mulligan/retry/wait.h
(the terms, sums, chains and the draw order) and of the policy's clamp to
[min_delay, max_delay] after every jitter term (DESIGN.md section 5), on the
xoshiro256** generator of generate_backoff.py. The C++, C and Python suites
check that the engine produces the same delays, to the nanosecond. Re-run
after changing the model:

    python3 tests/vectors/generate_waits.py > tests/vectors/waits.json

A wait is written as {"kind": ..., fields in nanoseconds}:
  constant {delay_ns}; linear {start_ns, increment_ns, max_ns?};
  exponential {base_ns, multiplier, max_ns?}; uniform {low_ns, high_ns};
  jitter {max_ns}; sum {terms}; chain {terms}.
"""
from __future__ import annotations

import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generate_backoff import Xoshiro256StarStar  # noqa: E402


def capped(value: float, term: dict) -> float:
    if "max_ns" not in term:
        return value
    cap = float(term["max_ns"])
    return value if value <= cap else cap


def evaluate(term: dict, n: int, rng: Xoshiro256StarStar) -> float:
    kind = term["kind"]
    if kind == "constant":
        return float(term["delay_ns"])
    if kind == "linear":
        return capped(float(term["start_ns"]) + float(term["increment_ns"]) * n, term)
    if kind == "exponential":
        if term["base_ns"] == 0 or term["multiplier"] == 0:
            return 0.0
        try:
            value = float(term["base_ns"]) * math.pow(term["multiplier"], n)
        except OverflowError:
            value = math.inf
        return capped(value, term)
    if kind == "uniform":
        return rng.uniform(float(term["low_ns"]), float(term["high_ns"]))
    if kind == "jitter":
        return rng.uniform(0.0, float(term["max_ns"]))
    if kind == "sum":
        total = 0.0
        for t in term["terms"]:
            total += evaluate(t, n, rng)
        return total
    if kind == "chain":
        terms = term["terms"]
        return evaluate(terms[min(n, len(terms) - 1)], n, rng)
    raise SystemExit("unknown wait kind %r" % kind)


def delays(case: dict) -> list[int]:
    rng = Xoshiro256StarStar(case["seed"])
    cap = float(case["max_delay_ns"])
    out = []
    for n in range(case["count"]):
        d = evaluate(case["wait"], n, rng)
        if not d < cap:
            ns = case["max_delay_ns"]
        elif not d > 0.0:
            ns = case["min_delay_ns"]
        else:
            ns = max(case["min_delay_ns"], int(d))
        out.append(ns)
    return out


MS = 1_000_000
S = 1_000_000_000


def exponential(base_ns: int, multiplier: float, max_ns: int | None = None) -> dict:
    t = {"kind": "exponential", "base_ns": base_ns, "multiplier": multiplier}
    if max_ns is not None:
        t["max_ns"] = max_ns
    return t


CASES = [
    # tenacity's wait_exponential_jitter / urllib3's backoff_factor + backoff_jitter.
    dict(name="exponential_plus_jitter", seed=3, count=8, min_delay_ns=0, max_delay_ns=10 * S,
         wait={"kind": "sum", "terms": [exponential(100 * MS, 2.0, 5 * S),
                                        {"kind": "jitter", "max_ns": 1 * S}]}),
    # No randomness: 0.5 s, 0.75 s, 1 s, ... capped at 2 s by max_delay.
    dict(name="linear_start_increment", seed=1, count=8, min_delay_ns=0, max_delay_ns=2 * S,
         wait={"kind": "linear", "start_ns": 500 * MS, "increment_ns": 250 * MS}),
    dict(name="linear_own_max", seed=1, count=6, min_delay_ns=0, max_delay_ns=10 * S,
         wait={"kind": "linear", "start_ns": 0, "increment_ns": 1 * S, "max_ns": 3 * S}),
    dict(name="uniform_1s_3s", seed=11, count=6, min_delay_ns=0, max_delay_ns=10 * S,
         wait={"kind": "uniform", "low_ns": 1 * S, "high_ns": 3 * S}),
    # tenacity's docs: wait_chain(*[wait_fixed(1)] * 2 + [wait_fixed(2)]) then exponential.
    dict(name="chain_per_attempt", seed=5, count=7, min_delay_ns=0, max_delay_ns=60 * S,
         wait={"kind": "chain", "terms": [{"kind": "constant", "delay_ns": 1 * S},
                                          {"kind": "constant", "delay_ns": 1 * S},
                                          {"kind": "constant", "delay_ns": 2 * S},
                                          exponential(1 * S, 2.0)]}),
    # Draw order: only the chosen chain term draws; then the sum's jitter.
    dict(name="chain_of_random_plus_jitter", seed=21, count=5, min_delay_ns=0,
         max_delay_ns=10 * S,
         wait={"kind": "sum", "terms": [
             {"kind": "chain", "terms": [{"kind": "jitter", "max_ns": 1 * S},
                                         {"kind": "uniform", "low_ns": 2 * S, "high_ns": 3 * S}]},
             {"kind": "jitter", "max_ns": 100 * MS}]}),
    # A minimum wait raises the small draws to 0.5 s.
    dict(name="min_delay_floor", seed=8, count=8, min_delay_ns=500 * MS, max_delay_ns=10 * S,
         wait={"kind": "jitter", "max_ns": 1 * S}),
    # The cap applies after jitter: 9.5 s + uniform(0, 1 s) never exceeds 10 s.
    dict(name="cap_after_jitter", seed=9, count=8, min_delay_ns=0, max_delay_ns=10 * S,
         wait={"kind": "sum", "terms": [{"kind": "constant", "delay_ns": 9500 * MS},
                                        {"kind": "jitter", "max_ns": 1 * S}]}),
    # multiplier**n overflows to inf past n = 1024; the sum saturates at the cap.
    dict(name="exponential_saturates_past_2_pow_1024", seed=10, count=1030, min_delay_ns=0,
         max_delay_ns=30 * S,
         wait={"kind": "sum", "terms": [exponential(1 * S, 2.0),
                                        {"kind": "jitter", "max_ns": 1 * S}]}),
    # Zero base: no wait from that term at every n, even past the overflow.
    dict(name="zero_base_exponential_plus_constant", seed=12, count=1030, min_delay_ns=0,
         max_delay_ns=10 * S,
         wait={"kind": "sum", "terms": [exponential(0, 2.0), {"kind": "constant",
                                                              "delay_ns": 0}]}),
]


def main() -> None:
    cases = []
    for case in CASES:
        case = dict(case)
        case["expected_ns"] = delays(case)
        cases.append(case)
    doc = {
        "description": "Composed waits (wait.h): delays in nanoseconds for retries 0..count-1 "
                       "(n = retries already made), clamped to [min_delay_ns, max_delay_ns], "
                       "seeded xoshiro256**; see generate_waits.py.",
        "cases": cases,
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
