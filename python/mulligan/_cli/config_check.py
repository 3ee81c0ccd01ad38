"""``mulligan config check FILE...``: validates configuration files.

.. versionadded:: 0.1.0
.. versionchanged:: 0.5.0
   The line names the ``adaptive_rates`` too.
.. versionchanged:: 0.6.0
   And the ``"state"`` section with the shared entries, without connecting.
"""

from __future__ import annotations

import sys
from typing import Optional, Sequence, TextIO

from .. import _core
from .._config.policies import _report

__all__ = ["check_main"]


def _without_secret(url: str) -> str:
    """``url`` with its user information (user name and password) shown as
    ``***``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, tail = rest.partition("/")
    at = authority.rfind("@")
    if at < 0:
        return url
    return f"{scheme}://***{authority[at:]}{slash}{tail}"


def check_main(
    argv: Sequence[str], stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None
) -> int:
    """Implements ``mulligan config check FILE...``.

    Loads each file into a scratch registry (the process-wide one is not
    touched), with the environment overrides applied as a service would see
    them. Prints ``OK <file>: policies: a, b; breakers: c; clients: d;
    budgets: ...; throttles: ...; bulkheads: ...; rate_limiters: ...;
    adaptive_rates: ...`` (since 0.6, for a file with a ``"state"``
    section, also ``; state: redis://***@host:6379/0 prefix orders; shared:
    breaker payments, rate_limiter api``: checked, never connected to, no
    password printed) (and
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
        if report.state:
            # (0.6) Checked, never connected to; no password printed.
            settings = registry.state()
            assert settings is not None
            parts.append(f"state: {_without_secret(settings['redis'])} prefix "
                         f"{settings['prefix']}")
            shared = [f"breaker {n}" for n in report.shared_breakers] + [
                f"rate_limiter {n}" for n in report.shared_rate_limiters]
            parts.append(f"shared: {', '.join(shared) if shared else '(none)'}")
        print(f"OK {path}: " + "; ".join(parts), file=out)
        for warning in report.warnings:
            print(f"warning: {warning}", file=out)
    return status
