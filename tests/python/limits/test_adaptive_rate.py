"""mulligan.AdaptiveRate (AWS adaptive mode, CUBIC): the shared vectors of
tests/vectors/adaptive_rate.json (made by
tests/vectors/gen_adaptive_rate_vectors.py from the spec's pseudo-code, which
C++ and C run too), bad options naming the field, and its metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import mulligan
from mulligan._telemetry import metrics as _metrics
from mulligan.testing import FakeClock, set_clock

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "adaptive_rate.json"
SCENARIOS = json.loads(VECTORS.read_text())["scenarios"]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_cubic_steps(scenario: dict[str, Any]) -> None:
    clock = FakeClock(start=scenario["start"])
    with set_clock(clock):
        rate = mulligan.AdaptiveRate(name=scenario["name"], max_wait=scenario["max_wait"])
        for step in scenario["steps"]:
            clock.sleep(step["t"] - clock.monotonic())
            if step["op"] == "acquire":
                if step["admitted"]:
                    assert rate.reserve() == pytest.approx(step["wait"], abs=2e-9)
                else:
                    with pytest.raises(mulligan.RateLimitedError) as info:
                        rate.reserve()
                    assert info.value.retry_in == pytest.approx(step["wait"], abs=2e-9)
                continue
            rate.record(step["op"] == "throttle")
            state = rate.state()
            for key in ("calculated_rate", "measured_rate", "fill_rate", "max_capacity",
                        "last_max_rate", "time_window"):
                assert state[key] == pytest.approx(step[key], rel=1e-9, abs=1e-12), key
            assert state["enabled"] == step["enabled"]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"beta": 1.0}, "beta"), ({"scale_constant": 0}, "scale_constant"),
     ({"smoothing": 0}, "smoothing"), ({"bucket": 0}, "bucket"),
     ({"min_fill_rate": -1}, "min_fill_rate"), ({"max_rate_scale": 0.5}, "max_rate_scale"),
     ({"max_wait": -1}, "max_wait")],
)
def test_bad_options_name_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        mulligan.AdaptiveRate(**kwargs)


def test_wrong_types_are_refused() -> None:
    with pytest.raises(TypeError, match="beta"):
        mulligan.AdaptiveRate(beta="0.7")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="throttled"):
        mulligan.AdaptiveRate().record(1)  # type: ignore[arg-type]


def test_metrics_show_the_rate() -> None:
    # A 429 at 0 measured rate: W_max 0, new rate 0 -> fill rate floored at 0.5.
    _metrics.reset_metrics()
    clock = FakeClock(start=500.0)
    with set_clock(clock):
        rate = mulligan.AdaptiveRate(name="py-aws")
        rate.record(True)
        entry = [a for a in mulligan.limits_snapshot()["adaptive_rates"] if a["name"] == "py-aws"]
        assert entry and entry[0]["enabled"] and entry[0]["throttles"] == 1
        assert entry[0]["fill_rate"] == 0.5
        assert 'mulligan_adaptive_rate_throttles_total{name="py-aws"} 1\n' in mulligan.prometheus_text()
    _metrics.reset_metrics()
