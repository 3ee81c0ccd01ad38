"""The shipped Grafana dashboard queries only metrics that mulligan exports."""

from __future__ import annotations

import json
import os
import pathlib
import re
import tempfile

import mulligan

DASHBOARD = pathlib.Path(__file__).resolve().parents[3] / "grafana" / "mulligan-dashboard.json"
SUFFIXES = ("_bucket", "_sum", "_count")


def exported_families() -> dict[str, str]:
    # The overload primitives' families are exported while one is alive (0.4),
    # and an outbox's while it is open (0.6).
    with tempfile.TemporaryDirectory() as tmp:
        alive = (
            mulligan.RetryBudget.token_bucket(name="grafana-budget"),
            mulligan.AdaptiveThrottle(name="grafana-throttle"),
            mulligan.Bulkhead(1, name="grafana-bulkhead"),
            mulligan.RateLimiter(1, name="grafana-limiter"),
            mulligan.AdaptiveRate(name="grafana-adaptive"),
            mulligan.Outbox(os.path.join(tmp, "outbox.db"), name="grafana-outbox"),
        )
        families = {}
        for line in mulligan.prometheus_text().splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(" ")
                families[name] = kind
        del alive
    return families


def test_every_queried_metric_is_exported_with_the_right_type() -> None:
    doc = json.loads(DASHBOARD.read_text())
    families = exported_families()
    assert doc["panels"], "the dashboard has panels"
    queried = set()
    for panel in doc["panels"]:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            for metric in re.findall(r"\b(mulligan_[a-z_]+)\b", target["expr"]):
                queried.add(metric)
                base = metric
                for suffix in SUFFIXES:
                    if metric.endswith(suffix) and metric[: -len(suffix)] in families:
                        base = metric[: -len(suffix)]
                        assert families[base] == "histogram", metric
                assert base in families, f"{panel['title']}: {metric} is not exported"
                if "rate(" in target["expr"] and base.endswith("_total"):
                    assert families[base] == "counter"
    # Every exported family is shown somewhere.
    for family in families:
        assert any(q == family or q in {family + s for s in SUFFIXES} for q in queried), family
