"""mulligan: retries with backoff and jitter, Retry-After and idempotency keys.

One C++ engine decides; this package acts on its decisions in Python::

    import mulligan

    @mulligan.retry(on=ConnectionError, attempts=5)
    def fetch() -> bytes: ...

    response = mulligan.get("https://example.org/", attempts=3, timeout=5.0)

Anything not listed in ``__all__`` is private.

.. versionadded:: 0.1.0
"""

# No `from __future__ import annotations` here: it would leak the public name
# `annotations`, and this module holds re-exports only.
from ._errors import (
    AttemptOutcome,
    AttemptTimeout,
    ConnectionRefused,
    ConnectionReset,
    ConnectTimeout,
    DeadlineExceeded,
    DnsFailure,
    HTTPStatusError,
    InvalidURL,
    MulliganError,
    RetriesExhausted,
    TlsError,
    TransportError,
)
from ._http import (
    Client,
    Headers,
    Response,
    delete,
    get,
    head,
    new_idempotency_key,
    parse_retry_after,
    patch,
    post,
    put,
    request,
)
from ._hooks import RetryDetails, RetryHook, RetryStatistics
from ._retry import (
    Attempt,
    RetryBlock,
    RetryDecorator,
    RetryingCallable,
    RetryOptions,
    StatisticsView,
    retry,
    retrying,
)
from ._version import __version__
from . import testing

__all__ = [
    "Attempt",
    "AttemptOutcome",
    "AttemptTimeout",
    "Client",
    "ConnectTimeout",
    "ConnectionRefused",
    "ConnectionReset",
    "DeadlineExceeded",
    "DnsFailure",
    "HTTPStatusError",
    "Headers",
    "InvalidURL",
    "MulliganError",
    "Response",
    "RetriesExhausted",
    "RetryBlock",
    "RetryDecorator",
    "RetryDetails",
    "RetryHook",
    "RetryOptions",
    "RetryStatistics",
    "RetryingCallable",
    "StatisticsView",
    "TlsError",
    "TransportError",
    "__version__",
    "delete",
    "get",
    "head",
    "new_idempotency_key",
    "parse_retry_after",
    "patch",
    "post",
    "put",
    "request",
    "retry",
    "retrying",
    "testing",
]
