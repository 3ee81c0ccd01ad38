"""The command's overload options (issue 14): ``--budget``,
``--max-concurrent``, ``--rate``, ``--burst`` and ``--adaptive-rate``, mapped
onto :class:`mulligan.Client`'s ``budget=``, ``bulkhead=``, ``rate_limiter=``
and ``adaptive_rate=``.

.. versionadded:: 0.4.0
"""

from __future__ import annotations

import argparse
from typing import Any

from .._budget import RetryBudget
from .._limits import Bulkhead, RateLimiter
from .._limits.adaptive import AdaptiveRate

__all__: list[str] = []

BUDGET_HELP = (
    "the retry budget: per_origin (default: a gRPC A6 token bucket of 100 tokens, "
    "ratio 0.5, per origin), none, token_bucket[:MAX,RATIO], "
    "quota[:CAPACITY,RETRY_COST,TIMEOUT_COST,THROTTLING_COST,NO_RETRY_INCREMENT] "
    "(AWS standard mode, 500,5,10,5,1) or ratio[:TTL_SECONDS,PERCENT,MIN_PER_SECOND] "
    "(Finagle, 10,0.2,10); a refused retry keeps the last failure's exit code"
)

# kind -> (factory, parameter names, converters)
_KINDS: dict[str, tuple[Any, tuple[str, ...], tuple[Any, ...]]] = {
    "token_bucket": (RetryBudget.token_bucket, ("max_tokens", "token_ratio"), (float, float)),
    "quota": (
        RetryBudget.quota,
        ("capacity", "retry_cost", "timeout_cost", "throttling_cost", "no_retry_increment"),
        (int, int, int, int, int),
    ),
    "ratio": (RetryBudget.ratio, ("ttl", "percent", "min_retries_per_second"), (float, float, float)),
}


def budget_spec(text: str) -> Any:
    """``--budget``'s value: "per_origin", None ("none") or a RetryBudget
    (argparse type: a bad spec is a usage error naming it)."""
    if text == "per_origin":
        return "per_origin"
    if text == "none":
        return None
    kind, _, params = text.partition(":")
    if kind not in _KINDS:
        raise argparse.ArgumentTypeError(
            f"--budget must be per_origin, none, token_bucket, quota or ratio[:PARAMS], got {text!r}"
        )
    make, names, types = _KINDS[kind]
    if text.endswith(":"):
        raise argparse.ArgumentTypeError(f"--budget {kind}: no parameters after ':' in {text!r}")
    values = [p for p in params.split(",")] if params else []
    if len(values) > len(names):
        raise argparse.ArgumentTypeError(
            f"--budget {kind} takes at most {len(names)} parameters ({','.join(names)}), got {text!r}"
        )
    kwargs: dict[str, Any] = {}
    for name, convert, value in zip(names, types, values):
        try:
            kwargs[name] = convert(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--budget {kind}: {name} is not a number: {value!r}") from None
    try:
        return make(**kwargs)
    except (ValueError, TypeError) as e:
        raise argparse.ArgumentTypeError(f"--budget: {e}") from None


def rate_spec(text: str) -> float:
    """``--rate R`` or ``--rate R/s``: calls per second, > 0."""
    number = text[:-2] if text.endswith("/s") else text
    try:
        value = float(number)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--rate must be R or R/s (calls per second), got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"--rate must be > 0 and finite, got {text!r}")
    return value


def _burst(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--burst must be a number >= 1, got {text!r}") from None
    if not 1 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"--burst must be a number >= 1, got {text!r}")
    return value


def _count(text: str) -> int:
    """A count in [1, 2**31 - 1] (the engine's int)."""
    if not text.isdigit() or not 1 <= int(text) <= 2**31 - 1:
        raise argparse.ArgumentTypeError(f"must be an integer in [1, 2**31 - 1]: {text!r}")
    return int(text)


def add_limit_options(p: argparse.ArgumentParser) -> None:
    """Adds --budget, --max-concurrent, --rate, --burst and --adaptive-rate to `p`."""
    p.add_argument("--budget", type=budget_spec, default="per_origin", metavar="KIND[:PARAMS]",
                   help=BUDGET_HELP)
    p.add_argument("--max-concurrent", type=_count, default=None, metavar="N",
                   help="a bulkhead of N calls in flight (no queue: a full one exits 9)")
    p.add_argument("--rate", type=rate_spec, default=None, metavar="R[/s]",
                   help="a rate limiter of R calls per second per origin (GCRA; a call that "
                        "would wait past the deadline exits 10)")
    p.add_argument("--burst", type=_burst, default=1.0, metavar="B",
                   help="calls --rate lets go at once from idle (default 1)")
    p.add_argument("--adaptive-rate", action=argparse.BooleanOptionalAction, default=False,
                   help="the AWS SDKs' adaptive send rate (CUBIC): after a 429 or a 503 with "
                        "Retry-After every attempt waits for a token; a wait past the "
                        "deadline exits 10 (default off)")


def limit_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The Client keyword arguments of the options."""
    out: dict[str, Any] = {"budget": args.budget}
    if args.max_concurrent is not None:
        out["bulkhead"] = Bulkhead(args.max_concurrent, name="cli")
    if args.rate is not None:
        out["rate_limiter"] = RateLimiter(args.rate, burst=args.burst, name="cli")
    if args.adaptive_rate:
        out["adaptive_rate"] = AdaptiveRate(name="cli")
    return out
