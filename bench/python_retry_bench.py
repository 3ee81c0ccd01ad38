#!/usr/bin/env python3
"""Success-path and failure-path cost of @mulligan.retry against its peers.

Run after `pip install .` (and `pip install .[bench]` for the peers):

    python bench/python_retry_bench.py [--repeat 7] [--number 200000]

Success path: one call of a decorated function that returns at once, against
a bare call, a plain pass-through wrapper, tenacity, stamina and backoff.
Failure path: two failures, then success, with zero wait (mulligan must not
sleep at all when the delay is 0). Each figure is the minimum over `repeat`
timeit runs of `number` calls, in ns per call; ratios are against mulligan,
all measured in this one run. A peer that is not installed is skipped, and
the table says so.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import platform
import sys
import timeit
from typing import Any, Callable, Optional

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


class Flaky:
    """Fails `left` more times, then succeeds; `left` is reset before every call."""

    def __init__(self) -> None:
        self.left = 0
        state = self

        def flaky() -> int:  # a real function: peers read __name__
            if state.left:
                state.left -= 1
                raise ConnectionError("flaky")
            return 1

        self.fn = flaky


def success_candidates() -> list[tuple[str, Optional[Callable[[], int]], str]]:
    out: list[tuple[str, Optional[Callable[[], int]], str]] = [
        ("bare call", target, ""),
        ("pass-through wrapper", passthrough(target), ""),
        ("mulligan", mulligan.retry(on=ConnectionError, attempts=3)(target), ""),
        (
            "mulligan (deadline)",
            mulligan.retry(on=ConnectionError, attempts=3, deadline=10.0)(target),
            "",
        ),
    ]
    if have("tenacity"):
        import tenacity

        out.append(
            (
                "tenacity",
                tenacity.retry(
                    retry=tenacity.retry_if_exception_type(ConnectionError),
                    stop=tenacity.stop_after_attempt(3),
                    wait=tenacity.wait_random_exponential(multiplier=0.2, max=10),
                )(target),
                "",
            )
        )
    else:
        out.append(("tenacity", None, "not installed"))
    if have("stamina"):
        import stamina

        out.append(("stamina", stamina.retry(on=ConnectionError, attempts=3)(target), ""))
    else:
        out.append(("stamina", None, "not installed"))
    if have("backoff"):
        import backoff

        out.append(
            ("backoff", backoff.on_exception(backoff.expo, ConnectionError, max_tries=3)(target), "")
        )
    else:
        out.append(("backoff", None, "not installed"))
    return out


def failure_candidates() -> list[tuple[str, Optional[Callable[[], int]], Flaky, str]]:
    out: list[tuple[str, Optional[Callable[[], int]], Flaky, str]] = []
    f = Flaky()
    out.append(("mulligan", mulligan.retry(on=ConnectionError, attempts=3, base_delay=0.0)(f.fn), f, ""))
    if have("tenacity"):
        import tenacity

        f = Flaky()
        out.append(
            (
                "tenacity",
                tenacity.retry(
                    retry=tenacity.retry_if_exception_type(ConnectionError),
                    stop=tenacity.stop_after_attempt(3),
                    wait=tenacity.wait_none(),
                )(f.fn),
                f,
                "",
            )
        )
    else:
        out.append(("tenacity", None, Flaky(), "not installed"))
    if have("stamina"):
        import stamina

        f = Flaky()
        out.append(
            (
                "stamina",
                stamina.retry(on=ConnectionError, attempts=3, wait_initial=0.0, wait_max=0.0,
                              wait_jitter=0.0)(f.fn),
                f,
                "",
            )
        )
    else:
        out.append(("stamina", None, Flaky(), "not installed"))
    if have("backoff"):
        import backoff

        f = Flaky()
        out.append(
            (
                "backoff",
                backoff.on_exception(backoff.constant, ConnectionError, max_tries=3, interval=0,
                                     jitter=None)(f.fn),
                f,
                "",
            )
        )
    else:
        out.append(("backoff", None, Flaky(), "not installed"))
    return out


def best_ns(stmt: Callable[[], Any], number: int, repeat: int) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=200_000)
    parser.add_argument("--failure-number", type=int, default=20_000)
    args = parser.parse_args()

    import logging

    # Every retry is logged at WARNING; keep the failure path's logging cost
    # (the record is not created when the logger is disabled) out of the table.
    logging.getLogger("mulligan").setLevel(logging.ERROR)
    logging.getLogger("tenacity").setLevel(logging.ERROR)
    logging.getLogger("backoff").setLevel(logging.ERROR)
    if have("stamina"):
        import stamina.instrumentation

        # stamina logs (or prints, with structlog) every retry: turn it off.
        stamina.instrumentation.set_on_retry_hooks([])

    versions = []
    for name in ("tenacity", "stamina", "backoff"):
        if have(name):
            from importlib.metadata import version

            versions.append(f"{name} {version(name)}")
    print(
        f"Python {platform.python_version()} on {platform.machine()}, mulligan "
        f"{mulligan.__version__}; {', '.join(versions) or 'no peers installed'}; "
        f"min of {args.repeat} x {args.number} calls (failure path: "
        f"{args.failure_number} calls)\n"
    )

    success = success_candidates()
    results: dict[str, float] = {}
    for name, fn, _ in success:
        if fn is not None:
            assert fn() == 1
            results[name] = best_ns(fn, args.number, args.repeat)
    base = results["mulligan"]
    bare = results["bare call"]
    print("### Success path (the call returns at once)\n")
    print("| candidate | ns/call | over bare call (ns) | ratio vs mulligan |")
    print("| --- | ---: | ---: | ---: |")
    for name, fn, why in success:
        if fn is None:
            print(f"| {name} | skipped ({why}) | | |")
            continue
        ns = results[name]
        print(f"| {name} | {ns:.0f} | {ns - bare:+.0f} | {ns / base:.2f}x |")

    print("\n### Failure path (two failures, then success; zero wait)\n")
    print("| candidate | ns/call | ratio vs mulligan |")
    print("| --- | ---: | ---: |")
    failure = failure_candidates()
    fresults: dict[str, float] = {}
    for name, fn, flaky, _ in failure:
        if fn is None:
            continue
        call = fn

        def stmt(call: Callable[[], int] = call, flaky: Flaky = flaky) -> int:
            flaky.left = 2
            return call()

        assert stmt() == 1 and flaky.left == 0
        fresults[name] = best_ns(stmt, args.failure_number, args.repeat)
    fbase = fresults["mulligan"]
    for name, fn, _, why in failure:
        if fn is None:
            print(f"| {name} | skipped ({why}) | |")
            continue
        print(f"| {name} | {fresults[name]:.0f} | {fresults[name] / fbase:.2f}x |")
    over = base - bare
    print(
        f"\nmulligan success-path overhead over a bare call: {over:.0f} ns (target <= 100 ns); "
        f"failure path: {fbase / 1000:.2f} us/call (target < 10 us)."
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
