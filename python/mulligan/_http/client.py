"""``mulligan.Client`` and the module-level ``get``, ``post``, ``request``...

Every request is one call of the core pipeline, whose attempts are libcurl
transfers run with the GIL released: the method rules of RFC 9110 (POST and
PATCH are retried only with an idempotency key), Retry-After, per-attempt
timeouts, the deadline, the breakers per origin, the metrics and the
fallback's say all come from the engine. When it decides a retry, the native
call comes back here (an ``_core.HttpCall``): this module reports the retry
(logs, the on_retry hook), waits with ``time.sleep`` -- or on
mulligan.testing's FakeClock, and Ctrl-C interrupts it -- and resumes the
call. It also validates input (through ``base`` and ``request``) and wraps
the result in a :class:`Response`.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import inspect
import threading
from typing import Any, Optional, Union

from .. import _core, _validate
from .._errors import CircuitOpenError, TransportError
from .._retry.state import STATE
from .._telemetry import tracing as _tracing
from .._validate import UNSET as _UNSET
from .base import _ClientBase, _merge_named, _testing
from .async_client import AsyncClient
from .events import _HttpRetryHook, _report_retry
from .hedge_loop import HedgeLoop, async_kwargs
from .hedged import hedging_policy
from .headers import HeadersInput
from .request import ParamsInput, _check_url
from .response import Response

__all__ = [
    "Client",
    "delete",
    "get",
    "head",
    "options",
    "patch",
    "post",
    "put",
    "request",
]


class Client(_ClientBase):
    """A resilient HTTP client with a pool of kept-alive connections.

    Safe to share between threads; use it as a context manager (or call
    :meth:`close`) to release the pool. The module-level :func:`get`,
    :func:`post` and :func:`request` use one default client, created on first
    use. Every retry setting below is a default that each request may
    override with the keyword of the same name. Every duration is seconds
    (int or float) or a :class:`datetime.timedelta`; other types (a str)
    raise TypeError.

    Args:
        verify: verify TLS certificates and host names (default True); False
            to skip verification, or the path of a PEM CA bundle to use
            instead of the system's (ValueError at construction when it is
            empty or cannot be read). Proxies come from the usual environment
            variables (``http_proxy``, ``https_proxy``, ``all_proxy``,
            ``no_proxy``); when none is set as the client is created, it uses
            no proxy and does not look again (as httpx does).
        verify_tls: the 0.1 spelling of ``verify`` (a bool).
        connect_timeout: seconds allowed to establish a connection. Default 10.0.
        timeout: seconds allowed for each attempt (trimmed to the deadline).
            Default 30.0.
        attempts: total attempts including the first, in [1, 2**31 - 1]. Default 3.
        deadline: total seconds for a whole call, retries included. Default None.
        backoff: ``"exponential"`` (default), ``"constant"``, ``"linear"``
            or ``"decorrelated"``.
        base_delay: base of the backoff, seconds. Default 0.2.
        multiplier: growth factor of the exponential backoff, >= 0. Default 2.0.
        max_delay: cap on each wait, seconds (applied after jitter). Default 10.0.
        jitter: ``"full"`` (default), ``"none"``, ``"equal"`` or ``"proportional"``,
            as for :func:`mulligan.retry`.
        jitter_fraction: f of proportional jitter, in [0, 1]. Default 0.2.
        wait: a composed :mod:`mulligan.wait` replacing the backoff options
            (the engine evaluates it). Default None.
        stop: a composed :mod:`mulligan.stop` replacing ``attempts``
            (``stop.when`` predicates are refused: TypeError). Default None.
        min_delay: the least wait of every backoff, seconds. Default 0.
        connect_retries, read_retries, status_retries, other_retries:
            urllib3's separate counts: the most retries of connection
            failures before anything was sent, of transport failures after
            it (reset, timeout, truncated), of retryable statuses, and of
            anything else; each bounded on its own inside ``attempts``; 0
            never retries that kind. Default None (only ``attempts`` bounds).
        retry_after_max: longest Retry-After honoured, seconds. Default 60.0.
        retry_on: the retryable HTTP statuses, an iterable of ints in
            [400, 599] (a str raises TypeError). Default 408, 429, 500, 502,
            503, 504.
        follow_redirects: follow 3xx redirects. Default False.
        max_redirects: the most redirects followed (then a terminal error). Default 10.
        strict: retry only GET, HEAD and OPTIONS once bytes were sent.
            Default False.
        method_rule: which requests are replayed once bytes were sent:
            ``"idempotent"`` (default: RFC 9110's idempotent methods, plus any
            request with an Idempotency-Key), ``"safe"`` (GET, HEAD and
            OPTIONS, plus any request with an Idempotency-Key) or
            ``"strict"`` (GET, HEAD and OPTIONS only, as ``strict=True``).
            Failures before anything was sent are retried whatever the rule.
        allowed_methods: urllib3's override: None replays every method, an
            iterable of names (``["GET", "PUT"]``, upper-cased) exactly those
            (a key adds none); it replaces ``method_rule``. ``strict=True``
            still wins. Default: not given.
        on_retry: called with a :class:`RetryEvent` before each wait.
        breaker: per-origin circuit breakers: True for the defaults
            (5 consecutive failed calls open it for 30 s), or a mapping with
            ``failure_threshold`` and ``reset_timeout`` (seconds), and
            ``key``: what the breakers are keyed by, ``"origin"`` (default,
            ``scheme://host:port``), ``"host"``, ``"path"`` (origin + path),
            a list of path templates (``["/users/{id}"]``: ``{name}`` is one
            segment, a last ``{name...}`` the rest; unmatched paths use the
            origin) or a callable ``key(method, url) -> str | None`` (None:
            the origin), called on the calling thread. The metrics stay by
            origin. An open breaker raises :class:`mulligan.CircuitOpenError`
            at once.
            Default None (off).
        breaker_per_attempt: record every attempt in the breaker instead of
            one result per call (the same switch as ``@retry``'s). The 0.1
            spelling, ``breaker={"per_attempt": True}``, still works and
            warns (DeprecationWarning). Default False.
        headers: default headers of every request. Content-Length,
            Transfer-Encoding, TE and Upgrade are set by the client itself
            and raise ValueError here and in a request's ``headers``.
        user_agent: the User-Agent sent when a request sets none.
        budget: the retry budget: ``"per_origin"`` (default: each origin
            gets a gRPC A6 token bucket of 100 tokens, ratio 0.5: a failed
            attempt takes a token, a success gives half of one back, retries
            stop while half the tokens or fewer are left), a
            :class:`mulligan.RetryBudget` shared by every origin, or None
            (off). A refused retry ends the call with its last failure
            (the last response, or its error), stop reason ``budget``; first
            attempts are never refused.
        throttle: a :class:`mulligan.AdaptiveThrottle` asked before every
            attempt (SRE client-side throttling; a rejection raises
            :class:`mulligan.ThrottledError`). Default None.
        bulkhead: a :class:`mulligan.Bulkhead` every call holds a slot of
            (a full one queues, within its ``max_wait`` and the deadline, or
            raises :class:`mulligan.BulkheadFullError`). Default None.
        rate_limiter: a :class:`mulligan.RateLimiter`, one bucket per origin
            (calls wait for their slot within its ``max_wait`` and the
            deadline, else :class:`mulligan.RateLimitedError`; with its
            ``penalize_retry_after``, a 429's Retry-After holds the origin).
            Default None.
        adaptive_rate: a :class:`mulligan.AdaptiveRate` (0.4, the AWS SDKs'
            adaptive mode), one for the client, shared by every origin (give
            each origin its own client for per-origin rates): every attempt
            takes a token (waiting within its ``max_wait`` and the deadline,
            else :class:`mulligan.RateLimitedError`) and every answer is
            recorded, throttled for a 429 or a 503 with Retry-After; no
            answer (a transport failure) is not recorded. Default None.
        max_connections: at most this many transfers in flight at once
            across every thread of this client (``Client`` only; the excess
            waits in FIFO order, bounded by the deadline), in [1, 2**31 - 1];
            None (default): no cap. :class:`mulligan.AsyncClient` takes its
            own (default 100).
        policy: the name of a client (or policy) loaded with
            :func:`mulligan.load_config`: every field of it becomes this
            client's default -- its timeouts, TLS setting, user agent and
            breaker_key, every field of its policy (retryable statuses and
            errors, Retry-After handling, seed...) and every option of its
            breaker. Arguments given here or to a request replace their own
            fields and keep the others. ValueError for an unknown name.

        hedge: (0.6) hedges replay-safe requests as
            :class:`mulligan.AsyncClient`'s ``hedge`` does (a delay in
            seconds, or a mapping of ``delay``, ``max_attempts``,
            ``quantile``...; default None: off). A hedging client sends every
            request (hedged or not) through one private AsyncClient on an
            event loop in one thread of its own, whose libcurl multi handle
            runs every copy: no thread per copy. Its breakers and budgets
            are that engine's; hooks (on_retry, fallbacks) run on that
            thread and must not call this client again. Per request,
            ``hedge=`` replaces the client's (a request hedged on a client
            made without ``hedge`` starts that loop too, whose breakers and
            budgets are apart from the client's own).

    .. versionadded:: 0.1.0
    .. versionchanged:: 0.2.0
       Every field of the named client, policy and breaker is used (0.1 took
       the policy's numbers and the breaker's threshold and reset timeout).
    .. versionchanged:: 0.6.0
       ``hedge``.
    """

    def __init__(
        self,
        *,
        policy: Optional[str] = None,
        max_connections: Optional[int] = None,
        hedge: Any = None,
        **kwargs: Any,
    ) -> None:
        _validate.integer_or_none(
            self._OWNER, "max_connections", max_connections, 1, _validate.INT_MAX,
            range_text="[1, 2**31 - 1] or None",
        )
        super().__init__(**_merge_named(self._OWNER, policy, kwargs))
        self._client: Any = _core.HttpClient(
            **self._native_args, max_connections=max_connections or 0
        )
        # Hedging (0.6): checked now; the loop starts at the first request.
        self._hedge = hedge if hedging_policy(self._OWNER, hedge) is not None else None
        self._async_args = async_kwargs(kwargs, max_connections, policy)
        self._hedge_loop: Optional[HedgeLoop] = None
        self._hedge_lock = threading.Lock()

    def close(self) -> None:
        """Closes the connection pool; later requests raise RuntimeError. Idempotent."""
        self._closed = True
        self._client = None
        with self._hedge_lock:
            loop, self._hedge_loop = self._hedge_loop, None
        if loop is not None:
            loop.close()

    def _loop(self) -> HedgeLoop:
        """The hedging loop (made on first use)."""
        with self._hedge_lock:
            if self._closed:
                raise RuntimeError("this client is closed")
            if self._hedge_loop is None:
                args = dict(self._async_args, hedge=self._hedge)
                self._hedge_loop = HedgeLoop(lambda: AsyncClient(**args))
            return self._hedge_loop

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def request(
        self,
        method: str,
        url: str,
        *,
        params: ParamsInput = None,
        data: Union[bytes, bytearray, memoryview, str, None] = None,
        json: Any = None,
        headers: HeadersInput = None,
        idempotency_key: Union[str, bool, None] = None,
        attempts: Any = _UNSET,
        timeout: Any = _UNSET,
        deadline: Any = _UNSET,
        backoff: Any = _UNSET,
        base_delay: Any = _UNSET,
        max_delay: Any = _UNSET,
        retry_after_max: Any = _UNSET,
        retry_on: Any = _UNSET,
        multiplier: Any = _UNSET,
        jitter: Any = _UNSET,
        jitter_fraction: Any = _UNSET,
        follow_redirects: Optional[bool] = None,
        max_redirects: Optional[int] = None,
        strict: Optional[bool] = None,
        on_retry: Optional[_HttpRetryHook] = None,
        raise_on_give_up: bool = False,
        fallback: Any = _UNSET,
        hedge: Any = _UNSET,
    ) -> Response:
        """Sends one logical request, retrying per the engine's rules.

        GET, HEAD, OPTIONS, TRACE, PUT and DELETE are retried on transport
        errors and on 408, 429, 500, 502, 503 and 504; POST and PATCH only with
        an idempotency key (or when the connection was refused, as nothing was
        sent). Retry-After is honoured up to ``retry_after_max`` seconds. The
        GIL is released for the whole call.

        Args:
            method: the HTTP method, e.g. ``"GET"``.
            url: an absolute http:// or https:// URL.
            params: query parameters (a mapping, pairs or a str) appended to
                the URL, form-encoded; None values are dropped.
            data: the body, bytes or str (sent as UTF-8).
            json: a value sent as a JSON body with ``Content-Type:
                application/json`` (unless headers set one). Not with ``data``.
            headers: a mapping or (name, value) pairs of str.
            idempotency_key: True to generate a UUID v4, a str to use as given,
                None/False for none. Sent unchanged on every attempt. A key
                mulligan's own idempotency middleware would refuse (over 255
                characters, not printable ASCII, a quote or backslash,
                surrounding spaces) raises ValueError before anything is sent.
            attempts, timeout, deadline, backoff, base_delay, max_delay,
            retry_after_max, retry_on, multiplier, jitter, jitter_fraction,
            follow_redirects, max_redirects, strict: override the client's
            settings for this request.
            on_retry: replaces the client's hook for this request. It runs
                before each wait; if it raises, the retries stop at once and
                its exception propagates from this call.
            raise_on_give_up: raise :class:`mulligan.RetriesExhausted` instead
                of returning the last response when the retries give up on a
                retryable status. Default False.
            fallback: returned instead of a failure when the call finally
                fails: the retries gave up on a retryable status (the
                callable gets a :class:`mulligan.RetriesExhausted` carrying
                the last response) or a transport error or timeout, or the
                origin's breaker refused. A terminal answer (a 404, a TLS
                verification failure) is returned or raised as it is. A
                callable is called with the exception and its result
                returned; any other object is returned as is. Counted in the
                origin's ``fallbacks`` metric.
            hedge: (0.6) replaces the client's ``hedge`` for this request
                (None: not hedged).

        Every retry is logged on the ``mulligan`` logger at WARNING (with
        ``extra`` fields ``mulligan_method``, ``mulligan_url``,
        ``mulligan_attempt``, ``mulligan_delay`` ...), and so is a give-up.

        Returns:
            The final :class:`Response` (also for 4xx/5xx statuses), or the
            fallback's value.

        Raises:
            ValueError: malformed URL, header or argument (before any request).
            TypeError: arguments of the wrong type (non-str header, ...).
            RuntimeError: the client is closed.
            mulligan.TransportError: the last attempt failed without a response;
                subclasses by ``kind`` (``ConnectionRefused``, ``AttemptTimeout``,
                ``DeadlineExceeded``, ...), with ``.kind`` and ``.attempts``.
            mulligan.CircuitOpenError: the origin's breaker is open.
            mulligan.RetriesExhausted: only with ``raise_on_give_up=True``.
        """
        if self._hedge is not None or hedge is not _UNSET:
            # Through the hedging loop's AsyncClient: same arguments.
            loop = self._loop()
            return loop.run(  # type: ignore[no-any-return]
                loop.client.request(
                    method, url, params=params, data=data, json=json, headers=headers,
                    idempotency_key=idempotency_key, attempts=attempts, timeout=timeout,
                    deadline=deadline, backoff=backoff, base_delay=base_delay, max_delay=max_delay,
                    retry_after_max=retry_after_max, retry_on=retry_on, multiplier=multiplier,
                    jitter=jitter, jitter_fraction=jitter_fraction,
                    follow_redirects=follow_redirects, max_redirects=max_redirects, strict=strict,
                    on_retry=on_retry, raise_on_give_up=raise_on_give_up, fallback=fallback,
                    hedge=hedge,
                )
            )
        args = self._request_args(
            method, url, params, data, json, headers, idempotency_key,
            (attempts, timeout, deadline, backoff, base_delay, max_delay, retry_after_max, retry_on,
             multiplier, jitter, jitter_fraction),
            follow_redirects, max_redirects, strict, on_retry,
        )
        client = self._client
        if client is None:
            raise RuntimeError("this client is closed")
        return self._send(client, *args, raise_on_give_up, fallback)  # type: ignore[no-any-return]

    def _bare(self, method: str, url: str) -> Response:
        """``request(method, url)`` with every keyword at its default, minus
        request()'s argument handling: ``client.get(url)`` is the hot path
        (a fifth of the Python time per call). Same checks, results, logs
        and errors as request(), which a test compares."""
        client = self._client
        if (
            client is None or self._default_headers or type(self).request is not _PLAIN_REQUEST
            or self._hedge is not None
        ):
            # Closed, headers to merge, a subclass's (or a mock's) request(),
            # or a hedging client.
            return self.request(method, url)
        _check_url(url)
        return self._send(  # type: ignore[no-any-return]
            client, method, url, [], b"", None, self._default_policy, None, None, None,
            self._on_retry, False, _UNSET,
        )

    def _send(
        self,
        client: Any,
        method: str,
        url: str,
        pairs: list[tuple[str, bytes]],
        body: bytes,
        key: Optional[str],
        policy: Any,
        follow_redirects: Optional[bool],
        max_redirects: Optional[int],
        strict: Optional[bool],
        hook: Optional[_HttpRetryHook],
        raise_on_give_up: bool,
        fallback: Any,
        trace: Optional[_tracing.CallTrace] = None,
    ) -> Any:
        """Runs one prepared call: attempts in the engine, the waits between
        them here, the give-up report and the fallback (``base``); in its
        spans while tracing is on (``trace``: ``_telemetry.tracing``)."""
        if _tracing.SWITCH.tracer is not None and trace is None:
            trace = _tracing.http_call(method, url)
            if trace is not None:
                return trace.run(
                    self._send, client, method, url, pairs, body, key,
                    policy, follow_redirects, max_redirects, strict, hook, raise_on_give_up,
                    fallback, trace,
                )
        cap, no_wait, clock = _testing()
        try:
            if trace is not None:
                trace.start_attempt()
                pairs = trace.header_pairs(pairs)  # the first attempt's span context
            raw = client.request(
                method, url, pairs, body, key, policy, follow_redirects, max_redirects, strict,
                fallback is not _UNSET, cap, no_wait, clock, self._breaker_key(method, url),
            )
            while type(raw) is not tuple:  # an _core.HttpCall: a retry was decided
                raw = _retry(raw, method, url, hook, trace)
        except (TransportError, CircuitOpenError) as exc:
            if trace is not None:
                trace.http_error(exc)
            return self._fall_back(method, url, exc, fallback)
        if trace is not None:
            trace.http_response(raw[0], raw[6], raw[2])
        return self._finish(raw, method, url, raise_on_give_up, fallback)

    def get(self, url: str, **kwargs: Any) -> Response:
        """Sends a GET; see :meth:`request` for the keyword arguments."""
        return self.request("GET", url, **kwargs) if kwargs else self._bare("GET", url)

    def head(self, url: str, **kwargs: Any) -> Response:
        """Sends a HEAD; see :meth:`request`."""
        return self.request("HEAD", url, **kwargs) if kwargs else self._bare("HEAD", url)

    def options(self, url: str, **kwargs: Any) -> Response:
        """Sends an OPTIONS; see :meth:`request`."""
        return self.request("OPTIONS", url, **kwargs) if kwargs else self._bare("OPTIONS", url)

    def post(self, url: str, **kwargs: Any) -> Response:
        """Sends a POST (retried only with an idempotency key); see :meth:`request`."""
        return self.request("POST", url, **kwargs) if kwargs else self._bare("POST", url)

    def put(self, url: str, **kwargs: Any) -> Response:
        """Sends a PUT; see :meth:`request`."""
        return self.request("PUT", url, **kwargs) if kwargs else self._bare("PUT", url)

    def patch(self, url: str, **kwargs: Any) -> Response:
        """Sends a PATCH (retried only with an idempotency key); see :meth:`request`."""
        return self.request("PATCH", url, **kwargs) if kwargs else self._bare("PATCH", url)

    def delete(self, url: str, **kwargs: Any) -> Response:
        """Sends a DELETE; see :meth:`request`."""
        return self.request("DELETE", url, **kwargs) if kwargs else self._bare("DELETE", url)


def _retry(
    pending: Any, method: str, url: str, hook: Optional[_HttpRetryHook],
    trace: Optional[_tracing.CallTrace] = None,
) -> Any:
    """Makes the retry an ``_core.HttpCall`` decided: reports it (log, hook,
    the attempt's span), waits its delay with ``STATE.sleep`` and runs the
    next attempt. A hook that raises, or an interrupted wait (Ctrl-C), ends
    the call without the retry and propagates."""
    try:
        if trace is not None:
            trace.http_retry(pending.event)
        _report_retry(pending.event, method, url, hook)
        delay = pending.delay
        if delay > 0:
            STATE.sleep(delay)
        if trace is not None:
            trace.start_attempt()
            for name, value in trace.carrier().items():  # this attempt's span context
                pending.set_header(name, value)
    except BaseException:
        pending.cancel()
        raise
    return pending.resume()


# The short path (Client._bare) is taken only while request() is this one, so
# that a subclass overriding request() (or a test patching it) sees every call.
_PLAIN_REQUEST = Client.request

_default_client: Optional[Client] = None
_default_lock = threading.Lock()


def _client() -> Client:
    global _default_client
    client = _default_client
    if client is None:
        with _default_lock:
            if _default_client is None:
                _default_client = Client()
            client = _default_client
    return client


# The options only a Client takes (its budget, breaker, limits, TLS, ...):
# the module functions share one default client, so they refuse these with
# the way to get them rather than request()'s bare "unexpected keyword".
def _named_parameters(fn: Any) -> set[str]:
    return {
        name
        for name, p in inspect.signature(fn).parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name != "self" and not name.startswith("_")
    }


_CLIENT_ONLY = frozenset(
    (_named_parameters(Client.__init__) | _named_parameters(_ClientBase.__init__))
    - _named_parameters(Client.request)
)


def _module_client(function: str, kwargs: dict[str, Any]) -> Client:
    """The default client for the module function ``function``; raises
    TypeError naming ``mulligan.Client`` when ``kwargs`` holds an option
    only a client takes (``budget=``, ``breaker=``, ``bulkhead=``, ...)."""
    if kwargs and not _CLIENT_ONLY.isdisjoint(kwargs):
        given = sorted(_CLIENT_ONLY.intersection(kwargs))
        args = ", ".join(f"{k}=..." for k in given)
        raise TypeError(
            f"mulligan.{function}: {', '.join(given)} "
            f"{'is an option' if len(given) == 1 else 'are options'} of mulligan.Client, not of "
            f"a request: the module functions share one default client (a per-origin retry "
            f"budget, no breaker); use mulligan.Client({args}).{function}(...)"
        )
    return _client()


def request(method: str, url: str, **kwargs: Any) -> Response:
    """Sends a request with the default client; see :meth:`Client.request`.

    Raises:
        TypeError: an option only :class:`Client` takes (``budget=``,
            ``breaker=``, ``throttle=``, ``bulkhead=``, ...; since 0.5 the
            message says so), besides the errors of :meth:`Client.request`.

    .. versionadded:: 0.1.0
    """
    return _module_client("request", kwargs).request(method, url, **kwargs)


def get(url: str, **kwargs: Any) -> Response:
    """Sends a GET with the default client; see :meth:`Client.request` and
    :func:`request` (the options only a Client takes are refused).

    .. versionadded:: 0.1.0
    """
    return _module_client("get", kwargs).get(url, **kwargs)


def head(url: str, **kwargs: Any) -> Response:
    """Sends a HEAD with the default client; see :func:`get`."""
    return _module_client("head", kwargs).head(url, **kwargs)


def post(url: str, **kwargs: Any) -> Response:
    """Sends a POST with the default client; see :func:`get`.

    A POST is retried only with ``idempotency_key=`` (True or a str), or when
    the connection was refused.

    .. versionadded:: 0.1.0
    """
    return _module_client("post", kwargs).post(url, **kwargs)


def options(url: str, **kwargs: Any) -> Response:
    """Sends an OPTIONS with the default client; see :func:`get`."""
    return _module_client("options", kwargs).options(url, **kwargs)


def put(url: str, **kwargs: Any) -> Response:
    """Sends a PUT with the default client; see :func:`get`."""
    return _module_client("put", kwargs).put(url, **kwargs)


def patch(url: str, **kwargs: Any) -> Response:
    """Sends a PATCH (retried only with an idempotency key); see :func:`get`."""
    return _module_client("patch", kwargs).patch(url, **kwargs)


def delete(url: str, **kwargs: Any) -> Response:
    """Sends a DELETE with the default client; see :func:`get`."""
    return _module_client("delete", kwargs).delete(url, **kwargs)
