#!/usr/bin/env python3
"""A dashboard with something on it: real traffic against a real nginx.

Starts nginx (tests/nginx/nginx_server.py) and mulligan's dashboard, then runs
for a while: GETs on a flaky location (retried), calls to an always-down
location through a per-origin breaker (a second nginx, so the healthy origin
keeps flowing), and a decorated function that sometimes needs a retry.

    python examples/python/dashboard_demo.py --seconds 60          # open the URL it prints
    python examples/python/dashboard_demo.py --screenshot docs/dashboard.png

--screenshot drives Debian's headless Chromium with Playwright (as the tests do)
and saves the page once the breaker has opened.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import shutil
import sys
import threading
import time
from typing import Any

import mulligan

HERE = os.path.dirname(os.path.abspath(__file__))
NGINX_SERVER_PY = os.path.join(HERE, "..", "..", "tests", "nginx", "nginx_server.py")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def load_nginx_server() -> Any:
    spec = importlib.util.spec_from_file_location("nginx_server", NGINX_SERVER_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def traffic(stop: threading.Event, flaky_url: str, down_url: str) -> None:
    client = mulligan.Client(attempts=4, base_delay=0.02, max_delay=0.2,
                             breaker={"failure_threshold": 3, "reset_timeout": 5.0})

    @mulligan.retry(on=ConnectionError, attempts=3, base_delay=0.05)
    def quote() -> float:
        if random.random() < 0.3:
            raise ConnectionError("quote service hiccup")
        return 42.0

    while not stop.is_set():
        client.get(flaky_url)
        try:
            client.get(down_url, fallback=None)
        except mulligan.MulliganError:
            pass
        try:
            quote()
        except ConnectionError:
            pass  # gave up after 3 attempts: counted as a failure on the page
        time.sleep(0.02)
    client.close()


def screenshot(url: str, path: str) -> None:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("dashboard_demo: Debian's chromium is needed for --screenshot")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1200, "height": 520})
        page.goto(url)
        page.wait_for_selector('[data-state="open"]', timeout=15000)
        time.sleep(1.5)  # two refreshes, so the rates are filled in
        page.screenshot(path=path, full_page=True)
        browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0, help="how long to run (default 30)")
    parser.add_argument("--port", type=int, default=0, help="dashboard port (default: any free one)")
    parser.add_argument("--screenshot", metavar="PNG", help="save a screenshot of the page and stop")
    args = parser.parse_args()
    nginx_server = load_nginx_server()
    with nginx_server.NginxServer() as healthy, nginx_server.NginxServer() as broken:
        dashboard = mulligan.start_dashboard(port=args.port)
        print(f"dashboard: {dashboard.url}", flush=True)
        stop = threading.Event()
        worker = threading.Thread(
            target=traffic, args=(stop, healthy.url("/flaky"), broken.url("/down")), daemon=True
        )
        worker.start()
        try:
            if args.screenshot:
                screenshot(dashboard.url, args.screenshot)
                print(f"saved {args.screenshot}")
            else:
                time.sleep(args.seconds)
        finally:
            stop.set()
            worker.join(timeout=10)
            dashboard.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
