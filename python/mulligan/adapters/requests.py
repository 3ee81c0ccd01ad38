"""mulligan for requests: a transport adapter replacing urllib3's ``Retry``.

::

    import requests
    from mulligan.adapters.requests import Adapter

    session = requests.Session()
    adapter = Adapter(attempts=4, deadline=20.0, breaker=True)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    r = session.get("https://api.example.com/orders", timeout=5)

Needs requests (``pip install 'mulligan[requests]'``); without it, importing
this module raises ImportError naming the extra.

Exception mapping (what a requests user catches, kept as requests raises it):

============================================  =======================================
what ended the call                           raised
============================================  =======================================
retries gave up on a connection failure       the last attempt's own requests
(refused, reset, DNS, timeouts)               exception (``ConnectionError``,
                                              ``ConnectTimeout``, ``ReadTimeout``...),
                                              with a note ``mulligan: gave up after
                                              N attempts (reason)``
retries gave up on a retryable status         the last response is returned (as with
(503 ...)                                     ``Retry(raise_on_status=False)``);
                                              with ``raise_on_give_up=True``,
                                              :class:`RetriesExhausted`, a
                                              ``requests.exceptions.RetryError``
                                              (urllib3's ``raise_on_status=True``)
the origin's breaker is open                  :class:`CircuitOpenError`, both a
                                              ``mulligan.CircuitOpenError`` and a
                                              ``requests.exceptions.RequestException``;
                                              nothing is sent
a terminal failure (TLS verification, a bad   requests' own exception, at once
URL, an unknown exception)
============================================  =======================================

.. versionadded:: 0.3.0
"""

from __future__ import annotations

from typing import Any, Optional, Union

try:
    import requests
    import requests.adapters
    import requests.exceptions as _rexc
    import requests.structures
    import requests.utils
    import urllib3.exceptions as _uexc
    from urllib3.util.timeout import Timeout as _UrllibTimeout
except ImportError as _missing:  # pragma: no cover - exercised without requests
    raise ImportError(
        "mulligan.adapters.requests needs requests: pip install 'mulligan[requests]'"
    ) from _missing

from .. import _errors, _validate
from .._validate import UNSET
from .._adapter.flow import (
    ANSWERED, IDEMPOTENT_METHODS, AdapterConfig, RequestCall, new_key, sleep, trimmed,
)

__all__ = ["Adapter", "CircuitOpenError", "RetriesExhausted"]


class CircuitOpenError(_errors.CircuitOpenError, _rexc.RequestException):
    """The origin's circuit breaker refused the request; nothing was sent.

    Both a :class:`mulligan.CircuitOpenError` (``.key`` the origin,
    ``.retry_in`` seconds until the next probe, ``.attempts``) and a
    ``requests.exceptions.RequestException``, so ``except
    requests.RequestException`` handlers keep working. Never retried.

    .. versionadded:: 0.3.0
    """


class RetriesExhausted(_errors.RetriesExhausted, _rexc.RetryError):  # type: ignore[misc]
    """The retries gave up on a retryable status (raised only with
    ``raise_on_give_up=True``; the fallback receives it too).

    Both a :class:`mulligan.RetriesExhausted` (``.attempts``,
    ``.stop_reason``, ``.response``: the last ``requests.Response``) and a
    ``requests.exceptions.RetryError`` (what requests raises when urllib3's
    ``Retry`` gives up on a status).

    .. versionadded:: 0.3.0
    """

    def __init__(self, message: str, *, attempts: int, stop_reason: str, response: Any = None) -> None:
        Exception.__init__(self, message)
        self.attempts = attempts
        self.stop_reason = stop_reason
        self.response = response
        self.request = getattr(response, "request", None)
        self.outcomes = ()


def _kind(exc: BaseException, reading: bool) -> Optional[str]:
    """The engine's failure kind of an exception HTTPAdapter.send (or reading
    the body, ``reading``) raised; None for one that is no transport failure
    (a bad URL or header): terminal, raised as it is."""
    if isinstance(exc, _rexc.SSLError):
        return "tls_error"
    if isinstance(exc, _rexc.ConnectTimeout):
        return "connect_timeout"
    if isinstance(exc, _rexc.Timeout):
        return "timeout"
    if isinstance(exc, _rexc.ChunkedEncodingError):
        return "truncated"  # the body was cut short
    if isinstance(exc, _rexc.ContentDecodingError):
        return None  # the body cannot be decoded: the same answer every time
    if isinstance(exc, _rexc.ProxyError):
        return "transport"
    if isinstance(exc, _rexc.ConnectionError):
        if reading:
            return "timeout"  # iter_content raises it only for a read timeout
        reason: Any = exc.args[0] if exc.args else None
        if isinstance(reason, _uexc.MaxRetryError):
            reason = reason.reason
        if isinstance(reason, _uexc.NameResolutionError):
            return "dns_failure"
        if isinstance(reason, _uexc.NewConnectionError):
            return "connection_refused"  # nothing was sent
        return "connection_reset"
    if isinstance(exc, (_rexc.InvalidURL, _rexc.InvalidSchema, _rexc.MissingSchema,
                        _rexc.InvalidHeader, _rexc.URLRequired)):
        return None
    if isinstance(exc, _rexc.RequestException):
        return "transport"
    return None


_CaseInsensitiveDict = requests.structures.CaseInsensitiveDict

_Timeout = Union[None, float, tuple[Optional[float], Optional[float]], Any]


def _phase(value: Any, bound: float) -> Optional[float]:
    """One phase of a urllib3 Timeout bounded by ``bound``: urllib3's
    DEFAULT_TIMEOUT sentinel (the socket's default: none) counts as none."""
    return trimmed(value if isinstance(value, (int, float)) else None, bound)


def _trim(timeout: _Timeout, bound: Optional[float]) -> _Timeout:
    """requests' ``timeout`` (None, seconds, a (connect, read) pair, or a
    ``urllib3.Timeout``) bounded by the engine's attempt bound (None:
    unchanged). A Timeout object, which requests passes to urllib3 as it is,
    is bounded phase by phase like a pair: a new Timeout whose connect and
    read parts (and ``total``, when set) are each at most ``bound``."""
    if bound is None:
        return timeout
    if isinstance(timeout, tuple):
        return (trimmed(timeout[0], bound), trimmed(timeout[1], bound))
    if timeout is None or isinstance(timeout, (int, float)):
        return trimmed(timeout, bound)
    if isinstance(timeout, _UrllibTimeout):
        total = timeout.total
        return _UrllibTimeout(
            connect=_phase(timeout._connect, bound), read=_phase(timeout._read, bound),
            total=trimmed(total, bound) if isinstance(total, (int, float)) else None,
        )
    return timeout


def _field(headers: Any, lower: str, name: str) -> Optional[str]:
    """The value of the header field ``name`` (``lower``: the same in lower
    case), or None. requests' CaseInsensitiveDict keeps {lower-case name:
    (name, value)} in ``_store`` (an OrderedDict); reading it directly skips
    ``Mapping.get``'s KeyError on a missing field (about 4,000 instructions
    a field, callgrind; 0.6 checked for a plain dict there, which requests
    never uses, so every request paid two). Any other mapping is asked with
    ``get``."""
    if type(headers) is _CaseInsensitiveDict:
        item = headers._store.get(lower)
        if item is None:
            return None
        value = item[1]
        return value.decode("latin-1") if isinstance(value, bytes) else value
    value = headers.get(name)
    return value.decode("latin-1") if isinstance(value, bytes) else value


def _answer(fallback: Any, result: Any, request: requests.PreparedRequest, adapter: Any) -> Any:
    """``result`` (what ``send`` is about to return) checked to be a
    ``requests.Response``: ``Session.send`` reads every answer of an adapter
    (its hooks, ``extract_cookies_to_jar``, ``resolve_redirects``,
    ``r.elapsed``), so anything else would fail in requests' internals with an
    AttributeError. A Response the fallback built gets the ``request``,
    ``url`` and ``connection`` HTTPAdapter.build_response gives every
    response, where it has none. Raises TypeError naming the fallback."""
    if not isinstance(result, requests.Response):
        raise TypeError(
            f"mulligan.adapters.requests.Adapter: fallback {fallback!r} returned "
            f"{type(result).__name__}, not a requests.Response (requests' Session.send "
            "reads the answer: hooks, cookies, redirects)"
        )
    if result.request is None:
        result.request = request
    if result.url is None:
        result.url = request.url
    if getattr(result, "connection", None) is None:
        result.connection = adapter
    return result


def _config(options: dict[str, Any]) -> AdapterConfig:
    """The adapter's checked options (TypeError/ValueError naming the field)."""
    cfg = AdapterConfig("mulligan.adapters.requests.Adapter", **options)
    fallback = cfg.fallback
    if fallback is not UNSET and not callable(fallback) and not isinstance(fallback, requests.Response):
        raise TypeError(
            "mulligan.adapters.requests.Adapter: fallback must be a callable returning a "
            f"requests.Response, or a requests.Response, got {type(fallback).__name__}"
        )
    return cfg


def _replayable(request: requests.PreparedRequest) -> bool:
    """Whether the body can be sent again: none, bytes or str, or a file
    whose position requests recorded (rewound before each retry)."""
    body = request.body
    if body is None or isinstance(body, (bytes, str)):
        return True
    return isinstance(getattr(request, "_body_position", None), int)


class Adapter(requests.adapters.HTTPAdapter):
    """A requests transport adapter whose retries are mulligan's.

    Mount it on a session (``session.mount("https://", Adapter(...))``);
    urllib3's own retries are off underneath (``max_retries=0``), and every
    decision is the engine's, as for :class:`mulligan.Client`: which
    failures and statuses are retried (transport failures, and 408, 429,
    500, 502, 503, 504 by default), the backoff, Retry-After (replacing the
    backoff; longer than ``retry_after_max``: no retry), the deadline, the
    method rules (a POST or PATCH is replayed only with an Idempotency-Key,
    or when nothing was sent: connection refused, DNS failure, connect
    timeout), the breakers per origin, the metrics (by origin, as the
    Client's) and the fallback. Each attempt is ``HTTPAdapter.send`` with
    requests' own ``timeout`` (trimmed to ``timeout=``/the deadline when
    given: a number, a (connect, read) pair and a ``urllib3.Timeout`` alike,
    each phase at most the bound); with ``stream=False`` the adapter reads the body inside the
    attempt, so a truncated body is retried too. With ``stream=True`` the
    attempt ends at the response head: a body that fails while you read it is
    not retried. A body that cannot be sent twice (a generator) makes the
    request unsafe to replay once sent. A response that is retried is closed
    first (its connection goes back to the pool).

    Pickling: a pickled adapter (or a ``requests.Session`` it is mounted on)
    keeps its options and is rebuilt from them when unpickled, as
    HTTPAdapter keeps its pool options and rebuilds its pools (0.6); the
    options must pickle (a lambda ``on_retry`` does not). Run-time state
    (the breakers, a per-origin budget) starts afresh.

    Thread-safety: like HTTPAdapter, safe to share between threads (one
    session per thread is requests' advice); the options are immutable.

    Args:
        attempts, deadline, backoff, base_delay, multiplier, max_delay,
            jitter, jitter_fraction, wait, stop, min_delay, connect_retries,
            read_retries, status_retries, other_retries, retry_after_max,
            retry_on, strict, method_rule, allowed_methods, breaker,
            breaker_per_attempt, on_retry: as for :class:`mulligan.Client`
            (durations in seconds or ``datetime.timedelta``; the same
            defaults: 3 attempts, exponential backoff from 0.2 s, full
            jitter, max_delay 10 s, retry_after_max 60 s, no deadline, no
            breaker). ``on_retry`` gets a :class:`mulligan.RetryEvent`.
        timeout: seconds bounding each attempt on top of requests' own
            ``timeout=`` (the smaller wins; trimmed to the deadline).
            Default None: requests' timeout alone.
        idempotency_key: True to add a fresh ``Idempotency-Key`` (a UUID v4,
            the same on every attempt of the call) to requests of
            non-idempotent methods (POST, PATCH ...) that carry none, which
            makes them replayable. Default False: only a key the request
            carries itself (``headers={"Idempotency-Key": ...}``) counts.
            Turn it on only for servers that deduplicate keys.
        fallback: answers a call that finally failed on retryable failures
            or was refused by a breaker: a callable gets the exception (the
            requests exception, :class:`CircuitOpenError`, or a
            :class:`RetriesExhausted` carrying the last response) and
            returns what ``send`` returns, a ``requests.Response``; a
            ``requests.Response`` object itself is returned as is. Either
            way the answer must be a Response, as for any transport adapter
            (requests' ``Session.send`` runs its hooks, cookie extraction
            and redirects on it): another value is a TypeError, at
            construction for a non-callable one, when it is returned for a
            callable's (naming the fallback). A Response without
            ``request``/``url`` gets the request's, as
            ``HTTPAdapter.build_response`` gives them (0.6). Default: none.
        raise_on_give_up: raise :class:`RetriesExhausted` when the retries
            give up on a retryable status. Default False (the last response
            is returned). The calls it raises for are exactly those a
            fallback answers: every stop on a retryable status, whatever
            stopped it (attempts, deadline, Retry-After, budget, ``stop=``,
            or ``not_replay_safe``: a POST without Idempotency-Key is not
            replayed) (0.6: ``not_replay_safe`` and ``stop_condition``
            returned the response).
        pool_connections, pool_maxsize, pool_block: HTTPAdapter's (the
            number of pools urllib3's PoolManager keeps, the connections a
            pool keeps, whether a full pool blocks): ints >= 1 and a bool,
            checked at construction (0.6; requests itself checks none and
            fails later, in urllib3, on the first request).

    Raises:
        ValueError, TypeError: a bad option, naming it (at construction).

    .. versionadded:: 0.3.0
    """

    def __init__(
        self,
        *,
        pool_connections: int = requests.adapters.DEFAULT_POOLSIZE,
        pool_maxsize: int = requests.adapters.DEFAULT_POOLSIZE,
        pool_block: bool = requests.adapters.DEFAULT_POOLBLOCK,
        **options: Any,
    ) -> None:
        owner = "mulligan.adapters.requests.Adapter"
        pool_connections = _validate.integer(owner, "pool_connections", pool_connections, 1, _validate.INT_MAX)
        pool_maxsize = _validate.integer(owner, "pool_maxsize", pool_maxsize, 1, _validate.INT_MAX)
        pool_block = _validate.flag(owner, "pool_block", pool_block)
        self._mulligan = _config(options)
        self._mulligan_options = options
        super().__init__(
            pool_connections=pool_connections, pool_maxsize=pool_maxsize, max_retries=0,
            pool_block=pool_block,
        )

    # What pickle keeps: HTTPAdapter's own attributes (its __getstate__ reads
    # __attrs__) and the options, from which __setstate__ rebuilds the
    # engine's pipeline (0.6).
    __attrs__ = [*requests.adapters.HTTPAdapter.__attrs__, "_mulligan_options"]

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restores a pickled adapter (a pickled ``requests.Session`` pickles
        its mounted adapters): HTTPAdapter's state, then the pipeline rebuilt
        from the options, as HTTPAdapter rebuilds its pool manager. What it
        held at run time starts afresh, as the pools do: the breakers' and
        the budget's state (0.6)."""
        super().__setstate__(state)
        self._mulligan = _config(self._mulligan_options)

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: _Timeout = None,
        verify: Union[bool, str] = True,
        cert: Any = None,
        proxies: Any = None,
    ) -> requests.Response:
        """Sends ``request`` as one logical call: attempts through
        ``HTTPAdapter.send``, retries as the engine decides (see the class).

        Returns:
            The final ``requests.Response`` (also a 4xx/5xx one), or the
            fallback's answer.

        Raises:
            requests.exceptions.RequestException: the last attempt's own
                exception when the retries gave up on it (a note says how
                many attempts were made), or a terminal one at once.
            CircuitOpenError: the origin's breaker is open (nothing sent).
            RetriesExhausted: with ``raise_on_give_up=True`` only.
        """
        cfg = self._mulligan
        method = (request.method or "GET").upper()
        key = _field(request.headers, "idempotency-key", "Idempotency-Key")
        if key is None and cfg.idempotency_key and method not in IDEMPOTENT_METHODS:
            key = new_key()
            request.headers["Idempotency-Key"] = key
        replayable = _replayable(request)
        call = cfg.begin(method, request.url or "", key, replayable, request.headers)
        return self._run(  # type: ignore[no-any-return]
            call, request, stream, timeout, verify, cert, proxies, replayable
        )

    def _run(
        self, call: RequestCall, request: requests.PreparedRequest, stream: bool, timeout: _Timeout,
        verify: Union[bool, str], cert: Any, proxies: Any, replayable: bool,
    ) -> Any:
        cfg = call.cfg
        last: Optional[BaseException] = None
        in_flight = 0
        rewind = replayable and request.body is not None and not isinstance(request.body, (bytes, str))
        try:
            while True:
                if not call.admit():
                    return _answer(cfg.fallback, call.refused(CircuitOpenError, last), request, self)
                if call.trace is not None:  # the attempt's trace context
                    call.inject(request.headers)
                if rewind and call.attempts:
                    requests.utils.rewind_body(request)  # a file body, sent again
                in_flight = 1
                reading = False
                try:
                    response = super().send(
                        request, stream=stream, timeout=_trim(timeout, call.bound),
                        verify=verify, cert=cert, proxies=proxies,
                    )
                    if not stream:
                        reading = True
                        response.content  # noqa: B018 - read inside the attempt
                except _rexc.RequestException as exc:
                    in_flight = 0
                    kind = _kind(exc, reading)
                    if kind is None:
                        call.terminal()
                        raise
                    decision = call.error(kind)
                    if not decision.retry:
                        return _answer(cfg.fallback, call.gave_up_on_error(decision, exc), request, self)
                    last = exc
                else:
                    in_flight = 0
                    decision = call.response(
                        response.status_code, _field(response.headers, "retry-after", "Retry-After")
                    )
                    if decision is ANSWERED:  # the engine's answer: this response as is
                        return response
                    if not decision.retry:
                        answer = call.gave_up_on_status(decision, response, RetriesExhausted)
                        return answer if answer is response else _answer(cfg.fallback, answer, request, self)
                    response.close()
                    last = None
                call.report(decision)
                sleep(decision.delay)
        except BaseException:
            call.abandon(in_flight)  # nothing once the call has ended
            raise
