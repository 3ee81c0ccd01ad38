#!/usr/bin/env python3
"""Breaker-guarded success path of mulligan.CircuitBreaker against its peers.

Run after `pip install .` (and `pip install .[bench]` for the peers):

    python bench/python_breaker_bench.py [--repeat 7] [--number 200000]

One call of a function that returns at once, guarded by a closed breaker:
mulligan (decorator and `with` block), pybreaker and circuitbreaker, against a
bare call and a plain pass-through wrapper. Also the refusal path (an open
breaker failing fast). Each figure is the minimum over `repeat` timeit runs
of `number` calls, in ns per call; ratios are against mulligan's decorator,
all measured in this one run. A peer that is not installed is skipped, and the
table says so. Issue 4's target: mulligan's guard overhead (guarded - bare)
at most 250 ns. Issue 19's: `with breaker:` at most 30 ns over the decorator,
and every mulligan refusal (decorator and `with`) cheaper than pybreaker's;
the refusal rows also show circuitbreaker's (opened by one failure).
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import platform
import sys
import timeit
from typing import Any, Callable, List, Optional, Tuple

import mulligan


def have(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def target() -> int:
    return 1


def passthrough(fn: Callable[[], int]) -> Callable[[], int]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> int:
        return fn(*args, **kwargs)

    return wrapper


def measure(fn: Callable[[], Any], number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e9


def refusal_loop(fn: Callable[[], Any], exc: type) -> Callable[[], None]:
    def run() -> None:
        try:
            fn()
        except exc:
            pass

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=200_000)
    args = parser.parse_args()

    rows: List[Tuple[str, Optional[float], str]] = []

    def add(name: str, fn: Optional[Callable[[], Any]], note: str = "") -> None:
        rows.append((name, measure(fn, args.number, args.repeat) if fn else None, note))

    add("bare call", target)
    add("pass-through wrapper", passthrough(target))
    breaker = mulligan.CircuitBreaker("bench")
    add("mulligan @CircuitBreaker", breaker(target))
    block_breaker = mulligan.CircuitBreaker("bench-block")

    def with_block() -> int:
        with block_breaker:
            return target()

    add("mulligan `with breaker:`", with_block)

    if have("pybreaker"):
        import pybreaker

        add("pybreaker", pybreaker.CircuitBreaker(fail_max=5, reset_timeout=30)(target))
    else:
        add("pybreaker", None, "not installed")
    if have("circuitbreaker"):
        import circuitbreaker

        add("circuitbreaker", circuitbreaker.circuit(failure_threshold=5, recovery_timeout=30)(target))
    else:
        add("circuitbreaker", None, "not installed")

    # Refusal path: an open breaker failing fast (exception raised and caught).
    # Issue 19's target: mulligan's refusal cheaper than pybreaker's.
    refusals: List[Tuple[str, Optional[float], str]] = []
    refusal_number = args.number // 4

    def refusal(name: str, fn: Optional[Callable[[], Any]], exc: type = Exception,
                note: str = "") -> None:
        ns = measure(refusal_loop(fn, exc), refusal_number, args.repeat) if fn else None
        refusals.append((name, ns, note))

    opened = mulligan.CircuitBreaker("bench-open")
    opened.force_open()
    refusal("mulligan @CircuitBreaker (open)", opened(target), mulligan.CircuitOpenError)
    opened_block = mulligan.CircuitBreaker("bench-open-block")
    opened_block.force_open()

    def open_block() -> int:
        with opened_block:
            return target()

    refusal("mulligan `with breaker:` (open)", open_block, mulligan.CircuitOpenError)
    if have("pybreaker"):
        import pybreaker

        pb = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=3600)
        pb.open()
        refusal("pybreaker (open)", pb(target), pybreaker.CircuitBreakerError)
    else:
        refusal("pybreaker (open)", None, note="not installed")
    if have("circuitbreaker"):
        import circuitbreaker

        def failing() -> int:
            raise ConnectionError("down")

        cb = circuitbreaker.CircuitBreaker(failure_threshold=1, recovery_timeout=3600,
                                           expected_exception=ConnectionError)
        guarded = cb(failing)
        try:
            guarded()  # the one failure that opens it
        except ConnectionError:
            pass
        refusal("circuitbreaker (open)", guarded, circuitbreaker.CircuitBreakerError)
    else:
        refusal("circuitbreaker (open)", None, note="not installed")

    bare = rows[0][1] or 0.0
    ours = rows[2][1] or 1.0
    print(f"Python {platform.python_version()} on {platform.machine()}, "
          f"min of {args.repeat} x {args.number} calls\n")
    print("| guarded success path | ns/call | overhead vs bare (ns) | ratio vs mulligan |")
    print("| --- | ---: | ---: | ---: |")
    for name, ns, note in rows:
        if ns is None:
            print(f"| {name} | {note} | | |")
        else:
            print(f"| {name} | {ns:.0f} | {ns - bare:.0f} | {ns / ours:.2f}x |")
    print()
    print("| refusal (open breaker, raise + catch) | ns/call | ratio vs pybreaker |")
    print("| --- | ---: | ---: |")
    peer = next((ns for name, ns, _ in refusals if name.startswith("pybreaker")), None)
    for name, ns, note in refusals:
        if ns is None:
            print(f"| {name} | {note} | |")
        else:
            ratio = f"{ns / peer:.2f}x" if peer else ""
            print(f"| {name} | {ns:.0f} | {ratio} |")
    overhead = ours - bare
    print(f"\nmulligan guard overhead: {overhead:.0f} ns (target <= 250 ns): "
          f"{'OK' if overhead <= 250 else 'OVER'}")
    block = rows[3][1]
    if block is not None:
        extra = block - ours
        print(f"`with breaker:` over the decorator: {extra:+.0f} ns (issue 19: <= +30 ns): "
              f"{'OK' if extra <= 30 else 'OVER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
