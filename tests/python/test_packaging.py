"""The package surface: one version, a private _core, an explicit __all__,
every exception in _errors."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import inspect
import os
import pkgutil

import mulligan
from mulligan import _core


def test_version_matches_metadata_and_core() -> None:
    assert mulligan.__version__ == importlib.metadata.version("mulligan")
    assert _core.version_string() == mulligan.__version__


# Public submodules imported on demand (their extras may be missing); once
# imported they show up as attributes of the package.
OPTIONAL_SUBMODULES = {"otel", "prometheus", "adapters"}


def test_all_is_explicit_and_complete() -> None:
    public = {name for name in dir(mulligan) if not name.startswith("_")} - OPTIONAL_SUBMODULES
    assert set(mulligan.__all__) - {"__version__"} == public
    for name in mulligan.__all__:
        assert getattr(mulligan, name) is not None


def test_py_typed_is_shipped() -> None:
    assert os.path.exists(os.path.join(os.path.dirname(mulligan.__file__), "py.typed"))


def test_errors_module_does_not_import_core() -> None:
    import ast

    import mulligan._errors as errors_module

    with open(errors_module.__file__, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.module != "_core" and "_core" not in [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            assert all("_core" not in a.name for a in node.names)


def test_error_hierarchy() -> None:
    for cls in (
        mulligan.TransportError,
        mulligan.RetriesExhausted,
        mulligan.HTTPStatusError,
    ):
        assert issubclass(cls, mulligan.MulliganError)
        assert cls.__doc__
    for cls in (mulligan.ConnectionRefused, mulligan.AttemptTimeout, mulligan.DeadlineExceeded):
        assert issubclass(cls, mulligan.TransportError)
    assert issubclass(mulligan.AttemptTimeout, TimeoutError)
    assert issubclass(mulligan.InvalidURL, ValueError)


def test_transport_error_attributes_and_pickle() -> None:
    import pickle

    e = mulligan.ConnectionRefused("connection_refused", 3, "refused", stop_reason="attempts_exhausted")
    assert (e.kind, e.attempts, e.message, e.stop_reason) == (
        "connection_refused",
        3,
        "refused",
        "attempts_exhausted",
    )
    copy = pickle.loads(pickle.dumps(e))
    assert type(copy) is mulligan.ConnectionRefused
    assert (copy.kind, copy.attempts, copy.message, copy.stop_reason) == (
        e.kind,
        e.attempts,
        e.message,
        e.stop_reason,
    )


# The public surface, written out: a name dropped from (or added to)
# mulligan.__all__ fails here until this list says so.
PUBLIC_NAMES = [
    "AsyncClient", "Attempt", "AttemptOutcome", "AttemptTimeout", "BreakerCallEvent",
    "BreakerConfig", "BreakerRegistry", "BreakerTransition", "BreakerTrip", "CircuitBreaker", "CircuitOpenError", "Client",
    "ClientConfig", "ConfigReport", "ConnectTimeout", "ConnectionRefused", "ConnectionReset",
    "Dashboard", "DeadlineExceeded", "DnsFailure", "HTTPStatusError", "Headers",
    "IdempotencyConflict", "IdempotencyKeyMismatch", "IdempotencyMiddleware",
    "IdempotencyReservation", "IdempotencyResultNotReplayable", "IdempotencyStore",
    "IdempotencyStoreFull", "InvalidURL", "MulliganError", "Policy", "RedactionRules", "Response",
    "RetriesExhausted", "RetryBlock", "RetryDecorator", "RetryDetails", "RetryEvent",
    "RetryHook", "RetryOptions", "RetryStatistics", "RetryStatus", "RetryingCallable",
    "StatisticsView", "TlsError", "TransportError", "TruncatedResponse",
    "WSGIIdempotencyMiddleware", "__version__",
    "add_event_listener", "breaker_config", "breakers", "circuit_breaker", "client_config",
    "delete", "get", "head", "load_config", "metrics_json", "metrics_snapshot",
    "new_idempotency_key", "options", "parse_idempotency_key", "parse_retry_after", "patch",
    "policy", "post", "prometheus_text", "put", "redact_url", "redaction", "reload_config",
    "remove_event_listener", "request", "retry", "retrying", "set_redaction", "start_dashboard",
    "status", "stop", "testing", "wait",
    # Overload protection (Added in 0.3.)
    "AdaptiveThrottle", "RetryBudget", "ThrottledError",
    # Added in 0.3 (limits):
    "Bulkhead", "BulkheadFullError", "RateLimitedError", "RateLimiter",
    # Added in 0.4 (metrics):
    "AdaptiveRate", "limits_snapshot",
    # Added in 0.5 (outbox):
    "Outbox", "OutboxAttempt", "OutboxEntry", "OutboxError", "OutboxStats",
    "hedge",  # (0.5)
    "OutboxJob",  # (0.6)
    # Added in 0.5 (shared state):
    "RedisState", "StateBackendUnavailable",
    "shared_breaker",  # (0.6: a config file's shared breakers)
]

# Public modules besides the package itself.
PUBLIC_SUBMODULES = [
    "mulligan.testing", "mulligan.wait", "mulligan.stop", "mulligan.prometheus", "mulligan.otel",
    "mulligan.adapters", "mulligan.adapters.requests", "mulligan.adapters.httpx",
    "mulligan.adapters.aiohttp", "mulligan.adapters.grpc",
]


def test_all_is_the_written_out_public_surface() -> None:
    assert sorted(mulligan.__all__) == sorted(PUBLIC_NAMES)
    assert len(set(mulligan.__all__)) == len(mulligan.__all__)


def test_every_public_name_imports_from_the_package() -> None:
    namespace: dict[str, object] = {}
    exec("from mulligan import *", namespace)  # what `import *` gives is __all__
    for name in PUBLIC_NAMES:
        assert name in namespace, name
        exec(f"from mulligan import {name}", {})
    # The public decorators and functions are the objects, not the private
    # subpackages of the same part (mulligan._retry is no mulligan.retry).
    assert callable(mulligan.retry) and inspect.isfunction(mulligan.retry)
    assert inspect.ismodule(mulligan.testing) and mulligan.testing.__name__ == "mulligan.testing"


def test_public_submodules_import() -> None:
    for name in PUBLIC_SUBMODULES:
        module = importlib.import_module(name)
        assert module.__doc__, name
        for public in module.__all__:
            assert getattr(module, public) is not None, f"{name}.{public}"


def _package_modules() -> list[str]:
    names = ["mulligan"]
    for info in pkgutil.walk_packages(mulligan.__path__, "mulligan."):
        names.append(info.name)
    return names


def test_every_exception_class_is_defined_in_errors() -> None:
    defined_elsewhere = []
    for name in _package_modules():
        if name in ("mulligan.prometheus", "mulligan.otel"):
            continue  # optional extras; they define no exception either
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == name
                and name != "mulligan._errors"
            ):
                if name.startswith("mulligan.adapters."):
                    # An adapter's exceptions are both a mulligan._errors class
                    # and its library's (requests.RequestException, ...), so
                    # they live beside the import of that library.
                    assert any(base.__module__ == "mulligan._errors" for base in value.__mro__[1:])
                    continue
                defined_elsewhere.append(f"{name}.{attr}")
    assert defined_elsewhere == []
    for name in PUBLIC_NAMES:
        value = getattr(mulligan, name)
        if inspect.isclass(value) and issubclass(value, BaseException):
            assert value.__module__ == "mulligan._errors", name


def test_errors_module_imports_nothing_from_the_package() -> None:
    import mulligan._errors as errors_module

    with open(errors_module.__file__, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 and not (node.module or "").startswith("mulligan"), ast.dump(node)
        elif isinstance(node, ast.Import):
            assert all(not a.name.startswith("mulligan") for a in node.names)


def test_subpackages_are_private() -> None:
    # Every part lives in a private subpackage; the only public modules are
    # the package and PUBLIC_SUBMODULES (the package docstring says so).
    public = [
        name for name in _package_modules()
        if name != "mulligan" and not any(part.startswith("_") for part in name.split(".")[1:])
    ]
    assert sorted(public) == sorted(PUBLIC_SUBMODULES)
    assert "not listed in ``__all__`` is private" in (mulligan.__doc__ or "")
