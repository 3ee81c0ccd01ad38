"""Credentials never leave through what mulligan renders (docs/security.md).

A known secret, planted in a URL's userinfo, in sensitive query parameters
and in Authorization and Cookie headers, must never appear in any channel:
the exceptions (str, repr, notes, traceback), every log record (message and
every attribute), the events of mulligan.add_event_listener, the RetryEvent
of on_retry hooks, prometheus_text and metrics_json, the dashboard's
endpoints, and Headers' repr -- while the requests themselves still carry
it. Redirects to another origin carry none of it (libcurl's rules, checked
against two real nginx servers), sync and async. The command's output is
tests/python/cli/test_cli_redaction.py; the C ABI's last error,
tests/capi/http_test.c.
"""

from __future__ import annotations

import asyncio
import json
import logging
import pathlib
import re
import socket
import traceback
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import load_nginx_server_module

import mulligan
from mulligan._telemetry import metrics as _metrics

SECRET = "s3cr3t-9f2c"
# base64("user:s3cr3t-9f2c"): the Basic credentials of the URL's userinfo.
BASIC = "Basic dXNlcjpzM2NyM3QtOWYyYw=="
SECRET_HEADERS = {"Authorization": f"Bearer {SECRET}", "Cookie": f"sid={SECRET}"}
DOCS = pathlib.Path(__file__).resolve().parents[3] / "docs" / "security.md"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def secret_url(base: str, path: str) -> str:
    """``base`` + ``path`` with the secret as password, api_key and token."""
    scheme, rest = base.split("://", 1)
    return f"{scheme}://user:{SECRET}@{rest}{path}?api_key={SECRET}&token={SECRET}&q=1"


def masked_url(base: str, path: str) -> str:
    scheme, rest = base.split("://", 1)
    return f"{scheme}://[redacted]@{rest}{path}?api_key=[redacted]&token=[redacted]&q=1"


def assert_clean(*texts: Any) -> None:
    for text in texts:
        assert SECRET not in str(text), text


def exception_texts(exc: BaseException) -> list[str]:
    texts = [str(exc), repr(exc), repr(exc.args), *getattr(exc, "__notes__", [])]
    texts.append("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    texts.extend(repr(v) for k, v in vars(exc).items() if k != "response")
    return texts


class Captured:
    """Every log record of the ``mulligan`` logger and every engine event."""

    def __init__(self) -> None:
        self.records: list[logging.LogRecord] = []
        self.events: list[dict[str, Any]] = []

    def texts(self) -> list[str]:
        out = [repr(e) for e in self.events]
        for record in self.records:
            out.append(record.getMessage())
            out.extend(repr(value) for value in vars(record).values())
        return out

    def logged(self, event: str) -> list[logging.LogRecord]:
        return [r for r in self.records if getattr(r, "mulligan_event", None) == event]


class _ListHandler(logging.Handler):
    def __init__(self, sink: list[logging.LogRecord]) -> None:
        super().__init__(logging.DEBUG)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        self.sink.append(record)


@pytest.fixture
def captured() -> Iterator[Captured]:
    _metrics.reset_metrics()
    cap = Captured()
    handler = _ListHandler(cap.records)
    logger = logging.getLogger("mulligan")
    logger.addHandler(handler)
    listener = mulligan.add_event_listener(cap.events.append)
    try:
        yield cap
    finally:
        mulligan.remove_event_listener(listener)
        logger.removeHandler(handler)


@pytest.fixture
def default_rules() -> Iterator[None]:
    yield
    mulligan.set_redaction()


@pytest.fixture(scope="module")
def other_nginx() -> Iterator[Any]:
    """A second nginx: another origin (another port) for the redirect tests."""
    module = load_nginx_server_module()
    try:
        module.find_nginx()
        module.find_echo_module()
    except module.NginxError as e:
        pytest.skip(f"nginx is not installed: {e}")
    with module.NginxServer() as server:
        yield server


def get(async_: bool, url: str, **kwargs: Any) -> mulligan.Response:
    """One GET through a fresh Client, or AsyncClient in a fresh event loop."""
    if not async_:
        with mulligan.Client(**kwargs) as client:
            return client.get(url, headers=SECRET_HEADERS)

    async def main() -> mulligan.Response:
        async with mulligan.AsyncClient(**kwargs) as client:
            return await client.get(url, headers=SECRET_HEADERS)

    return asyncio.run(main())


SYNC_ASYNC = pytest.mark.parametrize("async_", [False, True], ids=["sync", "async"])


# -- redact_url and the rules ---------------------------------------------------


def test_redact_url_masks_userinfo_and_sensitive_parameters() -> None:
    cases = {
        "https://user:pw@api.example/v1?api_key=k&q=1": "https://[redacted]@api.example/v1?api_key=[redacted]&q=1",
        "https://tok@h/": "https://[redacted]@h/",
        "http://h/?Token=a&X-Amz-Signature=b&sig=c&state=d": (
            "http://h/?Token=[redacted]&X-Amz-Signature=[redacted]&sig=[redacted]&state=d"
        ),
        "http://h/cb#access_token=t&x=1": "http://h/cb#access_token=[redacted]&x=1",
        "http://host/@alice?mail=a@b": "http://host/@alice?mail=a@b",
        "user:pw@host": "[redacted]@host",
        "http://user:pa/ss@host/": "http://[redacted]@host/",
        "http://h/plain": "http://h/plain",
        # Any str crosses, a lone surrogate included.
        "http://u:\udcff@h/?token=\udcfe&q=\u00e9": "http://[redacted]@h/?token=[redacted]&q=\u00e9",
    }
    for url, expected in cases.items():
        assert mulligan.redact_url(url) == expected, url
    with pytest.raises(TypeError, match="url must be a str, got bytes"):
        mulligan.redact_url(b"http://u:p@h/")  # type: ignore[arg-type]


def test_the_default_rules_and_the_marker() -> None:
    rules = mulligan.redaction()
    assert rules == mulligan.RedactionRules()
    assert rules.query_params == (
        "access_token", "refresh_token", "id_token", "client_secret", "api_key", "apikey", "key",
        "token", "private_token", "auth", "password", "secret", "signature", "sig",
        "x-amz-signature", "x-amz-security-token", "x-goog-signature",
    )
    assert rules.extra_headers == ()
    assert mulligan.RedactionRules.ALWAYS_MASKED_HEADERS == (
        "authorization", "proxy-authorization", "cookie", "set-cookie")


def test_set_redaction_replaces_the_rules_and_returns_the_old_ones(default_rules: None) -> None:
    previous = mulligan.set_redaction(query_params=["session"], extra_headers=["X-Api-Key"])
    assert previous == mulligan.RedactionRules()
    assert mulligan.redaction() == mulligan.RedactionRules(("session",), ("X-Api-Key",))
    assert mulligan.redact_url("http://h/?token=a&SESSION=b") == "http://h/?token=a&SESSION=[redacted]"
    headers = mulligan.Headers([("x-api-key", SECRET), ("Cookie", SECRET), ("Accept", "*/*")])
    assert repr(headers) == (
        "Headers([('x-api-key', '[redacted]'), ('Cookie', '[redacted]'), ('Accept', '*/*')])")
    # Adding to the defaults, then back to them.
    mulligan.set_redaction(query_params=(*mulligan.RedactionRules.DEFAULT_QUERY_PARAMS, "session"))
    assert mulligan.redact_url("http://h/?token=a&session=b") == (
        "http://h/?token=[redacted]&session=[redacted]")
    assert repr(mulligan.Headers([("x-api-key", "v")])) == "Headers([('x-api-key', 'v')])"
    mulligan.set_redaction()
    assert mulligan.redaction() == mulligan.RedactionRules()


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"query_params": "token"}, TypeError, "query_params must be an iterable of str, got 'token'"),
        ({"query_params": [1]}, TypeError, "query_params entries must be str, got int"),
        ({"extra_headers": "X-Key"}, TypeError, "extra_headers must be an iterable of str"),
        ({"query_params": ["ok", ""]}, ValueError, r"query_params\[1\] is empty"),
        ({"query_params": ["a\nb"]}, ValueError, r"query_params\[0\] contains a control character"),
        ({"query_params": ["\udcff"]}, ValueError, r"query_params\[0\] is not valid Unicode"),
        ({"extra_headers": ["X Key"]}, ValueError, "extra_headers entry 'X Key' is not a header field name"),
        ({"extra_headers": [""]}, ValueError, "extra_headers entry '' is not a header field name"),
    ],
)
def test_bad_rules_are_refused_and_change_nothing(
    default_rules: None, kwargs: dict[str, Any], error: type, message: str
) -> None:
    mulligan.set_redaction(query_params=["session"])
    with pytest.raises(error, match="mulligan.set_redaction: " + message):
        mulligan.set_redaction(**kwargs)
    assert mulligan.redaction() == mulligan.RedactionRules(("session",), ())


def test_the_docs_explain_every_default_entry() -> None:
    text = DOCS.read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([^`]+)` \| \S", text, flags=re.MULTILINE))
    expected = set(mulligan.RedactionRules.DEFAULT_QUERY_PARAMS)
    expected |= set(mulligan.RedactionRules.ALWAYS_MASKED_HEADERS)
    assert rows == expected
    assert "`[redacted]`" in text


# -- the channels ---------------------------------------------------------------


@SYNC_ASYNC
def test_a_call_that_gives_up_shows_no_secret_anywhere(captured: Captured, async_: bool) -> None:
    port = closed_port()
    origin = f"http://127.0.0.1:{port}"
    hooked: list[mulligan.RetryEvent] = []
    with pytest.raises(mulligan.ConnectionRefused) as info:
        get(async_, secret_url(origin, "/x"), attempts=2, base_delay=0.0,
            on_retry=hooked.append)
    exc = info.value
    assert exc.attempts == 2
    assert str(exc).startswith(f"GET {masked_url(origin, '/x')}: connection refused after 2 attempts")
    assert_clean(*exception_texts(exc))
    # Logs: one retry, one give-up, the URL masked in the message and fields.
    (retry,) = captured.logged("retry_scheduled")
    (gave_up,) = captured.logged("gave_up")
    assert retry.mulligan_url == gave_up.mulligan_url == masked_url(origin, "/x")  # type: ignore[attr-defined]
    assert masked_url(origin, "/x") in retry.getMessage()
    # The hook's event, the engine's events and the metrics.
    assert [e.url for e in hooked] == [masked_url(origin, "/x")]
    assert_clean(*(repr(e) for e in hooked))
    assert captured.events and {e["name"] for e in captured.events} == {origin}
    assert_clean(*captured.texts())
    prometheus, metrics = mulligan.prometheus_text(), mulligan.metrics_json()
    assert_clean(prometheus, metrics)
    assert f'name="{origin}"' in prometheus
    assert origin in {m["name"] for m in json.loads(metrics)["metrics"]}


@SYNC_ASYNC
def test_give_up_and_status_errors_show_no_secret(server: Any, captured: Captured, async_: bool) -> None:
    url = secret_url(server.base_url, "/down")
    if async_:
        async def main() -> None:
            async with mulligan.AsyncClient(attempts=2, base_delay=0.0) as c:
                await c.get(url, headers=SECRET_HEADERS, raise_on_give_up=True)

        with pytest.raises(mulligan.RetriesExhausted) as info:
            asyncio.run(main())
    else:
        with mulligan.Client(attempts=2, base_delay=0.0) as c:
            with pytest.raises(mulligan.RetriesExhausted) as info:
                c.get(url, headers=SECRET_HEADERS, raise_on_give_up=True)
    exc = info.value
    assert str(exc) == (f"gave up on GET {masked_url(server.base_url, '/down')} after 2 attempts "
                        "(attempts_exhausted): last status 503")
    assert_clean(*exception_texts(exc), *captured.texts())
    # The documented attribute for code keeps the URL as sent.
    assert exc.response is not None and exc.response.url == url
    with pytest.raises(mulligan.HTTPStatusError) as status_error:
        exc.response.raise_for_status()
    assert str(status_error.value) == (
        f"503 server error for {masked_url(server.base_url, '/down')} after 2 attempts")
    assert_clean(*exception_texts(status_error.value))


def test_a_refusing_breaker_shows_no_secret(server: Any, captured: Captured) -> None:
    url = secret_url(server.base_url, "/down")
    with mulligan.Client(attempts=1, breaker={"failure_threshold": 1}) as c:
        assert c.get(url, headers=SECRET_HEADERS).status_code == 503
        with pytest.raises(mulligan.CircuitOpenError) as info:
            c.get(url, headers=SECRET_HEADERS)
    exc = info.value
    assert exc.name == exc.key == f"http://127.0.0.1:{server.port}"
    assert str(exc).startswith(f"GET {masked_url(server.base_url, '/down')}: circuit open")
    assert_clean(*exception_texts(exc), *captured.texts())
    assert [e["to_state"] for e in captured.events if e["kind"] == "breaker_transition"] == ["open"]


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (f"http://user:{SECRET}@127.0.0.1:bad/", "the port is not a number in [0, 65535]"),
        (f"http://user:pa/{SECRET}@127.0.0.1/", "the port is not a number in [0, 65535]"),
        (f"ftp://user:{SECRET}@127.0.0.1/", "the scheme must be http or https"),
        (f"http://user:{SECRET}@/x", "no host"),
        (f"http://user:{SECRET} x@127.0.0.1/", "contains whitespace or control characters"),
        (f"http://[::1/?token={SECRET}", "a malformed host (IPv6 brackets or characters)"),
    ],
)
def test_malformed_urls_are_quoted_masked(url: str, reason: str) -> None:
    with mulligan.Client(attempts=1) as c:
        with pytest.raises(ValueError) as info:
            c.get(url)
    assert str(info.value).endswith(": " + reason)
    assert "[redacted]" in str(info.value)
    assert_clean(*exception_texts(info.value))


def test_headers_repr_masks_the_sensitive_fields(server: Any) -> None:
    r = mulligan.get(server.url("/headers"))
    assert r.headers.get_all("set-cookie") == ["a=1", "b=2; Path=/"]  # reading works
    shown = repr(r.headers)
    assert "('Set-Cookie', '[redacted]')" in shown and "a=1" not in shown
    assert "('X-Colon', 'a: b:c')" in shown
    fields = [("Authorization", f"Bearer {SECRET}"), ("proxy-authorization", SECRET),
              ("COOKIE", SECRET), ("Set-Cookie", SECRET), ("Accept", "*/*")]
    assert repr(mulligan.Headers(fields)) == (
        "Headers([('Authorization', '[redacted]'), ('proxy-authorization', '[redacted]'), "
        "('COOKIE', '[redacted]'), ('Set-Cookie', '[redacted]'), ('Accept', '*/*')])")


def test_a_malformed_header_item_is_not_quoted() -> None:
    with pytest.raises(TypeError) as info:
        mulligan.get("http://127.0.0.1:9/", headers=[("Authorization", "Bearer", SECRET)])  # type: ignore[list-item]
    assert str(info.value) == "headers must be a mapping or (name, value) pairs, got a tuple of 3 items"


def test_the_dashboard_shows_no_secret(server: Any, captured: Captured) -> None:
    dashboard = mulligan.start_dashboard(port=0)
    try:
        url = secret_url(server.base_url, "/down")
        with mulligan.Client(attempts=2, base_delay=0.0, breaker={"failure_threshold": 1}) as c:
            c.get(url, headers=SECRET_HEADERS)
            with pytest.raises(mulligan.CircuitOpenError):
                c.get(url, headers=SECRET_HEADERS)
        bodies = []
        for path in ("metrics.json", "metrics"):
            with urllib.request.urlopen(dashboard.url + path, timeout=5) as response:
                bodies.append(response.read().decode())
    finally:
        dashboard.stop()
    assert_clean(*bodies)
    doc = json.loads(bodies[0])
    origin = f"http://127.0.0.1:{server.port}"
    assert origin in {m["name"] for m in doc["metrics"]}
    assert [t["name"] for t in doc["transitions"]] == [origin]


# -- what is sent ------------------------------------------------------------------


@SYNC_ASYNC
def test_the_request_still_carries_the_credentials(server: Any, async_: bool) -> None:
    url = f"http://user:{SECRET}@127.0.0.1:{server.port}/credentials?api_key={SECRET}"
    if async_:
        async def main() -> mulligan.Response:
            async with mulligan.AsyncClient() as c:
                return await c.get(url)

        r = asyncio.run(main())
    else:
        r = mulligan.get(url)
    assert f"authorization={BASIC}\n" in r.text
    (entry,) = server.wait_for_requests("/credentials", 1)
    assert entry["uri"] == f"/credentials?api_key={SECRET}"


def empty_credentials(host: str) -> str:
    return f"authorization=\ncookie=\nproxy_authorization=\nhost={host}\n"


@SYNC_ASYNC
def test_a_redirect_to_another_origin_carries_no_credentials(
    server: Any, other_nginx: Any, async_: bool
) -> None:
    target = other_nginx.url("/credentials")
    # Authorization and Cookie headers.
    r = get(async_, server.url("/redirect-to?to=" + target), follow_redirects=True)
    assert (r.status_code, r.url) == (200, target)
    assert r.text == empty_credentials(f"127.0.0.1:{other_nginx.port}")
    # The URL's userinfo.
    with_userinfo = f"http://user:{SECRET}@127.0.0.1:{server.port}/redirect-to?to={target}"
    r = get(async_, with_userinfo, follow_redirects=True)
    assert r.text == empty_credentials(f"127.0.0.1:{other_nginx.port}")
    # Another host name on the same port is another origin too.
    target = f"http://localhost:{server.port}/credentials"
    r = get(async_, server.url("/redirect-to?to=" + target), follow_redirects=True)
    assert r.text == empty_credentials(f"localhost:{server.port}")


@SYNC_ASYNC
def test_a_redirect_within_the_origin_keeps_the_credentials(server: Any, async_: bool) -> None:
    target = server.url("/credentials")
    r = get(async_, server.url("/redirect-to?to=" + target), follow_redirects=True)
    assert r.text == (f"authorization=Bearer {SECRET}\ncookie=sid={SECRET}\n"
                      f"proxy_authorization=\nhost=127.0.0.1:{server.port}\n")
    with_userinfo = f"http://user:{SECRET}@127.0.0.1:{server.port}/redirect-to?to={target}"
    if async_:
        async def main() -> mulligan.Response:
            async with mulligan.AsyncClient(follow_redirects=True) as c:
                return await c.get(with_userinfo)

        r = asyncio.run(main())
    else:
        r = mulligan.get(with_userinfo, follow_redirects=True)
    assert f"authorization={BASIC}\n" in r.text
