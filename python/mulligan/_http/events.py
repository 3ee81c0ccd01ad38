"""What the HTTP clients report: :class:`RetryEvent`, the retry and give-up logs.

Both clients call :func:`_report_retry` when the engine decides a retry
(the sync one between its native call's steps, the async one when an
attempt's future resolves), before the wait. Every URL reported here -- in
the event, in the log message and in its ``extra`` fields -- is rendered
through :func:`mulligan.redact_url`, and no header is ever logged.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any, Optional

from .._redact import redact_url

__all__ = ["RetryEvent"]


@dataclasses.dataclass(frozen=True)
class RetryEvent:
    """What an ``on_retry`` hook is told before each wait.

    Attributes:
        attempt: the attempt that just failed (1 for the first).
        delay: seconds the client waits before the next attempt.
        kind: the failure kind (``"connection_refused"``, ``"timeout"``, ...),
            or None when the attempt got an HTTP response.
        status: that response's HTTP status, or 0.
        from_retry_after: True when the delay came from a Retry-After header.
        method: the request's method.
        url: the request's URL as mulligan renders it: its user name and
            password and the values of sensitive query parameters are
            ``"[redacted]"`` (:func:`mulligan.redact_url`), so that a hook
            may log it.

    .. versionchanged:: 0.2.0 ``url`` is redacted.

    .. versionadded:: 0.1.0
    """

    __slots__ = ("attempt", "delay", "kind", "status", "from_retry_after", "method", "url")

    attempt: int
    delay: float
    kind: Optional[str]
    status: int
    from_retry_after: bool
    method: str
    url: str


_HttpRetryHook = Callable[[RetryEvent], Any]

_logger = logging.getLogger("mulligan")


def _log_retry(event: RetryEvent) -> None:
    """Logs one scheduled HTTP retry on the ``mulligan`` logger (WARNING)."""
    if not _logger.isEnabledFor(logging.WARNING):
        return
    what = event.kind if event.kind is not None else f"HTTP {event.status}"
    _logger.warning(
        "mulligan: %s %s attempt %d failed (%s); retrying in %.3f s%s",
        event.method, event.url, event.attempt, what, event.delay,
        " (Retry-After)" if event.from_retry_after else "",
        extra={
            "mulligan_event": "retry_scheduled",
            "mulligan_method": event.method,
            "mulligan_url": event.url,
            "mulligan_attempt": event.attempt,
            "mulligan_delay": event.delay,
            "mulligan_error_kind": event.kind,
            "mulligan_http_status": event.status,
            "mulligan_from_retry_after": event.from_retry_after,
        },
    )


def _report_retry(
    info: tuple[int, float, Optional[str], int, bool],
    method: str,
    url: str,
    hook: Optional[_HttpRetryHook],
) -> Any:
    """Reports one scheduled retry: builds its :class:`RetryEvent` from the
    engine's ``info`` (attempt, delay, kind, status, from_retry_after), logs
    it and runs ``hook`` (if any), returning what the hook returned (an
    awaitable for a coroutine hook). Called only when a retry happens, so a
    request that succeeds builds no event at all."""
    event = RetryEvent(info[0], info[1], info[2], info[3], info[4], method, redact_url(url))
    _log_retry(event)
    return hook(event) if hook is not None else None


def _log_give_up(method: str, url: str, attempts: int, reason: str, what: str) -> None:
    """Logs an HTTP call whose retries gave up (WARNING). ``what`` comes
    from the engine (an error's message: its URL already masked) or is a
    status line; ``url`` is masked here."""
    url = redact_url(url)
    _logger.warning(
        "mulligan: %s %s gave up after %d attempt%s (%s): %s",
        method, url, attempts, "" if attempts == 1 else "s", reason, what,
        extra={
            "mulligan_event": "gave_up",
            "mulligan_method": method,
            "mulligan_url": url,
            "mulligan_attempts": attempts,
            "mulligan_stop_reason": reason,
        },
    )


# The stop reasons of a call that ended on a retryable outcome the engine
# would not retry (any more): every reason the engine can give after
# classifying an outcome retryable (RetrySession::OnOutcome, then the
# pipeline's budget). The one rule of "the retries gave up", shared by
# Client, AsyncClient and the adapters: exactly the calls a fallback answers
# (the engine's use_fallback, pipeline.cc) are the ones raise_on_give_up
# raises RetriesExhausted for. not_replay_safe (a POST without
# Idempotency-Key got a 503) and stop_condition (a composed stop=) were
# missing before 0.6: the fallback answered them, raise_on_give_up did not.
_GAVE_UP_REASONS = frozenset((
    "attempts_exhausted", "deadline", "retry_after_too_long", "not_replay_safe", "stop_condition",
    "budget",
))
