#!/usr/bin/env python3
"""Converts tests/vectors/rate_limiter_gcra.json to a C header for
tests/capi/limits_test.c (usage: gen_limits_vectors.py IN.json OUT.h)."""
import json
import sys


def main() -> None:
    src, dst = sys.argv[1], sys.argv[2]
    cases = json.load(open(src))["cases"]
    lines = ["/* Generated from tests/vectors/rate_limiter_gcra.json. Do not edit. */",
             "typedef struct { double at; const char *key; double max_wait; int penalize;",
             "  double until; int admitted; long long wait_ns; long long retry_in_ns; } gcra_step;",
             "typedef struct { const char *name; double rate; double burst; int n;",
             "  const gcra_step *steps; } gcra_case;"]
    for i, c in enumerate(cases):
        lines.append(f"static const gcra_step gcra_steps_{i}[] = {{")
        for s in c["steps"]:
            if "penalize_until" in s:
                lines.append(f'  {{{s["at"]!r}, "{s["key"]}", -1.0, 1, {s["penalize_until"]!r}, 0, 0, 0}},')
            else:
                mw = -1.0 if s["max_wait"] is None else s["max_wait"]
                e = s["expect"]
                lines.append(f'  {{{s["at"]!r}, "{s["key"]}", {mw!r}, 0, 0.0, {int(e["admitted"])},'
                             f' {e["wait_ns"]}LL, {e["retry_in_ns"]}LL}},')
        lines.append("};")
    lines.append("static const gcra_case gcra_cases[] = {")
    for i, c in enumerate(cases):
        lines.append(f'  {{"{c["name"]}", {c["rate"]!r}, {c["burst"]!r}, {len(c["steps"])}, gcra_steps_{i}}},')
    lines.append("};")
    lines.append(f"#define GCRA_CASE_COUNT {len(cases)}")
    open(dst, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
