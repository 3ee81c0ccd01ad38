"""``mulligan config check FILE...``: validates configuration files.

.. versionadded:: 0.1.0
.. versionchanged:: 0.5.0
   The line names the ``adaptive_rates`` too.
"""

from __future__ import annotations

import sys
from typing import Optional, Sequence, TextIO

from .. import _core
from .._config.policies import _report

__all__ = ["check_main"]


def check_main(
    argv: Sequence[str], stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None
) -> int:
    """Implements ``mulligan config check FILE...``.

    Loads each file into a scratch registry (the process-wide one is not
    touched), with the environment overrides applied as a service would see
    them. Prints ``OK <file>: policies: a, b; breakers: c; clients: d;
    budgets: ...; throttles: ...; bulkheads: ...; rate_limiters: ...;
    adaptive_rates: ...`` (and
    each warning, prefixed ``warning:``) to stdout, or the errors, one per
    line, to stderr.

    Args:
        argv: the arguments after ``config check``: one or more file paths.

    Returns:
        0 when every file is valid, 1 when one is not, 2 on a usage error.
    """
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    paths = list(argv)
    if not paths or any(p in ("-h", "--help") for p in paths):
        print("usage: mulligan config check FILE [FILE...]", file=out if paths else err)
        return 0 if paths else 2
    status = 0
    for path in paths:
        registry = _core.PolicyRegistry()
        try:
            report = _report(registry.load_file(path))
        except ValueError as e:
            print(str(e), file=err)
            status = 1
            continue
        parts = [
            f"{label}: {', '.join(names) if names else '(none)'}"
            for label, names in (
                ("policies", report.policies),
                ("breakers", report.breakers),
                ("clients", report.clients),
                ("budgets", report.budgets),
                ("throttles", report.throttles),
                ("bulkheads", report.bulkheads),
                ("rate_limiters", report.rate_limiters),
                ("adaptive_rates", report.adaptive_rates),
            )
        ]
        print(f"OK {path}: " + "; ".join(parts), file=out)
        for warning in report.warnings:
            print(f"warning: {warning}", file=out)
    return status
