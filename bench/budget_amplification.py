"""Retry amplification with and without retry budgets, against real nginx.

    python bench/budget_amplification.py [--calls 1000]

One nginx (tests/nginx, one worker) serves every run. For each budget
(none; the HTTP clients' default, a gRPC A6 token bucket of 100 tokens and
ratio 0.5 per origin; AWS's standard-mode quota 500/5/10/5/1; Finagle's ratio
budget, ttl 10 s, 20%, 10/s reserve), mulligan.Client sends `--calls`
sequential GETs:
  - to /down (always 503), 3 attempts each: the attempts per call (the load
    a 100% outage costs the server; nginx's access log counts them);
  - to /failing (a deterministic 30% of requests fail, independently), 5
    attempts each: the share of calls that eventually succeed.
No wait between attempts (base_delay 0): the waits change no count here.
Issue 14's goals: <= 1.1 attempts per call with the default budget (3.0
without), and eventual success within 0.2 percentage points of no budget.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from _nginx import nginx_server_module  # bench/_nginx.py


def _budgets() -> list[tuple[str, Any]]:
    import mulligan

    return [
        ("none", lambda: None),
        ("token_bucket 100/0.5 per origin (default)", lambda: "per_origin"),
        ("quota 500/5/10/5/1", lambda: mulligan.RetryBudget.quota()),
        ("ratio 10 s/20%/10 per s", lambda: mulligan.RetryBudget.ratio()),
    ]


def _run(server: Any, budget: Any, path: str, attempts: int, calls: int) -> tuple[float, float]:
    """(attempts per call as nginx counted them, share of calls that got a 200)."""
    import mulligan

    server.clear_access_log()
    ok = 0
    with mulligan.Client(attempts=attempts, backoff="constant", base_delay=0.0, jitter="none",
                         budget=budget) as client:
        for _ in range(calls):
            if client.get(server.url(path)).status_code == 200:
                ok += 1
    server.wait_for_access_log(calls)
    time.sleep(0.3)  # nginx logs a request just after answering it
    made = len(server.access_log())
    return made / calls, ok / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    nginx = nginx_server_module()
    rows = []
    with nginx.NginxServer() as server:
        server.wait_for_access_log(1)
        for i, (label, make) in enumerate(_budgets()):
            down, _ = _run(server, make(), "/down", 3, args.calls)
            # Each run has its own id: the same failure sequence for every budget.
            _, success = _run(server, make(), "/failing?id=run%d&p=30" % i, 5, args.calls)
            rows.append((label, down, success))
    base_success = rows[0][2]
    print("| budget | attempts per call, 100% down (3 attempts) | eventual success, 30% failing "
          "(5 attempts) | vs no budget |")
    print("| --- | ---: | ---: | ---: |")
    for label, down, success in rows:
        print(f"| {label} | {down:.3f} | {100 * success:.1f}% | {100 * (success - base_success):+.1f} pp |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
