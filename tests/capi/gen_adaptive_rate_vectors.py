#!/usr/bin/env python3
"""Converts tests/vectors/adaptive_rate.json to a C header for
tests/capi/adaptive_rate_test.c (usage: gen_adaptive_rate_vectors.py IN.json OUT.h)."""
import json
import sys


def main() -> None:
    src, dst = sys.argv[1], sys.argv[2]
    scenarios = json.load(open(src))["scenarios"]
    lines = ["/* Generated from tests/vectors/adaptive_rate.json. Do not edit. */",
             "typedef struct { int op; /* 0 acquire, 1 success, 2 throttle */ double t;",
             "  int admitted; double wait; double calculated, measured, fill_rate, max_capacity,",
             "  last_max_rate, time_window; int enabled; } ar_step;",
             "typedef struct { const char *name; double start; double max_wait; int n;",
             "  const ar_step *steps; } ar_scenario;"]
    ops = {"acquire": 0, "success": 1, "throttle": 2}
    for i, sc in enumerate(scenarios):
        lines.append(f"static const ar_step ar_steps_{i}[] = {{")
        for s in sc["steps"]:
            if s["op"] == "acquire":
                lines.append(f'  {{0, {s["t"]!r}, {int(s["admitted"])}, {s["wait"]!r},'
                             ' 0, 0, 0, 0, 0, 0, 0},')
            else:
                lines.append(
                    f'  {{{ops[s["op"]]}, {s["t"]!r}, 1, 0.0, {s["calculated_rate"]!r},'
                    f' {s["measured_rate"]!r}, {s["fill_rate"]!r}, {s["max_capacity"]!r},'
                    f' {s["last_max_rate"]!r}, {s["time_window"]!r}, {int(s["enabled"])}}},')
        lines.append("};")
    lines.append("static const ar_scenario ar_scenarios[] = {")
    for i, sc in enumerate(scenarios):
        mw = -1.0 if sc["max_wait"] is None else sc["max_wait"]
        lines.append(f'  {{"{sc["name"]}", {sc["start"]!r}, {mw!r}, {len(sc["steps"])},'
                     f' ar_steps_{i}}},')
    lines.append("};")
    lines.append(f"#define AR_SCENARIO_COUNT {len(scenarios)}")
    open(dst, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
