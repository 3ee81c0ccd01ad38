"""The live dashboard: one page of breaker states, call and retry rates.

:func:`start_dashboard` serves, from a daemon thread of the calling process:

* ``/`` — a page that polls ``metrics.json`` every 0.5 s and shows, per name,
  the breaker state, call and retry rates and totals, plus the recent breaker
  transitions (what Hystrix's dashboard showed); since 0.4 also each
  name's rejections by reason (budget, throttled, bulkhead_full,
  rate_limited) and a row per retry budget (tokens left), adaptive throttle
  (rejection probability), bulkhead (in flight, queued), rate limiter and
  adaptive rate, with what each allowed and refused;
* ``/metrics`` — the Prometheus text exposition format, for scraping;
* ``/metrics.json`` — the JSON snapshot plus ``transitions``.

It uses only the standard library's :mod:`http.server`; bind it to loopback
(the default) or put it behind your own authentication, as it has none.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import collections
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Deque

from .. import _validate
from . import metrics as _metrics

__all__ = ["Dashboard", "start_dashboard"]

_OWNER = "mulligan.start_dashboard"
_PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Dashboard:
    """A running dashboard server. Stop it with :meth:`stop` (or use ``with``).

    Attributes:
        host: the address it listens on.
        port: the TCP port (the one chosen by the OS when 0 was asked).
        url: ``http://host:port/``.
    """

    def __init__(self, host: str, port: int, history: int) -> None:
        self._transitions: Deque[dict[str, Any]] = collections.deque(maxlen=history)
        self._page = resources.files(__package__).joinpath("static/dashboard.html").read_bytes()
        self._listener_id = _metrics.add_event_listener(self._on_transition, ["breaker_transition"])
        dashboard = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "mulligan-dashboard"

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                path = self.path.split("?", 1)[0]
                if path in ("/", "/index.html"):
                    self._send(200, "text/html; charset=utf-8", dashboard._page)
                elif path == "/metrics":
                    self._send(200, _PROMETHEUS_CONTENT_TYPE, _metrics.prometheus_text().encode())
                elif path == "/metrics.json":
                    self._send(200, "application/json", dashboard.snapshot_json().encode())
                else:
                    self._send(404, "text/plain; charset=utf-8", b"not found\n")

            def _send(self, code: int, content_type: str, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # scrapes every few seconds would flood stderr

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.host = host
        self.port = int(self._server.server_address[1])
        self.url = f"http://{host}:{self.port}/"
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="mulligan-dashboard", daemon=True
        )
        self._thread.start()

    def _on_transition(self, event: dict[str, Any]) -> None:
        self._transitions.append(
            {
                "time": time.time(),
                "name": event["name"],
                "from": event["from_state"],
                "to": event["to_state"],
                "reason": event["transition_reason"],
            }
        )

    def snapshot_json(self) -> str:
        """Returns what ``/metrics.json`` serves."""
        doc = json.loads(_metrics.metrics_json())
        doc["transitions"] = list(self._transitions)
        return json.dumps(doc)

    def stop(self) -> None:
        """Stops serving and unsubscribes from the event stream. Idempotent."""
        if self._listener_id:
            _metrics.remove_event_listener(self._listener_id)
            self._listener_id = 0
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)

    def __enter__(self) -> Dashboard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<mulligan.Dashboard {self.url}>"


def start_dashboard(port: int = 8000, host: str = "127.0.0.1", history: int = 50) -> Dashboard:
    """Starts the dashboard in a background thread of this process.

    Args:
        port: TCP port; 0 lets the OS choose (read it from ``.port``).
        host: address to bind; loopback by default. The dashboard has no
            authentication: expose it only where that is acceptable.
        history: how many recent breaker transitions the page lists.

    Returns:
        The running :class:`Dashboard`.

    Raises:
        OSError: the address is in use or cannot be bound.
        ValueError: ``port`` outside 0..65535 or ``history`` < 1.
    """
    _validate.integer(_OWNER, "port", port, 0, 65535, range_text="0..65535")
    _validate.name(_OWNER, "host", host)
    _validate.integer(_OWNER, "history", history, 1, _validate.INT_MAX)
    return Dashboard(host, port, history)

