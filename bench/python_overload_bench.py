#!/usr/bin/env python3
"""Success-path cost of mulligan's overload protections (issue 14).

Run after `pip install .`:

    python bench/python_overload_bench.py [--repeat 7] [--number 200000]

One call of a function that returns at once: bare; @mulligan.retry() without
and with a retry budget (goal: the budget adds <= 100 ns, since a success
costs no engine call); a Bulkhead and a RateLimiter decorator against the
CircuitBreaker decorator (goal: each guard <= 2x the breaker's cost over a
bare call). Each figure is the minimum over `repeat` timeit runs of `number`
calls, in ns per call, all measured in this one run.
"""

from __future__ import annotations

import argparse
import platform
import sys
import timeit
from typing import Callable

import mulligan


def target() -> int:
    return 1


def measure(fn: Callable[[], int], repeat: int, number: int) -> float:
    return min(timeit.repeat(fn, repeat=repeat, number=number)) / number * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=200_000)
    args = parser.parse_args()

    bare = target
    retry_plain = mulligan.retry(on=ConnectionError)(target)
    budget = mulligan.RetryBudget.token_bucket(name="bench-budget")
    retry_budget = mulligan.retry(on=ConnectionError, budget=budget)(target)
    breaker = mulligan.CircuitBreaker(name="bench-breaker")(target)
    bulkhead = mulligan.Bulkhead(1_000_000, name="bench-bulkhead")(target)
    limiter = mulligan.RateLimiter(1e12, burst=1e6, name="bench-limiter")(target)
    rows = [
        ("bare call", bare),
        ("@retry(on=ConnectionError)", retry_plain),
        ("@retry(budget=token_bucket)", retry_budget),
        ("@CircuitBreaker", breaker),
        ("@Bulkhead (never full)", bulkhead),
        ("@RateLimiter (never waits)", limiter),
    ]
    results = {name: measure(fn, args.repeat, args.number) for name, fn in rows}
    base = results["bare call"]
    print(f"# python {platform.python_version()} on {platform.machine()}, "
          f"min of {args.repeat} x {args.number} calls", file=sys.stderr)
    print("| path | ns/call | over bare |")
    print("|---|---:|---:|")
    for name, _ in rows:
        print(f"| {name} | {results[name]:.0f} | {results[name] - base:+.0f} |")
    breaker_cost = results["@CircuitBreaker"] - base
    print()
    added = results["@retry(budget=token_bucket)"] - results["@retry(on=ConnectionError)"]
    print(f"budget on the success path: {added:+.0f} ns (goal <= +100)")
    for name in ("@Bulkhead (never full)", "@RateLimiter (never waits)"):
        ratio = (results[name] - base) / breaker_cost if breaker_cost > 0 else float("nan")
        print(f"{name} overhead / breaker overhead: {ratio:.2f}x (goal <= 2x)")


if __name__ == "__main__":
    main()
