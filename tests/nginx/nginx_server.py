"""A real nginx test server for the C++, C and Python end-to-end suites.

Standard library only. The server runs nginx (Debian nginx-light plus
libnginx-mod-http-echo) as one foreground process (``master_process off``)
on a free loopback port, with the configuration rendered from
``nginx.conf.in`` next to this file. See that file for the locations
(/ok, /flaky, /limited, /down, /slow, /echo) and the access-log format.

Python use::

    from nginx_server import NginxServer
    with NginxServer() as server:
        url = server.base_url + "/ok"
        ...
        entries = server.access_log()   # list of dicts, one per request

Command line (for the C and C++ tests)::

    python3 nginx_server.py serve --port-file FILE [--workdir DIR]

starts nginx, writes the port (decimal, then a newline) to FILE atomically
once /ok answers, and runs until SIGTERM or SIGINT, or until its stdin
reaches end of file when stdin is a pipe (so a test that starts it with
``popen(cmd, "w")`` stops it with ``pclose``, and a crashed test stops it
too). The access log is ``<workdir>/logs/access.log``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Dict, List, Optional

__all__ = ["NginxServer", "NginxError", "find_nginx", "find_echo_module", "find_js_module"]

_HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(_HERE, "nginx.conf.in")

# The directories Debian and other distributions keep nginx modules in.
_MODULE_DIRS = (
    "/usr/lib/nginx/modules",
    "/usr/share/nginx/modules",
    "/usr/lib64/nginx/modules",
    "/usr/local/nginx/modules",
)

# Access-log values that are numbers; every other value stays a string.
_INT_FIELDS = ("status", "connection", "connection_requests")
_FLOAT_FIELDS = ("msec", "request_time")


class NginxError(RuntimeError):
    """nginx is missing, or failed to start or stop."""


def find_nginx() -> str:
    """Returns the path of the nginx binary (PATH, then /usr/sbin/nginx).

    Raises:
        NginxError: nginx is not installed.
    """
    found = shutil.which("nginx")
    if found:
        return found
    for candidate in ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"):
        if os.access(candidate, os.X_OK):
            return candidate
    raise NginxError(
        "nginx not found in PATH or /usr/sbin; install it (Debian: apt-get install "
        "nginx-light libnginx-mod-http-echo)"
    )


def _find_module(filename: str, debian_conf: str, package: str, env: str) -> str:
    """Returns the path of the dynamic nginx module `filename`.

    Looks at $`env`, the usual module directories, then at the load_module
    line of /usr/share/nginx/modules-available/`debian_conf` (Debian).

    Raises:
        NginxError: the module is not installed.
    """
    configured = os.environ.get(env)
    if configured:
        return configured
    for directory in _MODULE_DIRS:
        candidate = os.path.join(directory, filename)
        if os.path.exists(candidate):
            return candidate
    conf = os.path.join("/usr/share/nginx/modules-available", debian_conf)
    try:
        with open(conf, encoding="utf-8") as f:
            for line in f:
                parts = line.strip().rstrip(";").split()
                if len(parts) == 2 and parts[0] == "load_module":
                    path = parts[1]
                    if not os.path.isabs(path):
                        path = os.path.join("/usr/share/nginx", path)
                    if os.path.exists(path):
                        return os.path.realpath(path)
    except OSError:
        pass
    raise NginxError(
        f"the nginx module {filename} was not found; install it "
        f"(Debian: apt-get install {package}) or set {env}"
    )


def find_echo_module() -> str:
    """Returns the path of ngx_http_echo_module.so (libnginx-mod-http-echo).

    Raises:
        NginxError: the module is not installed.
    """
    return _find_module("ngx_http_echo_module.so", "mod-http-echo.conf",
                        "libnginx-mod-http-echo", "MULLIGAN_NGINX_ECHO_MODULE")


def find_js_module() -> str:
    """Returns the path of ngx_http_js_module.so (njs, libnginx-mod-http-js),
    which runs tests/nginx/script.js for the /script location.

    Raises:
        NginxError: the module is not installed.
    """
    return _find_module("ngx_http_js_module.so", "mod-http-js.conf",
                        "libnginx-mod-http-js", "MULLIGAN_NGINX_JS_MODULE")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NginxServer:
    """An nginx process serving the test locations on 127.0.0.1.

    Args:
        workdir: directory for the rendered config, pid file, logs and temp
            files; a fresh temporary directory (removed by stop()) when None.

    Attributes (valid after start()):
        port: the TCP port (int).
        base_url: "http://127.0.0.1:<port>".
        workdir: the working directory.
        conf_path: the rendered nginx.conf.
        access_log_path: <workdir>/logs/access.log.
        error_log_path: <workdir>/logs/error.log.
    """

    def __init__(self, workdir: Optional[str] = None) -> None:
        self._own_workdir = workdir is None
        self.workdir = os.path.abspath(workdir) if workdir else tempfile.mkdtemp(prefix="mulligan-nginx-")
        self.conf_path = os.path.join(self.workdir, "nginx.conf")
        self.access_log_path = os.path.join(self.workdir, "logs", "access.log")
        self.error_log_path = os.path.join(self.workdir, "logs", "error.log")
        self.port = 0
        self._proc: Optional[subprocess.Popen[bytes]] = None

    @property
    def base_url(self) -> str:
        return "http://127.0.0.1:%d" % self.port

    def url(self, path: str) -> str:
        """Returns base_url + path ("/ok" -> "http://127.0.0.1:PORT/ok")."""
        return self.base_url + path

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- lifecycle ---------------------------------------------------------

    def start(self, timeout: float = 10.0) -> "NginxServer":
        """Starts nginx on a free port and waits until /ok answers.

        Raises:
            NginxError: nginx or the echo module is missing, or nginx did not
                come up within `timeout` seconds (the message has its error log).
        """
        if self.running:
            return self
        nginx = find_nginx()
        echo_module = find_echo_module()
        js_module = find_js_module()
        for sub in ("logs", "tmp"):
            os.makedirs(os.path.join(self.workdir, sub), exist_ok=True)
        with open(TEMPLATE, encoding="utf-8") as f:
            template = f.read()

        last_error = ""
        deadline = time.monotonic() + timeout
        for _ in range(8):  # another process may grab the port in between
            port = _free_port()
            conf = (
                template.replace("@PORT@", str(port))
                .replace("@WORKDIR@", self.workdir)
                .replace("@ECHO_MODULE@", echo_module)
                .replace("@JS_MODULE@", js_module)
                .replace("@NGINX_DIR@", _HERE)
            )
            with open(self.conf_path, "w", encoding="utf-8") as f:
                f.write(conf)
            open(self.error_log_path, "w").close()
            proc = subprocess.Popen(
                [nginx, "-c", self.conf_path, "-p", self.workdir + "/", "-e", self.error_log_path],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,  # a Ctrl-C meant for the test runner is ours to relay
            )
            self._proc = proc
            self.port = port
            status = self._wait_ready(deadline)
            if status == "ready":
                return self
            stderr = b""
            if proc.poll() is None:
                self._terminate(proc)
            try:
                stderr = proc.communicate(timeout=5)[1] or b""
            except (subprocess.TimeoutExpired, ValueError):
                pass
            self._proc = None
            last_error = (stderr.decode(errors="replace") + "\n" + self._read_error_log()).strip()
            if status == "exited" and "Address already in use" in last_error and time.monotonic() < deadline:
                continue
            break
        raise NginxError("nginx did not start (config %s):\n%s" % (self.conf_path, last_error))

    def _wait_ready(self, deadline: float) -> str:
        assert self._proc is not None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return "exited"
            try:
                with urllib.request.urlopen(
                    urllib.request.Request(self.url("/ok")), timeout=1.0
                ) as resp:  # noqa: S310 - loopback only
                    if resp.status == 200:
                        return "ready"
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.02)
        return "timeout"

    @staticmethod
    def _terminate(proc: "subprocess.Popen[bytes]") -> None:
        try:
            proc.send_signal(signal.SIGTERM)  # fast shutdown
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        except ProcessLookupError:
            pass

    def stop(self) -> None:
        """Stops nginx (SIGTERM, then SIGKILL after 5 s) and removes the
        temporary working directory if this object created it. Idempotent."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                self._terminate(proc)
            if proc.stderr is not None:
                proc.stderr.close()
        if self._own_workdir and os.path.isdir(self.workdir):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "NginxServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __del__(self) -> None:
        try:
            if self._proc is not None and self._proc.poll() is None:
                self._terminate(self._proc)
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass

    # -- logs --------------------------------------------------------------

    def access_log(self) -> List[Dict[str, Any]]:
        """Returns the access log, one dict per request, oldest first.

        Keys: msec (float, Unix time in seconds when nginx logged the finished
        request, millisecond resolution), request_time (float seconds),
        start (float, msec - request_time: when nginx began reading the
        request), method, uri (with the query string), status (int),
        idempotency_key ("" when the request had none), request_id (32 hex
        digits), connection (int, nginx's connection serial number) and
        connection_requests (int, requests made on that connection so far)
        and user_agent (the User-Agent header, "" when none), traceparent
        (the W3C traceparent header, "" when none).
        nginx writes the line after the response has been sent, so a caller
        that has just read a response may poll briefly for its line.
        """
        entries: List[Dict[str, Any]] = []
        try:
            with open(self.access_log_path, encoding="utf-8") as f:
                lines = f.readlines()
        except FileNotFoundError:
            return entries
        for line in lines:
            line = line.strip()
            if not line:
                continue
            try:
                entry: Dict[str, Any] = json.loads(line)
            except ValueError:
                continue  # a line being written right now
            for key in _INT_FIELDS:
                try:
                    entry[key] = int(entry[key])
                except (KeyError, ValueError):
                    pass
            for key in _FLOAT_FIELDS:
                try:
                    entry[key] = float(entry[key])
                except (KeyError, ValueError):
                    pass
            if isinstance(entry.get("msec"), float) and isinstance(entry.get("request_time"), float):
                entry["start"] = round(entry["msec"] - entry["request_time"], 3)
            entries.append(entry)
        return entries

    def wait_for_access_log(self, count: int, timeout: float = 2.0) -> List[Dict[str, Any]]:
        """Polls until the access log has at least `count` entries (or
        `timeout` seconds pass) and returns it."""
        deadline = time.monotonic() + timeout
        entries = self.access_log()
        while len(entries) < count and time.monotonic() < deadline:
            time.sleep(0.01)
            entries = self.access_log()
        return entries

    def wait_for_requests(
        self, path: str, count: int, timeout: float = 5.0, settle: float = 0.05
    ) -> List[Dict[str, Any]]:
        """Returns the access log's entries for `path` (query ignored) once
        `count` of them are there or `timeout` seconds passed, after waiting
        `settle` more seconds to show that no further line appears. nginx
        writes a line just after answering, so a client can be faster."""
        deadline = time.monotonic() + timeout

        def matching() -> List[Dict[str, Any]]:
            return [e for e in self.access_log() if e["uri"].split("?")[0] == path]

        while len(matching()) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(settle)
        return matching()

    def clear_access_log(self) -> None:
        """Empties the access log (nginx appends, so truncating is safe)."""
        if os.path.exists(self.access_log_path):
            with open(self.access_log_path, "w", encoding="utf-8"):
                pass

    def _read_error_log(self) -> str:
        try:
            with open(self.error_log_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""


# -- command line -----------------------------------------------------------


def _write_atomically(path: str, text: str) -> None:
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _serve(args: argparse.Namespace) -> int:
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:  # noqa: ARG001
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, on_signal)

    server = NginxServer(workdir=args.workdir)
    try:
        server.start(timeout=args.timeout)
    except NginxError as e:
        print("nginx_server: %s" % e, file=sys.stderr)
        return 1
    try:
        _write_atomically(args.port_file, "%d\n" % server.port)
        print("nginx_server: listening on %s (workdir %s)" % (server.base_url, server.workdir),
              file=sys.stderr, flush=True)

        try:
            mode = os.fstat(sys.stdin.fileno()).st_mode
            watch_stdin = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
        except (OSError, ValueError, AttributeError):
            watch_stdin = False
        if watch_stdin:
            def read_until_eof() -> None:
                try:
                    while sys.stdin.buffer.read(4096):
                        pass
                except (OSError, ValueError):
                    pass
                stop.set()

            threading.Thread(target=read_until_eof, daemon=True).start()

        while not stop.is_set():
            if not server.running:
                print("nginx_server: nginx exited unexpectedly:\n%s" % server._read_error_log(),
                      file=sys.stderr)
                return 1
            stop.wait(0.2)
        return 0
    finally:
        server.stop()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run nginx until SIGTERM or end of stdin")
    serve.add_argument("--port-file", required=True, help="file to write the port to")
    serve.add_argument("--workdir", default=None,
                       help="working directory (default: a temporary one, removed at exit)")
    serve.add_argument("--timeout", type=float, default=10.0, help="start-up timeout in seconds")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
