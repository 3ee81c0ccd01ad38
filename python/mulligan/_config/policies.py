"""Named policies from a configuration file: :func:`load_config`, :func:`policy`.

One JSON file (docs/configuration.md; editor schema in
schema/mulligan-config.schema.json) defines retry policies, circuit breakers
and client settings by name, for C++, C and Python alike::

    import mulligan

    mulligan.load_config("mulligan.json")      # or None: the file in $MULLIGAN_CONFIG
    p = mulligan.policy("payments")            # a frozen Policy, durations in seconds
    p.attempts, p.base_delay, p.max_delay

A gRPC service config (``methodConfig[].retryPolicy``) is read too: its
policies are named ``service/method`` (or ``service``, or ``default``).

Loading is all-or-nothing: a malformed file raises :class:`ValueError` listing
every problem (``payments.json: policies.payments.max_delay: expected a
duration such as "10s", got -3``) and leaves the previous configuration in
place. :func:`reload_config` reads the same file again and swaps every policy
at once; a call already running keeps the policy it started with.

The process-wide registry lives in the C++ core; this module only converts.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
import threading
from typing import Any, Callable, Optional, Union

from .. import _core, _validate
from .. import stop as _stop, wait as _wait
from .._breaker.breaker import CircuitBreaker
from .._budget import AdaptiveThrottle, RetryBudget
from .._retry.state import STATE
from .._state.redis import RedisState

__all__ = [
    "BreakerConfig",
    "ClientConfig",
    "ConfigReport",
    "Policy",
    "breaker_config",
    "client_config",
    "load_config",
    "policy",
    "reload_config",
    "shared_breaker",
]

# The process-wide registry (thread-safe in C++; loads release the GIL).
_REGISTRY = _core.PolicyRegistry()
# Bumped by every successful load or reload: decorators bound to a policy name
# (`@mulligan.retry(policy="payments")`) pick the new values up on their next
# failure path; a call already retrying keeps the session it started with.
_generation = 0

# The "state" section's RedisState (0.6), with the settings it was made
# from, and the shared breakers load_config built on it, with the options
# each was built from: kept across loads that leave them unchanged, so a
# reload does not drop a breaker's open period or its Redis connection.
_shared_lock = threading.Lock()
_state: Optional[tuple[tuple[Any, ...], RedisState]] = None
_shared_breakers: dict[str, tuple["BreakerConfig", RedisState, CircuitBreaker]] = {}

# The parts a configuration names (issue 14), wrapped once per engine object:
# (section, name) -> (engine object, Python wrapper). The engine registry
# shares one object per name (kept across reloads that leave its options
# unchanged); this keeps one wrapper per object, so every decorator and
# client naming "api" holds the same mulligan.RetryBudget.
_parts: dict[tuple[str, str], tuple[Any, Any]] = {}
_parts_lock = threading.Lock()
# How engine bulkheads and limiters become mulligan.Bulkhead / RateLimiter:
# registered by mulligan._limits (which imports this module, not the reverse).
_PART_WRAPPERS: dict[str, Callable[..., Any]] = {}


@dataclass(frozen=True)
class ConfigReport:
    """What a successful load found.

    Attributes:
        source: the file path (or the source name of a string).
        policies: names of the retry policies, sorted.
        breakers: names of the circuit breakers, sorted.
        clients: names of the client settings, sorted.
        warnings: notes that did not stop the load, each naming the file and
            the JSON path, e.g. a gRPC ``maxAttempts`` above 5 capped at 5.
        budgets, throttles, bulkheads, rate_limiters, adaptive_rates: names
            of the entries of those sections, sorted (a gRPC service
            config's ``retryThrottling`` is the budget ``"retryThrottling"``).

    .. versionchanged:: 0.4.0
       ``budgets``, ``throttles``, ``bulkheads``, ``rate_limiters``.
    .. versionchanged:: 0.5.0
       ``adaptive_rates``.
    .. versionchanged:: 0.6.0
       ``state`` (the file has a ``"state"`` section), ``shared_breakers``
       and ``shared_rate_limiters`` (the entries with ``"shared": true``,
       sorted).
    """

    source: str
    policies: tuple[str, ...]
    breakers: tuple[str, ...]
    clients: tuple[str, ...]
    warnings: tuple[str, ...]
    budgets: tuple[str, ...] = ()
    throttles: tuple[str, ...] = ()
    bulkheads: tuple[str, ...] = ()
    rate_limiters: tuple[str, ...] = ()
    adaptive_rates: tuple[str, ...] = ()
    state: bool = False
    shared_breakers: tuple[str, ...] = ()
    shared_rate_limiters: tuple[str, ...] = ()


@dataclass(frozen=True)
class Policy:
    """A named retry policy, in Python units (seconds, attempts).

    The fields mirror the file's (DESIGN.md section 4 gives the defaults);
    ``attempts`` is the file's ``max_attempts`` and ``clamp_retry_after`` is
    ``retry_after_overflow == "clamp"``. A Policy is a snapshot: a later
    reload does not change it.

    .. versionadded:: 0.1.0
    """

    name: str
    attempts: int
    backoff: str
    base_delay: float
    multiplier: float
    max_delay: float
    jitter: str
    jitter_fraction: float
    deadline: Optional[float]
    attempt_timeout: Optional[float]
    retry_after_max: float
    clamp_retry_after: bool
    respect_retry_after: bool
    retryable_statuses: tuple[int, ...]
    retryable_errors: tuple[str, ...]
    retryable_grpc_codes: tuple[str, ...]
    seed: Optional[int]
    #: The least wait of every backoff, seconds (the file's ``min_delay``).
    min_delay: float = 0.0
    #: The file's composed ``wait`` (a :class:`mulligan.wait.Wait`), or None.
    wait: Any = None
    #: The file's composed ``stop`` (a :class:`mulligan.stop.Stop`), or None.
    stop: Any = None
    #: The parts the policy names (0.4): the shared
    #: :class:`mulligan.RetryBudget`, :class:`mulligan.AdaptiveThrottle`,
    #: :class:`mulligan.Bulkhead` and :class:`mulligan.RateLimiter` of the
    #: file's ``budgets``, ``throttles``, ``bulkheads`` and ``rate_limiters``
    #: entries, or None. Every policy naming one entry holds the same object.
    budget: Any = None
    throttle: Any = None
    bulkhead: Any = None
    rate_limiter: Any = None
    #: The shared :class:`mulligan.AdaptiveRate` of the file's
    #: ``adaptive_rates`` entry the policy names (0.5), or None.
    adaptive_rate: Any = None
    #: A gRPC service config's ``hedgingPolicy`` for this method (0.6):
    #: ``{"max_attempts": int, "delay": seconds}`` (the shape of
    #: ``AsyncClient(hedge=...)``), or None. Such a policy makes one attempt
    #: (gRFC A6: a retryPolicy or a hedgingPolicy, not both); its
    #: ``retryable_grpc_codes`` are the non-fatal codes.
    hedging: Optional[dict[str, Any]] = field(default=None, compare=False)
    # The engine's own policy (a copy taken at lookup): sessions begun from it
    # decide exactly as the C++ and C front doors do.
    _native: Any = field(default=None, repr=False, compare=False)

    def retry_kwargs(self) -> dict[str, Any]:
        """Returns the keyword arguments of ``@mulligan.retry`` for this policy.

        Only the fields ``@retry`` accepts: attempts, deadline, backoff,
        base_delay, multiplier, max_delay, jitter, jitter_fraction,
        retry_after_max, clamp_retry_after, seed, min_delay, wait, stop,
        budget, throttle, bulkhead, rate_limiter and adaptive_rate (the
        shared objects, or None). ``on`` is not part of a policy: the
        decorated code says which exceptions are retryable.

        .. versionchanged:: 0.4.0
           budget, throttle, bulkhead and rate_limiter.
        .. versionchanged:: 0.5.0
           adaptive_rate.
        """
        return {
            "attempts": self.attempts,
            "deadline": self.deadline,
            "backoff": self.backoff,
            "base_delay": self.base_delay,
            "multiplier": self.multiplier,
            "max_delay": self.max_delay,
            "jitter": self.jitter,
            "jitter_fraction": self.jitter_fraction,
            "retry_after_max": self.retry_after_max,
            "clamp_retry_after": self.clamp_retry_after,
            "seed": self.seed,
            "min_delay": self.min_delay,
            "wait": self.wait,
            "stop": self.stop,
            "budget": self.budget,
            "throttle": self.throttle,
            "bulkhead": self.bulkhead,
            "rate_limiter": self.rate_limiter,
            "adaptive_rate": self.adaptive_rate,
        }


@dataclass(frozen=True)
class BreakerConfig:
    """Named circuit breaker options (the keyword arguments of
    :class:`mulligan.CircuitBreaker`, durations in seconds).

    .. versionadded:: 0.1.0
    """

    name: str
    failure_threshold: int
    window: str
    window_size: int
    window_duration: float
    window_buckets: int
    failure_rate_threshold: float
    minimum_calls: int
    slow_call_duration: Optional[float]
    slow_call_rate_threshold: float
    reset_timeout: float
    reset_timeout_multiplier: float
    max_reset_timeout: float
    half_open_max_calls: int
    permit_timeout: float
    max_half_open_duration: Optional[float] = None

    def breaker_kwargs(self) -> dict[str, Any]:
        """Returns the keyword arguments of ``mulligan.CircuitBreaker(name, ...)``."""
        kwargs = {k: v for k, v in self.__dict__.items() if k != "name"}
        if kwargs["window"] == "none":
            kwargs["window"] = None
        return kwargs


@dataclass(frozen=True)
class ClientConfig:
    """Named HTTP client settings (durations in seconds).

    ``policy`` and ``breaker`` name entries of the same file (or are None).
    ``breaker_key`` is what the client's breakers are keyed by, in the
    spelling of ``Client(breaker={"key": ...})``: ``"origin"``, ``"host"``,
    ``"path"`` or a tuple of path templates.

    .. versionadded:: 0.1.0
    .. versionchanged:: 0.2.0
       ``breaker_key``.
    """

    name: str
    policy: Optional[str]
    breaker: Optional[str]
    attempt_timeout: float
    connect_timeout: float
    verify_tls: bool
    user_agent: str
    breaker_key: Union[str, tuple[str, ...]] = "origin"
    #: "idempotent" (default), "safe" or "strict".
    method_rule: str = "idempotent"
    #: None (not given: method_rule decides), "all" (the file's null: every
    #: method) or the tuple of methods replayed.
    allowed_methods: Any = None
    #: The name of the ``budgets`` entry shared by every origin (0.4), or
    #: None: the HTTP clients' default (a gRFC A6 token bucket per origin),
    #: or no budget at all when ``budget_off`` (the file's ``"budget": null``).
    budget: Optional[str] = None
    budget_off: bool = False


def _report(d: dict[str, Any]) -> ConfigReport:
    return ConfigReport(
        source=d["source"],
        policies=tuple(d["policies"]),
        breakers=tuple(d["breakers"]),
        clients=tuple(d["clients"]),
        warnings=tuple(d["warnings"]),
        budgets=tuple(d["budgets"]),
        throttles=tuple(d["throttles"]),
        bulkheads=tuple(d["bulkheads"]),
        rate_limiters=tuple(d["rate_limiters"]),
        adaptive_rates=tuple(d["adaptive_rates"]),
        state=bool(d["state"]),
        shared_breakers=tuple(d["shared_breakers"]),
        shared_rate_limiters=tuple(d["shared_rate_limiters"]),
    )


def _wrap(section: str, name: str, core: Any, make: Callable[[Any], Any]) -> Any:
    """The one Python wrapper of the engine part ``core`` (see ``_parts``)."""
    with _parts_lock:
        found = _parts.get((section, name))
        if found is not None and found[0] is core:
            return found[1]
        wrapper = make(core)
        _parts[(section, name)] = (core, wrapper)
        return wrapper


def _throttle_of(core: Any) -> AdaptiveThrottle:
    throttle = object.__new__(AdaptiveThrottle)
    throttle._core = core
    return throttle


def _part(section: str, name: Optional[str]) -> Any:
    """The shared part ``name`` of ``section`` ("budget", "throttle",
    "bulkhead", "rate_limiter", "adaptive_rate") of the loaded
    configuration, or None."""
    if name is None:
        return None
    if section == "budget":
        return _wrap(section, name, _REGISTRY.budget(name, STATE.now()), RetryBudget)
    if section == "throttle":
        return _wrap(section, name, _REGISTRY.throttle(name), _throttle_of)
    if section == "adaptive_rate":
        # Dated by the installed clock (a FakeClock's in tests), when built.
        rate = _REGISTRY.adaptive_rate(name, STATE.now())
        return _wrap(section, name, rate, _PART_WRAPPERS[section])
    if section == "bulkhead":
        return _wrap(section, name, _REGISTRY.bulkhead(name), _PART_WRAPPERS[section])
    core = _REGISTRY.rate_limiter(name)
    # A shared entry's wrapper knows its RedisState (0.6): see RateLimiter._from_core.
    with _shared_lock:
        state = None if _state is None else _state[1]
    return _wrap(section, name, core, lambda c: _PART_WRAPPERS[section](c, state))



def _install_state(report: ConfigReport) -> None:
    """Builds what the "state" section shares (0.6): the RedisState (one per
    distinct settings, kept across loads), handed to the registry for the
    shared rate limiters, and the shared breakers. Raises ValueError naming
    the JSON path for what only building can find."""
    global _state
    settings = _REGISTRY.state()
    with _shared_lock:
        if settings is None:
            _REGISTRY.set_shared_state(None)
            _state = None
        else:
            key = (settings["redis"], settings["prefix"], settings["timeout"],
                   settings["connect_timeout"])
            if _state is None or _state[0] != key:
                try:
                    state = RedisState(settings["redis"], prefix=settings["prefix"],
                                       timeout=settings["timeout"],
                                       connect_timeout=settings["connect_timeout"])
                except ValueError as e:
                    raise ValueError(f"{report.source}: state: {e}") from None
                _state = (key, state)
                # A new backend: the shared limiters are built on it at their
                # next lookup (an unchanged state keeps them).
                _REGISTRY.set_shared_state(state._state)
        wanted = set(report.shared_breakers)
        for name in list(_shared_breakers):
            config, on, breaker = _shared_breakers[name]
            if (name not in wanted or _state is None or on is not _state[1]
                    or config != breaker_config(name)):
                breaker.close_sharing()
                del _shared_breakers[name]
        for name in report.shared_breakers:
            if name in _shared_breakers:
                continue
            assert _state is not None  # the core refuses "shared" without "state"
            config = breaker_config(name)
            breaker = CircuitBreaker(name, **config.breaker_kwargs(), state=_state[1])
            _shared_breakers[name] = (config, _state[1], breaker)


def shared_breaker(name: str) -> CircuitBreaker:
    """Returns the :class:`mulligan.CircuitBreaker` that :func:`load_config`
    built for the ``"breakers"`` entry ``name`` with ``"shared": true``, on
    the file's ``"state"`` Redis: every process that loads the same file
    shares its trips (see ``CircuitBreaker(state=...)``). One object per
    name, kept by reloads that leave the entry and the ``"state"`` section
    unchanged; a reload that changes either builds a new one (the old one
    stops sharing).

    Raises:
        ValueError: no loaded breaker entry of that name says
            ``"shared": true`` (the message says which exist).

    Thread-safety: thread-safe.

    .. versionadded:: 0.6.0
    """
    _validate.name("mulligan.shared_breaker", "name", name)
    with _shared_lock:
        found = _shared_breakers.get(name)
        if found is not None:
            return found[2]
        known = ", ".join(sorted(_shared_breakers)) or "none"
    raise ValueError(f"mulligan.shared_breaker: no shared breaker named {name!r} in the loaded "
                     f"configuration (shared: {known})")


def load_config(path: Optional[str] = None) -> ConfigReport:
    """Loads a configuration file into the process-wide registry.

    Args:
        path: the JSON file; None reads the path from the ``MULLIGAN_CONFIG``
            environment variable. Environment overrides
            (``MULLIGAN_POLICY_<NAME>_MAX_ATTEMPTS`` and the like) apply.

    Returns:
        The names found and the warnings.

    Raises:
        ValueError: the file is missing or unreadable, is not valid JSON (the
            message gives line and column), or holds invalid values; the
            message lists every problem, one per line. The previously loaded
            configuration stays in effect.
        TypeError: ``path`` is not a str (or os.PathLike).

    .. versionadded:: 0.1.0
    """
    global _generation
    if path is None:
        report = _report(_REGISTRY.load_env())
    else:
        if not isinstance(path, str):
            if isinstance(path, os.PathLike):
                path = os.fspath(path)
            if not isinstance(path, str):
                raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
        report = _report(_REGISTRY.load_file(path))
    _install_state(report)
    _generation += 1
    return report


def reload_config() -> ConfigReport:
    """Reads the last loaded file again and swaps every policy at once.

    Raises:
        ValueError: nothing was loaded yet, or the file is now invalid (the
            old configuration then stays in effect).

    .. versionadded:: 0.1.0
    """
    global _generation
    report = _report(_REGISTRY.reload())
    _install_state(report)
    _generation += 1
    return report


def policy(name: str) -> Policy:
    """Returns the named retry policy of the loaded configuration.

    Raises:
        ValueError: no policy has that name (the message lists the known ones),
            or nothing has been loaded.

    .. versionadded:: 0.1.0
    """
    native, extras = _REGISTRY.policy_with_extras(_validate.name("mulligan.policy", "name", name))
    limits = _REGISTRY.limits(name)
    return Policy(
        name=name,
        attempts=native.attempts,
        backoff=native.backoff,
        base_delay=native.base_delay,
        multiplier=native.multiplier,
        max_delay=native.max_delay,
        jitter=native.jitter,
        jitter_fraction=extras["jitter_fraction"],
        deadline=native.deadline,
        attempt_timeout=native.attempt_timeout,
        retry_after_max=native.retry_after_max,
        clamp_retry_after=extras["retry_after_overflow"] == "clamp",
        respect_retry_after=extras["respect_retry_after"],
        retryable_statuses=tuple(native.retryable_statuses),
        retryable_errors=tuple(extras["retryable_errors"]),
        retryable_grpc_codes=tuple(extras["retryable_grpc_codes"]),
        seed=native.seed,
        min_delay=native.min_delay,
        wait=None if native.wait is None else _wait._from_engine(native.wait),
        stop=None if native.stop is None else _stop._from_engine(native.stop),
        budget=_part("budget", limits["budget"]),
        throttle=_part("throttle", limits["throttle"]),
        bulkhead=_part("bulkhead", limits["bulkhead"]),
        rate_limiter=_part("rate_limiter", limits["rate_limiter"]),
        adaptive_rate=_part("adaptive_rate", limits["adaptive_rate"]),
        hedging=_REGISTRY.hedging(name),
        _native=native,
    )


def breaker_config(name: str) -> BreakerConfig:
    """Returns the named circuit breaker options of the loaded configuration.

    Raises:
        ValueError: no breaker has that name, or nothing has been loaded.
    """
    return BreakerConfig(**_REGISTRY.breaker(_validate.name("mulligan.breaker_config", "name", name)))


def client_config(name: str) -> ClientConfig:
    """Returns the named client settings of the loaded configuration.

    Raises:
        ValueError: no client has that name, or nothing has been loaded.
    """
    _validate.name("mulligan.client_config", "name", name)
    d = _REGISTRY.client(name)
    if isinstance(d["breaker_key"], list):
        d["breaker_key"] = tuple(d["breaker_key"])
    if isinstance(d.get("allowed_methods"), list):
        d["allowed_methods"] = tuple(d["allowed_methods"])
    return ClientConfig(name=name, **d)


# --- hooks for @mulligan.retry(policy=...) and Client(policy=...) ---


_LIMIT_ARGS = ("bulkhead", "rate_limiter", "adaptive_rate")


def _resolve_retry_kwargs(name: str) -> dict[str, Any]:
    """Returns the ``@mulligan.retry`` keyword arguments of policy `name`,
    without the bulkhead, the rate limiter and the adaptive rate (the
    decorator applies those itself: see :func:`_resolve_limit_kwargs`).

    For ``@mulligan.retry(policy="payments", on=...)``: explicit keyword
    arguments of the decorator should override these. Raises ValueError for
    an unknown name.
    """
    kwargs = policy(name).retry_kwargs()
    for key in _LIMIT_ARGS:
        kwargs.pop(key)
    return kwargs


def _resolve_limit_kwargs(name: str) -> dict[str, Any]:
    """Returns the shared ``bulkhead``, ``rate_limiter`` and (0.5)
    ``adaptive_rate`` policy `name` names (each None when it names none).
    Raises ValueError for an unknown name. (Added in 0.4.)"""
    limits = _REGISTRY.limits(_validate.name("mulligan.retry", "policy", name))
    return {key: _part(key, limits[key]) for key in _LIMIT_ARGS}


def _resolve_retry_extras(name: str) -> dict[str, Any]:
    """Returns the fields of policy `name` that reach ``@mulligan.retry``'s
    engine policy without being arguments of it: ``respect_retry_after`` and
    the per-kind retry counts (``other_retries``... ; a decorated function's
    exceptions are of the "other" kind). Raises ValueError for an unknown
    name."""
    p = policy(name)
    extras: dict[str, Any] = {"respect_retry_after": p.respect_retry_after}
    for kind, n in p._native.kind_retries.items():
        extras[f"{kind}_retries"] = n
    return extras


def _resolve_breaker_kwargs(name: str) -> dict[str, Any]:
    """Returns the ``mulligan.CircuitBreaker(name, ...)`` keyword arguments of
    breaker `name`. Raises ValueError for an unknown name."""
    return breaker_config(name).breaker_kwargs()


def _resolve_client_kwargs(name: str) -> dict[str, Any]:
    """Returns ``mulligan.Client(...)`` keyword arguments for client `name`.

    `name` is looked up among the clients; when no client has that name but a
    policy does, the policy alone is used (``Client(policy="payments")`` then
    means "requests retry like policy payments"). The result holds
    connect_timeout, timeout (the attempt timeout), verify_tls and user_agent
    from the client entry, and attempts, deadline, backoff, base_delay,
    max_delay, multiplier, jitter, jitter_fraction and retry_after_max from its
    policy, with ``"_native_policy"`` the policy's engine object (every field
    of it); ``"breaker"`` is the breaker's ``CircuitBreaker`` keyword
    arguments when the client names one, and ``"breaker_key"`` the client's
    breaker key. Only when the file names them (0.4): ``"budget"`` (the
    client's shared budget, or None for ``"budget": null``, else the
    policy's), ``"throttle"``, ``"bulkhead"``, ``"rate_limiter"`` and (0.5)
    ``"adaptive_rate"`` (the policy's shared objects).

    Raises:
        ValueError: neither a client nor a policy has that name.
    """
    snapshot = _REGISTRY.report()
    kwargs: dict[str, Any] = {}
    policy_name: Optional[str]
    if name in snapshot["clients"]:
        c = client_config(name)
        kwargs.update(
            connect_timeout=c.connect_timeout,
            timeout=c.attempt_timeout,
            verify_tls=c.verify_tls,
            user_agent=c.user_agent,
            breaker_key=list(c.breaker_key) if isinstance(c.breaker_key, tuple) else c.breaker_key,
            method_rule=c.method_rule,
        )
        if c.allowed_methods == "all":
            kwargs["allowed_methods"] = None
        elif c.allowed_methods is not None:
            kwargs["allowed_methods"] = list(c.allowed_methods)
        policy_name = c.policy
        if c.breaker is not None:
            if c.breaker in snapshot["shared_breakers"]:
                # Config errors raise at construction: the clients' per-origin
                # breakers would silently be local.
                raise ValueError(
                    f"client {name!r} names breaker {c.breaker!r}, which is shared "
                    "(\"shared\": true): the HTTP clients' per-origin breakers are not shared "
                    "through Redis yet; name a breaker without \"shared\"")
            kwargs["breaker"] = _resolve_breaker_kwargs(c.breaker)
        if c.budget_off:
            kwargs["budget"] = None
        elif c.budget is not None:
            kwargs["budget"] = _part("budget", c.budget)
    elif name in snapshot["policies"]:
        policy_name = name
    else:
        # Raises the registry's message ("no client named ... (known: ...)").
        client_config(name)
        raise AssertionError("unreachable")  # pragma: no cover
    if policy_name is not None:
        p = policy(policy_name)
        kwargs.update(
            attempts=p.attempts,
            deadline=p.deadline,
            backoff=p.backoff,
            base_delay=p.base_delay,
            multiplier=p.multiplier,
            max_delay=p.max_delay,
            jitter=p.jitter,
            jitter_fraction=p.jitter_fraction,
            retry_after_max=p.retry_after_max,
            min_delay=p.min_delay,
            wait=p.wait,
            stop=p.stop,
        )
        # urllib3's per-kind counts reach the client (the decorator retries
        # exceptions only: every failure there is "other").
        for kind, n in p._native.kind_retries.items():
            if n is not None:
                kwargs[f"{kind}_retries"] = n
        if p.attempt_timeout is not None:
            kwargs["timeout"] = p.attempt_timeout
        kwargs["_native_policy"] = p._native
        # The parts the policy names (0.4); a client's own "budget" wins.
        for key in ("budget", "throttle", "bulkhead", "rate_limiter", "adaptive_rate"):
            part = getattr(p, key)
            if part is not None and key not in kwargs:
                kwargs[key] = part
    return kwargs
