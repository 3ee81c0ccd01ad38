"""The options of a client adapter and the steps of one logical request.

An adapter (``mulligan.adapters.requests.Adapter``, ``...httpx.Transport``,
``...aiohttp.middleware``) runs each attempt with its own library and hands
every outcome to the engine, which decides everything else (DESIGN.md
section 2): :class:`AdapterConfig` builds, once, a ``_core.HttpPipeline``
from the same options as :class:`mulligan.Client` (the same validation, the
same policy, the breakers per origin or per the client's breaker key, the
method rule); :class:`RequestCall` is one logical request through it. The
outcome of a response (its status, Retry-After, the 409-on-a-keyed-request
rule) is the engine's ``http_response_outcome``, the one HttpClient uses; a
failed attempt is reduced to an engine ``ErrorKind`` by the adapter (the
only thing that knows its library's exceptions). Waits go through
``STATE.sleep`` (sync) or the async driver's ``sleep``, so
mulligan.testing's FakeClock makes them instant and records them.

Why a call always begins in the engine (unlike ``@retry``'s success path,
which enters it only after a failure): an HTTP attempt over loopback costs
100 µs or more, and the two engine calls of a first-attempt success
(begin_admit, finish_response: raw CPython methods, no pybind11 dispatch)
cost a few µs, well under 1% of that
(bench/adapters.py); the one uniform path keeps the breaker, the deadline
and the metrics exact.

.. versionadded:: 0.3.0
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Optional

from .. import _core, _validate
from .._errors import CircuitOpenError, RetriesExhausted
from .._http.base import _composed, _limit_args, _method_args
from .._http.events import _GAVE_UP_REASONS, _log_give_up, _report_retry
from .._http.request import _breaker_args, _breaker_key_of, _policy, _retry_on
from .._redact import redact_url
from .._retry.fallback import call_fallback
from .._retry.options import _never_retried
from .._retry.state import STATE
from .._telemetry import tracing as _tracing
from .._validate import UNSET

__all__ = ["AdapterConfig", "RequestCall", "IDEMPOTENT_METHODS", "KINDS", "new_key"]

# RFC 9110 section 9.2.2; requests of other methods get a generated key
# with ``idempotency_key=True``.
IDEMPOTENT_METHODS = frozenset(("GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"))

# The engine's failure kinds by name (what adapters map their exceptions to).
KINDS: dict[str, Any] = {
    "connection_refused": _core.ErrorKind.CONNECTION_REFUSED,
    "connection_reset": _core.ErrorKind.CONNECTION_RESET,
    "dns_failure": _core.ErrorKind.DNS_FAILURE,
    "connect_timeout": _core.ErrorKind.CONNECT_TIMEOUT,
    "timeout": _core.ErrorKind.TIMEOUT,
    "tls_error": _core.ErrorKind.TLS_ERROR,
    "invalid_url": _core.ErrorKind.INVALID_URL,
    "transport": _core.ErrorKind.TRANSPORT,
    "truncated": _core.ErrorKind.TRUNCATED,
}
_OUTCOMES = {name: _core.Outcome.transport(kind) for name, kind in KINDS.items()}
_TERMINAL = _core.Outcome.failure(False)


def new_key() -> str:
    """A fresh Idempotency-Key: a UUID v4 from the OS's CSPRNG (the engine's)."""
    return str(_core.new_idempotency_key())


def wall_now() -> float:
    """Unix seconds for Retry-After dates: the FakeClock's wall reading when
    mulligan.testing installed one, else time.time()."""
    native = STATE.native_clock
    return native.wall_now() if native is not None else time.time()



def _never_retried_now() -> bool:
    """Whether the exception being handled is a stop exception (a caller's
    cancel: KeyboardInterrupt, asyncio.CancelledError, ...)."""
    exc = sys.exc_info()[1]
    return exc is not None and _never_retried(exc)

class AdapterConfig:
    """An adapter's options, checked once (ValueError/TypeError naming the
    field, at construction) and compiled into the engine's HTTP pipeline.

    Immutable after construction and safe to share between threads.
    The keyword arguments are documented on each public adapter.
    """

    def __init__(
        self,
        owner: str,
        *,
        attempts: int = 3,
        timeout: Optional[_validate.Seconds] = None,
        deadline: Optional[_validate.Seconds] = None,
        backoff: str = "exponential",
        base_delay: _validate.Seconds = 0.2,
        multiplier: float = 2.0,
        max_delay: _validate.Seconds = 10.0,
        jitter: str = "full",
        jitter_fraction: float = 0.2,
        wait: Any = None,
        stop: Any = None,
        min_delay: _validate.Seconds = 0.0,
        connect_retries: Optional[int] = None,
        read_retries: Optional[int] = None,
        status_retries: Optional[int] = None,
        other_retries: Optional[int] = None,
        retry_after_max: _validate.Seconds = 60.0,
        retry_on: Any = None,
        strict: bool = False,
        method_rule: str = "idempotent",
        allowed_methods: Any = UNSET,
        breaker: Any = None,
        breaker_per_attempt: bool = False,
        idempotency_key: bool = False,
        on_retry: Optional[Callable[..., Any]] = None,
        fallback: Any = UNSET,
        raise_on_give_up: bool = False,
        budget: Any = "per_origin",
    ) -> None:
        v = _validate
        self.owner = owner
        composed = _composed(
            owner, wait, stop, min_delay, (connect_retries, read_retries, status_retries, other_retries)
        )
        self.policy = _policy(
            v.attempts(owner, "attempts", attempts),
            v.seconds_or_none(owner, "timeout", timeout, positive=True),
            v.seconds_or_none(owner, "deadline", deadline, positive=True),
            v.name(owner, "backoff", backoff),
            v.seconds(owner, "base_delay", base_delay),
            v.seconds(owner, "max_delay", max_delay),
            v.seconds(owner, "retry_after_max", retry_after_max),
            _retry_on(retry_on),
            v.number(owner, "multiplier", multiplier),
            v.name(owner, "jitter", jitter),
            v.probability(owner, "jitter_fraction", jitter_fraction),
            composed,
        )
        native = dict(
            strict=v.flag(owner, "strict", strict),
            **_method_args(owner, method_rule, allowed_methods),
            **_breaker_args(owner, breaker, breaker_per_attempt),
            budget=_limit_args(owner, budget, None, None, None)["budget"],
        )
        self._breaker_key_fn: Any = native.pop("_breaker_key_fn", None)
        self.pipeline: Any = _core.HttpPipeline(policy=self.policy, **native)
        self.idempotency_key = v.flag(owner, "idempotency_key", idempotency_key)
        self.on_retry = v.callable_or_none(owner, "on_retry", on_retry)
        self.fallback = fallback
        self.raise_on_give_up = v.flag(owner, "raise_on_give_up", raise_on_give_up)

    def breaker_key(self, method: str, url: str) -> str:
        """The request's own breaker key ("" for the configured kind)."""
        fn = self._breaker_key_fn
        return "" if fn is None else _breaker_key_of(self.owner, fn, method, url)

    def begin(self, method: str, url: str, key: Optional[str], body_replayable: bool = True,
              headers: Any = None) -> RequestCall:
        """Begins one logical request (``key``: its Idempotency-Key, or None;
        ``headers``: the request's, read for a trace context the caller
        propagates while tracing is on)."""
        return RequestCall(self, method, url, key, body_replayable, headers)


_NO_BOUND = float("inf")  # admit_bound's "no attempt bound"
_UNASKED = object()  # RequestCall.pending: the next admission is still to be asked


class _Answered:
    """What :meth:`RequestCall.response` returns when the engine ended the
    call on that response and the response is the answer as it is (stopped as
    succeeded or terminal, no fallback): the fields of a Decision the
    adapters read, without a crossing into the engine to read them. Compare
    with ``is ANSWERED``."""

    __slots__ = ()
    retry = False
    use_fallback = False
    delay = 0.0


ANSWERED = _Answered()


class RequestCall:
    """One logical request through an adapter's pipeline.

    Not thread-safe: it belongs to one request (one thread, or one task).
    ``bound`` (seconds or None) and ``trace`` (None while tracing is off) are
    read directly by the adapters' hot path, as ``attempt_timeout`` and
    before ``inject``.
    """

    __slots__ = ("cfg", "core", "method", "url", "key", "kind", "status", "trace", "bound", "pending")

    def __init__(
        self, cfg: AdapterConfig, method: str, url: str, key: Optional[str], body_replayable: bool,
        headers: Any = None,
    ) -> None:
        # mulligan.testing's switches, as _http.base._testing reads them
        # (inlined: this runs once per request of every adapter).
        state = STATE
        cap = (state.testing_attempts if state.testing else 0) if state.active else 1
        self.cfg = cfg
        self.method = method
        self.url = url
        self.key = key
        self.kind: Optional[str] = None
        self.status = 0
        by = cfg._breaker_key_fn
        breaker_key = "" if by is None else _breaker_key_of(cfg.owner, by, method, url)
        self.bound: Optional[float] = None
        # The call's spans while mulligan.otel tracing is on, else None.
        self.trace = trace = (
            _tracing.http_call(method, url, headers) if _tracing.SWITCH.tracer is not None else None
        )
        if trace is None:
            # One crossing begins the call and asks for its first attempt;
            # admit() hands that answer out (the engine's, read once).
            self.core, self.pending = cfg.pipeline.begin_admit(
                state.now(), method, url, key is not None, body_replayable, breaker_key,
                cfg.fallback is not UNSET, cap, state.testing,
            )
        else:
            # Traced: the first admission waits for admit(), where the
            # attempt's span starts.
            self.core = cfg.pipeline.begin(
                state.now(), method, url, key is not None, body_replayable, breaker_key, None,
                None, cfg.fallback is not UNSET, cap, state.testing,
            )
            self.pending = _UNASKED

    def admit(self) -> bool:
        """Asks the engine before an attempt; False: the breaker refused.
        The first attempt's answer came with the call's begin (tracing off).
        An admitted attempt's span starts here (tracing on)."""
        bound = self.pending
        if bound is _UNASKED:
            bound = self.core.admit_bound(STATE.now())
        else:
            self.pending = _UNASKED
        if bound is None:
            return False
        self.bound = None if bound == _NO_BOUND else bound
        if self.trace is not None:
            self.trace.start_attempt()
        return True

    def inject(self, headers: Any) -> None:
        """Writes the admitted attempt's trace context (W3C traceparent, or
        the configured propagator's) into the mutable mapping ``headers``
        of the request about to be sent; nothing while tracing is off."""
        if self.trace is not None:
            self.trace.inject(headers)

    def _traced(self, decision: Any, status: int, error_type: Optional[str],
                exc: Optional[BaseException]) -> None:
        """Ends the attempt's span (``exc``: the exception it raised) with the
        engine's ``decision``, and the call's span when it ends the call."""
        trace = self.trace
        assert trace is not None
        trace.end_attempt(status, error_type, exc)
        if decision.retry:
            trace.retry_scheduled(float(decision.delay))
        else:
            trace.finished(decision.reason, int(decision.attempt))
            trace.end(None, status, error_type=error_type)

    @property
    def attempt_timeout(self) -> Optional[float]:
        """The admitted attempt's bound in seconds (``timeout=`` trimmed to
        the deadline), or None: the adapted library's own timeout only."""
        return self.bound

    @property
    def attempts(self) -> int:
        """Attempts recorded so far."""
        return self.core.attempts  # type: ignore[no-any-return]

    def response(self, status: int, retry_after: Optional[str]) -> Any:
        """Records an attempt that got a response: the engine's Decision, or
        :data:`ANSWERED` when the call ended on it and it is the answer as is
        (tracing off; the one crossing into the engine then reads nothing
        more)."""
        self.kind = None
        self.status = status
        # The wall clock matters only to a Retry-After HTTP-date.
        now = wall_now() if retry_after is not None else 0.0
        if self.trace is None:
            decision = self.core.finish_response(status, retry_after, now, STATE.now())
            return ANSWERED if decision is None else decision
        decision = self.core.record_response(status, retry_after, now, STATE.now())
        self._traced(decision, status, None, None)
        return decision

    def error(self, kind: str) -> Any:
        """Records an attempt that failed with a transport failure of
        ``kind`` (a name of :data:`KINDS`): the engine's Decision."""
        self.kind = kind
        self.status = 0
        decision = self.core.record(_OUTCOMES[kind], STATE.now())
        if self.trace is not None:
            self._traced(decision, 0, kind, sys.exc_info()[1])  # called in the adapter's except
        return decision

    def terminal(self) -> None:
        """Ends the call on an exception that is no transport failure (a bad
        URL, a hook's bug): recorded as terminal; the caller re-raises it."""
        self.core.record(_TERMINAL, STATE.now())
        if self.trace is not None:
            self._end_on(sys.exc_info()[1], "terminal")

    def _end_on(self, exc: Optional[BaseException], reason: str) -> None:
        """Ends the spans of a call stopped by ``exc`` (the exception being
        handled) with the stop ``reason``."""
        trace = self.trace
        assert trace is not None
        error_type = _tracing.qualname(exc) if exc is not None else None
        trace.end_attempt(0, error_type, exc)
        trace.end(exc, reason=reason, error_type=error_type)

    def abandon(self, in_flight: int) -> None:
        """Ends a call left by the exception being handled; ``in_flight`` 1
        when an attempt was running. A stop exception (KeyboardInterrupt, a
        cancelled task: its caller cancelled it) cancels the call, counted
        cancelled, never failed (DESIGN.md; 0.6); anything else (a raising
        hook) abandons it, counted failed."""
        if _never_retried_now():
            self.core.cancel(STATE.now(), in_flight)
        else:
            self.core.abandon(STATE.now(), in_flight)
        if self.trace is not None:
            self._end_on(sys.exc_info()[1], "terminal")  # nothing once the call has ended

    def report(self, decision: Any) -> Any:
        """Logs the retry ``decision`` and runs the on_retry hook with a
        :class:`mulligan.RetryEvent`; returns what the hook returned (an
        awaitable for a coroutine hook)."""
        info = (decision.attempt, decision.delay, self.kind, self.status, decision.from_retry_after)
        return _report_retry(info, self.method, self.url, self.cfg.on_retry)

    def refusal(self, error_type: type[CircuitOpenError]) -> CircuitOpenError:
        """The ``error_type`` (a CircuitOpenError subclass) of a refused attempt."""
        core = self.core
        return error_type(
            core.refusal_message, name=core.key or core.breaker_name, key=core.key or core.breaker_name,
            retry_in=core.retry_in, attempts=core.attempts,
        )

    def refused(self, error_type: type[CircuitOpenError], cause: Optional[BaseException]) -> Any:
        """Ends a refused call: the fallback's answer, or raises ``error_type``."""
        exc = self.refusal(error_type)
        if self.trace is not None:
            self.trace.end(exc, reason="circuit_open", error_type="circuit_open")
        _log_give_up(self.method, self.url, self.attempts, "circuit_open", str(exc))
        if self.core.use_fallback:
            return call_fallback(self.cfg.fallback, exc)
        raise exc from cause

    def gave_up_on_error(self, decision: Any, exc: BaseException) -> Any:
        """Ends a call whose last attempt raised ``exc`` (a transport failure
        the engine will not retry): the fallback's answer when the engine
        says it answers, else re-raises ``exc`` with a note."""
        n = decision.attempt
        note = f"mulligan: gave up after {n} attempt{'' if n == 1 else 's'} ({decision.reason})"
        add_note = getattr(exc, "add_note", None)  # Python 3.11+
        if add_note is not None:
            add_note(note)
        if decision.reason != "terminal":
            _log_give_up(self.method, self.url, n, decision.reason, f"{type(exc).__name__}: {exc}")
        if decision.use_fallback:
            return call_fallback(self.cfg.fallback, exc)
        raise exc

    def gave_up_on_status(
        self, decision: Any, response: Any, error_type: type[RetriesExhausted] = RetriesExhausted
    ) -> Any:
        """Ends a call on its last response: returns ``response`` itself,
        unless the retries gave up on a retryable status; then the fallback
        answers (given an ``error_type`` carrying ``response``), or, with
        ``raise_on_give_up``, that ``error_type`` (a RetriesExhausted
        subclass) is raised; else the response is returned. "Gave up" is
        one rule (``_GAVE_UP_REASONS``): the stop reasons of a retryable
        outcome, ``not_replay_safe`` included, which are the calls the
        engine's ``use_fallback`` flags."""
        if decision is ANSWERED:
            return response
        reason = decision.reason
        if reason not in _GAVE_UP_REASONS and not decision.use_fallback:
            return response
        n = decision.attempt
        message = (
            f"gave up on {self.method} {redact_url(self.url)} after {n} attempt"
            f"{'' if n == 1 else 's'} ({reason}): last status {self.status}"
        )
        _log_give_up(self.method, self.url, n, reason, f"last status {self.status}")
        if decision.use_fallback or self.cfg.raise_on_give_up:
            exc = error_type(message, attempts=n, stop_reason=reason, response=response)
            if decision.use_fallback:
                return call_fallback(self.cfg.fallback, exc)
            raise exc
        return response


def sleep(delay: float) -> None:
    """Waits ``delay`` seconds (time.sleep, or the installed FakeClock)."""
    if delay > 0:
        STATE.sleep(delay)


def trimmed(timeout: Optional[float], bound: Optional[float]) -> Optional[float]:
    """``timeout`` (None: none) bounded by the engine's ``bound`` (None: none)."""
    if bound is None:
        return timeout
    if timeout is None:
        return bound
    return min(timeout, bound)
