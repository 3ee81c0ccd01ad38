"""Turns tests/vectors/pipeline.json (scripted logical calls) into a C99 header.

The C suite runs the same logical calls as every other front door (DESIGN.md
sections 2 and 8) without a JSON parser: this script, run by CMake at build
time, emits static arrays that tests/capi/pipeline_vectors_test.c drives
through the step API of mulligan_pipeline.h.

    python3 gen_pipeline_vectors.py PIPELINE_JSON OUTPUT_HEADER

Durations in the JSON are seconds; the header holds milliseconds, as the C ABI
does. Policies without a "jitter" key get none: the vector's description says
its delays are exact ("without jitter"). Unknown keys and values are an error,
so a new kind of case or expectation is never silently skipped.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List

POLICY = {"max_attempts", "backoff", "base_delay", "multiplier", "max_delay", "jitter",
          "deadline", "retry_after_max"}
BREAKER = {"failure_threshold", "reset_timeout", "half_open_max_calls"}
BACKOFF = ["constant", "linear", "exponential", "decorrelated"]
JITTER = ["none", "full", "equal", "proportional"]
OUTCOMES = ["success", "retryable", "terminal"]
# mulligan_stop_reason, by value.
STOP_REASONS = ["none", "succeeded", "terminal", "attempts_exhausted", "deadline",
                "retry_after_too_long", "not_replay_safe", "circuit_open"]
# mulligan_breaker_state, by value.
BREAKER_STATES = ["closed", "open", "half_open", "forced_open", "disabled", "metrics_only"]
METRICS = ["calls", "attempts", "retries", "successes", "failures"]


def c_string(text: str) -> str:
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\?':  # '?' too: C99 trigraphs
            out.append("\\" + ch)
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append("\\%03o" % byte)
    return '"' + "".join(out) + '"'


def check_keys(where: str, obj: Dict[str, Any], allowed: set) -> None:
    unknown = set(obj) - allowed
    if unknown:
        raise SystemExit("%s: unknown keys %s (teach gen_pipeline_vectors.py)"
                         % (where, sorted(unknown)))


def index(where: str, names: List[str], value: str) -> int:
    if value not in names:
        raise SystemExit("%s: unknown value %r (expected one of %s)" % (where, value, names))
    return names.index(value)


def ms(seconds: Any) -> str:
    return repr(float(seconds) * 1000.0)


def attempt(where: str, step: Any) -> str:
    """One scripted attempt: {outcome index, Retry-After in ms or -1}."""
    if isinstance(step, str):
        return "{%d, -1.0}" % index(where, OUTCOMES, step)
    check_keys(where, step, {"outcome", "retry_after"})
    hint = ms(step["retry_after"]) if "retry_after" in step else "-1.0"
    return "{%d, %s}" % (index(where, OUTCOMES, step["outcome"]), hint)


def calls(i: int, case: Dict[str, Any], out: List[str]) -> None:
    for j, call in enumerate(case["calls"]):
        where = "pipeline.json case %d call %d" % (i, j)
        check_keys(where, call, {"advance", "script", "expect"})
        expect = call["expect"]
        check_keys(where + " expect",
                   expect, {"attempts", "delays", "stop_reason", "refused", "breaker_state"})
        out.append("static const pipeline_attempt pipeline_script_%d_%d[] = {%s};" % (
            i, j, ", ".join(attempt("%s script %d" % (where, k), s)
                            for k, s in enumerate(call["script"]))))
        delays = expect["delays"]
        # A C array cannot be empty: a placeholder the count excludes.
        out.append("static const double pipeline_delays_%d_%d[] = {%s};" % (
            i, j, ", ".join(ms(d) for d in delays) if delays else "0.0"))
    out.append("static const pipeline_call_vector pipeline_calls_%d[] = {" % i)
    for j, call in enumerate(case["calls"]):
        where = "pipeline.json case %d call %d" % (i, j)
        expect = call["expect"]
        state = expect.get("breaker_state")
        out.append("  {%s, %d, pipeline_script_%d_%d, %d, %d, pipeline_delays_%d_%d, %d, %d, %d}," % (
            ms(call.get("advance", 0)), len(call["script"]), i, j, expect["attempts"],
            len(expect["delays"]), i, j,
            index(where + " stop_reason", STOP_REASONS, expect["stop_reason"]),
            int(bool(expect["refused"])),
            -1 if state is None else index(where + " breaker_state", BREAKER_STATES, state)))
    out.append("};")


def case_line(i: int, case: Dict[str, Any]) -> str:
    where = "pipeline.json case %d" % i
    p = case["policy"]
    b = case.get("breaker")
    m = case.get("expect_metrics", {})
    check_keys(where + " policy", p, POLICY)
    check_keys(where + " breaker", b or {}, BREAKER)
    check_keys(where + " expect_metrics", m, set(METRICS))
    fields = [
        c_string(case["name"]),
        str(p.get("max_attempts", -1)),
        str(index(where, BACKOFF, p["backoff"])) if "backoff" in p else "-1",
        ms(p["base_delay"]) if "base_delay" in p else "-1.0",
        repr(float(p["multiplier"])) if "multiplier" in p else "-1.0",
        ms(p["max_delay"]) if "max_delay" in p else "-1.0",
        str(index(where, JITTER, p.get("jitter", "none"))),
        ms(p["deadline"]) if "deadline" in p else "-1.0",
        ms(p["retry_after_max"]) if "retry_after_max" in p else "-1.0",
        "1" if b is not None else "0",
        str((b or {}).get("failure_threshold", -1)),
        ms(b["reset_timeout"]) if b and "reset_timeout" in b else "-1.0",
        str((b or {}).get("half_open_max_calls", -1)),
        "%d, pipeline_calls_%d" % (len(case["calls"]), i),
        "{%s}" % ", ".join(str(m.get(k, -1)) for k in METRICS),
    ]
    return "  {%s}," % ", ".join(fields)


def main(argv: List[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    check_keys("pipeline.json", doc, {"description", "cases"})
    out = [
        "/* Generated by tests/capi/gen_pipeline_vectors.py from tests/vectors/pipeline.json."
        " Do not edit. */",
        "#ifndef MULLIGAN_CAPI_PIPELINE_VECTORS_H_",
        "#define MULLIGAN_CAPI_PIPELINE_VECTORS_H_",
        "#include <stddef.h>",
        "",
        "/* outcome: 0 success, 1 retryable, 2 terminal; retry_after_ms -1: no hint. */",
        "typedef struct pipeline_attempt { int outcome; double retry_after_ms; } pipeline_attempt;",
        "",
        "/* One logical call: the clock moves advance_ms first; then the expected",
        " * attempts, waits (ms), mulligan_stop_reason, refusal and",
        " * mulligan_breaker_state after the call (-1: not checked). */",
        "typedef struct pipeline_call_vector {",
        "  double advance_ms; size_t script_count; const pipeline_attempt *script;",
        "  int attempts; size_t delay_count; const double *delays_ms; int stop_reason;",
        "  int refused; int breaker_state;",
        "} pipeline_call_vector;",
        "",
        "/* A case: the policy (-1: not set, the default; jitter is given), an",
        " * optional breaker shared by its calls, the calls, and the metrics totals",
        " * after the last call, in pipeline_metric_names order (-1: not checked). */",
        "typedef struct pipeline_vector {",
        "  const char *name; int max_attempts; int backoff; double base_delay_ms;",
        "  double multiplier; double max_delay_ms; int jitter; double deadline_ms;",
        "  double retry_after_max_ms; int has_breaker; int failure_threshold;",
        "  double reset_timeout_ms; int half_open_max_calls;",
        "  size_t call_count; const pipeline_call_vector *calls;",
        "  long long metrics[%d];" % len(METRICS),
        "} pipeline_vector;",
        "",
        "static const char *const pipeline_metric_names[] = {%s};" % ", ".join(
            c_string(k) for k in METRICS),
        "",
    ]
    for i, case in enumerate(doc["cases"]):
        check_keys("pipeline.json case %d" % i, case,
                   {"name", "policy", "breaker", "calls", "expect_metrics"})
        calls(i, case, out)
    out.append("static const pipeline_vector pipeline_vectors[] = {")
    out += [case_line(i, case) for i, case in enumerate(doc["cases"])]
    out += ["};", "", "#endif /* MULLIGAN_CAPI_PIPELINE_VECTORS_H_ */"]
    tmp = argv[2] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    os.replace(tmp, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
