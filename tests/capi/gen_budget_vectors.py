#!/usr/bin/env python3
"""Converts tests/vectors/budget.json to a C header for
tests/capi/budget_test.c (usage: gen_budget_vectors.py IN.json OUT.h)."""
import json
import sys

OPS = {"failure": 0, "retry": 1, "success": 2, "retried_success": 3, "call": 4}
KINDS = {"other": 0, "timeout": 1, "throttling": 2}
BUDGET_KINDS = {"token_bucket": 0, "quota": 1, "ratio": 2}


def budget_lines(budgets):
    lines = []
    for i, b in enumerate(budgets):
        lines.append(f"static const budget_step budget_steps_{i}[] = {{")
        for s in b["steps"]:
            n = s.get("count", s.get("repeat", 1))
            cost = s.get("cost", -2)
            lines.append(f'  {{{s["t"]!r}, {OPS[s["op"]]}, {KINDS[s.get("kind", "other")]}, {n},'
                         f' {int(s.get("allowed", False))}, {cost}LL, {float(s["tokens"])!r}}},')
        lines.append("};")
    lines.append("static const budget_case budget_cases[] = {")
    for i, b in enumerate(budgets):
        o = b["options"]
        lines.append(
            f'  {{"{b["name"]}", {BUDGET_KINDS[b["kind"]]}, {float(b.get("start", 0.0))!r},'
            f' {float(o.get("max_tokens", 100))!r}, {float(o.get("token_ratio", 0.5))!r},'
            f' {o.get("capacity", 500)}, {o.get("retry_cost", 5)}, {o.get("timeout_cost", 10)},'
            f' {o.get("throttling_cost", 5)}, {o.get("no_retry_increment", 1)},'
            f' {float(o.get("ttl", 10)) * 1000.0!r}, {float(o.get("percent", 0.2))!r},'
            f' {float(o.get("min_retries_per_second", 10))!r}, {len(b["steps"])}, budget_steps_{i}}},')
    lines.append("};")
    lines.append(f"#define BUDGET_CASE_COUNT {len(budgets)}")
    return lines


def throttle_lines(throttles):
    lines = []
    for i, t in enumerate(throttles):
        lines.append(f"static const throttle_step throttle_steps_{i}[] = {{")
        for s in t["steps"]:
            if s["op"] == "admit":
                lines.append(f'  {{{s["t"]!r}, 0, {float(s["p"])!r}, {int(s["admitted"])}, 0}},')
            else:
                lines.append(f'  {{{s["t"]!r}, 1, 0.0, 0, {int(s["outcome"] == "accept")}}},')
        lines.append("};")
    lines.append("static const throttle_case throttle_cases[] = {")
    for i, t in enumerate(throttles):
        o = t["options"]
        lines.append(f'  {{"{t["name"]}", {float(o["window"]) * 1000.0!r}, {float(o["k"])!r},'
                     f' {o["seed"]}ULL, {len(t["steps"])}, throttle_steps_{i}}},')
    lines.append("};")
    lines.append(f"#define THROTTLE_CASE_COUNT {len(throttles)}")
    return lines


def main() -> None:
    src, dst = sys.argv[1], sys.argv[2]
    data = json.load(open(src))
    lines = [
        "/* Generated from tests/vectors/budget.json by gen_budget_vectors.py. Do not edit. */",
        "#include <stdint.h>",
        "/* op: 0 failure, 1 retry, 2 success, 3 retried_success, 4 call; n: count or repeat;",
        " * cost: -2 when the step names none. */",
        "typedef struct { double t; int op; int kind; long long n; int allowed; long long cost;",
        "  double tokens; } budget_step;",
        "typedef struct { const char *name; int kind; double start; double max_tokens;",
        "  double token_ratio; long long capacity, retry_cost, timeout_cost, throttling_cost,",
        "  no_retry_increment; double ttl_ms, percent, min_retries_per_second; int n;",
        "  const budget_step *steps; } budget_case;",
        "/* op: 0 admit (p, admitted), 1 record (accept 1, else an overload answer). */",
        "typedef struct { double t; int op; double p; int admitted; int accept; } throttle_step;",
        "typedef struct { const char *name; double window_ms; double k; unsigned long long seed;",
        "  int n; const throttle_step *steps; } throttle_case;",
    ]
    lines += budget_lines(data["budgets"])
    lines += throttle_lines(data["throttles"])
    open(dst, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
