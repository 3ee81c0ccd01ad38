"""The ``mulligan`` command: resilient HTTP requests from the shell.

    mulligan get URL [options]
    mulligan request [-X METHOD] [-d DATA|@file] [-H 'Name: value']... URL [options]
    mulligan dashboard [--port N] [--host ADDR]
    mulligan config check FILE...
    mulligan simulate [SCENARIO] [--clients N] [--out DIR] [--seed S]

The body of the final response goes to stdout (or ``-o FILE``); ``-v`` tells
each attempt, its outcome and the wait on stderr; ``--metrics`` prints a JSON
summary on stderr at the end. Whatever it prints shows URLs through
:func:`mulligan.redact_url` (no user name, password or sensitive query value)
and never a header value.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Callable, Optional

from .._errors import (
    AttemptTimeout,
    BulkheadFullError,
    CircuitOpenError,
    ConnectTimeout,
    DeadlineExceeded,
    RateLimitedError,
    ThrottledError,
    TransportError,
    _UsageError,
)
from .._http.client import Client
from .._http.events import RetryEvent
from .._http.response import Response
from .._redact import redact_url
from .._telemetry.dashboard import start_dashboard
from .config_check import check_main
from .limits import add_limit_options, limit_kwargs
from .outbox import add_outbox_parser, outbox_main
from .simulate import add_simulate_parser, simulate_main

__all__ = ["main"]

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_GAVE_UP = 3
EXIT_CIRCUIT_OPEN = 4
EXIT_TIMEOUT = 5
EXIT_TRANSPORT = 6
EXIT_HTTP_ERROR = 7
EXIT_THROTTLED = 8
EXIT_BULKHEAD_FULL = 9
EXIT_RATE_LIMITED = 10
EXIT_INTERRUPTED = 130

EXIT_CODES_HELP = """\
exit codes:
  0    success: a final response (any status unless --fail)
  1    internal error
  2    usage error (bad option or argument)
  3    gave up: the retries ended on a retryable status (e.g. 503 after
       --attempts attempts, a Retry-After too long, or a POST without a key);
       the last response body is still written
  4    circuit open: the origin's circuit breaker refused the request
  5    timeout: the last attempt timed out, or the --deadline ended the retries
  6    transport error: connection refused or reset, a truncated (cut-off)
       response, DNS failure, TLS error
  7    HTTP error: a non-retryable status >= 400 with --fail
  8    throttled: adaptive throttling rejected the request locally
  9    bulkhead full: --max-concurrent calls were already in flight
  10   rate limited: --rate's next slot was beyond the deadline
  (a --budget refusal keeps the last failure's code: 3 on a retryable
  status, 5 or 6 on a timeout or transport error)
  130  interrupted (Ctrl-C)
"""

_GAVE_UP_REASONS = (
    "attempts_exhausted", "deadline", "retry_after_too_long", "not_replay_safe", "budget",
)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0: {text!r}")
    return value


def _positive_seconds(text: str) -> float:
    # A timeout or deadline of 0 allows no time at all: refused, as the Python
    # API refuses it (mulligan.Client(timeout=0) raises ValueError).
    value = _seconds(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0: {text!r}")
    return value


def _statuses(text: str) -> list[int]:
    out = []
    for part in text.replace(" ", "").split(","):
        if not part:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated HTTP statuses, got an empty item in {text!r}"
            )
        if not part.isdigit() or not 100 <= int(part) <= 599:
            raise argparse.ArgumentTypeError(f"not an HTTP status: {part!r}")
        out.append(int(part))
    return out


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1: {text!r}")
    return int(text)


def _hedge(text: str) -> dict[str, Any]:
    """``--hedge DELAY[,MAX]``: DELAY is ``50ms``, ``0.05s`` or ``0.05``
    (seconds), MAX the copies (>= 2, above 5 is 5; default 2); AsyncClient's
    ``hedge``."""
    delay_text, _, max_text = text.partition(",")
    number = delay_text.strip()
    scale = 1.0
    if number.endswith("ms"):
        number, scale = number[:-2], 0.001
    elif number.endswith("s"):
        number = number[:-1]
    try:
        delay = float(number) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--hedge takes DELAY[,MAX] (DELAY like 50ms, 0.05s or 0.05), got {text!r}"
        ) from None
    if not delay >= 0 or delay == float("inf"):
        raise argparse.ArgumentTypeError(f"--hedge: the delay must be a finite number >= 0, got {text!r}")
    copies = 2
    if max_text:
        # Any count >= 2, as hedge= takes it: above 5 means 5 (gRPC A6).
        if not max_text.strip().isdigit() or int(max_text) < 2:
            raise argparse.ArgumentTypeError(f"--hedge: MAX must be an integer >= 2, got {text!r}")
        copies = int(max_text)
    return {"delay": delay, "max_attempts": copies}


def _method(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("the method must not be empty")
    return text


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("url", help="an absolute http:// or https:// URL")
    p.add_argument("-H", "--header", action="append", default=[], metavar="'NAME: VALUE'",
                   help="a request header (repeatable)")
    p.add_argument("--attempts", type=_positive_int, default=3, help="total attempts (default 3)")
    p.add_argument("--backoff", type=_seconds, default=0.2, metavar="SECONDS",
                   help="base delay of the exponential backoff with full jitter (default 0.2)")
    p.add_argument("--max-delay", type=_seconds, default=10.0, metavar="SECONDS",
                   help="cap on each wait (default 10)")
    p.add_argument("--deadline", type=_positive_seconds, default=None, metavar="SECONDS",
                   help="total time for the request, retries included (default: none)")
    p.add_argument("--timeout", type=_positive_seconds, default=30.0, metavar="SECONDS",
                   help="time allowed for each attempt (default 30)")
    p.add_argument("--connect-timeout", type=_positive_seconds, default=10.0, metavar="SECONDS",
                   help="time allowed to connect (default 10)")
    p.add_argument("--retry-on", type=_statuses, default=None, metavar="STATUSES",
                   help="retryable statuses, comma-separated (default 408,429,500,502,503,504)")
    p.add_argument("--idempotency-key", default=None, metavar="=KEY",
                   help="send an Idempotency-Key on every attempt: --idempotency-key (or "
                        "=auto) for a UUID v4, --idempotency-key=KEY for KEY; makes POST "
                        "and PATCH retryable")
    p.add_argument("--breaker", type=_positive_int, default=None, metavar="=THRESHOLD",
                   help="guard the origin with a circuit breaker counting every attempt; it "
                        "opens after THRESHOLD consecutive failures (default 5) and ends the "
                        "retries with exit code 4")
    add_limit_options(p)
    p.add_argument("--hedge", type=_hedge, default=None, metavar="DELAY[,MAX]",
                   help="hedge idempotent (or keyed) requests: another copy after DELAY "
                        "(50ms, 0.05s), at most MAX copies (default 2); the first answer wins")
    p.add_argument("--strict", action="store_true",
                   help="retry only GET, HEAD and OPTIONS once the request was sent")
    p.add_argument("-L", "--location", action="store_true", help="follow redirects")
    p.add_argument("--max-redirs", type=int, default=10, metavar="N",
                   help="most redirects followed with -L (default 10)")
    p.add_argument("-k", "--insecure", action="store_true", help="do not verify TLS certificates")
    p.add_argument("--cacert", metavar="FILE", help="CA bundle (PEM) to verify TLS peers with")
    p.add_argument("-f", "--fail", action="store_true",
                   help="exit 7 on a final status >= 400 (the body is still written)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the body to FILE, not stdout")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="tell each attempt, its outcome and the wait on stderr")
    p.add_argument("--metrics", action="store_true",
                   help="print a JSON summary on stderr at the end")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mulligan",
        description="Resilient HTTP requests: retries with backoff and jitter, Retry-After, "
                    "idempotency keys, deadlines and circuit breakers (libcurl underneath).",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    g = sub.add_parser("get", help="send a GET", epilog=EXIT_CODES_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_common(g)
    r = sub.add_parser("request", help="send any method", epilog=EXIT_CODES_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("-X", "--request", dest="method", type=_method, default=None, metavar="METHOD",
                   help="the method (default GET, or POST with -d)")
    r.add_argument("-d", "--data", default=None, metavar="DATA|@FILE",
                   help="the body: text, @FILE for a file's bytes, @- for stdin")
    _add_common(r)
    d = sub.add_parser(
        "dashboard",
        help="serve the live dashboard, /metrics (Prometheus) and /metrics.json",
        description="Serves the dashboard page, /metrics in the Prometheus text format and "
                    "/metrics.json until interrupted. It shows the metrics of this process; "
                    "inside an application call mulligan.start_dashboard() instead.",
    )
    d.add_argument("--port", type=int, default=8000, help="TCP port (default 8000; 0 = any)")
    d.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; the page has no authentication)")
    c = sub.add_parser("config", help="work with configuration files")
    config_sub = c.add_subparsers(dest="config_command", metavar="ACTION")
    config_sub.required = True
    check = config_sub.add_parser(
        "check", help="validate configuration files (exit 0 when every file is valid, 1 if not)"
    )
    check.add_argument("files", nargs="+", metavar="FILE")
    add_outbox_parser(sub)  # (Added in 0.5.)
    add_simulate_parser(sub)  # (Added in 0.6.)
    return parser


def _headers(raw: list[str]) -> list[tuple[str, str]]:
    out = []
    for i, item in enumerate(raw, 1):
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            # The item is not quoted: it may be a credential ("Authorization Bearer ...").
            problem = "no colon" if not sep else "an empty name"
            raise _UsageError(f"bad header (-H number {i}): expected 'Name: value', got {problem}")
        out.append((name.strip(), value.strip()))
    return out


def _body(data: Optional[str]) -> Optional[bytes]:
    if data is None:
        return None
    if data.startswith("@"):
        path = data[1:]
        if path == "-":
            return sys.stdin.buffer.read()
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as e:
            raise _UsageError(f"cannot read {path!r}: {e.strerror}") from None
    return data.encode("utf-8")


def main(argv: Optional[list[str]] = None) -> int:
    """Runs the command; returns the exit code (see ``mulligan --help``)."""
    parser = _parser()
    if argv is None:
        argv = sys.argv[1:]
    # The optional values of these flags are given only with "=" (as curl's
    # --idempotency-key=KEY would be): a bare flag never swallows the URL.
    bare = {"--idempotency-key": "--idempotency-key=auto", "--breaker": "--breaker=5"}
    argv = [bare.get(a, a) for a in argv]
    args = parser.parse_args(argv)  # exits 2 on a usage error
    if args.command == "config":
        return check_main(list(args.files))
    if args.command == "dashboard":
        return _dashboard(args)
    if args.command == "outbox":
        return outbox_main(args)
    if args.command == "simulate":
        return simulate_main(args)
    try:
        return _run(args)
    except _UsageError as e:
        parser.error(str(e))  # exits 2
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _dashboard(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        print(f"mulligan dashboard: --port must be in 0..65535, got {args.port}", file=sys.stderr)
        return EXIT_USAGE
    try:
        dashboard = start_dashboard(port=args.port, host=args.host)
    except OSError as e:
        print(f"mulligan dashboard: cannot listen on {args.host}:{args.port}: {e.strerror}",
              file=sys.stderr)
        return EXIT_USAGE
    # The banner is printed inside the try: a Ctrl-C that arrives while the
    # banner is still being written (a reader may already have acted on it)
    # stops the dashboard as cleanly as one during the wait.
    try:
        print(f"mulligan dashboard at {dashboard.url} (Prometheus: {dashboard.url}metrics); "
              "Ctrl-C to stop", file=sys.stderr, flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return EXIT_OK
    finally:
        dashboard.stop()


def _run(args: argparse.Namespace) -> int:
    """Sends the request of ``mulligan get`` or ``mulligan request``; returns the exit code."""
    method = "GET"
    body = None
    if args.command == "request":
        body = _body(args.data)
        method = args.method or ("POST" if body is not None else "GET")
    headers = _headers(args.header)
    if args.output:
        # Before anything is sent: a POST must not run for a body that cannot
        # be written. Appending creates the file without truncating it yet.
        try:
            with open(args.output, "ab"):
                pass
        except OSError as e:
            raise _UsageError(f"cannot write {args.output!r}: {e.strerror}") from None
    waits: list[dict[str, Any]] = []

    def on_retry(e: RetryEvent) -> None:
        what = e.kind if e.kind is not None else str(e.status)
        waits.append({"attempt": e.attempt, "outcome": what, "delay": round(e.delay, 6)})
        if args.verbose:
            hint = " (Retry-After)" if e.from_retry_after else ""
            print(f"* attempt {e.attempt}: {what} -> retrying in {e.delay:.3f}s{hint}",
                  file=sys.stderr, flush=True)

    client = _client(args, on_retry)
    summary: dict[str, Any] = {"method": method, "url": redact_url(args.url)}
    start = time.monotonic()
    with client:
        code, response, error = _send(client, method, args.url, body, headers, _key(args))
    elapsed = time.monotonic() - start
    if response is None:
        _report_error(args, code, error, summary)
    else:
        code = _report_response(args, method, code, response, summary)
        if code == EXIT_INTERNAL:
            return code
    if args.metrics:
        attempts = summary.get("attempts") or 0
        # A hedged request's extra copies are hedges, not retries (gRPC A6:
        # a method is retried or hedged, never both).
        extra = max(attempts - 1, 0)
        if args.hedge is not None:
            summary.update(hedges=extra,
                           hedge_winner=getattr(response, "hedge_winner", 0) if response else 0)
            extra = 0
        summary.update(retries=extra, waits=waits,
                       total_wait=round(sum(w["delay"] for w in waits), 6),
                       elapsed=round(elapsed, 6), exit_code=code)
        print(json.dumps(summary, sort_keys=True), file=sys.stderr)
    return code


def _key(args: argparse.Namespace) -> Any:
    """The ``idempotency_key=`` of --idempotency-key: None, True (=auto) or the key."""
    if args.idempotency_key is None:
        return None
    if args.idempotency_key == "auto":
        return True
    return args.idempotency_key


def _client(args: argparse.Namespace, on_retry: Callable[[RetryEvent], None]) -> Client:
    """The client the options describe; a bad value is a usage error."""
    if args.insecure:
        verify: Any = False
    elif args.cacert:
        verify = args.cacert
    else:
        verify = True
    breaker = None
    if args.breaker is not None:
        breaker = {"failure_threshold": args.breaker}
    try:
        return Client(
            verify=verify,
            connect_timeout=args.connect_timeout,
            timeout=args.timeout,
            attempts=args.attempts,
            deadline=args.deadline,
            base_delay=args.backoff,
            max_delay=args.max_delay,
            retry_on=args.retry_on,
            follow_redirects=args.location,
            max_redirects=args.max_redirs,
            strict=args.strict,
            on_retry=on_retry,
            breaker=breaker,
            breaker_per_attempt=breaker is not None,
            user_agent="mulligan-cli",
            hedge=args.hedge,
            **limit_kwargs(args),
        )
    except (ValueError, TypeError) as e:
        raise _UsageError(str(e)) from None


def _send(
    client: Client,
    method: str,
    url: str,
    body: Optional[bytes],
    headers: list[tuple[str, str]],
    key: Any,
) -> tuple[int, Optional[Response], BaseException]:
    """Sends the request: (exit code so far, the final response or None, the error)."""
    try:
        response = client.request(method, url, data=body, headers=headers, idempotency_key=key)
    except ValueError as e:  # a malformed URL or header: nothing was sent
        if not isinstance(e, TransportError):
            raise _UsageError(str(e)) from None
        return EXIT_TRANSPORT, None, e
    except CircuitOpenError as e:
        return EXIT_CIRCUIT_OPEN, None, e
    except ThrottledError as e:
        return EXIT_THROTTLED, None, e
    except BulkheadFullError as e:
        return EXIT_BULKHEAD_FULL, None, e
    except RateLimitedError as e:
        return EXIT_RATE_LIMITED, None, e
    except (DeadlineExceeded, AttemptTimeout, ConnectTimeout) as e:
        return EXIT_TIMEOUT, None, e
    except TransportError as e:
        return EXIT_TRANSPORT, None, e
    return EXIT_OK, response, RuntimeError("no response")


def _report_error(
    args: argparse.Namespace, code: int, error: BaseException, summary: dict[str, Any]
) -> None:
    """Tells on stderr why no response came, and fills the --metrics summary."""
    attempts = getattr(error, "attempts", 0)
    summary.update(outcome={
        EXIT_CIRCUIT_OPEN: "circuit_open", EXIT_TIMEOUT: "timeout", EXIT_THROTTLED: "throttled",
        EXIT_BULKHEAD_FULL: "bulkhead_full", EXIT_RATE_LIMITED: "rate_limited"}.get(
        code, "transport_error"), error=str(error), kind=getattr(error, "kind", None),
        stop_reason=getattr(error, "stop_reason", None), attempts=attempts, status=None)
    if args.verbose:
        print(f"* attempt {attempts}: {getattr(error, 'kind', 'circuit_open')} -> giving up",
              file=sys.stderr)
    print(f"mulligan: {error}", file=sys.stderr)


def _report_response(
    args: argparse.Namespace, method: str, code: int, response: Response, summary: dict[str, Any]
) -> int:
    """Writes the final response's body, tells on stderr how it ended, fills
    the --metrics summary; returns the exit code (EXIT_INTERNAL when the body
    cannot be written)."""
    gave_up = response.stop_reason in _GAVE_UP_REASONS and response.status_code >= 400
    if gave_up:
        code = EXIT_GAVE_UP
    elif args.fail and response.status_code >= 400:
        code = EXIT_HTTP_ERROR
    if args.verbose:
        print(f"* attempt {response.attempts}: {response.status_code} "
              f"({response.stop_reason}) in {response.elapsed:.3f}s total", file=sys.stderr)
    if gave_up:
        print(f"mulligan: gave up on {method} {redact_url(args.url)} after "
              f"{response.attempts} attempt{'s' if response.attempts != 1 else ''} "
              f"({response.stop_reason}): "
              f"last status {response.status_code}", file=sys.stderr)
    summary.update(outcome="gave_up" if gave_up else ("http_error" if code else "success"),
                   status=response.status_code, stop_reason=response.stop_reason,
                   attempts=response.attempts, idempotency_key=response.idempotency_key,
                   final_url=redact_url(response.url))
    if args.output:
        try:
            with open(args.output, "wb") as f:
                f.write(response.content)
        except OSError as e:
            print(f"mulligan: cannot write {args.output!r}: {e.strerror}", file=sys.stderr)
            return EXIT_INTERNAL
    else:
        sys.stdout.buffer.write(response.content)
        sys.stdout.buffer.flush()
    return code
