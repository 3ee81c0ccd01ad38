"""Which requests the HTTP clients replay: method_rule ("idempotent",
"safe", "strict") and urllib3's allowed_methods (None = every method, a list
= exactly those), against the real nginx of conftest.py (/down answers 503).

Expected counts follow the rules as DESIGN.md section 5 and urllib3's Retry
documentation state them: a replayed request makes all 3 attempts, one that
is not makes 1 (a 503 means its bytes were sent).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import mulligan

FAST = {"base_delay": 0.01, "max_delay": 0.05, "attempts": 3}


def test_safe_rule_replays_get_and_keyed_requests_only(server: Any) -> None:
    with mulligan.Client(method_rule="safe", **FAST) as c:
        assert c.get(server.url("/down")).attempts == 3
        assert c.options(server.url("/down")).attempts == 3
        assert c.post(server.url("/down"), idempotency_key=True).attempts == 3  # strict: 1
        assert c.put(server.url("/down")).attempts == 1  # idempotent, but not safe
        assert c.delete(server.url("/down")).attempts == 1
        assert c.post(server.url("/down")).attempts == 1
        assert c.put(server.url("/down"), idempotency_key=True).attempts == 3


def test_allowed_methods_list_replays_exactly_those(server: Any) -> None:
    with mulligan.Client(allowed_methods=["get", "POST"], **FAST) as c:
        assert c.get(server.url("/down")).attempts == 3
        assert c.post(server.url("/down")).attempts == 3  # no key needed: the list says so
        assert c.put(server.url("/down")).attempts == 1
        assert c.delete(server.url("/down"), idempotency_key=True).attempts == 1  # a key adds none


def test_allowed_methods_none_replays_every_method(server: Any) -> None:
    with mulligan.Client(allowed_methods=None, **FAST) as c:
        assert c.post(server.url("/down")).attempts == 3
        assert c.patch(server.url("/down")).attempts == 3
        # strict on the request still wins.
        assert c.post(server.url("/down"), strict=True).attempts == 1


def test_async_client_has_the_same_rules(server: Any) -> None:
    async def main() -> list[int]:
        async with mulligan.AsyncClient(method_rule="safe", **FAST) as c:
            keyed = await c.post(server.url("/down"), idempotency_key=True)
            put = await c.put(server.url("/down"))
        async with mulligan.AsyncClient(allowed_methods=["PATCH"], **FAST) as c:
            patch = await c.patch(server.url("/down"))
            get = await c.get(server.url("/down"))
        return [keyed.attempts, put.attempts, patch.attempts, get.attempts]

    assert asyncio.run(main()) == [3, 1, 3, 1]


def test_bad_rules_raise_at_construction() -> None:
    with pytest.raises(ValueError, match="method_rule must be 'idempotent', 'safe' or 'strict'"):
        mulligan.Client(method_rule="paranoid")
    with pytest.raises(TypeError, match="allowed_methods must be None or an iterable"):
        mulligan.Client(allowed_methods="GET")
    with pytest.raises(TypeError, match="allowed_methods must hold str"):
        mulligan.Client(allowed_methods=[1])
    with pytest.raises(ValueError, match="allowed_methods must hold HTTP methods"):
        mulligan.Client(allowed_methods=["GE T"])
    with pytest.raises(ValueError, match="allowed_methods must hold HTTP methods"):
        mulligan.AsyncClient(allowed_methods=["GE T"])


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_separate_retry_counts_per_kind(server: Any) -> None:
    # urllib3's Retry(total=5, status=1): one retry of a 503, then stop.
    with mulligan.Client(status_retries=1, base_delay=0.01, attempts=5) as c:
        r = c.get(server.url("/down"))
        assert (r.status_code, r.attempts, r.stop_reason) == (503, 2, "attempts_exhausted")
    # Retry(connect=0): a refused connection is not retried; statuses still are.
    with mulligan.Client(connect_retries=0, base_delay=0.01, attempts=3) as c:
        with pytest.raises(mulligan.ConnectionRefused) as info:
            c.get("http://127.0.0.1:%d/" % _closed_port())
        assert info.value.attempts == 1
        assert c.get(server.url("/down")).attempts == 3
    with pytest.raises(ValueError, match="read_retries must be in"):
        mulligan.Client(read_retries=-1)


def test_config_client_fields_reach_the_client(server: Any, tmp_path: Any) -> None:
    path = tmp_path / "m.json"
    path.write_text(
        '{"policies": {"p": {"max_attempts": 4, "base_delay": "10ms", "status_retries": 2,'
        ' "wait": {"constant": "10ms"}}},'
        ' "clients": {"safe": {"policy": "p", "method_rule": "safe"},'
        '             "every": {"policy": "p", "allowed_methods": null},'
        '             "listed": {"policy": "p", "allowed_methods": ["PATCH"]}}}'
    )
    mulligan.load_config(str(path))
    with mulligan.Client(policy="safe") as c:
        assert c.put(server.url("/down")).attempts == 1
        assert c.post(server.url("/down"), idempotency_key=True).attempts == 3  # status_retries 2
    with mulligan.Client(policy="every") as c:
        assert c.post(server.url("/down")).attempts == 3
    with mulligan.Client(policy="listed") as c:
        assert c.patch(server.url("/down")).attempts == 3
        assert c.get(server.url("/down")).attempts == 1
