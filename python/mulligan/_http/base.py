"""What both HTTP clients share: their configuration, checked once, and the
preparation and ending of every call (give-up report, fallback).

:class:`Client` (``client``) and :class:`AsyncClient` (``async_client``)
differ only in how an attempt runs and how a retry waits.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Optional, Union

from .. import _core, _validate
from .._budget import AdaptiveThrottle, RetryBudget
from .._config import policies as _config
from .._errors import RetriesExhausted
from .._limits import Bulkhead, RateLimiter
from .._limits.adaptive import AdaptiveRate
from .._redact import redact_url
from .._retry.fallback import call_fallback
from .._retry.state import STATE
from .._text import fold
from .._validate import UNSET as _UNSET, Seconds
from .events import _GAVE_UP_REASONS, _HttpRetryHook, _log_give_up
from .headers import HeadersInput, _check_headers
from .request import (
    _COMMON_METHODS,
    ParamsInput,
    _check_switches,
    _checked_method,
    _breaker_args,
    _breaker_key_of,
    _check_url,
    _encode_body,
    _idempotency_key,
    _policy,
    _retry_on,
    _with_params,
)
from .response import Response, _response_from

__all__: list[str] = []

_USER_AGENT = "mulligan-python"


def _origin_label(url: str) -> str:
    """The metrics label of a request: its origin, as the engine reports it."""
    origin: Optional[str] = _core.http_origin(url)
    return origin if origin is not None else url


def _testing() -> tuple[int, bool, Any]:
    """mulligan.testing's switches for a request beginning now, as the
    native clients take them: (the attempt cap -- 1 with retries off, the
    testing mode's attempts, else 0 for the policy's --, no waits, the fake
    clock's engine view or None)."""
    state = STATE
    if not state.active:
        cap = 1
    else:
        cap = state.testing_attempts if state.testing else 0
    return cap, state.testing, state.native_clock


# What both clients' request() hands to its call: method, url, header pairs,
# body, idempotency key, policy, follow_redirects, max_redirects, strict, hook.
_CallArgs = tuple[
    str, str, list[tuple[str, bytes]], bytes, Optional[str], Any,
    Optional[bool], Optional[int], Optional[bool], Optional[_HttpRetryHook],
]


def _shape(multiplier: Any, jitter: Any, jitter_fraction: Any) -> Optional[dict[str, Any]]:
    """A request's overrides of the backoff's shape (None when it gives none,
    the common case: no dict is built)."""
    if multiplier is _UNSET and jitter is _UNSET and jitter_fraction is _UNSET:
        return None
    given = (("multiplier", multiplier), ("jitter", jitter), ("jitter_fraction", jitter_fraction))
    return {k: v for k, v in given if v is not _UNSET}


# The Client arguments that make a client's retry policy; on a named client
# they replace those fields of the named policy, which keeps the others.
_POLICY_ARGS = frozenset((
    "timeout", "attempts", "deadline", "backoff", "base_delay", "multiplier", "max_delay",
    "jitter", "jitter_fraction", "retry_after_max", "retry_on",
))


def _merge_named(owner: str, policy: Optional[str], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Client keyword arguments: a named client or policy from the
    configuration (mulligan.load_config), then what the caller passed.

    Every field of the named entries reaches the client: the named policy's
    own engine policy (its retryable statuses and errors, Retry-After
    handling, seed... as well as the numbers) is the client's policy, with
    the policy arguments the caller passes (here or per request) replacing
    those fields only; the named breaker's every option guards each key, and
    the client's breaker_key keys them."""
    if policy is None:
        return kwargs
    _validate.name(owner, "policy", policy)
    named = _config._resolve_client_kwargs(policy)
    breaker = named.pop("breaker", None)
    breaker_key = named.pop("breaker_key", "origin")
    native = named.pop("_native_policy", None)
    if breaker is not None and "breaker" not in kwargs:
        named["breaker"] = {
            "failure_threshold": breaker["failure_threshold"],
            "reset_timeout": breaker["reset_timeout"],
            "key": breaker_key,
            "_options": breaker,
        }
    if native is not None:
        named["_named_policy"] = native
        named["_named_given"] = frozenset(_POLICY_ARGS.intersection(kwargs))
    if "verify" in kwargs:
        named.pop("verify_tls", None)
    if named.get("user_agent") is None:
        named.pop("user_agent", None)
    return {**named, **kwargs}


def _checked_timeout(owner: str, timeout: Any) -> Optional[float]:
    """``timeout`` checked, in seconds (None: none)."""
    result: Optional[float] = _validate.seconds_or_none(owner, "timeout", timeout, positive=True)
    return result
_METHOD_RULES = ("idempotent", "safe", "strict")


def _method_args(owner: str, method_rule: Any, allowed_methods: Any) -> dict[str, Any]:
    """The engine's method rule (HttpMethodRule) of ``method_rule`` and
    ``allowed_methods`` (urllib3's sense: None = every method, an iterable of
    method names = exactly those; it replaces ``method_rule``)."""
    rule = _validate.name(owner, "method_rule", method_rule)
    if rule not in _METHOD_RULES:
        raise ValueError(
            f"{owner}: method_rule must be 'idempotent', 'safe' or 'strict', got {method_rule!r}"
        )
    if allowed_methods is _UNSET:
        return {"methods": rule}
    if allowed_methods is None:
        return {"methods": "all"}
    if isinstance(allowed_methods, (str, bytes)) or not hasattr(allowed_methods, "__iter__"):
        raise TypeError(
            f"{owner}: allowed_methods must be None or an iterable of method names, got {allowed_methods!r}"
        )
    methods = []
    for m in allowed_methods:
        if not isinstance(m, str):
            raise TypeError(f"{owner}: allowed_methods must hold str method names, got {m!r}")
        methods.append(m.upper())
    return {"methods": "allowed", "allowed_methods": methods}


_KINDS = ("connect_retries", "read_retries", "status_retries", "other_retries")


def _composed(
    owner: str, wait: Any, stop: Any, min_delay: Any, kinds: tuple[Any, ...]
) -> Optional[tuple[Any, float, Any, tuple[Optional[int], ...]]]:
    """The client's composed wait, min_delay, stop and per-kind retry counts
    as the engine's values (None when none is given). A client's stop cannot
    hold a ``mulligan.stop.when`` predicate: its retries run in the engine."""
    from ..stop import Stop
    from ..wait import Wait

    counts = tuple(
        _validate.integer_or_none(owner, name, n, 0, 2**31 - 1, range_text="[0, 2**31 - 1]")
        for name, n in zip(_KINDS, kinds)
    )
    if wait is None and stop is None and min_delay == 0.0 and counts == (None,) * 4:
        return None
    if wait is not None and not isinstance(wait, Wait):
        raise TypeError(f"{owner}: wait must be a mulligan.wait.Wait, got {wait!r}")
    if stop is not None and not isinstance(stop, Stop):
        raise TypeError(f"{owner}: stop must be a mulligan.stop.Stop, got {stop!r}")
    predicates: list[Any] = []
    engine_stop = stop._compile(predicates) if stop is not None else None
    if predicates:
        raise TypeError(f"{owner}: stop= cannot hold stop.when() predicates (the engine runs the retries)")
    return (
        wait._engine if wait is not None else None,
        _validate.seconds(owner, "min_delay", min_delay),
        engine_stop,
        counts,
    )


def _limit_args(
    owner: str, budget: Any, throttle: Any, bulkhead: Any, rate_limiter: Any, adaptive_rate: Any = None
) -> dict[str, Any]:
    """The engine's overload options (issue 14): ``budget`` is
    ``"per_origin"`` (a gRPC A6 token bucket of 100 tokens and ratio 0.5 per
    origin, the default), None (off) or a :class:`mulligan.RetryBudget`
    shared by every origin; ``throttle``, ``bulkhead`` and ``rate_limiter``
    are None or a :class:`mulligan.AdaptiveThrottle`, :class:`mulligan.Bulkhead`,
    :class:`mulligan.RateLimiter`, and ``adaptive_rate`` (0.4) None or a
    :class:`mulligan.AdaptiveRate`. TypeError/ValueError name the option."""
    if isinstance(budget, str):
        if budget != "per_origin":
            raise ValueError(
                f"{owner}: budget must be 'per_origin', None or a mulligan.RetryBudget, got {budget!r}"
            )
        native_budget: Any = "per_origin"
    elif budget is None:
        native_budget = None
    elif isinstance(budget, RetryBudget):
        native_budget = budget._core
    else:
        raise TypeError(
            f"{owner}: budget must be 'per_origin', None or a mulligan.RetryBudget, got {budget!r}"
        )
    given = (
        ("throttle", throttle, AdaptiveThrottle),
        ("bulkhead", bulkhead, Bulkhead),
        ("rate_limiter", rate_limiter, RateLimiter),
        ("adaptive_rate", adaptive_rate, AdaptiveRate),
    )
    out: dict[str, Any] = {"budget": native_budget}
    for name, value, kind in given:
        if value is not None and not isinstance(value, kind):
            raise TypeError(
                f"{owner}: {name} must be None or a mulligan.{kind.__name__}, got {value!r}"
            )
        out[name] = None if value is None else value._core
    return out


class _ClientBase:
    """The configuration and request preparation shared by Client and AsyncClient."""

    # The front door named in argument errors.
    _OWNER: ClassVar[str] = "mulligan.Client"

    def __init__(
        self,
        *,
        verify: Union[bool, str] = True,
        verify_tls: Optional[bool] = None,
        connect_timeout: Seconds = 10.0,
        timeout: Optional[Seconds] = 30.0,
        attempts: int = 3,
        deadline: Optional[Seconds] = None,
        backoff: str = "exponential",
        base_delay: Seconds = 0.2,
        multiplier: float = 2.0,
        max_delay: Seconds = 10.0,
        jitter: str = "full",
        jitter_fraction: float = 0.2,
        wait: Any = None,
        stop: Any = None,
        min_delay: Seconds = 0.0,
        connect_retries: Optional[int] = None,
        read_retries: Optional[int] = None,
        status_retries: Optional[int] = None,
        other_retries: Optional[int] = None,
        retry_after_max: Seconds = 60.0,
        retry_on: Optional[Iterable[int]] = None,
        follow_redirects: bool = False,
        max_redirects: int = 10,
        strict: bool = False,
        method_rule: str = "idempotent",
        allowed_methods: Any = _UNSET,
        on_retry: Optional[_HttpRetryHook] = None,
        breaker: Union[bool, Mapping[str, Any], None] = None,
        breaker_per_attempt: bool = False,
        headers: HeadersInput = None,
        user_agent: str = _USER_AGENT,
        budget: Any = "per_origin",
        throttle: Any = None,
        bulkhead: Any = None,
        rate_limiter: Any = None,
        adaptive_rate: Any = None,
        _named_policy: Any = None,
        _named_given: frozenset[str] = frozenset(),
    ) -> None:
        owner = self._OWNER
        if verify_tls is not None:
            verify = bool(verify_tls)
        if isinstance(verify, str):
            # The core refuses a bundle it cannot read (HttpClient::Create).
            if not verify:
                raise ValueError(
                    f"{owner}: verify must be True, False or the path of a CA bundle, got ''"
                )
            ca_bundle, verify_flag = verify, True
        elif isinstance(verify, bool):
            ca_bundle, verify_flag = "", verify
        else:
            raise TypeError(f"verify must be a bool or a CA bundle path, got {type(verify).__name__}")
        _validate.callable_or_none(owner, "on_retry", on_retry)
        self._defaults: dict[str, Any] = {
            "timeout": timeout,
            "attempts": attempts,
            "deadline": deadline,
            "backoff": backoff,
            "base_delay": base_delay,
            "max_delay": max_delay,
            "retry_after_max": retry_after_max,
            "retry_on": retry_on,
            "multiplier": multiplier,
            "jitter": jitter,
            "jitter_fraction": jitter_fraction,
        }
        self._composed = _composed(
            owner, wait, stop, min_delay, (connect_retries, read_retries, status_retries, other_retries)
        )
        self._on_retry = on_retry
        self._default_headers = _check_headers(headers)
        # A named policy (every field of it) and the arguments given with it.
        self._named_policy: Any = _named_policy
        self._named_given = _named_given
        # Validates the defaults now rather than at the first request.
        self._default_policy: Any = None
        self._default_policy = self._policy_for({})
        native_timeout = 30.0
        if _named_policy is not None:
            # The client's attempt timeout bounds attempts when the policy
            # sets none.
            native_timeout = (
                self._default_policy.attempt_timeout
                or _checked_timeout(owner, timeout)
                or 30.0
            )
        self._native_args: dict[str, Any] = dict(
            attempt_timeout=native_timeout,
            connect_timeout=_validate.seconds(owner, "connect_timeout", connect_timeout, positive=True),
            verify_tls=verify_flag,
            user_agent=_validate.name(owner, "user_agent", user_agent),
            follow_redirects=_validate.flag(owner, "follow_redirects", follow_redirects),
            max_redirects=_validate.integer(
                owner, "max_redirects", max_redirects, 0, 1000, range_text="[0, 1000]"
            ),
            ca_bundle=ca_bundle,
            strict=_validate.flag(owner, "strict", strict),
            **_method_args(owner, method_rule, allowed_methods),
            **_breaker_args(owner, breaker, breaker_per_attempt),
            **_limit_args(owner, budget, throttle, bulkhead, rate_limiter, adaptive_rate),
        )
        # A key function runs here, on the caller's thread, never in the engine.
        self._breaker_key_fn: Any = self._native_args.pop("_breaker_key_fn", None)
        self._owner = owner
        self._closed = False

    def _breaker_key(self, method: str, url: str) -> str:
        """The request's own breaker key ("" for the client's choice)."""
        fn = self._breaker_key_fn
        return "" if fn is None else _breaker_key_of(self._owner, fn, method, url)

    def _request_policy(
        self,
        attempts: Any,
        timeout: Any,
        deadline: Any,
        backoff: Any,
        base_delay: Any,
        max_delay: Any,
        retry_after_max: Any,
        retry_on: Any,
        shape: Optional[dict[str, Any]] = None,
    ) -> Any:
        """The engine policy of one request: the client's own when the request
        overrides nothing (no dict is built on that common path). ``shape``
        holds the request's multiplier, jitter and jitter_fraction overrides,
        when it gives any."""
        if (
            attempts is _UNSET
            and timeout is _UNSET
            and deadline is _UNSET
            and backoff is _UNSET
            and base_delay is _UNSET
            and max_delay is _UNSET
            and retry_after_max is _UNSET
            and retry_on is _UNSET
            and not shape
        ):
            return self._default_policy
        return self._policy_for(
            {
                "attempts": attempts,
                "timeout": timeout,
                "deadline": deadline,
                "backoff": backoff,
                "base_delay": base_delay,
                "max_delay": max_delay,
                "retry_after_max": retry_after_max,
                "retry_on": retry_on,
                **(shape or {}),
            }
        )

    def _policy_for(self, overrides: dict[str, Any]) -> Any:
        if self._default_policy is not None and all(v is _UNSET for v in overrides.values()):
            return self._default_policy
        o = {
            k: (overrides[k] if overrides.get(k, _UNSET) is not _UNSET else v)
            for k, v in self._defaults.items()
        }
        if self._named_policy is not None:
            given = {k: o[k] for k in self._named_given}
            given.update({k: val for k, val in overrides.items() if val is not _UNSET})
            return self._replaced(given)
        owner, v = self._OWNER, _validate
        return _policy(
            v.attempts(owner, "attempts", o["attempts"]),
            v.seconds_or_none(owner, "timeout", o["timeout"], positive=True),
            v.seconds_or_none(owner, "deadline", o["deadline"], positive=True),
            v.name(owner, "backoff", o["backoff"]),
            v.seconds(owner, "base_delay", o["base_delay"]),
            v.seconds(owner, "max_delay", o["max_delay"]),
            v.seconds(owner, "retry_after_max", o["retry_after_max"]),
            _retry_on(o["retry_on"]),
            v.number(owner, "multiplier", o["multiplier"]),
            v.name(owner, "jitter", o["jitter"]),
            v.probability(owner, "jitter_fraction", o["jitter_fraction"]),
            self._composed,
        )

    def _replaced(self, given: dict[str, Any]) -> Any:
        """The named policy with the client arguments `given` (checked here)
        replacing those fields; every other field is the file's."""
        owner, v = self._OWNER, _validate
        checks: dict[str, Any] = {
            "attempts": lambda x: ("attempts", v.attempts(owner, "attempts", x)),
            "timeout": lambda x: (
                "attempt_timeout", v.seconds_or_none(owner, "timeout", x, positive=True)
            ),
            "deadline": lambda x: ("deadline", v.seconds_or_none(owner, "deadline", x, positive=True)),
            "backoff": lambda x: ("backoff", v.name(owner, "backoff", x)),
            "base_delay": lambda x: ("base_delay", v.seconds(owner, "base_delay", x)),
            "multiplier": lambda x: ("multiplier", v.number(owner, "multiplier", x)),
            "max_delay": lambda x: ("max_delay", v.seconds(owner, "max_delay", x)),
            "jitter": lambda x: ("jitter", v.name(owner, "jitter", x)),
            "jitter_fraction": lambda x: (
                "jitter_fraction", v.probability(owner, "jitter_fraction", x)
            ),
            "retry_after_max": lambda x: ("retry_after_max", v.seconds(owner, "retry_after_max", x)),
            "retry_on": lambda x: ("retryable_statuses", _retry_on(x)),
        }
        changes = dict(checks[k](val) for k, val in given.items())
        if changes.get("retryable_statuses", ()) is None:
            del changes["retryable_statuses"]  # retry_on=None: the file's statuses
        elif "retryable_statuses" in changes:
            changes["retryable_statuses"] = list(changes["retryable_statuses"])
        return self._named_policy.replace(**changes) if changes else self._named_policy

    def _request_args(
        self,
        method: str,
        url: str,
        params: ParamsInput,
        data: Any,
        json: Any,
        headers: HeadersInput,
        idempotency_key: Union[str, bool, None],
        retry: tuple[Any, ...],
        follow_redirects: Optional[bool],
        max_redirects: Optional[int],
        strict: Optional[bool],
        on_retry: Optional[_HttpRetryHook],
    ) -> _CallArgs:
        """What request() of both clients hands to its native call: the
        checked method, the prepared URL, header pairs, body and key, the
        request's policy (``retry``: its attempts, timeout, deadline, backoff,
        base_delay, max_delay, retry_after_max, retry_on, multiplier, jitter
        and jitter_fraction overrides), the switches and the hook."""
        if method not in _COMMON_METHODS:
            method = _checked_method(method)
        if follow_redirects is not None or max_redirects is not None or strict is not None:
            _check_switches(self._OWNER, follow_redirects, max_redirects, strict)
        url, pairs, body, key = self._prepare(method, url, params, data, json, headers, idempotency_key)
        (attempts, timeout, deadline, backoff, base_delay, max_delay, retry_after_max, retry_on,
         multiplier, jitter, jitter_fraction) = retry
        policy = self._request_policy(
            attempts, timeout, deadline, backoff, base_delay, max_delay, retry_after_max, retry_on,
            _shape(multiplier, jitter, jitter_fraction),
        )
        hook = on_retry if on_retry is not None else self._on_retry
        return method, url, pairs, body, key, policy, follow_redirects, max_redirects, strict, hook

    def _prepare(
        self,
        method: str,
        url: str,
        params: ParamsInput,
        data: Any,
        json: Any,
        headers: HeadersInput,
        idempotency_key: Union[str, bool, None],
    ) -> tuple[str, list[tuple[str, bytes]], bytes, Optional[str]]:
        if self._closed:
            raise RuntimeError("this client is closed")
        _check_url(url)
        if (
            params is None and headers is None and data is None and json is None
            and idempotency_key is None and not self._default_headers
        ):
            return url, [], b"", None  # the common bare request
        if params is not None:
            url = _with_params(url, params)
        pairs = _check_headers(headers)
        if self._default_headers:
            given = {fold(name) for name, _ in pairs}
            pairs = [p for p in self._default_headers if fold(p[0]) not in given] + pairs
        body = _encode_body(data, json, pairs)
        return url, pairs, body, _idempotency_key(idempotency_key)

    @staticmethod
    def _gave_up(method: str, url: str, response: Response) -> RetriesExhausted:
        return RetriesExhausted(
            f"gave up on {method} {redact_url(url)} after {response.attempts} attempt"
            f"{'s' if response.attempts != 1 else ''} ({response.stop_reason}): "
            f"last status {response.status_code}",
            attempts=response.attempts,
            stop_reason=response.stop_reason,
            response=response,
        )

    @classmethod
    def _finish(
        cls, raw: tuple[Any, ...], method: str, url: str, raise_on_give_up: bool, fallback: Any
    ) -> Any:
        """Ends a call that got a response (the native tuple ``raw``): the
        :class:`Response`, or, when the retries gave up on a retryable
        status, the fallback's answer (when the pipeline says it answers) or
        :class:`RetriesExhausted` (with ``raise_on_give_up``). Both clients
        end every call here."""
        response = _response_from(raw)
        if response.stop_reason in _GAVE_UP_REASONS or raw[8]:
            _log_give_up(method, url, response.attempts, response.stop_reason,
                         f"last status {response.status_code}")
            if raw[8]:  # the pipeline's say: this request's fallback answers it
                return call_fallback(fallback, cls._gave_up(method, url, response))
            if raise_on_give_up:
                raise cls._gave_up(method, url, response)
        return response

    @staticmethod
    def _fall_back(method: str, url: str, exc: BaseException, fallback: Any) -> Any:
        """Handles a call that finally failed with ``exc`` (a TransportError or
        CircuitOpenError): logs it, then returns the fallback's value when the
        pipeline says the request's fallback answers it (a give-up on
        retryable failures, or a refusal; never a terminal error), or
        re-raises ``exc`` (with its traceback). Called from the except clause."""
        _log_give_up(method, url, getattr(exc, "attempts", 0),
                     getattr(exc, "stop_reason", None) or type(exc).__name__, str(exc))
        if fallback is _UNSET or not getattr(exc, "use_fallback", False):
            raise exc
        return call_fallback(fallback, exc)
