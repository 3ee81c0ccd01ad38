"""TLS verification end to end on loopback: on by default (a self-signed
certificate is refused as a TlsError, not retried), ``verify=False`` skips
it, and ``verify="ca.pem"`` trusts a private CA. The HTTPS server is Python's
http.server wrapped in ssl, with a certificate made by the openssl command."""

from __future__ import annotations

import http.server
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import mulligan


class _Ok(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        body = b"tls ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def https_server(tmp_path_factory: Any) -> Iterator[tuple[str, str]]:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    d = tmp_path_factory.mktemp("tls")
    cert, key = str(d / "cert.pem"), str(d / "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
         "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "https://127.0.0.1:%d/" % server.server_address[1], cert
    finally:
        server.shutdown()
        server.server_close()


def test_verification_is_on_by_default(https_server: tuple[str, str]) -> None:
    url, _ = https_server
    with pytest.raises(mulligan.TlsError) as info:
        mulligan.get(url, attempts=3, base_delay=0.01)
    assert info.value.kind == "tls_error"
    assert info.value.attempts == 1  # terminal: never retried


def test_verify_false_and_a_ca_bundle(https_server: tuple[str, str]) -> None:
    url, cert = https_server
    with mulligan.Client(verify=False) as c:
        assert c.get(url).text == "tls ok\n"
    with mulligan.Client(verify=cert) as c:  # the self-signed certificate is its own CA
        r = c.get(url)
        assert (r.status_code, r.text) == (200, "tls ok\n")
