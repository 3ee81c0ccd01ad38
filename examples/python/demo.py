#!/usr/bin/env python3
"""mulligan demo: real HTTP failures against a real nginx, survived from Python.

Starts nginx on a free loopback port (tests/nginx/nginx_server.py) and runs:

  healthy   one GET /ok                    -> 200 on the first attempt
  flaky     100 GETs /flaky (~50% 503s)    -> all 200 thanks to retries
  limited   30 GETs /limited (1 request/s,
            429 + Retry-After: 1)          -> all 200 because Retry-After is
                                              honoured (from a thread pool; the
                                              server admits one request per
                                              second, so this takes ~30 s)
  down      one call to /down (always 503) -> gives up after 3 attempts and
                                              returns a fallback value

It prints what happened per scenario, cross-checks the attempts against
nginx's access log, and ends with one table. Exits 1 if an expectation fails.

Run:  pip install . && python examples/python/demo.py
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import mulligan

HERE = os.path.dirname(os.path.abspath(__file__))
NGINX_SERVER_PY = os.path.join(HERE, "..", "..", "tests", "nginx", "nginx_server.py")


def load_nginx_server() -> Any:
    spec = importlib.util.spec_from_file_location("nginx_server", NGINX_SERVER_PY)
    if spec is None or spec.loader is None:
        raise SystemExit(f"demo: cannot load {NGINX_SERVER_PY}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class Row:
    scenario: str
    calls: int = 0
    attempts: int = 0
    successes: int = 0
    failures: int = 0
    fallbacks: int = 0
    elapsed: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def retries(self) -> int:
        return self.attempts - self.calls

    def add(self, response: mulligan.Response) -> None:
        self.calls += 1
        self.attempts += response.attempts
        if response.ok:
            self.successes += 1
        else:
            self.failures += 1

    def expect(self, condition: bool, message: str) -> None:
        if not condition:
            self.problems.append(message)
            print(f"  EXPECTATION FAILED: {message}")


def server_attempts(server: Any, path: str, count: int) -> Counter[int]:
    """Statuses nginx logged for `path` (waits briefly for the last lines)."""
    entries = server.wait_for_access_log(count, timeout=3.0)
    return Counter(e["status"] for e in entries if e["uri"].split("?")[0] == path)


def healthy(server: Any) -> Row:
    row = Row("healthy /ok")
    print("\n== healthy: one GET /ok")
    started = time.monotonic()
    r = mulligan.get(server.url("/ok"))
    row.elapsed = time.monotonic() - started
    row.add(r)
    print(f"  {r.status_code} {r.text.strip()!r} in {r.attempts} attempt(s), {r.elapsed * 1000:.1f} ms")
    row.expect(r.status_code == 200 and r.attempts == 1, "GET /ok should succeed at once")
    return row


def flaky(server: Any, calls: int) -> Row:
    row = Row("flaky /flaky")
    print(f"\n== flaky: {calls} GETs on /flaky (about half the requests get 503, Retry-After: 0)")
    server.clear_access_log()
    started = time.monotonic()
    # ~53% of requests fail independently: 20 attempts leave a call a ~3e-6
    # chance of giving up (8 attempts would lose ~0.6% of calls).
    responses = [
        mulligan.get(server.url("/flaky"), attempts=20, base_delay=0.01, max_delay=0.1)
        for _ in range(calls)
    ]
    row.elapsed = time.monotonic() - started
    for r in responses:
        row.add(r)
    spread = Counter(r.attempts for r in responses)
    print(f"  statuses: {dict(Counter(r.status_code for r in responses))}")
    print("  attempts per call: " + ", ".join(f"{n}: {spread[n]} calls" for n in sorted(spread)))
    logged = server_attempts(server, "/flaky", row.attempts)
    print(f"  nginx logged {sum(logged.values())} requests: {dict(logged)}")
    row.expect(row.successes == calls, f"all {calls} /flaky calls should succeed, {row.successes} did")
    row.expect(row.retries > 0, "some /flaky calls should have needed a retry")
    row.expect(sum(logged.values()) == row.attempts, "nginx should log one request per attempt")
    return row


def limited(server: Any, calls: int, workers: int) -> Row:
    row = Row("limited /limited")
    print(
        f"\n== limited: {calls} GETs on /limited from {workers} threads "
        "(nginx limit_req 1 r/s: 429 with Retry-After: 1)"
    )
    server.clear_access_log()
    started = time.monotonic()

    def call(_: int) -> mulligan.Response:
        # Every 429 carries Retry-After: 1, which replaces the backoff delay.
        # One request per second gets through, so a call may lose the race a
        # few times: allow plenty of attempts and bound the call by a deadline.
        return mulligan.get(server.url("/limited"), attempts=100, deadline=calls + 30.0)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        responses = list(pool.map(call, range(calls)))
    row.elapsed = time.monotonic() - started
    for r in responses:
        row.add(r)
    logged = server_attempts(server, "/limited", row.attempts)
    print(f"  statuses: {dict(Counter(r.status_code for r in responses))}")
    print(f"  attempts per call: min {min(r.attempts for r in responses)}, "
          f"max {max(r.attempts for r in responses)}; nginx logged {dict(logged)}")
    print(f"  {calls} successes in {row.elapsed:.1f} s: the server admits one per second")
    row.expect(row.successes == calls, f"all {calls} /limited calls should succeed, {row.successes} did")
    row.expect(logged.get(200, 0) == calls, "nginx should log one 200 per call")
    row.expect(logged.get(429, 0) == row.retries, "every retry should follow one logged 429")
    # The engine waited Retry-After (1 s) between attempts: 30 admissions need ~29 s.
    row.expect(row.elapsed >= calls - 1 - 0.5, "Retry-After waits should pace the calls")
    return row


FALLBACK = {"source": "fallback", "detail": "service down, served a default"}


def fetch_status_or_fallback(url: str) -> Any:
    """The /down call: three attempts, then a fallback value instead of an error."""
    try:
        response = mulligan.get(url, attempts=3, base_delay=0.05, raise_on_give_up=True)
    except mulligan.RetriesExhausted as e:
        print(f"  gave up: {e}")
        return FALLBACK, e.response
    return response.text, response


def down(server: Any) -> Row:
    row = Row("down /down")
    print("\n== down: one call to /down (always 503), with a fallback")
    server.clear_access_log()
    started = time.monotonic()
    value, response = fetch_status_or_fallback(server.url("/down"))
    row.elapsed = time.monotonic() - started
    row.add(response)
    if value is FALLBACK:
        row.fallbacks += 1
    print(f"  result: {value}")
    logged = server_attempts(server, "/down", 3)
    row.expect(value is FALLBACK, "the /down call should return the fallback")
    row.expect(response.attempts == 3, f"the /down call should make 3 attempts, made {response.attempts}")
    row.expect(logged == Counter({503: 3}), f"nginx should log three 503s, logged {dict(logged)}")
    return row


def print_table(rows: list[Row]) -> None:
    total = Row("total")
    for row in rows:
        total.calls += row.calls
        total.attempts += row.attempts
        total.successes += row.successes
        total.failures += row.failures
        total.fallbacks += row.fallbacks
        total.elapsed += row.elapsed
    headers = ["scenario", "calls", "attempts", "retries", "successes", "failures", "fallbacks", "elapsed s"]
    lines = [
        [r.scenario, r.calls, r.attempts, r.retries, r.successes, r.failures, r.fallbacks, f"{r.elapsed:.2f}"]
        for r in [*rows, total]
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *lines)]

    def fmt(cells: list[Any]) -> str:
        first = str(cells[0]).ljust(widths[0])
        rest = [str(c).rjust(w) for c, w in zip(cells[1:], widths[1:])]
        return "  ".join([first, *rest])

    rule = "  ".join("-" * w for w in widths)
    print()
    print(fmt(headers))
    print(rule)
    for line in lines[:-1]:
        print(fmt(line))
    print(rule)
    print(fmt(lines[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flaky-calls", type=int, default=100)
    parser.add_argument("--limited-calls", type=int, default=30)
    parser.add_argument("--workers", type=int, default=4, help="threads for the /limited scenario")
    args = parser.parse_args()

    nginx_server = load_nginx_server()
    print(f"mulligan {mulligan.__version__}: starting nginx ...")
    with nginx_server.NginxServer() as server:
        server.wait_for_access_log(1)  # the start-up probe's line
        print(f"nginx at {server.base_url}")
        rows = [
            healthy(server),
            flaky(server, args.flaky_calls),
            limited(server, args.limited_calls, args.workers),
            down(server),
        ]
    print_table(rows)
    problems = [f"{r.scenario}: {p}" for r in rows for p in r.problems]
    if problems:
        print(f"\nFAILED: {len(problems)} expectation(s) not met:")
        for p in problems:
            print(f"  - {p}")
        return 1
    print("\nOK: every expectation met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
