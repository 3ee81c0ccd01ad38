#!/usr/bin/env python3
"""Generates adaptive_rate.json: CUBIC client-rate steps of the AWS SDKs'
"adaptive" retry mode, worked out independently of mulligan's C++ code.

The model follows the pseudo-code of the AWS SDKs' retry behavior
specification ("adaptive" retry mode: TokenBucketAcquire, TokenBucketRefill,
UpdateTokenBucketRate, UpdateMeasuredRate, CalculateTimeWindow,
CUBICSuccess, CUBICThrottle, UpdateClientSendingRate), with its constants:
BETA 0.7, SCALE_CONSTANT 0.4, SMOOTH 0.8, MIN_FILL_RATE 0.5, MIN_CAPACITY 1,
a measured-rate bucket of 0.5 s, and a new rate capped at 2x the measured
send rate. Initial state as botocore's: fill rate 1 (max capacity 1,
capacity 0), last max rate 0, last throttle time and last rate bucket at
creation (the bucket floored to a whole second).

One deliberate extension, mulligan's: the wait of an acquire is computed at
the time asked and its token is taken at once (a reservation: capacity may go
negative), instead of sleeping inside the bucket; at any later time the
capacity is the same as the spec's sleep-then-take, as long as the rate does
not change during the wait. And an acquire whose wait would exceed max_wait
is refused without taking anything.

Run: python3 tests/vectors/gen_adaptive_rate_vectors.py > tests/vectors/adaptive_rate.json
"""

from __future__ import annotations

import json
import math

BETA = 0.7
SCALE_CONSTANT = 0.4
SMOOTH = 0.8
MIN_FILL_RATE = 0.5
MIN_CAPACITY = 1.0
BUCKET = 0.5


class Model:
    def __init__(self, t0: float) -> None:
        self.fill_rate = 1.0
        self.max_capacity = 1.0
        self.capacity = 0.0
        self.last_timestamp: float | None = None
        self.enabled = False
        self.measured_tx_rate = 0.0
        self.last_tx_rate_bucket = math.floor(t0)
        self.request_count = 0
        self.last_max_rate = 0.0
        self.last_throttle_time = t0
        self.time_window = 0.0

    def refill(self, t: float) -> None:
        if self.last_timestamp is None:
            self.last_timestamp = t
            return
        fill = (t - self.last_timestamp) * self.fill_rate
        self.capacity = min(self.max_capacity, self.capacity + fill)
        self.last_timestamp = t

    def acquire(self, t: float, max_wait: float | None) -> dict:
        if not self.enabled:
            return {"admitted": True, "wait": 0.0}
        self.refill(t)
        wait = 0.0 if self.capacity >= 1 else (1 - self.capacity) / self.fill_rate
        if max_wait is not None and wait > max_wait:
            return {"admitted": False, "wait": wait}
        self.capacity -= 1
        return {"admitted": True, "wait": wait}

    def update_rate(self, new_rps: float, t: float) -> None:
        self.refill(t)
        self.fill_rate = max(new_rps, MIN_FILL_RATE)
        self.max_capacity = max(new_rps, MIN_CAPACITY)
        self.capacity = min(self.capacity, self.max_capacity)

    def update_measured(self, t: float) -> None:
        bucket = math.floor(t * 2) / 2
        self.request_count += 1
        if bucket > self.last_tx_rate_bucket:
            current = self.request_count / (bucket - self.last_tx_rate_bucket)
            self.measured_tx_rate = current * SMOOTH + self.measured_tx_rate * (1 - SMOOTH)
            self.request_count = 0
            self.last_tx_rate_bucket = bucket

    def calculate_time_window(self) -> None:
        self.time_window = ((self.last_max_rate * (1 - BETA)) / SCALE_CONSTANT) ** (1 / 3)

    def record(self, t: float, throttled: bool) -> dict:
        self.update_measured(t)
        if throttled:
            rate_to_use = (min(self.measured_tx_rate, self.fill_rate) if self.enabled
                           else self.measured_tx_rate)
            self.last_max_rate = rate_to_use
            self.calculate_time_window()
            self.last_throttle_time = t
            calculated = rate_to_use * BETA
            self.enabled = True
        else:
            self.calculate_time_window()
            dt = t - self.last_throttle_time
            calculated = SCALE_CONSTANT * (dt - self.time_window) ** 3 + self.last_max_rate
        new_rate = min(calculated, 2 * self.measured_tx_rate)
        self.update_rate(new_rate, t)
        return {
            "calculated_rate": calculated,
            "measured_rate": self.measured_tx_rate,
            "fill_rate": self.fill_rate,
            "max_capacity": self.max_capacity,
            "last_max_rate": self.last_max_rate,
            "time_window": self.time_window,
            "enabled": self.enabled,
        }


def scenario(name: str, t0: float, ops: list[tuple], max_wait: float | None = None) -> dict:
    model = Model(t0)
    steps = []
    for op in ops:
        kind, t = op[0], round(t0 + op[1], 6)
        if kind == "acquire":
            out = model.acquire(t, max_wait)
        else:
            out = model.record(t, kind == "throttle")
        steps.append({"op": kind, "t": t, **out})
    return {"name": name, "start": t0, "max_wait": max_wait, "steps": steps}


def main() -> None:
    ramp = [("success", 0.1 * i) for i in range(1, 21)]  # 10 calls/s for 2 s
    throttled = ramp + [("throttle", 2.05)]
    burst = [("acquire", 2.1)] * 4
    recovery = [("success", 2.1 + 0.25 * i) for i in range(1, 17)]
    scenarios = [
        scenario("disabled_until_first_throttle", 1000.0,
                 [("acquire", 0.0), *ramp[:5], ("acquire", 0.55)]),
        scenario("throttle_then_cubic_recovery", 1000.0, [*throttled, *burst, *recovery]),
        scenario("second_throttle_lowers_the_max", 1000.0,
                 [*throttled, *recovery, ("throttle", 6.3), ("acquire", 6.3), ("acquire", 6.3),
                  ("success", 7.0), ("success", 8.0)]),
        scenario("waits_past_max_wait_are_refused", 1000.0,
                 [*throttled, ("acquire", 2.1), ("acquire", 2.1), ("acquire", 2.1)],
                 max_wait=0.2),
        scenario("min_fill_rate_floor", 1000.0,
                 [("success", 0.2), ("success", 0.6), ("throttle", 1.1), ("throttle", 1.6),
                  ("throttle", 2.1), ("acquire", 2.1), ("acquire", 2.1)]),
    ]
    doc = {
        "source": "AWS SDKs retry behavior, adaptive mode (CUBIC: beta 0.7, scale 0.4); "
                  "generated by tests/vectors/gen_adaptive_rate_vectors.py",
        "constants": {"beta": BETA, "scale_constant": SCALE_CONSTANT, "smoothing": SMOOTH,
                      "min_fill_rate": MIN_FILL_RATE, "min_capacity": MIN_CAPACITY,
                      "bucket_seconds": BUCKET, "max_rate_scale": 2.0},
        "scenarios": scenarios,
    }
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
