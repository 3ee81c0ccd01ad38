"""mulligan: retries with backoff and jitter, Retry-After and idempotency keys.

One C++ engine decides; this package acts on its decisions in Python::

    import mulligan

    @mulligan.retry(on=ConnectionError, attempts=5)
    def fetch() -> bytes: ...

    response = mulligan.get("https://example.org/", attempts=3, timeout=5.0)

Anything not listed in ``__all__`` is private: the subpackages that hold
each part (``_retry``, ``_breaker``, ``_http``, ``_idempotency``,
``_telemetry``, ``_config``, ``_cli``), the native module ``_core`` and every
other ``_``-prefixed module may change without notice. The public modules
besides this one are :mod:`mulligan.testing`, :mod:`mulligan.wait`,
:mod:`mulligan.stop`, :mod:`mulligan.prometheus` and :mod:`mulligan.otel`.

.. versionadded:: 0.1.0
"""

# No `from __future__ import annotations` here: it would leak the public name
# `annotations`, and this module holds re-exports only.
from ._errors import (
    AttemptOutcome,
    AttemptTimeout,
    CircuitOpenError,
    ConnectionRefused,
    ConnectionReset,
    ConnectTimeout,
    DeadlineExceeded,
    DnsFailure,
    HTTPStatusError,
    IdempotencyConflict,
    IdempotencyKeyMismatch,
    IdempotencyResultNotReplayable,
    IdempotencyStoreFull,
    InvalidURL,
    MulliganError,
    RetriesExhausted,
    TlsError,
    TransportError,
    TruncatedResponse,
)
from ._errors import BulkheadFullError, RateLimitedError  # (0.3)
from ._errors import StateBackendUnavailable  # (0.5)
from ._state import RedisState  # (0.5)
from ._redact import RedactionRules, redact_url, redaction, set_redaction
from ._http.headers import Headers, new_idempotency_key, parse_retry_after
from ._http.response import Response
from ._http.events import RetryEvent
from ._http.client import Client, delete, get, head, options, patch, post, put, request
from ._http.async_client import AsyncClient
from ._idempotency.store import IdempotencyReservation, IdempotencyStore, parse_idempotency_key
from ._idempotency.asgi import IdempotencyMiddleware
from ._idempotency.wsgi import WSGIIdempotencyMiddleware
from ._retry.hooks import RetryDetails, RetryHook, RetryStatistics, StatisticsView
from ._retry.options import RetryOptions
from ._retry.decorator import RetryDecorator, RetryingCallable, retry
from ._retry.block import Attempt, RetryBlock, retrying
from ._breaker.breaker import BreakerTransition, CircuitBreaker
from ._breaker.events import BreakerCallEvent, BreakerTrip
from ._breaker.registry import BreakerRegistry, breakers, circuit_breaker
from ._limits import Bulkhead, RateLimiter  # (0.3)
from ._limits.adaptive import AdaptiveRate  # (0.4)
from ._errors import OutboxError  # (0.5)
from ._outbox import Outbox, OutboxAttempt, OutboxEntry, OutboxStats  # (0.5)
from ._outbox import OutboxJob  # (0.6)
from ._hedging import hedge  # (0.5)
from ._telemetry.metrics import (
    RetryStatus,
    add_event_listener,
    limits_snapshot,
    metrics_json,
    metrics_snapshot,
    prometheus_text,
    remove_event_listener,
    status,
)
from ._telemetry.dashboard import Dashboard, start_dashboard
from ._config.policies import (
    BreakerConfig,
    ClientConfig,
    ConfigReport,
    Policy,
    breaker_config,
    client_config,
    load_config,
    policy,
    reload_config,
    shared_breaker,
)
from ._version import __version__
# Overload protection (Added in 0.3.)
from ._errors import ThrottledError
from ._budget import AdaptiveThrottle, RetryBudget
from . import stop, testing, wait

__all__ = [
    "hedge",
    "AsyncClient",
    "Attempt",
    "AttemptOutcome",
    "AttemptTimeout",
    "BreakerCallEvent",
    "BreakerConfig",
    "BreakerRegistry",
    "BreakerTransition",
    "BreakerTrip",
    "CircuitBreaker",
    "CircuitOpenError",
    "Client",
    "ClientConfig",
    "ConfigReport",
    "ConnectTimeout",
    "ConnectionRefused",
    "ConnectionReset",
    "Dashboard",
    "DeadlineExceeded",
    "DnsFailure",
    "HTTPStatusError",
    "Headers",
    "IdempotencyConflict",
    "IdempotencyKeyMismatch",
    "IdempotencyMiddleware",
    "IdempotencyReservation",
    "IdempotencyResultNotReplayable",
    "IdempotencyStore",
    "IdempotencyStoreFull",
    "InvalidURL",
    "MulliganError",
    "Policy",
    "RedactionRules",
    "Response",
    "RetriesExhausted",
    "RetryBlock",
    "RetryDecorator",
    "RetryDetails",
    "RetryEvent",
    "RetryHook",
    "RetryOptions",
    "RetryStatistics",
    "RetryStatus",
    "RetryingCallable",
    "StatisticsView",
    "TlsError",
    "TransportError",
    "TruncatedResponse",
    "WSGIIdempotencyMiddleware",
    "__version__",
    "AdaptiveThrottle",
    "RetryBudget",
    "ThrottledError",
    "add_event_listener",
    "breaker_config",
    "breakers",
    "circuit_breaker",
    "client_config",
    "delete",
    "get",
    "head",
    "load_config",
    "metrics_json",
    "metrics_snapshot",
    "new_idempotency_key",
    "options",
    "parse_idempotency_key",
    "parse_retry_after",
    "patch",
    "policy",
    "post",
    "prometheus_text",
    "put",
    "redact_url",
    "redaction",
    "reload_config",
    "remove_event_listener",
    "request",
    "retry",
    "retrying",
    "set_redaction",
    "shared_breaker",
    "start_dashboard",
    "status",
    "stop",
    "testing",
    "wait",
    # Added in 0.3 (limits):
    "Bulkhead",
    "BulkheadFullError",
    "RateLimitedError",
    "RateLimiter",
    # Added in 0.4 (metrics):
    "AdaptiveRate",
    "limits_snapshot",
    # Added in 0.5 (outbox):
    "Outbox",
    "OutboxAttempt",
    "OutboxEntry",
    "OutboxError",
    "OutboxStats",
    "OutboxJob",  # (0.6)
    # Added in 0.5 (shared state):
    "RedisState",
    "StateBackendUnavailable",
]
