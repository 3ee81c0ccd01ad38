"""Named policies from a configuration file (mulligan.load_config / policy).

The shared example examples/config/mulligan.json must load identically from
C++, C and Python: tests/vectors/config/expected.json holds the delays of the
seeded policy "payments" and the breaker thresholds that all three suites
check. Malformed input gives the same precise messages as the C++ loader.
"""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

import mulligan
from mulligan import _core
from mulligan._cli.config_check import check_main
from mulligan._config.policies import (
    _resolve_breaker_kwargs,
    _resolve_client_kwargs,
    _resolve_retry_kwargs,
)

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "config" / "mulligan.json"
GRPC_EXAMPLE = ROOT / "examples" / "config" / "grpc_service_config.json"
EXPECTED = ROOT / "tests" / "vectors" / "config" / "expected.json"
SCHEMA = ROOT / "schema" / "mulligan-config.schema.json"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("MULLIGAN_"):
            monkeypatch.delenv(name)


def write(tmp_path: Path, text: str, name: str = "payments.json") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_the_shared_example_gives_the_shared_delays_and_thresholds() -> None:
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
    report = mulligan.load_config(str(EXAMPLE))
    assert report == mulligan.ConfigReport(
        source=str(EXAMPLE),
        policies=("payments", "search"),
        breakers=("payments",),
        clients=("payments",),
        warnings=(),
    )
    p = mulligan.policy("payments")
    session = p._native.begin(0.0)
    delays_ns = []
    while True:
        d = session.on_outcome(_core.Outcome.http(503), 0.0)
        if not d.retry:
            break
        delays_ns.append(round(d.delay * 1e9))
    assert delays_ns == expected["payments_delays_ns"]

    b = mulligan.breaker_config("payments")
    want = expected["breaker_payments"]
    assert b.failure_threshold == want["failure_threshold"]
    assert b.half_open_max_calls == want["half_open_max_calls"]
    assert round(b.reset_timeout * 1000) == want["reset_timeout_ms"]
    assert b.window_size == want["window_size"]
    assert b.minimum_calls == want["minimum_calls"]
    assert b.failure_rate_threshold == want["failure_rate_threshold"]


def test_policy_fields_are_in_python_units() -> None:
    mulligan.load_config(str(EXAMPLE))
    p = mulligan.policy("payments")
    assert (p.name, p.attempts, p.backoff, p.jitter) == ("payments", 5, "exponential", "full")
    assert (p.base_delay, p.multiplier, p.max_delay) == (0.1, 2.0, 5.0)  # max_delay: defaults
    assert (p.deadline, p.attempt_timeout, p.retry_after_max) == (20.0, 2.0, 30.0)
    assert p.retryable_statuses == (429, 502, 503, 504)
    assert p.retryable_grpc_codes == ("UNAVAILABLE",)
    assert p.seed == 7 and not p.clamp_retry_after and p.respect_retry_after
    s = mulligan.policy("search")
    assert (s.backoff, s.base_delay, s.jitter, s.attempts) == ("constant", 0.05, "none", 3)
    assert s.retryable_grpc_codes == ("UNAVAILABLE", "RESOURCE_EXHAUSTED")
    c = mulligan.client_config("payments")
    assert (c.policy, c.breaker, c.attempt_timeout, c.connect_timeout) == (
        "payments", "payments", 3.0, 2.0)
    assert c.user_agent == "shop/1.0" and c.verify_tls


def test_hooks_give_keyword_arguments_the_decorators_accept() -> None:
    mulligan.load_config(str(EXAMPLE))
    kwargs = _resolve_retry_kwargs("payments")
    assert kwargs == {
        "attempts": 5, "deadline": 20.0, "backoff": "exponential", "base_delay": 0.1,
        "multiplier": 2.0, "max_delay": 5.0, "jitter": "full", "jitter_fraction": 0.2,
        "retry_after_max": 30.0, "clamp_retry_after": False, "seed": 7,
        "min_delay": 0.0, "wait": None, "stop": None, "budget": None, "throttle": None,
    }
    calls = []

    @mulligan.retry(on=ConnectionError, **{**kwargs, "base_delay": 0.0, "deadline": None})
    def flaky() -> str:
        calls.append(1)
        raise ConnectionError("down")

    with pytest.raises(ConnectionError):
        flaky()
    assert len(calls) == 5

    breaker = mulligan.CircuitBreaker("cfg-test", **_resolve_breaker_kwargs("payments"))
    assert breaker is not None
    client_kwargs = _resolve_client_kwargs("payments")
    assert client_kwargs["connect_timeout"] == 2.0 and client_kwargs["attempts"] == 5
    assert client_kwargs["timeout"] == 2.0  # the policy's attempt_timeout wins
    assert _resolve_client_kwargs("search")["attempts"] == 3  # a bare policy name
    with pytest.raises(ValueError, match=r'no client named "nope"'):
        _resolve_client_kwargs("nope")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"policies": {"payments": {"max_attempts": "three"}}}',
         'payments.json: policies.payments.max_attempts: expected an integer >= 1, got "three"'),
        ('{"policies": {"payments": {"max_delay": -3}}}',
         'payments.json: policies.payments.max_delay: expected a duration such as "10s", got -3'),
        ('{"policies": {"payments": {"base_delay": "250mss"}}}',
         'payments.json: policies.payments.base_delay: expected a duration such as "10s", '
         'got "250mss" (unknown unit "mss"; use ns, us, ms, s, m or h)'),
        ('{"policies": {"payments": {"max_attempt": 3}}}',
         'payments.json: policies.payments.max_attempt: unknown field, did you mean '
         '"max_attempts"?'),
        ('{\n  "policies": {\n    "payments": {"max_attempts": 3,}\n  }\n}',
         "payments.json: line 3, column 36: invalid JSON: syntax error"),
        # The second "max_attempts" ends at column 50 of line 3.
        ('{\n  "policies": {\n    "payments": {"max_attempts": 3, "max_attempts": 5}\n  }\n}',
         'payments.json: line 3, column 50: duplicate key "max_attempts" (each key may appear '
         'once per object)'),
    ],
    ids=["wrong-type", "negative-duration", "unknown-unit", "unknown-field", "invalid-json",
         "duplicate-key"],
)
def test_malformed_input_gives_the_precise_message(text: str, message: str) -> None:
    registry = _core.PolicyRegistry()
    with pytest.raises(ValueError) as info:
        registry.load_string(text, "payments.json")
    assert str(info.value) == message


def test_missing_file_and_failed_reload_keep_the_old_policies(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.json")
    with pytest.raises(ValueError) as info:
        mulligan.load_config(missing)
    assert str(info.value) == (
        f"{missing}: cannot read the configuration file: No such file or directory")

    path = write(tmp_path, '{"policies": {"a": {"max_attempts": 4}}}')
    mulligan.load_config(path)
    held = mulligan.policy("a")
    write(tmp_path, '{"policies": {"a": {"max_attempts": 0}}}')
    with pytest.raises(ValueError) as info:
        mulligan.reload_config()
    assert str(info.value) == f"{path}: policies.a.max_attempts: expected an integer >= 1, got 0"
    assert mulligan.policy("a").attempts == 4
    write(tmp_path, '{"policies": {"a": {"max_attempts": 6}}}')
    assert mulligan.reload_config().policies == ("a",)
    assert mulligan.policy("a").attempts == 6
    assert held.attempts == 4  # a snapshot
    with pytest.raises(ValueError, match=r'no retry policy named "b" in .* \(known: a\)'):
        mulligan.policy("b")


def test_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, '{"policies": {"pay-ments": {}}}')
    with pytest.raises(ValueError, match="MULLIGAN_CONFIG is not set"):
        mulligan.load_config()
    monkeypatch.setenv("MULLIGAN_CONFIG", path)
    monkeypatch.setenv("MULLIGAN_POLICY_PAY_MENTS_MAX_ATTEMPTS", "7")
    monkeypatch.setenv("MULLIGAN_POLICY_PAY_MENTS_BASE_DELAY", "50ms")
    monkeypatch.setenv("MULLIGAN_POLICY_PAY_MENTS_DEADLINE", "1m")
    report = mulligan.load_config(None)
    p = mulligan.policy("pay-ments")
    assert (p.attempts, p.base_delay, p.deadline) == (7, 0.05, 60.0)
    assert report.warnings[0] == (
        f"{path}: policies.pay-ments.max_attempts: overridden by "
        "MULLIGAN_POLICY_PAY_MENTS_MAX_ATTEMPTS=7")
    monkeypatch.setenv("MULLIGAN_POLICY_PAY_MENTS_JITTER", "fuzzy")
    with pytest.raises(ValueError) as info:
        mulligan.reload_config()
    assert str(info.value) == (
        'environment: MULLIGAN_POLICY_PAY_MENTS_JITTER: expected one of "none", "full", '
        '"equal" or "proportional", got "fuzzy"')


def test_an_override_naming_no_policy_is_reported_not_applied(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, '{"policies": {"payments": {"max_attempts": 2}}}')
    monkeypatch.setenv("MULLIGAN_POLICY_PAYMNETS_MAX_ATTEMPTS", "7")  # the typo
    report = mulligan.load_config(path)
    assert mulligan.policy("payments").attempts == 2
    assert report.warnings == (
        f"{path}: MULLIGAN_POLICY_PAYMNETS_MAX_ATTEMPTS: names no policy of this document "
        "(policies: payments); not applied",)


def test_grpc_service_config_caps_max_attempts_and_says_so() -> None:
    report = mulligan.load_config(str(GRPC_EXAMPLE))
    assert report.policies == ("shop.Cart", "shop.Payments/Charge")
    assert report.warnings == (
        f"{GRPC_EXAMPLE}: methodConfig[0].retryPolicy.maxAttempts: 7 is capped at 5, as gRPC "
        "does (gRFC A6)",)
    p = mulligan.policy("shop.Payments/Charge")
    # gRFC A6 since August 2024: min(0.1 * 2^(n-1), 1.0) * random(0.8, 1.2), so the
    # longest wait (max_delay) is maxBackoff * 1.2.
    assert (p.attempts, p.backoff, p.jitter, p.jitter_fraction, p.base_delay, p.max_delay,
            p.multiplier) == (5, "exponential", "proportional", 0.2, 0.1, 1.2, 2.0)
    assert p.deadline == 10.0
    assert p.retryable_grpc_codes == ("UNAVAILABLE", "RESOURCE_EXHAUSTED")


def test_reload_while_calls_run_never_mixes_policies(tmp_path: Path) -> None:
    def variant(k: int) -> str:
        return json.dumps({"policies": {"p": {
            "max_attempts": k, "base_delay": f"{k * 10}ms", "max_delay": f"{k * 100}ms",
            "multiplier": k, "jitter": "proportional", "jitter_fraction": k / 10}}})

    path = write(tmp_path, variant(2))
    mulligan.load_config(path)
    stop = threading.Event()
    bad: list[Any] = []
    calls = [0]

    def caller() -> None:
        while not stop.is_set():
            p = mulligan.policy("p")
            k = p.attempts
            if not (k in (2, 3) and round(p.base_delay * 1000) == k * 10
                    and round(p.max_delay * 1000) == k * 100 and p.multiplier == k
                    and p.jitter_fraction == k / 10):
                bad.append(p)
            calls[0] += 1

    threads = [threading.Thread(target=caller) for _ in range(2)]
    for t in threads:
        t.start()
    for i in range(200):
        write(tmp_path, variant(3 if i % 2 else 2))
        mulligan.reload_config()
    stop.set()
    for t in threads:
        t.join()
    assert bad == [] and calls[0] > 0


def test_check_command(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert check_main([str(EXAMPLE), str(GRPC_EXAMPLE)], out, err) == 0
    assert out.getvalue() == (
        f"OK {EXAMPLE}: policies: payments, search; breakers: payments; clients: payments; "
        "budgets: (none); throttles: (none); bulkheads: (none); rate_limiters: (none); "
        "adaptive_rates: (none)\n"
        f"OK {GRPC_EXAMPLE}: policies: shop.Cart, shop.Payments/Charge; breakers: (none); "
        "clients: (none); budgets: (none); throttles: (none); bulkheads: (none); rate_limiters: (none); "
        "adaptive_rates: (none)\n"
        f"warning: {GRPC_EXAMPLE}: methodConfig[0].retryPolicy.maxAttempts: 7 is capped at 5, "
        "as gRPC does (gRFC A6)\n")
    assert err.getvalue() == ""

    bad = write(tmp_path, '{"policies": {"a": {"max_delay": -3, "jitter": 1}}}')
    out, err = io.StringIO(), io.StringIO()
    assert check_main([bad], out, err) == 1
    assert out.getvalue() == ""
    assert err.getvalue() == (
        f'{bad}: policies.a.max_delay: expected a duration such as "10s", got -3\n'
        f'{bad}: policies.a.jitter: expected one of "none", "full", "equal" or "proportional", '
        "got 1\n")
    assert check_main([], out, err) == 2


# --- the JSON Schema agrees with the loader -------------------------------------

jsonschema = pytest.importorskip("jsonschema")


def _validator() -> Any:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("example", [EXAMPLE, GRPC_EXAMPLE], ids=lambda p: p.name)
def test_examples_validate_against_the_schema(example: Path) -> None:
    errors = list(_validator().iter_errors(json.loads(example.read_text(encoding="utf-8"))))
    assert errors == []


@pytest.mark.parametrize(
    "doc",
    [
        {"policies": {"p": {"max_attempts": "three"}}},
        {"policies": {"p": {"max_delay": -3}}},
        {"policies": {"p": {"base_delay": "250mss"}}},
        {"policies": {"p": {"max_attempt": 3}}},
        {"breakers": {"b": {"reset_timeout": "0s"}}},
        {"clients": {"c": {"verify_tls": "yes"}}},
        {"version": 2},
        {"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3}}]},
    ],
)
def test_the_schema_and_the_loader_reject_the_same_documents(doc: dict[str, Any]) -> None:
    assert list(_validator().iter_errors(doc)) != []
    with pytest.raises(ValueError):
        _core.PolicyRegistry().load_string(json.dumps(doc), "doc.json")


def test_the_schema_lists_exactly_the_loader_fields() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    for section, probe in (("policy", "policies"), ("breaker", "breakers"),
                           ("client", "clients"), ("budget", "budgets"),
                           ("throttle", "throttles"), ("bulkhead", "bulkheads"),
                           ("rateLimiter", "rate_limiters")):
        fields = set(schema["$defs"][section]["properties"])
        with pytest.raises(ValueError) as info:
            _core.PolicyRegistry().load_string(
                json.dumps({probe: {"x": {"zzzzzzzzzzzz": 1}}}), "doc.json")
        listed = str(info.value).split("expected one of: ")[1].split("\n")[0]
        assert set(listed.split(", ")) == fields
