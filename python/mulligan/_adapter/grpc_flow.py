"""The gRPC interceptors' options and the steps of one logical RPC.

:class:`GrpcConfig` checks the options of
:mod:`mulligan.adapters.grpc`'s interceptors once (ValueError/TypeError
naming the field, at construction) and resolves, per RPC method, the
engine's ``_core.Pipeline`` that every call of that method steps through:
the retry policy (the interceptor's own options, a named policy, or the
loaded gRPC service config's ``methodConfig`` matched by gRFC A6's name
rules), the breaker (one per channel or one per method), the retry budget
and the adaptive throttle. :class:`GrpcCall` is one logical RPC through it.

This module imports no grpc: the interceptors hand it status codes as
integers and trailing metadata as (key, value) pairs.

Rules and their sources:

- Classification: the engine's ``Outcome.grpc(code)`` (OK a success, the
  policy's ``retryable_grpc_codes`` retryable, every other code terminal).
- ``grpc-retry-pushback-ms`` (gRFC A6 "Pushback"): a non-negative decimal
  integer replaces the backoff delay of the next retry (the engine applies
  it as a Retry-After hint: ``retry_after_max`` and the deadline bound it);
  a negative or unparseable value means "do not retry" (the attempt is
  recorded as terminal).
- ``grpc-previous-rpc-attempts`` (gRFC A6 "Exposed Retry Metadata"): sent
  on every retry with the number of attempts made before it.
- Traces (OpenTelemetry, when ``mulligan.otel.instrument(tracing=True)``
  is on): a CLIENT span per logical RPC named by the method path without
  its leading slash (``pkg.Service/Method``, the RPC conventions' span
  name) with ``rpc.system`` "grpc", ``rpc.service`` and ``rpc.method``, and
  a CLIENT child span per attempt carrying ``rpc.grpc.status_code``,
  ``error.type`` (the status code's name) and ``mulligan.retry.delay_s``.
  The call's span carries the ``rpc.grpc.status_code`` the call ended with
  too (0.6; the gRPC conventions require it on every span): its span status
  stays unset on OK and is Error with ``error.type`` on any other code (the
  conventions' rule for client spans, and "Recording Errors": never Ok).
  A call refused before any attempt (an open breaker) has no gRPC status.
  Each attempt's trace context goes out in its request metadata
  (``traceparent``, through the configured propagator), replacing the
  fields the caller's metadata carried.
- Deadline: the call's own ``timeout`` is the logical call's deadline (the
  smaller of it and the policy's ``deadline``); each attempt is sent with
  the time left, trimmed to the policy's attempt timeout. An attempt that
  hits the attempt timeout (not the call's deadline) is retryable like a
  transport timeout (gRFC A6 ``perAttemptRecvTimeout``); DEADLINE_EXCEEDED
  of the call itself is what the policy says of code 4 (terminal by default).

.. versionadded:: 0.4.0
"""

from __future__ import annotations

import re
import sys
import threading
from typing import Any, Iterable, Optional

from .. import _core, _validate
from .._config import policies as _config
from .._http.base import _testing
from .._http.events import _log_give_up, _report_retry
from .._retry.call import refusal
from .._retry.fallback import call_fallback
from .._retry.options import _never_retried
from .._retry.state import STATE
from .._telemetry import metrics as _metrics
from .._telemetry import tracing as _tracing
from .._validate import UNSET

__all__ = ["CODES", "GrpcCall", "GrpcConfig", "PREVIOUS_ATTEMPTS", "PUSHBACK", "outcome_of", "pushback"]

#: gRPC status codes by name (grpc/grpc doc/statuscodes.md).
CODES: dict[str, int] = {
    "OK": 0, "CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4,
    "NOT_FOUND": 5, "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8,
    "FAILED_PRECONDITION": 9, "ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12,
    "INTERNAL": 13, "UNAVAILABLE": 14, "DATA_LOSS": 15, "UNAUTHENTICATED": 16,
}
_NAMES = {code: name for name, code in CODES.items()}
#: The trailing metadata key of a server's pushback (gRFC A6).
PUSHBACK = "grpc-retry-pushback-ms"
#: The request metadata key carrying the attempts before this one (gRFC A6).
PREVIOUS_ATTEMPTS = "grpc-previous-rpc-attempts"

_DEADLINE_EXCEEDED = 4
_DIGITS = re.compile(r"[0-9]+")
# A pushback saying "do not retry".
REFUSE = -1.0
_TERMINAL = _core.Outcome.failure(False)
_TIMED_OUT = _core.Outcome.transport(_core.ErrorKind.TIMEOUT)
_OK = _core.Outcome.grpc(0)
# Per-call deadlines are compiled into pipelines; keep the last few per method.
_MAX_TIMED_PIPELINES = 32


def pushback(trailers: Optional[Iterable[Any]]) -> Optional[float]:
    """The server's ``grpc-retry-pushback-ms`` among ``trailers`` ((key,
    value) pairs; None: no trailers), in seconds: None when absent,
    :data:`REFUSE` (-1.0) when negative or unparseable ("do not retry",
    gRFC A6), else the delay (``"100"`` is 0.1)."""
    if not trailers:
        return None
    for item in trailers:
        key, value = item[0], item[1]
        if key != PUSHBACK:
            continue
        if isinstance(value, bytes):
            value = value.decode("ascii", "replace")
        text = str(value).strip()
        if _DIGITS.fullmatch(text) is None:
            return REFUSE
        return int(text) / 1000.0
    return None


def _span_of(method: str) -> tuple[str, dict[str, Any]]:
    """The span name and the RPC attributes of ``method`` ("/pkg.Svc/M")."""
    name = method[1:] if method.startswith("/") else method
    service, _, rpc = name.rpartition("/")
    return name, {"rpc.system": "grpc", "rpc.service": service, "rpc.method": rpc}


def _append_pair(pairs: list[tuple[str, Any]], key: str, value: str) -> None:
    pairs.append((key, value))


def _code(owner: str, value: Any) -> int:
    """One retryable code: a name ("UNAVAILABLE"), an int, or anything with
    a ``.value[0]`` int (a ``grpc.StatusCode``)."""
    if isinstance(value, str):
        code = CODES.get(value.upper())
        if code is None:
            raise ValueError(f"{owner}: codes: unknown gRPC status code {value!r}")
        return code
    inner = getattr(value, "value", None)
    if isinstance(inner, tuple) and inner and isinstance(inner[0], int):
        value = inner[0]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}: codes: expected status code names or numbers, got {value!r}")
    if not 1 <= value <= 16:
        raise ValueError(f"{owner}: codes: a retryable code must be in [1, 16] (OK excluded), got {value}")
    return value


def _codes(owner: str, codes: Any) -> list[int]:
    if isinstance(codes, (str, int)) or not isinstance(codes, Iterable):
        raise TypeError(f"{owner}: codes must be a list of status codes, got {codes!r}")
    out = sorted({_code(owner, c) for c in codes})
    if not out:
        raise ValueError(f"{owner}: codes must not be empty (use attempts=1 to turn retries off)")
    return out


def outcome_of(policy: Any, code: int, trailers: Optional[Iterable[Any]], by_attempt: bool) -> Any:
    """The engine outcome of an attempt (or a hedged copy) that ended with
    status ``code`` and ``trailers`` under ``policy``: OK a success; a
    DEADLINE_EXCEEDED of the attempt's own bound (``by_attempt``) a timeout;
    the server's pushback carried as a Retry-After hint, or, when it says
    "do not retry", a retryable code recorded as terminal (gRFC A6)."""
    if code == 0:
        return _OK
    if code == _DEADLINE_EXCEEDED and by_attempt:
        return _TIMED_OUT
    delay = pushback(trailers)
    if delay is None:
        return _core.Outcome.grpc(code)
    if delay == REFUSE:
        outcome = _core.Outcome.grpc(code)
        if policy.classify(outcome) == _core.Classification.RETRYABLE:
            outcome = _TERMINAL  # the server said: do not retry
        return outcome
    return _core.Outcome.grpc(code, delay)


class _Route:
    """The pipeline of one RPC method (immutable, shared by threads), and
    its hedging policy (a service config's hedgingPolicy) or None."""

    __slots__ = ("method", "policy", "pipeline", "hedging", "_parts", "_timed", "_lock")

    def __init__(self, method: str, policy: Any, parts: tuple[Any, ...], hedging: Any = None) -> None:
        self.method = method
        self.policy = policy
        self.hedging = hedging
        self._parts = parts  # breaker core, per_attempt, metrics, budget core, throttle core
        self.pipeline = _core.Pipeline(policy, *parts)
        self._timed: dict[float, Any] = {}
        self._lock = threading.Lock()

    def for_timeout(self, timeout: Optional[float]) -> Any:
        """The pipeline of a call whose own timeout is ``timeout`` seconds
        (None: the policy's deadline alone)."""
        if timeout is None:
            return self.pipeline
        own = self.policy.deadline
        if own is not None and own <= timeout:
            return self.pipeline
        pipeline = self._timed.get(timeout)
        if pipeline is None:
            # Compiled once per distinct timeout; the engine validates it.
            pipeline = _core.Pipeline(self.policy.replace(deadline=max(timeout, 1e-9)), *self._parts)
            with self._lock:
                if len(self._timed) >= _MAX_TIMED_PIPELINES:
                    self._timed.clear()
                self._timed[timeout] = pipeline
        return pipeline


class GrpcConfig:
    """An interceptor's options, checked once; the routes per method.

    Thread-safe: routes are built under a lock and immutable once built.
    The keyword arguments are documented on
    :class:`mulligan.adapters.grpc.RetryInterceptor`.
    """

    def __init__(
        self,
        owner: str,
        *,
        policy: Optional[str] = None,
        service_config: bool = False,
        attempts: Any = UNSET,
        timeout: Any = UNSET,
        deadline: Any = UNSET,
        backoff: Any = UNSET,
        base_delay: Any = UNSET,
        multiplier: Any = UNSET,
        max_delay: Any = UNSET,
        jitter: Any = UNSET,
        jitter_fraction: Any = UNSET,
        retry_after_max: Any = UNSET,
        codes: Any = UNSET,
        breaker: Any = None,
        breaker_key: str = "channel",
        target: Optional[str] = None,
        budget: Any = None,
        throttle: Any = None,
        send_attempt_count: bool = True,
        on_retry: Any = None,
        fallback: Any = UNSET,
    ) -> None:
        v = _validate
        self.owner = owner
        given = {
            k: val for k, val in dict(
                attempts=attempts, timeout=timeout, deadline=deadline, backoff=backoff,
                base_delay=base_delay, multiplier=multiplier, max_delay=max_delay, jitter=jitter,
                jitter_fraction=jitter_fraction, retry_after_max=retry_after_max, codes=codes,
            ).items() if val is not UNSET
        }
        self.policy_name = v.name_or_none(owner, "policy", policy)
        self.service_config = v.flag(owner, "service_config", service_config)
        if self.policy_name is not None and self.service_config:
            raise TypeError(f"{owner}: give policy= or service_config=True, not both")
        if given and (self.policy_name is not None or self.service_config):
            raise TypeError(
                f"{owner}: {sorted(given)} cannot be combined with policy= or service_config=True "
                "(the named policy gives every retry option)"
            )
        self.own_policy = self._own_policy(given)
        self.target = v.name_or_none(owner, "target", target)
        self._set_breaker(breaker, breaker_key)
        self._set_gates(budget, throttle)
        self.send_attempt_count = v.flag(owner, "send_attempt_count", send_attempt_count)
        self.on_retry = v.callable_or_none(owner, "on_retry", on_retry)
        self.fallback = fallback
        self._routes: dict[str, _Route] = {}
        self._generation = _config._generation
        self._lock = threading.Lock()
        if self.policy_name is not None:
            self._named(self.policy_name)  # fails now (ValueError) for an unknown name

    def _own_policy(self, o: dict[str, Any]) -> Any:
        """The engine policy of the interceptor's own options (DESIGN.md
        section 4's defaults; UNAVAILABLE the one retryable code, as A6's
        examples)."""
        owner, v = self.owner, _validate
        policy = _core.RetryPolicy(
            attempts=v.attempts(owner, "attempts", o.get("attempts", 3)),
            attempt_timeout=v.seconds_or_none(owner, "timeout", o.get("timeout"), positive=True),
            deadline=v.seconds_or_none(owner, "deadline", o.get("deadline"), positive=True),
            backoff=v.name(owner, "backoff", o.get("backoff", "exponential")),
            base_delay=v.seconds(owner, "base_delay", o.get("base_delay", 0.2)),
            multiplier=v.number(owner, "multiplier", o.get("multiplier", 2.0)),
            max_delay=v.seconds(owner, "max_delay", o.get("max_delay", 10.0)),
            jitter=v.name(owner, "jitter", o.get("jitter", "full")),
            jitter_fraction=v.probability(owner, "jitter_fraction", o.get("jitter_fraction", 0.2)),
            retry_after_max=v.seconds(owner, "retry_after_max", o.get("retry_after_max", 60.0)),
        )
        return policy.replace(retryable_grpc_codes=_codes(owner, o.get("codes", ("UNAVAILABLE",))))

    def _set_breaker(self, breaker: Any, key: Any) -> None:
        from .._breaker.breaker import CircuitBreaker

        owner = self.owner
        self.breaker_key = _validate.name(owner, "breaker_key", key)
        if self.breaker_key not in ("channel", "method"):
            raise ValueError(f"{owner}: breaker_key must be 'channel' or 'method', got {key!r}")
        self._breaker_kwargs: Optional[dict[str, Any]] = None
        self._channel_breaker: Any = None
        if breaker is None or breaker is False:
            return
        if isinstance(breaker, CircuitBreaker):
            if self.breaker_key == "method":
                raise ValueError(f"{owner}: a CircuitBreaker instance is one breaker: use breaker_key='channel'")
            self._channel_breaker = breaker._core
            return
        if breaker is True:
            kwargs: dict[str, Any] = {}
        elif isinstance(breaker, dict):
            kwargs = dict(breaker)
        else:
            raise TypeError(f"{owner}: breaker must be True, a dict of CircuitBreaker options "
                            f"or a mulligan.CircuitBreaker, got {breaker!r}")
        kwargs.pop("name", None)
        name = self.target or "grpc"
        self._channel_breaker = CircuitBreaker(name, **kwargs)._core  # validates the options now
        if self.breaker_key == "method":
            self._breaker_kwargs = kwargs

    def _set_gates(self, budget: Any, throttle: Any) -> None:
        from .._budget import AdaptiveThrottle, RetryBudget

        if budget is not None and not isinstance(budget, RetryBudget):
            raise TypeError(f"{self.owner}: budget must be a mulligan.RetryBudget, got {budget!r}")
        if throttle is not None and not isinstance(throttle, AdaptiveThrottle):
            raise TypeError(f"{self.owner}: throttle must be a mulligan.AdaptiveThrottle, got {throttle!r}")
        self.budget = budget
        self.throttle = throttle

    def _named(self, name: str) -> tuple[Any, Any, Any]:
        """The engine policy, the budget (or None) and the engine hedging
        policy (a gRPC service config's hedgingPolicy, or None) of policy
        ``name``."""
        p = _config.policy(name)
        hedging = None
        if p.hedging is not None:
            hedging = _core.HedgingPolicy(max_attempts=p.hedging["max_attempts"], delay=p.hedging["delay"])
        return p._native, p.retry_kwargs().get("budget"), hedging

    def _service_config(self, method: str) -> tuple[Any, Any, Any]:
        """gRFC A6 / service config name matching for ``/pkg.Service/Method``:
        the entry naming the method, else the one naming its service, else
        the default entry (``{}``); a method none names is not retried."""
        path = method.lstrip("/")
        service = path.rsplit("/", 1)[0] if "/" in path else path
        for name in (path, service, "default"):
            try:
                return self._named(name)
            except ValueError:  # no such policy (or nothing loaded)
                continue
        return self.own_policy.replace(attempts=1), None, None

    def route(self, method: str) -> _Route:
        """The pipeline of RPC ``method`` (built on first use; rebuilt after
        mulligan.reload_config() when a named policy or service config
        decides)."""
        if (self.policy_name is not None or self.service_config) and self._generation != _config._generation:
            with self._lock:
                self._routes = {}
                self._generation = _config._generation
        route = self._routes.get(method)
        if route is None:
            with self._lock:
                route = self._routes.get(method)
                if route is None:
                    route = self._build(method)
                    self._routes[method] = route
        return route

    def _build(self, method: str) -> _Route:
        budget = self.budget
        if self.policy_name is not None:
            policy, named_budget, hedging = self._named(self.policy_name)
        elif self.service_config:
            policy, named_budget, hedging = self._service_config(method)
        else:
            policy, named_budget, hedging = self.own_policy, None, None
        if budget is None:
            budget = named_budget
        breaker = self._channel_breaker
        if self._breaker_kwargs is not None:
            from .._breaker.breaker import CircuitBreaker

            breaker = CircuitBreaker(method, **self._breaker_kwargs)._core
        parts = (
            breaker, False, _metrics._metrics_for(method),
            budget._core if budget is not None else None,
            self.throttle._core if self.throttle is not None else None,
        )
        return _Route(method, policy, parts, hedging)

    def begin(self, method: str, timeout: Optional[float]) -> GrpcCall:
        """Begins one logical RPC of ``method`` whose own timeout is
        ``timeout`` seconds (None: none)."""
        return GrpcCall(self, self.route(method), timeout)


class GrpcCall:
    """One logical RPC through its method's pipeline.

    Not thread-safe: it belongs to one call (one thread, or one task).
    """

    __slots__ = ("cfg", "route", "core", "by_attempt", "code", "trace")

    def __init__(self, cfg: GrpcConfig, route: _Route, timeout: Optional[float]) -> None:
        cap, no_wait, _ = _testing()
        self.cfg = cfg
        self.route = route
        self.by_attempt = False
        self.code = -1
        self.core: Any = route.for_timeout(timeout).begin(STATE.now(), cfg.fallback is not UNSET, cap, no_wait)
        self.trace: Optional[_tracing.CallTrace] = (
            _tracing.client_call(*_span_of(route.method)) if _tracing.SWITCH.tracer is not None else None
        )

    def admit(self) -> bool:
        """Asks the engine before an attempt; False: refused (breaker open,
        or the adaptive throttle)."""
        admitted = bool(self.core.admit(STATE.now()))
        if admitted and self.trace is not None:
            self.trace.start_attempt()
        return admitted

    def attempt_timeout(self) -> Optional[float]:
        """The admitted attempt's timeout in seconds: the time left before
        the deadline, trimmed to the policy's attempt timeout; None: none."""
        left = self.core.time_left(STATE.now())
        bound = self.route.policy.attempt_timeout
        self.by_attempt = bound is not None and (left is None or bound < left)
        if self.by_attempt:
            return bound  # type: ignore[no-any-return]
        return None if left is None else max(left, 0.0)

    def metadata(self, metadata: Optional[Iterable[tuple[str, Any]]]) -> Optional[list[tuple[str, Any]]]:
        """The attempt's request metadata: the caller's, plus
        ``grpc-previous-rpc-attempts`` on a retry (when sent)."""
        previous = self.core.attempts
        counted = previous > 0 and self.cfg.send_attempt_count
        if self.trace is None and not counted:
            return None if metadata is None else list(metadata)
        dropped = {PREVIOUS_ATTEMPTS}
        if self.trace is not None:  # the attempt's context replaces the caller's fields
            dropped.update(_tracing.propagated_fields())
        pairs = [(k, val) for k, val in (metadata or ()) if k not in dropped]
        if counted:
            pairs.append((PREVIOUS_ATTEMPTS, str(previous)))
        if self.trace is not None:
            self.trace.inject(pairs, setter=_append_pair)
        return pairs

    def record(self, code: int, trailers: Optional[Iterable[Any]]) -> Any:
        """Records an attempt that ended with status ``code`` and
        ``trailers``: the engine's Decision (and, when tracing, ends the
        attempt's span; the call's too when the call is over)."""
        self.code = code
        if self.trace is None:
            return self._record(code, trailers)
        error_type = None if code == 0 else _NAMES.get(code, str(code))
        self.trace.set_attempt_attribute("rpc.grpc.status_code", code)
        self.trace.end_attempt(0, error_type)
        decision = self._record(code, trailers)
        if decision.retry:
            self.trace.retry_scheduled(float(decision.delay))
        else:
            # The call's span carries the status the call ended with, as
            # every span of the gRPC conventions must (rpc.grpc.status_code,
            # Required); its status stays unset on OK and is Error on any
            # other code (client spans, Recording Errors).
            self.trace.set_call_attribute("rpc.grpc.status_code", code)
            self.trace.finished(decision.reason, decision.attempt)
            self.trace.end(None, 0, None, error_type)
        return decision

    def _record(self, code: int, trailers: Optional[Iterable[Any]]) -> Any:
        return self.core.record(outcome_of(self.route.policy, code, trailers, self.by_attempt), STATE.now())

    def committed(self) -> None:
        """Records the success of a stream whose first message arrived
        (gRFC A6 "committed"): later errors are the caller's."""
        self.code = 0
        decision = self.core.record(_OK, STATE.now())
        if self.trace is not None:
            self.trace.set_attempt_attribute("rpc.grpc.status_code", 0)
            self.trace.end_attempt()
            self.trace.set_call_attribute("rpc.grpc.status_code", 0)
            self.trace.finished(decision.reason, decision.attempt)
            self.trace.end()

    def terminal(self) -> None:
        """Ends the call on an exception that is no RPC status (a
        serializer's bug): recorded as terminal; the caller re-raises it."""
        self.core.record(_TERMINAL, STATE.now())
        if self.trace is not None:
            self.trace.end(None, 0, "terminal", "local_failure")

    def abandon(self, in_flight: int) -> None:
        """Ends a call its caller stopped (KeyboardInterrupt, a cancelled
        task or stream); ``in_flight`` 1 when an attempt was running. Left
        by a stop exception (KeyboardInterrupt, a cancelled task) the call
        is cancelled, counted cancelled, never failed (DESIGN.md; 0.6);
        otherwise abandoned, counted failed."""
        exc = sys.exc_info()[1]
        if exc is not None and _never_retried(exc):
            self.core.cancel(STATE.now(), in_flight)
        else:
            self.core.abandon(STATE.now(), in_flight)
        if self.trace is not None:  # nothing once the call's span has ended
            self.trace.end(None, 0, "abandoned", "abandoned")

    def report(self, decision: Any) -> Any:
        """Logs the retry and runs the on_retry hook with a
        :class:`mulligan.RetryEvent` (``method`` "grpc", ``url`` the RPC
        method path, ``status`` the gRPC code, ``kind`` ``"gRPC
        UNAVAILABLE"``...); returns what it returned."""
        kind = f"gRPC {_NAMES.get(self.code, self.code)}" if self.code >= 0 else "timeout"
        info = (decision.attempt, decision.delay, kind, self.code, decision.from_retry_after)
        return _report_retry(info, "grpc", self.route.method, self.cfg.on_retry)

    def refused(self, cause: Optional[BaseException] = None) -> Any:
        """Ends a refused call: the fallback's answer, or raises
        mulligan.CircuitOpenError (mulligan.ThrottledError for the
        throttle)."""
        exc = refusal(self.core, self.core.attempts)
        if self.trace is not None:
            self.trace.end(exc)
        _log_give_up("grpc", self.route.method, self.core.attempts, "circuit_open", str(exc))
        if self.core.use_fallback:
            return call_fallback(self.cfg.fallback, exc)
        raise exc from cause

    def gave_up(self, decision: Any, error: BaseException) -> tuple[bool, Any]:
        """Ends a call whose last attempt failed with ``error`` (the RPC's
        own grpc.RpcError): (True, the fallback's answer) when the engine
        says the fallback answers, else (False, None): the caller returns
        the failed call as grpc would."""
        n = decision.attempt
        if decision.reason != "terminal":
            _log_give_up("grpc", self.route.method, n, decision.reason, f"status {self.code}")
        if decision.use_fallback:
            return True, call_fallback(self.cfg.fallback, error)
        return False, None
