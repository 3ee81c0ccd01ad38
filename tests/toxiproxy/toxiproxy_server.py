#!/usr/bin/env python3
"""A real Toxiproxy server on loopback, and its HTTP API (stdlib only).

Toxiproxy (github.com/Shopify/toxiproxy, a Go program that scripts/setup.sh
installs with ``go install``) is a TCP proxy that injects faults on demand:
latency, stalls (``timeout``), resets (``reset_peer``), slicing, byte limits
(``limit_data``), slow closes and bandwidth caps. The tests put it between
the clients and the test nginx (tests/nginx/nginx_server.py).

Used three ways:

- imported by the pytest fixtures (tests/python/conftest.py), as a class:
  ``ToxiproxyServer().start()``, ``create_proxy(name, upstream)``,
  ``add_toxic(...)``, ``remove_toxic(...)``, ``reset()``, ``stop()``;
- as a command for the C and C++ tests (tests/capi/toxiproxy_fixture.h)::

      toxiproxy_server.py serve --upstream 127.0.0.1:PORT --port-file FILE

  which starts the server, creates the proxy ``nginx`` to ``--upstream``,
  writes ``<api port> <proxy port>`` to FILE, and stops the server when its
  standard input closes (or on SIGTERM / SIGINT);
- ``toxiproxy_server.py find`` prints the binary it would run.

The binary is ``$MULLIGAN_TOXIPROXY`` when set (then it must exist), else
``.tools/toxiproxy/server`` in the repository (where scripts/setup.sh puts
it), else ``toxiproxy-server`` on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Dict, Optional

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))

# Toxiproxy's API never goes through a proxy from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ToxiproxyError(RuntimeError):
    """Toxiproxy is missing, did not start, or its API refused a request."""


def find_toxiproxy() -> str:
    """Returns the path of the toxiproxy server binary.

    Raises:
        ToxiproxyError: none found (or $MULLIGAN_TOXIPROXY names a missing file).
    """
    explicit = os.environ.get("MULLIGAN_TOXIPROXY")
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise ToxiproxyError(f"MULLIGAN_TOXIPROXY={explicit} is not an executable file")
        return explicit
    local = os.path.join(_REPO, ".tools", "toxiproxy", "server")
    if os.access(local, os.X_OK):
        return local
    on_path = shutil.which("toxiproxy-server")
    if on_path:
        return on_path
    raise ToxiproxyError(
        "toxiproxy is not installed: scripts/setup.sh installs it into .tools/toxiproxy "
        "(go install github.com/Shopify/toxiproxy/v2/cmd/server)"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ToxiproxyServer:
    """A toxiproxy server process with its API on 127.0.0.1.

    Args:
        seed: seeds toxiproxy's own randomness (which connections a toxic
            with a toxicity below 1 applies to, latency jitter); None for
            toxiproxy's default (the clock).
        log_level: toxiproxy's LOG_LEVEL ("warn" by default: at "info" it
            logs every connection). Its log goes to a temporary file (a pipe
            nobody reads would fill up and stall it), quoted when it fails
            to start.

    Attributes (valid after start()):
        api_port: the port of the HTTP API.
        api: "http://127.0.0.1:<api_port>".

    Thread-safety: the API calls may be made from any thread (each is one
    HTTP request); start() and stop() from one.
    """

    def __init__(self, seed: Optional[int] = None, log_level: str = "warn") -> None:
        self.api_port = 0
        self.seed = seed
        self.log_level = log_level
        self._proc: Optional["subprocess.Popen[bytes]"] = None
        self._log: Optional[Any] = None

    @property
    def api(self) -> str:
        return "http://127.0.0.1:%d" % self.api_port

    def start(self, timeout: float = 15.0) -> "ToxiproxyServer":
        """Starts the server on a free port and waits until its API answers.

        Raises:
            ToxiproxyError: no binary, or the API did not answer in `timeout` s.
        """
        binary = find_toxiproxy()
        deadline = time.monotonic() + timeout
        last = ""
        command = [binary, "-host", "127.0.0.1"]
        if self.seed is not None:
            command += ["-seed", str(self.seed)]
        env = {**os.environ, "LOG_LEVEL": self.log_level}
        for _ in range(8):  # another process may take the port in between
            self.api_port = _free_port()
            self._log = tempfile.TemporaryFile()
            self._proc = subprocess.Popen(
                command + ["-port", str(self.api_port)],
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # a Ctrl-C meant for the test runner is not its
            )
            while time.monotonic() < deadline and self._proc.poll() is None:
                try:
                    self._request("GET", "/version")
                    return self
                except ToxiproxyError:
                    time.sleep(0.02)
            last = self._stop_process()
            if time.monotonic() >= deadline:
                break
        raise ToxiproxyError("toxiproxy did not start:\n" + last)

    def _stop_process(self) -> str:
        proc, self._proc = self._proc, None
        if proc is None:
            return ""
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log, self._log = self._log, None
        if log is None:
            return ""
        log.seek(0)
        text = log.read().decode(errors="replace")
        log.close()
        return str(text)

    def log(self) -> str:
        """Returns what toxiproxy has logged so far ("" when stopped)."""
        if self._log is None:
            return ""
        with open(self._log.fileno(), "rb", closefd=False) as f:
            f.seek(0)
            return f.read().decode(errors="replace")

    def stop(self) -> None:
        """Stops the server. Idempotent."""
        self._stop_process()

    def __enter__(self) -> "ToxiproxyServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- the API -----------------------------------------------------------

    def _request(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.api + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        try:
            with _OPENER.open(req, timeout=5) as resp:  # noqa: S310 - loopback only
                text = resp.read()
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")
            e.close()
            raise ToxiproxyError(f"{method} {path}: HTTP {e.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as e:
            raise ToxiproxyError(f"{method} {path}: {e}") from None
        try:
            return json.loads(text) if text else None
        except ValueError:  # GET /version answers plain text
            return text.decode(errors="replace")

    def create_proxy(self, name: str, upstream: str) -> int:
        """Creates proxy `name` from a free loopback port to `upstream`
        ("host:port"); returns the port it listens on."""
        proxy = self._request(
            "POST", "/proxies", {"name": name, "listen": "127.0.0.1:0", "upstream": upstream}
        )
        return int(proxy["listen"].rsplit(":", 1)[1])

    def add_toxic(
        self,
        proxy: str,
        kind: str,
        attributes: Dict[str, Any],
        *,
        name: Optional[str] = None,
        stream: str = "downstream",
        toxicity: float = 1.0,
    ) -> str:
        """Adds a toxic of type `kind` ("latency", "timeout", "reset_peer",
        "slicer", "limit_data", "slow_close", "bandwidth") to `proxy`;
        `stream` is "downstream" (server to client) or "upstream". Returns
        the toxic's name (default "<kind>_<stream>").

        Raises:
            ValueError: a slicer whose size_variation is not below its
                average_size (toxiproxy 2.5 accepts it, then panics and
                exits on the first byte it slices).
            ToxiproxyError: the API refused the toxic.
        """
        if kind == "slicer" and not (
            0 <= attributes.get("size_variation", 0) < attributes.get("average_size", 0)
        ):
            raise ValueError(f"slicer: size_variation must be in [0, average_size): {attributes}")
        toxic_name = name or f"{kind}_{stream}"
        self._request(
            "POST",
            f"/proxies/{proxy}/toxics",
            {
                "name": toxic_name,
                "type": kind,
                "stream": stream,
                "toxicity": toxicity,
                "attributes": attributes,
            },
        )
        return toxic_name

    def remove_toxic(self, proxy: str, name: str) -> None:
        """Removes toxic `name` from `proxy`."""
        self._request("DELETE", f"/proxies/{proxy}/toxics/{name}")

    def toxics(self, proxy: str) -> list[Dict[str, Any]]:
        """Returns the toxics of `proxy`."""
        return list(self._request("GET", f"/proxies/{proxy}/toxics"))

    def reset(self) -> None:
        """Removes every toxic of every proxy and enables every proxy."""
        self._request("POST", "/reset")


# -- command line -----------------------------------------------------------


def _serve(args: argparse.Namespace) -> int:
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:  # noqa: ARG001
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server = ToxiproxyServer().start()
    try:
        port = server.create_proxy("nginx", args.upstream)
        tmp = "%s.tmp.%d" % (args.port_file, os.getpid())
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("%d %d\n" % (server.api_port, port))
        os.replace(tmp, args.port_file)
        print(f"toxiproxy_server: api {server.api}, proxy 127.0.0.1:{port} -> {args.upstream}",
              file=sys.stderr, flush=True)

        def watch_stdin() -> None:
            try:
                while sys.stdin.buffer.read(4096):
                    pass
            finally:
                stop.set()

        threading.Thread(target=watch_stdin, daemon=True).start()
        stop.wait()
    finally:
        server.stop()
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run toxiproxy with a proxy to --upstream")
    serve.add_argument("--upstream", required=True, help="host:port of the server to proxy")
    serve.add_argument("--port-file", required=True, help="gets '<api port> <proxy port>'")
    sub.add_parser("find", help="print the toxiproxy binary")
    args = parser.parse_args(argv)
    if args.command == "find":
        print(find_toxiproxy())
        return 0
    return _serve(args)


if __name__ == "__main__":
    sys.exit(main())
