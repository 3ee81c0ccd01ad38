"""What counts as a throttling answer (:func:`is_throttling_answer`): the
one judgement shared by ``@retry(adaptive_rate=)`` (the AWS SDKs' adaptive
mode lowers its send rate on it) and ``@retry(throttle=)`` (the SRE book's
adaptive throttling counts it as a request the backend did not accept).

It imports nothing of the retry loop, so the loop's options can use it.

.. versionadded:: 0.4.0 (in this module since 0.5.0)
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ._errors import TransportError

__all__ = ["ThrottlingPredicate", "is_throttling_answer"]


#: What ``@retry(is_throttling=)`` takes: the attempt's exception or returned
#: value -> True (throttling answer), False (another answer), None (no
#: answer: not recorded).
ThrottlingPredicate = Callable[[Any], Optional[bool]]


def _status_of(value: Any) -> Any:
    status = getattr(value, "status_code", None)
    if status is None:
        status = getattr(value, "status", None)
    if status is None:
        status = getattr(getattr(value, "response", None), "status_code", None)
    return status


def _has_retry_after(value: Any) -> bool:
    for holder in (value, getattr(value, "response", None)):
        headers = getattr(holder, "headers", None)
        get = getattr(headers, "get", None)
        if callable(get) and get("Retry-After") is not None:
            return True
    return getattr(value, "retry_after", None) is not None


def is_throttling_answer(value: Any) -> Optional[bool]:
    """The default classification of ``@retry(adaptive_rate=)`` (0.4) and of
    ``@retry(throttle=)`` (0.5), as the core's IsThrottlingAnswer: True for an HTTP 429, an HTTP 503 with a
    Retry-After (the status read from ``status_code``, ``status`` or
    ``response.status_code``; Retry-After from ``headers`` of the value or of
    its ``response``, or a ``retry_after`` attribute), and a gRPC
    RESOURCE_EXHAUSTED (``code()`` whose name is ``"RESOURCE_EXHAUSTED"``);
    None (not recorded: no answer came) for a :class:`mulligan.TransportError`
    or a built-in ConnectionError/TimeoutError; False for anything else,
    a returned value included. Source: the AWS SDKs' retry behavior spec,
    adaptive mode (throttling errors update the rate, every other response
    too). Never raises: a value whose attributes raise is no answer (None)."""
    try:
        return _judge(value)
    except Exception:  # noqa: BLE001 - a property of the caller's object that raises
        # is no answer of ours to judge: the caller's own exception must
        # propagate, not this one.
        return None


def _judge(value: Any) -> Optional[bool]:
    if isinstance(value, (TransportError, ConnectionError, TimeoutError)):
        return None
    status = _status_of(value)
    if isinstance(status, int) and not isinstance(status, bool):
        return status == 429 or (status == 503 and _has_retry_after(value))
    code = getattr(value, "code", None)
    if callable(code) and isinstance(value, BaseException):
        try:
            name = getattr(code(), "name", None)
        except Exception:  # noqa: BLE001 - a foreign code() is not ours to judge
            return False
        return name == "RESOURCE_EXHAUSTED"
    return False
