"""mulligan.Client and AsyncClient: every method with keyword arguments, query
strings joined onto every form of URL, and Response.raise_for_status at the
4xx and 5xx boundaries. Against the real nginx of conftest.py (loopback).

Written against surviving mutants of scripts/mutation.sh (a method given
keyword arguments sent under another name or without them, a query joined
with the wrong separator, a 400 not raised). Expected values are the request
lines and statuses HTTP defines (RFC 9110: 4xx client errors, 5xx server
errors).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import mulligan
from mulligan import Headers, Response

METHODS = ("get", "post", "put", "patch", "delete", "options")


def inspect(body: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in body.splitlines() if "=" in line)


def test_every_method_with_keyword_arguments_sends_its_name_and_them(server: Any) -> None:
    with mulligan.Client() as c:
        for name in METHODS:
            r = getattr(c, name)(server.url("/inspect"), params={"m": name}, timeout=5.0)
            assert r.status_code == 200, name
            assert inspect(r.text)["method"] == name.upper()
            assert inspect(r.text)["args"] == f"m={name}"
        r = c.head(server.url("/ok"), params={"m": "head"}, timeout=5.0)
        assert (r.status_code, r.content) == (200, b"")
        assert r.url == server.url("/ok?m=head")
    methods = [e["method"] for e in server.wait_for_requests("/inspect", len(METHODS))]
    assert methods == [m.upper() for m in METHODS]
    assert [e["method"] for e in server.wait_for_requests("/ok", 1)] == ["HEAD"]


def test_every_async_method_with_keyword_arguments_sends_its_name_and_them(server: Any) -> None:
    async def main() -> list[tuple[int, str, str]]:
        out = []
        async with mulligan.AsyncClient() as c:
            for name in METHODS:
                r = await getattr(c, name)(server.url("/inspect"), params={"m": name}, timeout=5.0)
                fields = inspect(r.text)
                out.append((r.status_code, fields["method"], fields["args"]))
            r = await c.head(server.url("/ok"), params={"m": "head"}, timeout=5.0)
            out.append((r.status_code, "HEAD", r.url))
        return out

    assert asyncio.run(main()) == [(200, m.upper(), f"m={m}") for m in METHODS] + [
        (200, "HEAD", server.url("/ok?m=head"))
    ]


@pytest.mark.parametrize(
    ("path", "params", "args"),
    [
        ("/inspect", "?a=1", "a=1"),             # a leading "?" in a string is dropped
        ("/inspect", "a=1&b=2", "a=1&b=2"),
        ("/inspect?", {"a": 1}, "a=1"),          # the URL already ends its path with "?"
        ("/inspect?x=1&", {"a": 1}, "x=1&a=1"),  # ...or its query with "&"
        ("/inspect?x=1", {"a": 1}, "x=1&a=1"),
        ("/inspect", {"a": None}, ""),           # nothing to add: the URL is unchanged
        ("/inspect?x=1", "", "x=1"),
    ],
)
def test_params_are_joined_onto_every_form_of_url(server: Any, path: str, params: Any,
                                                  args: str) -> None:
    with mulligan.Client() as c:
        r = c.get(server.url(path), params=params)
    assert inspect(r.text)["args"] == args


def test_a_fragment_stays_after_the_added_query(server: Any) -> None:
    with mulligan.Client() as c:
        r = c.get(server.url("/inspect#part"), params={"a": 1})
    assert inspect(r.text)["args"] == "a=1"
    assert server.wait_for_requests("/inspect", 1)[0]["uri"] == "/inspect?a=1"


# --- Response ----------------------------------------------------------------------


def response(status: int, attempts: int = 1) -> Response:
    return Response(status, Headers(), b"", attempts=attempts, url="http://h/p")


def test_statuses_below_400_do_not_raise() -> None:
    for status in (200, 304, 399):
        response(status).raise_for_status()


@pytest.mark.parametrize(
    ("status", "attempts", "message"),
    [
        (400, 1, "400 client error for http://h/p after 1 attempt"),
        (499, 2, "499 client error for http://h/p after 2 attempts"),
        (500, 3, "500 server error for http://h/p after 3 attempts"),
        (599, 1, "599 server error for http://h/p after 1 attempt"),
    ],
)
def test_4xx_and_5xx_raise_with_their_class_and_attempts(status: int, attempts: int,
                                                         message: str) -> None:
    r = response(status, attempts)
    with pytest.raises(mulligan.HTTPStatusError) as info:
        r.raise_for_status()
    assert str(info.value) == message
    assert info.value.response is r


def test_a_response_built_by_hand_has_the_documented_defaults() -> None:
    r = Response(204, Headers([("X-A", "1")]), b"")
    assert (r.status_code, r.attempts, r.elapsed, r.url, r.idempotency_key, r.stop_reason) == (
        204, 1, 0.0, "", None, "succeeded")
    assert r.headers["x-a"] == "1"


# --- AsyncClient.request: per-request switches ------------------------------------


def test_async_per_request_switches_override_the_clients(server: Any) -> None:
    """follow_redirects, max_redirects, strict, on_retry and raise_on_give_up
    given to one request apply to it (the client's defaults are the opposite)."""
    fast = {"base_delay": 0.01, "max_delay": 0.05}

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        seen: list[int] = []
        async with mulligan.AsyncClient(attempts=3, strict=True, **fast) as c:
            r = await c.get(server.url("/redirect"))
            out["default"] = r.status_code
            r = await c.get(server.url("/redirect"), follow_redirects=True)
            out["followed"] = (r.status_code, r.url)
            try:
                await c.get(server.url("/redirect-loop"), follow_redirects=True, max_redirects=2)
            except mulligan.TransportError as e:
                out["loop"] = (e.kind, e.attempts)
            out["strict"] = (await c.put(server.url("/down"))).attempts
            out["not_strict"] = (await c.put(server.url("/down"), strict=False)).attempts
            r = await c.request("GET", server.url("/down"),
                                on_retry=lambda event: seen.append(event.attempt))
            out["hook"] = (r.attempts, seen)
            try:
                await c.get(server.url("/down"), raise_on_give_up=True)
            except mulligan.RetriesExhausted as e:
                out["raised"] = (e.attempts, e.stop_reason)
        return out

    assert asyncio.run(main()) == {
        "default": 302,
        "followed": (200, server.url("/ok")),
        "loop": ("terminal", 1),
        "strict": 1,              # PUT under strict=True: not retried
        "not_strict": 3,
        "hook": (3, [1, 2]),      # the hook sees the two failed attempts that are retried
        "raised": (3, "attempts_exhausted"),
    }


def test_a_request_header_replaces_the_clients_default_whatever_its_case(server: Any) -> None:
    with mulligan.Client(headers={"Content-Type": "text/plain"}) as c:
        r = c.post(server.url("/inspect"), data=b"x", headers={"content-type": "application/x-raw"})
        assert inspect(r.text)["content_type"] == "application/x-raw"
        r = c.post(server.url("/inspect"), data=b"x")
        assert inspect(r.text)["content_type"] == "text/plain"
        with pytest.raises(ValueError, match="pass data= or json=, not both"):
            c.post(server.url("/inspect"), data=b"x", json={"a": 1})


def test_every_async_method_without_keyword_arguments_sends_its_name(server: Any) -> None:
    async def main() -> list[tuple[int, str]]:
        async with mulligan.AsyncClient() as c:
            out = []
            for name in METHODS:
                r = await getattr(c, name)(server.url("/inspect"))
                out.append((r.status_code, inspect(r.text)["method"]))
            r = await c.head(server.url("/ok"))
            out.append((r.status_code, r.url))
            return out

    assert asyncio.run(main()) == [(200, m.upper()) for m in METHODS] + [(200, server.url("/ok"))]
    assert [e["method"] for e in server.wait_for_requests("/ok", 1)] == ["HEAD"]


def test_headers_accept_a_mapping_and_pairs_alike() -> None:
    from_mapping = Headers({"Authorization": "Bearer T", "Content-Type": "text/plain"})
    from_pairs = Headers([("Authorization", "Bearer T"), ["Content-Type", "text/plain"]])
    for h in (from_mapping, from_pairs):
        assert len(h) == 2
        assert h["content-type"] == "text/plain"
        assert h.items_raw() == [("Authorization", "Bearer T"), ("Content-Type", "text/plain")]
        assert repr(h) == "Headers([('Authorization', '[redacted]'), ('Content-Type', 'text/plain')])"
    assert len(Headers()) == 0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ("Authorization: x", "fields must be a mapping or (name, value) pairs, got str"),
        (b"ab", "fields must be a mapping or (name, value) pairs, got bytes"),
        (42, "fields must be a mapping or (name, value) pairs, got int"),
        ([("a", "b", "c")], "each field must be a (name, value) pair of str, got a 3-item tuple"),
        (["ab"], "each field must be a (name, value) pair of str, got a str"),
        ([("a", 1)], "each field must be a (name, value) pair of str, got a 2-item tuple"),
        ({"a": None}, "each field must be a (name, value) pair of str, got a 2-item tuple"),
    ],
)
def test_headers_refuse_other_shapes_at_construction(fields: Any, message: str) -> None:
    with pytest.raises(TypeError) as error:
        Headers(fields)
    assert str(error.value) == "Headers: " + message
