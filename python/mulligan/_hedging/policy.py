"""The engine's hedging policy from a front door's arguments (0.6).

One place turns the hedging options of ``@mulligan.hedge``, the clients'
``hedge=`` and the command's ``--hedge`` into a ``_core.HedgingPolicy``, so
that every front door names the field as its user wrote it and agrees on
the rules (gRPC A6 ``hedgingPolicy``): ``max_attempts`` is any int >= 2,
values above 5 mean 5; ``delay`` a duration in seconds; ``quantile`` in
(0, 1]. What the core refuses beyond these checks (its own bounds) gets the
owner in front of its message. Thread-safety: pure functions.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .. import _core, _validate

# Any copy count is accepted: the core treats every value above 5 as 5
# (gRPC A6), so a count past a C int is passed as INT_MAX, which it caps.
_NO_LIMIT = 2**1024


def make_policy(
    owner: str,
    label: Callable[[str], str],
    *,
    max_attempts: Any = 2,
    delay: Any = 0.0,
    quantile: Any = None,
    quantile_window: Any = 100,
    quantile_min_samples: Any = 20,
) -> _core.HedgingPolicy:
    """Returns the validated policy; TypeError/ValueError name the field as
    ``label(field)`` (e.g. ``"quantile"`` or ``'hedge["quantile"]'``) after
    ``owner`` ("mulligan.hedge", "mulligan.Client")."""
    copies = _validate.integer(owner, label("max_attempts"), max_attempts, 2, _NO_LIMIT)
    seconds = _validate.seconds(owner, label("delay"), delay)
    q: Optional[float] = None
    if quantile is not None:
        q = _validate.number(owner, label("quantile"), quantile)
        if not 0.0 < q <= 1.0:  # the core's rule, in the user's words
            raise ValueError(f"{owner}: {label('quantile')} must be in (0, 1], got {quantile!r}")
    window = _validate.integer(owner, label("quantile_window"), quantile_window, 1, 100000)
    min_samples = _validate.integer(
        owner, label("quantile_min_samples"), quantile_min_samples, 1, 100000
    )
    try:
        return _core.HedgingPolicy(
            max_attempts=min(copies, _validate.INT_MAX), delay=seconds, quantile=q,
            quantile_window=window, quantile_min_samples=min_samples,
        )
    except ValueError as e:
        raise ValueError(f"{owner}: {e}") from None
