"""Client(breaker={"key": ...}): what the HTTP clients key their breakers by
(origin, host, path, path templates, a callable), against the real nginx of
the session: a 503 from /down opens exactly the breaker of its key."""

from __future__ import annotations

import asyncio
from typing import Any, List, Optional, Tuple

import pytest

import mulligan


def opened(client: mulligan.Client, base: str, probe: str) -> Tuple[bool, Optional[str]]:
    """Gets /down (a 503 that opens its breaker), then `probe`: whether the
    probe was refused, and the refusal's breaker key."""
    assert client.get(base + "/down").status_code == 503
    try:
        client.get(base + probe)
    except mulligan.CircuitOpenError as e:
        return True, e.key
    return False, None


def make(key: Any) -> mulligan.Client:
    return mulligan.Client(attempts=1, breaker={"failure_threshold": 1, "key": key})


def test_the_origin_key_opens_for_every_path(server: Any) -> None:
    with make("origin") as client:
        assert opened(client, server.base_url, "/ok") == (True, server.base_url)


def test_the_path_key_opens_only_that_path(server: Any) -> None:
    with make("path") as client:
        assert opened(client, server.base_url, "/ok") == (False, None)
        with pytest.raises(mulligan.CircuitOpenError) as info:
            client.get(server.base_url + "/down")
        assert info.value.key == server.base_url + "/down"


def test_host_templates_and_callables(server: Any) -> None:
    with make("host") as client:
        assert opened(client, server.base_url, "/ok") == (True, "127.0.0.1")
    with make(["/ok", "/items/{id}"]) as client:
        # /down matches no template: the origin's breaker; /ok has its own.
        assert opened(client, server.base_url, "/ok") == (False, None)
        with pytest.raises(mulligan.CircuitOpenError) as info:
            client.get(server.base_url + "/flaky")
        assert info.value.key == server.base_url
    seen: List[Tuple[str, str]] = []

    def key(method: str, url: str) -> Optional[str]:
        seen.append((method, url))
        return "downstream" if url.endswith("/down") else None

    with make(key) as client:
        assert opened(client, server.base_url, "/ok") == (False, None)
        with pytest.raises(mulligan.CircuitOpenError) as info:
            client.get(server.base_url + "/down")
        assert info.value.key == "downstream"
    assert seen[0] == ("GET", server.base_url + "/down")


def test_the_async_client_shares_the_key(server: Any) -> None:
    async def run() -> Optional[str]:
        async with mulligan.AsyncClient(
            attempts=1, breaker={"failure_threshold": 1, "key": "path"}
        ) as client:
            assert (await client.get(server.base_url + "/down")).status_code == 503
            assert (await client.get(server.base_url + "/ok")).status_code == 200
            try:
                await client.get(server.base_url + "/down")
            except mulligan.CircuitOpenError as e:
                return e.key
        return None

    assert asyncio.run(run()) == server.base_url + "/down"


def test_bad_keys_are_refused_when_the_client_is_built() -> None:
    with pytest.raises(ValueError, match='must be "origin", "host", "path"'):
        make("url")
    with pytest.raises(ValueError, match="must start with '/'"):
        make(["users/{id}"])
    with pytest.raises(TypeError, match="non-empty list of str"):
        make([])
    with pytest.raises(TypeError, match="must be a str, a list of path templates or a callable"):
        make(3)


def test_a_key_function_must_return_a_string(server: Any) -> None:
    with make(lambda method, url: 42) as client:
        with pytest.raises(TypeError, match="returned int"):
            client.get(server.base_url + "/ok")
