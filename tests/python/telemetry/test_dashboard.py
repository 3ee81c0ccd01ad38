"""The live dashboard: HTTP endpoints, and the page in a real headless Chromium."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import time
import urllib.error
import urllib.request

import pytest

import mulligan
from mulligan._telemetry import metrics as _metrics

REPO = pathlib.Path(__file__).resolve().parents[3]
ARTIFACTS = pathlib.Path(os.environ.get("MULLIGAN_TEST_ARTIFACTS", REPO / "build" / "test-artifacts"))
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def dashboard():
    _metrics.reset_metrics()
    dash = mulligan.start_dashboard(port=0)
    yield dash
    dash.stop()


def fetch(url: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status, response.headers["Content-Type"], response.read().decode()


def test_endpoints_serve_the_page_prometheus_and_json(dashboard) -> None:
    breaker = mulligan.CircuitBreaker(name="dash-endpoints", failure_threshold=1)
    breaker.force_open()
    status, content_type, page = fetch(dashboard.url)
    assert status == 200 and content_type.startswith("text/html")
    assert "<title>mulligan dashboard</title>" in page
    status, content_type, text = fetch(dashboard.url + "metrics")
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"
    assert 'mulligan_breaker_state{name="dash-endpoints",state="forced_open"} 1' in text
    status, content_type, body = fetch(dashboard.url + "metrics.json")
    doc = json.loads(body)
    assert content_type == "application/json"
    row = next(m for m in doc["metrics"] if m["name"] == "dash-endpoints")
    assert row["breaker_state"] == "forced_open"
    assert doc["transitions"][-1] == {
        "time": doc["transitions"][-1]["time"],
        "name": "dash-endpoints",
        "from": "closed",
        "to": "forced_open",
        "reason": "forced_open",
    }
    with pytest.raises(urllib.error.HTTPError) as missing:
        fetch(dashboard.url + "nope")
    assert missing.value.code == 404
    missing.value.close()


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        mulligan.start_dashboard(port=70000)
    with pytest.raises(ValueError):
        mulligan.start_dashboard(port=0, history=0)


def test_page_in_chromium_shows_a_breaker_opening_within_two_seconds(dashboard) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (scripts/setup.sh installs it)")

    breaker = mulligan.CircuitBreaker(name="dash-payments", failure_threshold=2, reset_timeout=600)

    @breaker
    def charge() -> None:
        raise ConnectionError("payments down")

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 640})
            page.goto(dashboard.url)
            badge = 'tr[data-name="dash-payments"] [data-state]'
            page.wait_for_selector('tr[data-name="dash-payments"] [data-state="closed"]', timeout=5000)
            for _ in range(2):
                with pytest.raises(ConnectionError):
                    charge()
            assert breaker.state == "open"
            opened_at = time.monotonic()
            page.wait_for_selector('tr[data-name="dash-payments"] [data-state="open"]', timeout=2000)
            assert time.monotonic() - opened_at < 2.0
            assert page.inner_text(badge) == "open"
            page.wait_for_function(
                "document.querySelector('#transitions').innerText.includes('dash-payments: closed → open')",
                timeout=2000,
            )
            page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
        finally:
            browser.close()
    assert (ARTIFACTS / "dashboard.png").stat().st_size > 10_000


def test_page_in_chromium_shows_budgets_limits_and_rejections(dashboard) -> None:
    # A6 budget max 4, ratio 0.1, a call of 3 attempts failing: 4 -> 3
    # (retry allowed: 3 > 4 / 2), 3 -> 2 (refused: 2 is not > 2). So 1
    # allowed, 1 refused, tokens 2, and one "budget" rejection for the function. A full bulkhead of 1 then
    # refuses once.
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (scripts/setup.sh installs it)")
    budget = mulligan.RetryBudget.token_bucket(4, 0.1, name="dash-budget")
    bulkhead = mulligan.Bulkhead(1, name="dash-bulkhead")

    @mulligan.retry(on=ConnectionError, attempts=3, base_delay=0, budget=budget)
    def fetch_it() -> None:
        raise ConnectionError("down")

    with pytest.raises(ConnectionError):
        fetch_it()
    assert bulkhead._core.try_acquire()
    with pytest.raises(mulligan.BulkheadFullError):
        bulkhead.acquire(timeout=0)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(dashboard.url)
            row = 'tr[data-limit="budget token_bucket:dash-budget"]'
            page.wait_for_selector(row, timeout=5000)
            cells = page.eval_on_selector_all(row + " td", "tds => tds.map(t => t.innerText)")
            assert cells == ["dash-budget", "budget token_bucket", "2 / 4", "1", "1"]
            rejected = f'tr[data-rejections="{fetch_it.__qualname__}"] td'
            page.wait_for_selector(rejected, timeout=5000)
            assert page.eval_on_selector_all(rejected, "tds => tds.map(t => t.innerText)") == [
                fetch_it.__qualname__, "1", "0", "0", "0"]
            bh = 'tr[data-limit="bulkhead:dash-bulkhead"] td'
            assert page.eval_on_selector_all(bh, "tds => tds.map(t => t.innerText)") == [
                "dash-bulkhead", "bulkhead", "1 / 1 (+0 queued)", "0", "1"]
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "dashboard-limits.png"), full_page=True)
        finally:
            browser.close()
    bulkhead._core.release()
