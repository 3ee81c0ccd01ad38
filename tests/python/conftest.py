"""Shared fixtures of the Python suite.

``nginx`` starts the real nginx test server once per session
(tests/nginx/nginx_server.py, imported by path: it is not a package); the
end-to-end tests that use it are skipped cleanly only when nginx or its echo
module is not installed. ``load_vectors`` reads tests/vectors/*.json, the cases
the C++, C and Python suites share; ``mulligan_cmd`` is how tests run the
installed ``mulligan`` command. ``toxiproxy`` puts a real toxiproxy
(tests/toxiproxy/toxiproxy_server.py) in front of that nginx;
``raw_server`` is a loopback server that tells when a request has arrived. The tests sit in one folder per part
(retry/, breaker/, http/, idempotency/, telemetry/, config/, cli/, and
pipeline/ for what every front door must do alike); the package-wide checks
(surface, import graph, durations, typing) sit here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NGINX_SERVER_PY = os.path.join(TESTS_DIR, "nginx", "nginx_server.py")
TOXIPROXY_SERVER_PY = os.path.join(TESTS_DIR, "toxiproxy", "toxiproxy_server.py")
VECTORS_DIR = os.path.join(TESTS_DIR, "vectors")


def _load_by_path(name: str, path: str) -> Any:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def load_nginx_server_module() -> Any:
    return _load_by_path("mulligan_tests_nginx_server", NGINX_SERVER_PY)


def load_toxiproxy_server_module() -> Any:
    return _load_by_path("mulligan_tests_toxiproxy_server", TOXIPROXY_SERVER_PY)


def sigint_default() -> None:
    """A ``preexec_fn`` for a child a test interrupts with SIGINT: SIGINT's
    default disposition, as in a program started from a terminal. A child
    inherits an ignored SIGINT (a non-interactive shell's background job
    ignores it, POSIX "Signals and Error Handling"), and Python then installs
    no KeyboardInterrupt handler, so such a test would fail for how the test
    run was launched, not for mulligan."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def mulligan_cmd() -> list[str]:
    # The script installed with this interpreter's package (not another one on
    # PATH); `python -m mulligan` when it is not there.
    beside = os.path.join(os.path.dirname(sys.executable), "mulligan")
    found = beside if os.access(beside, os.X_OK) else shutil.which("mulligan")
    if found and os.path.dirname(found) != os.path.dirname(sys.executable):
        found = None
    return [found] if found else [sys.executable, "-m", "mulligan"]


def load_vectors(name: str) -> list[dict[str, Any]]:
    with open(os.path.join(VECTORS_DIR, name), encoding="utf-8") as f:
        cases: list[dict[str, Any]] = json.load(f)["cases"]
    return cases


@pytest.fixture(scope="session")
def nginx() -> Iterator[Any]:
    module = load_nginx_server_module()
    try:
        module.find_nginx()
        module.find_echo_module()
    except module.NginxError as e:
        pytest.skip(f"nginx is not installed: {e}")
    with module.NginxServer() as server:
        # nginx logs the start-up probe's request after answering it: wait for
        # that line so that it cannot land after a test cleared the log.
        server.wait_for_access_log(1)
        yield server


@pytest.fixture
def server(nginx: Any) -> Any:
    """The session's nginx with an empty access log.

    nginx writes a request's log line just after sending the response, so the
    previous test's last line may still be on its way: wait until the log has
    stopped growing (two quiet 20 ms polls) before emptying it.
    """
    path = nginx.access_log_path
    size, quiet = -1, 0
    for _ in range(100):
        current = os.path.getsize(path) if os.path.exists(path) else 0
        quiet = quiet + 1 if current == size else 0
        if quiet >= 2:
            break
        size = current
        time.sleep(0.02)
    nginx.clear_access_log()
    return nginx


class Toxiproxy:
    """The session's toxiproxy, with the proxy ``nginx`` to the test nginx.

    Attributes:
        server: the ToxiproxyServer (its API: add_toxic, remove_toxic, reset).
        port: the proxy's loopback port.
        nginx: the nginx behind it.
    """

    PROXY = "nginx"

    def __init__(self, server: Any, port: int, nginx: Any) -> None:
        self.server = server
        self.port = port
        self.nginx = nginx

    @property
    def base_url(self) -> str:
        return "http://127.0.0.1:%d" % self.port

    def url(self, path: str) -> str:
        """The URL of nginx's `path` through the proxy."""
        return self.base_url + path

    def add(self, kind: str, stream: str = "downstream", toxicity: float = 1.0,
            **attributes: Any) -> str:
        """Adds a toxic of type `kind` on `stream` ("downstream": nginx to
        the client, or "upstream") to a `toxicity` share of the connections;
        `attributes` are the toxic's (milliseconds, bytes, KB/s: see
        toxiproxy's README). Returns its name (for remove)."""
        return str(self.server.add_toxic(self.PROXY, kind, attributes, stream=stream,
                                         toxicity=toxicity))

    def remove(self, name: str) -> None:
        self.server.remove_toxic(self.PROXY, name)

    def reset(self) -> None:
        """Removes every toxic."""
        self.server.reset()


@pytest.fixture(scope="session")
def toxiproxy_session(nginx: Any) -> Iterator[Toxiproxy]:
    module = load_toxiproxy_server_module()
    try:
        module.find_toxiproxy()
    except module.ToxiproxyError as e:
        if os.environ.get("MULLIGAN_TOXIPROXY"):
            raise  # scripts/test.sh names the one scripts/setup.sh installed
        pytest.skip(str(e))
    with module.ToxiproxyServer() as server:
        port = server.create_proxy(Toxiproxy.PROXY, "127.0.0.1:%d" % nginx.port)
        yield Toxiproxy(server, port, nginx)


@pytest.fixture
def toxiproxy(toxiproxy_session: Toxiproxy, server: Any) -> Iterator[Toxiproxy]:
    """The proxy without toxics (before and after the test), in front of
    nginx with an empty access log."""
    toxiproxy_session.reset()
    yield toxiproxy_session
    toxiproxy_session.reset()


class RawServer:
    """A loopback HTTP server that tells the test when a request arrived.

    Each connection's request head is read; then the server answers
    `answer` (raw bytes) and keeps the connection open, or, when `answer`
    is None, never answers (a transfer that stays in flight until the
    client gives up). ``requests`` counts the heads received;
    ``wait_for_requests(n)`` blocks until n have arrived, so a test can act
    while a transfer is known to be in flight, whatever the load.

    Thread-safety: one accept thread; the counters are read under a lock.
    """

    def __init__(self, answer: bytes | None = None) -> None:
        self.answer = answer
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Condition()
        self._requests = 0
        self._connections: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def base_url(self) -> str:
        return "http://127.0.0.1:%d" % self.port

    @property
    def requests(self) -> int:
        with self._lock:
            return self._requests

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                self._connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        data = b""
        try:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
                while b"\r\n\r\n" in data:
                    _, data = data.split(b"\r\n\r\n", 1)
                    with self._lock:
                        self._requests += 1
                        self._lock.notify_all()
                    if self.answer is not None:
                        conn.sendall(self.answer)
        except OSError:
            return

    def wait_for_requests(self, count: int, timeout: float) -> int:
        """Waits until `count` request heads arrived or `timeout` seconds
        passed; returns how many arrived."""
        with self._lock:
            self._lock.wait_for(lambda: self._requests >= count, timeout)
            return self._requests

    def close(self) -> None:
        with self._lock:
            self._closed = True
            connections, self._connections = self._connections, []
        # shutdown() wakes the threads blocked in accept() and recv().
        for sock in [self._listener, *connections]:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


@pytest.fixture
def raw_server() -> Iterator[Any]:
    """A factory of RawServer(answer), closed after the test."""
    servers: list[RawServer] = []

    def make(answer: bytes | None = None) -> RawServer:
        servers.append(RawServer(answer))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


# --- redis-server (issue 16) --------------------------------------------------


def _redis_server_path() -> str | None:
    """The redis-server to run: $MULLIGAN_REDIS_SERVER (then it must work),
    else /usr/bin/redis-server (then its absence skips), else None."""
    required = os.environ.get("MULLIGAN_REDIS_SERVER")
    if required:
        return required
    return "/usr/bin/redis-server" if os.access("/usr/bin/redis-server", os.X_OK) else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pings(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith((b"+PONG", b"-NOAUTH"))
    except OSError:
        return False


class _ExitedAtStart(RuntimeError):
    """redis-server exited before answering PING (its port was taken, or it
    cannot run at all)."""


class RedisServer:
    """A real redis-server on a free loopback port, without persistence,
    started and stopped (SIGKILL, by PID) by the test."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.port = 0
        self.proc: Any = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Starts the server: on its port after a stop(), else on a free one.

        A free port is only free until someone binds it: another process (a
        parallel test's server, an outgoing connection's ephemeral port) may
        take it before redis-server does, which then exits at start. A first
        start tries up to 8 fresh ports, as tests/nginx/nginx_server.py does;
        a restart keeps its port (the clients' URLs name it).
        """
        if self.port:
            self._start_once()
            return
        for tries in range(8):
            self.port = _free_port()
            try:
                self._start_once()
                return
            except _ExitedAtStart:
                if tries == 7:
                    raise

    def _start_once(self) -> None:
        import subprocess

        self.proc = subprocess.Popen(
            [self.path, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--loglevel", "warning", "--dir", "/tmp"],
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            if _pings(self.port):
                return
            if self.proc.poll() is not None:
                raise _ExitedAtStart(
                    f"redis-server {self.path} exited at start (port {self.port})")
            time.sleep(0.01)
        self.stop()
        raise RuntimeError("redis-server did not answer PING within 5 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A fresh redis-server per test; skipped when none is installed, unless
    MULLIGAN_REDIS_SERVER names one (then failing to start it fails)."""
    path = _redis_server_path()
    if path is None:
        pytest.skip("redis-server is not installed at /usr/bin/redis-server (Debian "
                    "redis-server); set MULLIGAN_REDIS_SERVER to require it")
    server = RedisServer(path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
