"""The outbox in the metrics exports (issue 21: depth, age of the oldest
entry, deliveries, dead letters): exact values after a scripted run on a
FakeClock, read from the real SQLite file by every export."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mulligan
from mulligan.testing import FakeClock

T0 = 1_700_000_000.0


def _families(text: str, outbox: str) -> list[str]:
    return [line for line in text.splitlines()
            if line.startswith("mulligan_outbox_") and f'outbox="{outbox}"' in line]


def test_prometheus_json_and_snapshot_after_a_scripted_run(tmp_path: Any) -> None:
    with FakeClock(start=T0) as clock:
        box = mulligan.Outbox(tmp_path / "outbox.db", clock=clock, name="py-mail",
                              policy={"attempts": 1})
        box.register("ok", lambda payload, key: None)

        def boom(payload: bytes, key: str) -> None:
            raise RuntimeError("smtp down")

        box.register("boom", boom)
        box.enqueue_job("ok", b"1")
        box.enqueue_job("boom", b"2")
        assert box.deliver_due() == 2  # one delivered, one dead (attempts: 1)
        clock.advance(5)
        box.enqueue_job("later", b"3")  # never delivered: pending
        clock.advance(2.5)

        assert _families(mulligan.prometheus_text(), "py-mail") == [
            'mulligan_outbox_depth{outbox="py-mail",state="pending"} 1',
            'mulligan_outbox_depth{outbox="py-mail",state="leased"} 0',
            'mulligan_outbox_oldest_age_seconds{outbox="py-mail"} 2.5',
            'mulligan_outbox_deliveries_total{outbox="py-mail",result="success"} 1',
            'mulligan_outbox_deliveries_total{outbox="py-mail",result="failure"} 1',
            'mulligan_outbox_deliveries_total{outbox="py-mail",result="lease_expired"} 0',
            'mulligan_outbox_dead_letters_total{outbox="py-mail"} 1',
        ]
        expected = {
            "name": "py-mail", "pending": 1, "leased": 0, "done": 1, "dead": 1, "depth": 1,
            "oldest_age_seconds": 2.5,
            "deliveries": {"success": 1, "failure": 1, "lease_expired": 0},
            "dead_letters": 1,
        }
        snap = [o for o in mulligan.limits_snapshot()["outboxes"] if o["name"] == "py-mail"]
        assert snap == [expected]
        doc = json.loads(mulligan.metrics_json())
        assert [o for o in doc["outboxes"] if o["name"] == "py-mail"] == [expected]
        stats = box.stats()
        assert (stats.failures, stats.lease_expiries) == (1, 0)

        # Closed, the outbox is no longer exported.
        box.close()
        assert _families(mulligan.prometheus_text(), "py-mail") == []


def test_the_label_defaults_to_the_path_and_metrics_false_exports_nothing(tmp_path: Any) -> None:
    path = str(tmp_path / "default.db")
    box = mulligan.Outbox(path)
    quiet = mulligan.Outbox(tmp_path / "quiet.db", name="quiet", metrics=False)
    text = mulligan.prometheus_text()
    assert f'mulligan_outbox_depth{{outbox="{path}",state="pending"}} 0' in text
    assert 'outbox="quiet"' not in text
    box.close()
    quiet.close()


def test_opentelemetry_instruments(tmp_path: Any) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    import mulligan.otel

    reader = InMemoryMetricReader()
    bridge = mulligan.otel.instrument(MeterProvider(metric_readers=[reader]))
    try:
        with FakeClock(start=T0) as clock:
            box = mulligan.Outbox(tmp_path / "otel.db", clock=clock, name="otel-box")
            box.register("ok", lambda payload, key: None)
            box.enqueue_job("ok", b"1")
            assert box.deliver_due() == 1
            box.enqueue_job("ok", b"2")
            clock.advance(4)
            points: dict[tuple[str, tuple[tuple[str, Any], ...]], Any] = {}
            for resource_metrics in reader.get_metrics_data().resource_metrics:
                for scope in resource_metrics.scope_metrics:
                    for metric in scope.metrics:
                        for point in metric.data.data_points:
                            attrs = tuple(sorted(point.attributes.items()))
                            if ("mulligan.outbox", "otel-box") in attrs:
                                points[(metric.name, attrs)] = point.value
            box.close()
    finally:
        bridge.uninstrument()
    box_attr = ("mulligan.outbox", "otel-box")
    assert points == {
        ("mulligan.outbox.depth", (box_attr, ("mulligan.outbox.state", "leased"))): 0,
        ("mulligan.outbox.depth", (box_attr, ("mulligan.outbox.state", "pending"))): 1,
        ("mulligan.outbox.oldest_age", (box_attr,)): 4.0,
        ("mulligan.outbox.deliveries", (box_attr, ("mulligan.outbox.result", "failure"))): 0,
        ("mulligan.outbox.deliveries", (box_attr, ("mulligan.outbox.result", "lease_expired"))): 0,
        ("mulligan.outbox.deliveries", (box_attr, ("mulligan.outbox.result", "success"))): 1,
        ("mulligan.outbox.dead_letters", (box_attr,)): 0,
    }


def test_prometheus_client_collector_has_the_same_families(tmp_path: Any) -> None:
    pytest.importorskip("prometheus_client")
    from prometheus_client import CollectorRegistry, generate_latest

    import mulligan.prometheus

    registry = CollectorRegistry()
    mulligan.prometheus.register(registry)
    with FakeClock(start=T0) as clock:
        box = mulligan.Outbox(tmp_path / "pc.db", clock=clock, name="pc-box")
        box.enqueue_job("later", b"1")
        clock.advance(3)
        text = generate_latest(registry).decode()
        box.close()
    lines = [line for line in text.splitlines() if 'outbox="pc-box"' in line]
    assert lines == [
        'mulligan_outbox_depth{outbox="pc-box",state="pending"} 1.0',
        'mulligan_outbox_depth{outbox="pc-box",state="leased"} 0.0',
        'mulligan_outbox_oldest_age_seconds{outbox="pc-box"} 3.0',
        'mulligan_outbox_deliveries_total{outbox="pc-box",result="success"} 0.0',
        'mulligan_outbox_deliveries_total{outbox="pc-box",result="failure"} 0.0',
        'mulligan_outbox_deliveries_total{outbox="pc-box",result="lease_expired"} 0.0',
        'mulligan_outbox_dead_letters_total{outbox="pc-box"} 0.0',
    ]
