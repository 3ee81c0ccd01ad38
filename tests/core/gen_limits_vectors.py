#!/usr/bin/env python3
"""Writes tests/vectors/rate_limiter_gcra.json: GCRA rate-limiter scripts with
their expected answers, computed here independently of the engine, in integer
nanoseconds (ITU-T I.371's virtual scheduling: TAT, T = 1/rate, tau =
(burst - 1) * T, both rounded to the nearest nanosecond, halves away from zero).

Each step is {"at": seconds since the script's start, "key": bucket, and
either "max_wait" (seconds, null: unbounded) for an acquire, or
"penalize_until" (seconds) for a Retry-After}; acquires expect
{"admitted", "wait_ns", "retry_in_ns"}. The first case is worked by hand in
the comments below; the rest are generated from the same rule.

Run: python3 tests/core/gen_limits_vectors.py  (rewrites the file)
"""
import json
import math
import os

NS = 1_000_000_000


def round_half_away(x):
    # The engine rounds with std::round (halves away from zero); Python's
    # round() would round halves to even.
    return math.floor(x + 0.5)


def interval(rate):
    return max(1, round_half_away(NS / rate))


def tolerance(burst, t):
    return round_half_away((burst - 1) * t)


def run(rate, burst, steps):
    t_ns = interval(rate)
    tau = tolerance(burst, t_ns)
    tat = {}
    out = []
    for step in steps:
        now = round(step["at"] * NS)
        key = step.get("key", "")
        if "penalize_until" in step:
            until = round(step["penalize_until"] * NS)
            tat[key] = max(tat.get(key, -(2**63)), until + tau)
            out.append(dict(step))
            continue
        cur = max(tat.get(key, -(2**63)), now)
        wait = max(0, cur - tau - now)
        bound = step["max_wait"]
        bound_ns = 2**63 - 1 if bound is None else round(bound * NS)
        s = dict(step)
        if wait > bound_ns:
            s["expect"] = {"admitted": False, "wait_ns": 0, "retry_in_ns": wait}
        else:
            tat[key] = cur + t_ns
            s["expect"] = {"admitted": True, "wait_ns": wait, "retry_in_ns": 0}
        out.append(s)
    return {"rate": rate, "burst": burst, "interval_ns": t_ns, "tolerance_ns": tau, "steps": out}


def acq(at, max_wait=None, key=""):
    return {"at": at, "key": key, "max_wait": max_wait}


CASES = [
    # By hand: rate 2/s -> T = 0.5 s; burst 3 -> tau = 1 s. From idle at t=0
    # three calls go (TAT 0.5, 1.0, 1.5); the 4th has TAT 1.5, allow 0.5:
    # waits 0.5 s (TAT 2.0). At 0.1 s a 5th would wait 2.0-1.0-0.1 = 0.9 s >
    # max_wait 0.6: refused, retry_in 0.9 s, TAT unchanged. At 2.0 s: TAT
    # 2.0, allow 1.0 <= 2.0: goes (TAT 2.5). At 2.0 again: allow 1.5: goes
    # (TAT 3.0); again: allow 2.0: goes (TAT 3.5); again: waits 0.5 s.
    ("burst_then_spacing", 2.0, 3.0,
     [acq(0), acq(0), acq(0), acq(0), acq(0.1, 0.6), acq(2.0), acq(2.0), acq(2.0), acq(2.0)]),
    # No burst: rate 10/s, calls at once are spaced exactly 100 ms apart.
    ("spacing_no_burst", 10.0, 1.0, [acq(0), acq(0), acq(0), acq(0.05), acq(0.3, 0.0), acq(0.3, 0.0)]),
    # max_wait zero refuses every wait.
    ("never_wait", 1.0, 2.0, [acq(0, 0.0), acq(0, 0.0), acq(0, 0.0), acq(1.0, 0.0), acq(1.0, 0.0)]),
    # Keys are separate buckets.
    ("keys", 1.0, 1.0, [acq(0, None, "a"), acq(0, None, "b"), acq(0, None, "a"), acq(0.5, None, "b")]),
    # Retry-After holds every call to the key until then (penalize at 0 until 3 s).
    ("penalize_retry_after", 5.0, 2.0,
     [acq(0), {"at": 0.0, "key": "", "penalize_until": 3.0}, acq(0.1), acq(0.2, 1.0), acq(3.0), acq(3.0)]),
    # A fractional burst and a rate that does not divide a second.
    ("fractional", 3.0, 1.5, [acq(0), acq(0), acq(0), acq(0.2), acq(0.9)]),
]


def main():
    cases = [dict(name=name, **run(rate, burst, steps)) for name, rate, burst, steps in CASES]
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "vectors", "rate_limiter_gcra.json")
    with open(path, "w") as f:
        json.dump({"generator": "tests/core/gen_limits_vectors.py", "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
