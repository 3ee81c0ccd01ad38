"""OpenTelemetry traces: one span per logical call, one child span per attempt.

Turned on by ``mulligan.otel.instrument(tracing=True)`` (:func:`enable`),
off by default. While off, every front door reads one attribute
(``SWITCH.tracer is None``) and goes on as before: nothing here is imported
from opentelemetry, no span, no context variable. While on, each logical call
is a span and each attempt a child span of it, built on opentelemetry-api only
(the SDK, if any, is the application's):

* decorators (``@mulligan.retry``) and ``mulligan.retrying()`` blocks: an
  INTERNAL span named after the callable (or the block's ``name``), with an
  INTERNAL child span ``"<name> attempt"`` per attempt, made the current span
  while the attempt runs (the spans the function opens are its children);
* HTTP front doors (``Client``, ``AsyncClient``, the requests, httpx and
  aiohttp adapters, and any adapter calling :func:`http_call`): a CLIENT span
  named by the method (``"GET"``; the HTTP client span conventions'
  ``{method}`` when no route template is known, and ``"HTTP"`` for a method
  outside RFC 9110's set), with one CLIENT child span per attempt carrying the
  HTTP client span attributes: ``http.request.method``, ``url.full``
  (credentials and sensitive query values redacted by
  :func:`mulligan.redact_url`), ``server.address``, ``server.port``,
  ``http.response.status_code``, ``http.request.resend_count`` (the attempt
  number minus one, from the second attempt on) and ``error.type``.

Every attempt span carries ``mulligan.attempt`` (1 for the first) and, from
the second attempt on, ``mulligan.retry.delay_s``: the seconds the engine
decided to wait before it (Retry-After or backoff; 0.0 with no wait). An
attribute rather than a span event: the wait is already visible as the gap
between two attempt spans, and an attribute is searchable and aggregatable
in every tracing backend, where span events are not. The call's span carries
``mulligan.retry.attempts``, ``mulligan.retry.stop_reason`` (``succeeded``,
``terminal``, ``attempts_exhausted``, ``deadline``, ``retry_after_too_long``,
``stop_condition``, ``circuit_open``, ``throttled``, ...) and
``mulligan.retry.waited_s`` (seconds waited between attempts in all).

``error.type`` follows the semantic conventions (``error.type``, "Recording
errors"): an HTTP status of 400 or more as its decimal string; a transport
failure as mulligan's low-cardinality kind (``"connection_refused"``,
``"timeout"``...); an exception a decorated function raised as its fully
qualified class name (``"builtins.ConnectionError"``). An attempt whose value
``on_result`` rejected has no ``error.type`` (its call's stop reason says how
the call ended). A span with an ``error.type`` has the
status ERROR (for HTTP client spans: a status of 400 or more, or no response).

Trace context: the configured propagator (``opentelemetry.propagate``, W3C
``traceparent`` by default) injects the attempt span's context into each
attempt's request headers, so each server span is the child of its own
attempt's span. The fields the request already carries are replaced (as
OTel's HTTP instrumentations inject over them), and a call of an adapter
with no current span whose request carries a trace context (propagated by
hand) starts its span as that context's child, so the caller's trace goes
on (0.6; before, it was replaced by a new trace). The adapters send each attempt anew; ``Client`` and
``AsyncClient`` replace the fields before each resend (since 0.5; before,
every attempt carried the call's span context).

No SDK configured (the API's default provider): the call's span is invalid,
and the call runs untraced (its one span start costs about a microsecond,
bench/otel_tracing.py). A call sampled out keeps its non-recording spans, so
its HTTP requests still carry the (non-sampled) trace context downstream.

Thread-safety: :func:`enable`/:func:`disable` swap one reference; a
:class:`CallTrace` belongs to one call (one thread, or one task).

.. versionadded:: 0.4.0
"""

from __future__ import annotations

import contextvars
import sys
from typing import Any, Callable, Optional
from urllib.parse import urlsplit

from .._errors import CircuitOpenError, ThrottledError
from .._redact import redact_url

__all__ = [
    "CURRENT",
    "CallTrace",
    "OFF",
    "SWITCH",
    "attempt_wrapper",
    "begin_block",
    "begin_call",
    "client_call",
    "disable",
    "enable",
    "qualname",
    "http_call",
    "propagated_fields",
]

RESEND_COUNT = "http.request.resend_count"
DELAY = "mulligan.retry.delay_s"
ATTEMPT = "mulligan.attempt"
ERROR_TYPE = "error.type"
STATUS_CODE = "http.response.status_code"

# RFC 9110 section 9 and RFC 5789 (PATCH): the methods the conventions name
# spans by; any other is "_OTHER" in http.request.method and "HTTP" as a name.
_KNOWN_METHODS = frozenset(
    ("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH")
)


class _Api:
    """opentelemetry-api's modules and names, imported once by :func:`enable`
    (the package imports without opentelemetry; nothing reads these before)."""

    trace: Any = None
    context: Any = None
    propagate: Any = None
    SpanKind: Any = None
    error: Any = None  # Status(StatusCode.ERROR)
    proxy: Any = None  # the API's ProxyTracerProvider class


_api = _Api()


class _Switch:
    """The tracing switch: ``tracer`` is None while tracing is off."""

    __slots__ = ("tracer",)

    def __init__(self) -> None:
        self.tracer: Any = None


#: Read by every front door per call: tracing is on when ``SWITCH.tracer`` is set.
SWITCH = _Switch()
#: Always off: the wrappers the traced path runs the attempts through.
OFF = _Switch()

#: The decorated call being traced in this context (None: none). Set only by
#: the traced path of a decorator, read by its attempts and its ``_Call``.
CURRENT: contextvars.ContextVar[Optional[CallTrace]] = contextvars.ContextVar(
    "mulligan_call_trace", default=None
)


def enable(tracer_provider: Any = None) -> None:
    """Turns tracing on with a tracer of ``tracer_provider`` (the global one
    when None; a provider set globally later is used too, through the API's
    proxy). The API's ``NoOpTracerProvider`` leaves tracing off. Raises
    ImportError when opentelemetry-api is not installed."""
    from opentelemetry import context, propagate, trace
    from opentelemetry.trace import SpanKind, Status, StatusCode

    from .._version import __version__

    _api.trace, _api.context, _api.propagate = trace, context, propagate
    _api.SpanKind, _api.error = SpanKind, Status(StatusCode.ERROR)
    _api.proxy = trace.ProxyTracerProvider
    provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    if isinstance(provider, trace.NoOpTracerProvider):
        SWITCH.tracer = None
        return
    SWITCH.tracer = provider.get_tracer("mulligan", __version__)


def disable() -> None:
    """Turns tracing off; calls already traced finish their spans."""
    SWITCH.tracer = None


# mulligan's own exception classes by their public names, once looked up.
_PUBLIC_NAMES: dict[type, str] = {}


def _public_name(cls: type) -> str:
    """``cls``'s name where users import it from: the module path up to its
    first private part (``mulligan._errors`` -> ``mulligan``) when that
    module exports the class under its name, else its defining path."""
    module = cls.__module__
    parts = module.split(".")
    public = next((i for i, part in enumerate(parts) if part.startswith("_")), len(parts))
    if public < len(parts) and public > 0:
        prefix = ".".join(parts[:public])
        if getattr(sys.modules.get(prefix), cls.__qualname__, None) is cls:
            return f"{prefix}.{cls.__qualname__}"
    return f"{module}.{cls.__qualname__}"


def qualname(exc: BaseException) -> str:
    """The fully qualified class name of ``exc`` (its ``error.type``): the
    name users see, as the conventions ask ("the exception's fully
    qualified type name" a user would catch: ``builtins.KeyError``,
    ``requests.exceptions.ConnectionError``). mulligan's own exceptions are
    named by their public path (``mulligan.CircuitOpenError``, not the
    private module defining it: 0.6)."""
    cls = type(exc)
    module = cls.__module__
    if module == "mulligan" or module.startswith("mulligan."):
        name = _PUBLIC_NAMES.get(cls)
        if name is None:
            name = _PUBLIC_NAMES[cls] = _public_name(cls)
        return name
    return f"{module}.{cls.__qualname__}"


class CallTrace:
    """The spans of one logical call: the call's span and its attempt in progress.

    Not thread-safe: it belongs to one call.
    """

    __slots__ = (
        "tracer", "span", "ctx", "name", "kind", "http", "base", "attempt", "delay", "current",
        "token", "reason", "attempts", "waited", "ended",
    )

    def __init__(self, tracer: Any, name: str, attempt_name: str, kind: Any, span: Any,
                 base: dict[str, Any], http: bool) -> None:

        self.tracer = tracer
        self.span = span
        self.ctx = _api.trace.set_span_in_context(span)
        self.name = attempt_name
        self.kind = kind
        self.http = http
        self.base = base  # the attributes every attempt span starts with
        self.attempt = 0  # attempts started
        self.delay: Optional[float] = None  # the wait before the next attempt
        self.current: Any = None  # the attempt span in progress
        self.token: Any = None  # its context token, when it is the current span
        self.reason: Optional[str] = None
        self.attempts = 0
        self.waited = 0.0
        self.ended = False

    # -- attempts -------------------------------------------------------

    def start_attempt(self) -> Any:
        """Starts the next attempt's span (a child of the call's); returns it."""
        self.attempt += 1
        n = self.attempt
        attrs = dict(self.base)
        attrs[ATTEMPT] = n
        if n > 1:
            if self.http:
                attrs[RESEND_COUNT] = n - 1
            attrs[DELAY] = self.delay if self.delay is not None else 0.0
        self.delay = None
        self.current = self.tracer.start_span(self.name, context=self.ctx, kind=self.kind,
                                              attributes=attrs)
        return self.current

    def enter_attempt(self) -> None:
        """Starts the next attempt's span and makes it the current span."""

        span = self.start_attempt()
        self.token = _api.context.attach(_api.trace.set_span_in_context(span, self.ctx))

    def end_attempt(self, status: int = 0, error_type: Optional[str] = None,
                    exc: Optional[BaseException] = None) -> None:
        """Ends the attempt in progress: ``status`` its HTTP status (0: none),
        ``error_type`` why it failed (None: it did not), ``exc`` the exception
        it raised (recorded on the span)."""
        span = self.current
        if span is None:
            return
        self.current = None
        token, self.token = self.token, None
        if token is not None:

            _api.context.detach(token)
        _set_outcome(span, status, error_type, exc, self.http)
        span.end()

    def set_attempt_attribute(self, key: str, value: Any) -> None:
        """Sets ``key`` on the attempt span in progress (none: nothing)."""
        if self.current is not None:
            self.current.set_attribute(key, value)

    def set_call_attribute(self, key: str, value: Any) -> None:
        """Sets ``key`` on the call's span (before :meth:`end`)."""
        self.span.set_attribute(key, value)

    def retry_scheduled(self, delay: float) -> None:
        """The engine decided a retry after ``delay`` seconds."""
        self.delay = delay
        self.waited += delay

    def finished(self, reason: str, attempts: int) -> None:
        """The engine's end of the call: its stop reason and attempts made."""
        self.reason = reason
        self.attempts = attempts

    # -- the call -------------------------------------------------------

    def end(self, exc: Optional[BaseException] = None, status: int = 0,
            reason: Optional[str] = None, error_type: Optional[str] = None) -> None:
        """Ends the call's span (once; later calls do nothing): ``exc`` the
        exception it ends with, ``status`` its final HTTP status, ``reason``
        its stop reason when the engine did not say (``finished``)."""
        if self.ended:
            return
        self.ended = True
        if self.current is not None:  # an attempt left open (a cancelled task)
            self.end_attempt(0, qualname(exc) if exc is not None else None, exc)
        if self.reason is None:
            if reason is None:
                reason = "succeeded" if exc is None else _reason_of(exc, self.attempt)
            self.reason = reason
            self.attempts = self.attempt
        span = self.span
        span.set_attribute("mulligan.retry.attempts", self.attempts)
        span.set_attribute("mulligan.retry.stop_reason", self.reason)
        span.set_attribute("mulligan.retry.waited_s", self.waited)
        if error_type is None and exc is not None and not (self.http and status >= 400):
            error_type = qualname(exc)
        _set_outcome(span, status, error_type, exc, self.http)
        span.end()

    # -- HTTP -----------------------------------------------------------

    def http_retry(self, info: tuple[Any, ...]) -> None:
        """An attempt the engine will retry: ``info`` is the native event
        (attempt, delay, kind or None, status, from_retry_after)."""
        self.end_attempt(int(info[3]), info[2])
        self.retry_scheduled(float(info[1]))

    def http_response(self, status: int, reason: str, attempts: int) -> None:
        """The last attempt got a response: its ``status``, the engine's stop
        ``reason`` and the ``attempts`` made."""
        self.end_attempt(status)
        self.finished(reason, attempts)

    def http_error(self, exc: BaseException) -> None:
        """The call failed with ``exc`` (a TransportError, a CircuitOpenError):
        ends the attempt in progress with its kind."""
        self.end_attempt(0, _error_type(exc), exc)
        reason = getattr(exc, "stop_reason", None) or _reason_of(exc, self.attempt)
        self.finished(reason, int(getattr(exc, "attempts", self.attempt) or 0))

    def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Returns ``fn(*args)`` (one logical HTTP call), ending the call's
        span with its outcome: a response's status, or the exception."""
        try:
            result = fn(*args)
        except BaseException as e:
            self.end(e, _status_of(getattr(e, "response", None)), error_type=_error_type(e))
            raise
        self.end(None, _status_of(result))
        return result

    async def run_async(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``run`` for a coroutine function ``fn``."""
        try:
            result = await fn(*args)
        except BaseException as e:
            self.end(e, _status_of(getattr(e, "response", None)), error_type=_error_type(e))
            raise
        self.end(None, _status_of(result))
        return result


    def inject(self, headers: Any, setter: Optional[Callable[[Any, str, str], None]] = None) -> None:
        """Writes the attempt's (or, between attempts, the call's) trace
        context into ``headers`` with the configured propagator: a mutable
        mapping, or anything ``setter(headers, name, value)`` can write."""

        span = self.current if self.current is not None else self.span
        ctx = _api.trace.set_span_in_context(span, self.ctx)
        if setter is None:
            # The caller's own fields go first: the attempt's context
            # replaces them all, so no stale tracestate is left beside a
            # new traceparent (W3C Trace Context: tracestate belongs to its
            # traceparent).
            for name in propagated_fields():
                if name in headers:
                    del headers[name]
            _api.propagate.inject(headers, context=ctx)
        else:
            carrier: dict[str, str] = {}
            _api.propagate.inject(carrier, context=ctx)
            for name, value in carrier.items():
                setter(headers, name, value)

    def carrier(self) -> dict[str, str]:
        """The trace context fields of the attempt in progress (or, between
        attempts, of the call), as the configured propagator writes them
        (``{"traceparent": ...}`` with W3C Trace Context): what the native
        clients set on each attempt (0.5)."""

        span = self.current if self.current is not None else self.span
        carrier: dict[str, str] = {}
        _api.propagate.inject(carrier, context=_api.trace.set_span_in_context(span, self.ctx))
        return carrier

    def header_pairs(self, pairs: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
        """``pairs`` with the trace context of the attempt in progress added
        (:meth:`carrier`: the native clients' first attempt); the caller's
        own trace context fields (every field the propagator owns) are
        replaced."""

        carrier = self.carrier()
        # Every field the propagator owns goes, not only those it wrote this
        # time: a caller's stale tracestate must not ride beside a new
        # traceparent (W3C Trace Context; as inject() does).
        names = {name.lower() for name in carrier} | {name.lower() for name in propagated_fields()}
        kept = [p for p in pairs if p[0].lower() not in names]
        return kept + [(name, value.encode("latin-1")) for name, value in carrier.items()]


def propagated_fields() -> Any:
    """The header fields the configured propagator writes (a set of
    lower-case names: ``traceparent`` and ``tracestate`` with W3C Trace
    Context, ``baggage`` with the default composite)."""
    return _api.propagate.get_global_textmap().fields


def _parent_of(headers: Any) -> Any:
    """The context an HTTP call's span starts in: None (the current one)
    when a span is current; with none, the trace context ``headers``
    already carry (a caller propagating it by hand, read with the
    configured propagator), else None. OTel's HTTP instrumentations
    (opentelemetry-instrumentation-requests, -httpx) make the current span
    the client span's parent and inject its context over the request's
    fields; where nothing is current they would start a new trace and
    overwrite the caller's traceparent, cutting the caller's trace, so the
    caller's context is the parent then (as OpenTelemetry eBPF
    instrumentation adopts a traceparent the request already carries, its
    PR #1162; the OTel spec leaves the case open, issue #4496)."""
    if headers is None or _api.trace.get_current_span().get_span_context().is_valid:
        return None
    try:
        carried = _api.propagate.extract(headers)
    except Exception:  # a malformed carrier is no context (the propagators ignore bad values)
        return None
    return carried if _api.trace.get_current_span(carried).get_span_context().is_valid else None


def _status_of(response: Any) -> int:
    """The HTTP status of a response object (``status_code`` or ``status``), or 0."""
    for name in ("status_code", "status"):
        status = getattr(response, name, None)
        if isinstance(status, int) and not isinstance(status, bool):
            return status
    return 0


def _error_type(exc: BaseException) -> Optional[str]:
    """An HTTP call's ``error.type`` for ``exc``: a status of 400 or more
    (RetriesExhausted carries the response) is left to ``_set_outcome``;
    mulligan's transport kind, ``circuit_open``, ``throttled``, or the
    exception's qualified name."""
    if _status_of(getattr(exc, "response", None)) >= 400:
        return None
    kind = getattr(exc, "kind", None)
    if isinstance(kind, str):
        return kind
    if isinstance(exc, (CircuitOpenError, ThrottledError)):
        return _reason_of(exc, 0)
    return qualname(exc)


def _reason_of(exc: BaseException, attempts: int) -> str:
    """The stop reason of a call that ended on ``exc`` without the engine's say."""
    if isinstance(exc, ThrottledError):
        return "throttled"
    if isinstance(exc, CircuitOpenError):
        return "circuit_open"
    return "terminal"


def _set_outcome(span: Any, status: int, error_type: Optional[str],
                 exc: Optional[BaseException], http: bool) -> None:

    if status:
        span.set_attribute(STATUS_CODE, status)
        if http and status >= 400 and error_type is None:
            error_type = str(status)
    if exc is not None:
        span.record_exception(exc)
    if error_type is not None:
        span.set_attribute(ERROR_TYPE, error_type)
        span.set_status(_api.error)


# -- decorators and blocks --------------------------------------------------


def begin_call(tracer: Any, name: str) -> Optional[CallTrace]:
    """Starts the INTERNAL span of a decorated call or a block named
    ``name``; None when it does not record (no SDK, not sampled)."""

    span = tracer.start_span(name, kind=_api.SpanKind.INTERNAL, attributes={"mulligan.name": name})
    if not span.is_recording():
        span.end()
        return None
    return CallTrace(tracer, name, f"{name} attempt", _api.SpanKind.INTERNAL, span, {}, False)


def begin_block(name: str) -> Optional[CallTrace]:
    """A ``retrying()`` block's trace (None while tracing is off)."""
    tracer = SWITCH.tracer
    return None if tracer is None else begin_call(tracer, name)


def attempt_wrapper(fn: Callable[..., Any], is_async: bool) -> Callable[..., Any]:
    """``fn`` run as one attempt of the decorated call traced in this
    context (``CURRENT``): in its own span, made current; ``fn`` itself when
    no call is traced."""
    if is_async:
        async def async_attempt(*args: Any, **kwargs: Any) -> Any:
            trace = CURRENT.get()
            if trace is None:
                return await fn(*args, **kwargs)
            trace.enter_attempt()
            try:
                result = await fn(*args, **kwargs)
            except BaseException as e:
                trace.end_attempt(0, qualname(e), e)
                raise
            trace.end_attempt()
            return result

        return async_attempt

    def attempt(*args: Any, **kwargs: Any) -> Any:
        trace = CURRENT.get()
        if trace is None:
            return fn(*args, **kwargs)
        trace.enter_attempt()
        try:
            result = fn(*args, **kwargs)
        except BaseException as e:
            trace.end_attempt(0, qualname(e), e)
            raise
        trace.end_attempt()
        return result

    return attempt


class Traced:
    """The traced path of one decorated function: ``run(args, kwargs)``
    runs a call in its span, through the same driver wrapper built (once, on
    first use, by ``build``) around :func:`attempt_wrapper`."""

    __slots__ = ("fn", "name", "build", "is_async", "inner")

    def __init__(self, fn: Callable[..., Any], name: str,
                 build: Callable[[Callable[..., Any]], Callable[..., Any]], is_async: bool) -> None:
        self.fn = fn
        self.name = name
        self.build = build
        self.is_async = is_async
        self.inner: Optional[Callable[..., Any]] = None

    def _inner(self) -> Callable[..., Any]:
        inner = self.inner
        if inner is None:
            inner = self.inner = self.build(attempt_wrapper(self.fn, self.is_async))
        return inner

    def run(self, tracer: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """One traced synchronous call (untraced when its span does not record)."""
        trace = begin_call(tracer, self.name)
        token = CURRENT.set(trace)  # None too: an outer call's attempts are not this one's
        try:
            result = self._inner()(*args, **kwargs)
        except BaseException as e:
            if trace is not None:
                trace.end(e)
            raise
        finally:
            CURRENT.reset(token)
        if trace is not None:
            trace.end()
        return result

    async def run_async(self, tracer: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """One traced call of a coroutine function."""
        trace = begin_call(tracer, self.name)
        token = CURRENT.set(trace)
        try:
            result = await self._inner()(*args, **kwargs)
        except BaseException as e:
            if trace is not None:
                trace.end(e)
            raise
        finally:
            CURRENT.reset(token)
        if trace is not None:
            trace.end()
        return result


# -- HTTP front doors -------------------------------------------------------


def http_call(method: str, url: str, headers: Any = None) -> Optional[CallTrace]:
    """Starts the CLIENT span of one logical HTTP request (None while
    tracing is off or when the span does not record); ``headers``: the
    request's (a mapping with ``get``), whose trace context, when they carry
    one, is the span's parent if no span is current (see ``_parent_of``:
    0.6). The hook of every HTTP
    front door, the gRPC one included: call ``start_attempt()`` before each
    attempt (then ``inject(headers)`` to propagate), ``end_attempt(status,
    error_type, exc)`` after it, ``retry_scheduled(delay)`` when the engine
    decides a retry, ``finished(reason, attempts)`` when it stops, and
    ``end(exc, status)`` when the call returns or raises."""
    tracer = SWITCH.tracer
    if tracer is None:
        return None

    known = method in _KNOWN_METHODS
    attrs: dict[str, Any] = {"http.request.method": method if known else "_OTHER"}
    if not known:
        attrs["http.request.method_original"] = method
    attrs["url.full"] = redact_url(url)
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
        if port is None:
            port = {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        host, port = None, None
    if host:
        attrs["server.address"] = host
    if port is not None:
        attrs["server.port"] = port
    name = method if known else "HTTP"
    span = tracer.start_span(name, context=_parent_of(headers), kind=_api.SpanKind.CLIENT,
                             attributes=attrs)
    if not span.is_recording() and not span.get_span_context().is_valid:
        span.end()
        return None
    return CallTrace(tracer, name, name, _api.SpanKind.CLIENT, span, attrs, True)


def client_call(name: str, attributes: dict[str, Any], attempt_name: Optional[str] = None) -> Optional[CallTrace]:
    """Starts the CLIENT span of one logical call that is not HTTP (the gRPC
    interceptors: name ``"<service>/<method>"`` and the ``rpc.*`` attributes
    of the RPC conventions), None while tracing is off or when the span does
    not record. Its attempt spans, CLIENT ``attempt_name`` (default
    ``name``), carry ``attributes``, ``mulligan.attempt`` and
    ``mulligan.retry.delay_s`` but no HTTP attribute; set the attempt's own
    (``rpc.grpc.status_code``) with :meth:`CallTrace.set_attempt_attribute`
    and end it with ``end_attempt(0, error_type)`` (the status code's name,
    ``"UNAVAILABLE"``, as ``error.type``). The other steps are
    :func:`http_call`'s; ``inject(metadata, setter)`` writes the trace
    context into gRPC metadata (``setter=lambda md, k, v: md.append((k, v))``)."""
    tracer = SWITCH.tracer
    if tracer is None:
        return None

    span = tracer.start_span(name, kind=_api.SpanKind.CLIENT, attributes=attributes)
    if not span.is_recording() and not span.get_span_context().is_valid:
        span.end()
        return None
    return CallTrace(tracer, name, attempt_name or name, _api.SpanKind.CLIENT, span, dict(attributes), False)
