"""``mulligan simulate [SCENARIO] [--clients N | --sweep N1,N2,...] [--out DIR] [--seed S]``: runs
a fleet of clients through the real engine in virtual time against a model
of a service, and compares the scenario's modes (jitter modes, budgets,
throttling, breakers, hedging). ``--sweep`` (0.6) runs it once per client
count and writes one row per (clients, mode).

SCENARIO is a scenario file (JSON; see core/include/mulligan/simulate/
scenario.h) or the name of a built-in one: ``occ`` (the default; the AWS
study "Exponential Backoff And Jitter", 2015), ``outage`` (a server down
for 60 s that recovers) or ``hedging`` (a server with a latency tail). Writes DIR/results.csv, DIR/results.json and, when
matplotlib is importable (``pip install 'mulligan[simulate]'``),
DIR/results.png; prints a table.

Exit codes: 0 done, 1 out of memory (a scenario whose clients x calls this
machine cannot hold), 2 usage (a bad option, an unreadable scenario, a bad
scenario field, named on stderr, or an --out that cannot hold the results).

.. versionadded:: 0.6.0
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from .._simulate import builtin_scenarios, format_table, load_scenario, run, write_plot, write_results

__all__ = ["add_simulate_parser", "simulate_main"]


def add_simulate_parser(sub: Any) -> None:
    """Adds ``simulate`` to the command's subparsers."""
    s = sub.add_parser(
        "simulate",
        help="compare retry policies on a simulated fleet (virtual time)",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    s.add_argument(
        "scenario",
        nargs="?",
        default=None,
        metavar="SCENARIO",
        help="a scenario JSON file, or a built-in name (%s; default occ)"
        % ", ".join(builtin_scenarios()),
    )
    s.add_argument("--clients", type=int, default=None, metavar="N",
                   help="number of clients (1 to 1000000), replacing the scenario's")
    s.add_argument("--sweep", type=_client_counts, default=None, metavar="N1,N2,...",
                   help="run once per client count (comma-separated, each 1 to 1000000, "
                        "none twice), replacing the scenario's \"sweep\"; not with --clients")
    s.add_argument("--seed", type=int, default=None, metavar="S",
                   help="random seed in [0, 2**64), replacing the scenario's")
    s.add_argument("--out", default="simulate-out", metavar="DIR",
                   help="where results.csv, results.json and results.png go "
                        "(default ./simulate-out)")


def _client_counts(text: str) -> list[int]:
    """Parses ``--sweep``'s "10,100,1000"; argparse reports the ValueError's
    message as a usage error (exit code 2)."""
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected client counts separated by commas (10,100,1000), got {text!r}"
        ) from None
    return counts


def simulate_main(args: Any) -> int:
    """Runs ``mulligan simulate``; returns the exit code."""
    try:
        text, source = load_scenario(args.scenario)
    except OSError as e:
        print(f"mulligan simulate: {e}", file=sys.stderr)
        return 2
    # Before the run, which may take a minute: an --out that cannot hold the
    # results is a usage error now, not a traceback after the table.
    try:
        os.makedirs(args.out, exist_ok=True)
        if not os.access(args.out, os.W_OK | os.X_OK):
            raise PermissionError(f"cannot write into {args.out!r}")
    except OSError as e:
        print(f"mulligan simulate: --out {args.out}: {e.strerror or e}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    try:
        if args.sweep is not None and args.clients is not None:
            raise ValueError("--clients and --sweep cannot be given together")
        result = run(text, source, clients=args.clients, seed=args.seed, sweep=args.sweep)
    except ValueError as e:
        print(f"mulligan simulate: {e}", file=sys.stderr)
        return 2
    except MemoryError:
        # Each field is bounded, their product (clients x calls, the events
        # kept in flight) is not: the engine's std::bad_alloc arrives here.
        print("mulligan simulate: out of memory: the scenario keeps too many calls in flight "
              "(clients.count x clients.calls); use fewer clients or calls", file=sys.stderr)
        return 1
    wall = time.perf_counter() - started
    paths = write_results(result, args.out)
    plot = write_plot(result, args.out)
    report = result.report
    who = (f"clients {','.join(str(n) for n in report['sweep'])}" if "sweep" in report
           else f"{report['clients']} clients")
    print(f"scenario {report['scenario']} ({report['model']}): {who}, "
          f"seed {report['seed']}, {wall:.2f} s of wall time")
    print(format_table(result))
    for path in paths:
        print(f"wrote {path}")
    if plot is None:
        print("plots skipped: matplotlib is not installed (pip install 'mulligan[simulate]')")
    else:
        print(f"wrote {plot}")
    return 0
