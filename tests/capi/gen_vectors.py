"""Turns the shared test vectors (tests/vectors/*.json) into a C99 header.

The C suite runs the same cases as the C++ and Python suites (DESIGN.md
section 7) without a JSON parser in C: this script, run by CMake at build time,
emits static arrays that tests/capi/vectors_test.c walks.

    python3 gen_vectors.py VECTORS_DIR OUTPUT_HEADER

Unknown keys are an error, so a new kind of case is never silently skipped.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List

BACKOFF = {"constant", "linear", "exponential", "decorrelated"}
JITTER = {"none", "full", "equal", "proportional"}
ERRORS = {
    "none": "MULLIGAN_ERROR_NONE",
    "connection_refused": "MULLIGAN_ERROR_CONNECTION_REFUSED",
    "connection_reset": "MULLIGAN_ERROR_CONNECTION_RESET",
    "dns_failure": "MULLIGAN_ERROR_DNS_FAILURE",
    "connect_timeout": "MULLIGAN_ERROR_CONNECT_TIMEOUT",
    "timeout": "MULLIGAN_ERROR_TIMEOUT",
    "tls_error": "MULLIGAN_ERROR_TLS",
    "invalid_url": "MULLIGAN_ERROR_INVALID_URL",
    "transport": "MULLIGAN_ERROR_TRANSPORT",
    "retryable": "MULLIGAN_ERROR_RETRYABLE",
    "terminal": "MULLIGAN_ERROR_TERMINAL",
    "truncated": "MULLIGAN_ERROR_TRUNCATED",
}
REASONS = {"none", "succeeded", "terminal", "attempts_exhausted", "deadline",
           "retry_after_too_long", "not_replay_safe"}
ACTIONS = {"retry", "stop"}


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
        raise SystemExit("%s: unknown keys %s (teach gen_vectors.py)" % (where, sorted(unknown)))


def enum(prefix: str, name: str, allowed: set, where: str) -> str:
    if name not in allowed:
        raise SystemExit("%s: unknown value %r" % (where, name))
    return prefix + name.upper()


def num(value: Any) -> str:
    return repr(float(value))


def backoff_cases(doc: Dict[str, Any]) -> List[str]:
    lines = []
    for i, c in enumerate(doc["cases"]):
        where = "backoff.json case %d" % i
        check_keys(where, c, {"name", "backoff", "base_ns", "multiplier", "max_delay_ns",
                              "jitter", "jitter_fraction", "seed", "count", "expected_ns"})
        if len(c["expected_ns"]) != c["count"]:
            raise SystemExit("%s: count != len(expected_ns)" % where)
        lines.append("static const int64_t backoff_expected_%d[] = {%s};" % (
            i, ", ".join("INT64_C(%d)" % v for v in c["expected_ns"])))
    lines.append("static const backoff_vector backoff_vectors[] = {")
    for i, c in enumerate(doc["cases"]):
        where = "backoff.json case %d" % i
        lines.append("  {%s, %s, INT64_C(%d), %s, INT64_C(%d), %s, %s, UINT64_C(%d), %d, "
                     "backoff_expected_%d}," % (
                         c_string(c["name"]),
                         enum("MULLIGAN_BACKOFF_", c["backoff"], BACKOFF, where),
                         c["base_ns"], num(c["multiplier"]), c["max_delay_ns"],
                         enum("MULLIGAN_JITTER_", c["jitter"], JITTER, where),
                         num(c["jitter_fraction"]), c["seed"], c["count"], i))
    lines.append("};")
    return lines


def retry_after_cases(doc: Dict[str, Any]) -> List[str]:
    lines = ["static const retry_after_vector retry_after_vectors[] = {"]
    for i, c in enumerate(doc["cases"]):
        check_keys("retry_after.json case %d" % i, c,
                   {"value", "now_unix", "expected_seconds", "saturated"})
        expected = c["expected_seconds"]
        saturated = bool(c.get("saturated", False))
        lines.append("  {%s, INT64_C(%d), %d, %d, INT64_C(%d)}," % (
            c_string(c["value"]), c["now_unix"], 0 if expected is None else 1,
            1 if saturated else 0, -1 if expected is None else expected))
    lines.append("};")
    return lines


POLICY_KEYS = ["max_attempts", "backoff", "base_delay", "multiplier", "max_delay", "jitter",
               "deadline", "retry_after_max", "retry_after_clamp"]


def session_cases(doc: Dict[str, Any]) -> List[str]:
    lines = []
    for i, c in enumerate(doc["cases"]):
        where = "deadline.json case %d" % i
        check_keys(where, c, {"name", "policy", "replay_safe", "steps"})
        check_keys(where + " policy", c["policy"], set(POLICY_KEYS))
        steps = []
        for j, s in enumerate(c["steps"]):
            sw = "%s step %d" % (where, j)
            check_keys(sw, s, {"at", "outcome", "expect"})
            check_keys(sw + " outcome", s["outcome"], {"error", "http_status", "retry_after"})
            check_keys(sw + " expect", s["expect"],
                       {"action", "delay", "reason", "from_retry_after"})
            o, e = s["outcome"], s["expect"]
            error = o.get("error", "none")
            if error not in ERRORS:
                raise SystemExit("%s: unknown error %r" % (sw, error))
            from_ra = e.get("from_retry_after")
            steps.append("  {%s, %s, %d, %s, %s, %s, %s, %d}," % (
                num(s["at"]), ERRORS[error], o.get("http_status", 0),
                num(o.get("retry_after", -1.0)),
                enum("MULLIGAN_ACTION_", e["action"], ACTIONS, sw),
                num(e.get("delay", -1.0)),
                enum("MULLIGAN_STOP_", e["reason"], REASONS, sw) if "reason" in e else "-1",
                -1 if from_ra is None else int(bool(from_ra))))
        lines.append("static const session_step session_steps_%d[] = {" % i)
        lines.extend(steps)
        lines.append("};")
    lines.append("static const session_vector session_vectors[] = {")
    for i, c in enumerate(doc["cases"]):
        where = "deadline.json case %d" % i
        p = c["policy"]
        fields = [
            str(p.get("max_attempts", -1)),
            enum("MULLIGAN_BACKOFF_", p["backoff"], BACKOFF, where) if "backoff" in p else "-1",
            num(p.get("base_delay", -1.0)),
            num(p.get("multiplier", -1.0)),
            num(p.get("max_delay", -1.0)),
            enum("MULLIGAN_JITTER_", p["jitter"], JITTER, where) if "jitter" in p else "-1",
            num(p.get("deadline", -1.0)),
            num(p.get("retry_after_max", -1.0)),
            str(int(p["retry_after_clamp"])) if "retry_after_clamp" in p else "-1",
        ]
        lines.append("  {%s, %s, %d, %d, session_steps_%d}," % (
            c_string(c["name"]), ", ".join(fields), int(c.get("replay_safe", True)),
            len(c["steps"]), i))
    lines.append("};")
    return lines


def main(argv: List[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    vectors_dir, output = argv[1], argv[2]

    def load(name: str) -> Dict[str, Any]:
        with open(os.path.join(vectors_dir, name), encoding="utf-8") as f:
            return json.load(f)

    out = [
        "/* Generated by tests/capi/gen_vectors.py from the JSON files in tests/vectors. Do not edit. */",
        "#ifndef MULLIGAN_CAPI_VECTORS_H_",
        "#define MULLIGAN_CAPI_VECTORS_H_",
        "#include <stddef.h>",
        "#include <stdint.h>",
        '#include "mulligan.h"',
        "",
        "/* Backoff delays in ns for retries 0..count-1 of a seeded session. */",
        "typedef struct backoff_vector {",
        "  const char *name; int backoff; int64_t base_ns; double multiplier;",
        "  int64_t max_delay_ns; int jitter; double jitter_fraction; uint64_t seed;",
        "  size_t count; const int64_t *expected_ns;",
        "} backoff_vector;",
        "",
        "/* A Retry-After value at now_unix; valid 0 means invalid. */",
        "typedef struct retry_after_vector {",
        "  const char *value; int64_t now_unix; int valid; int saturated;",
        "  int64_t expected_seconds;",
        "} retry_after_vector;",
        "",
        "/* One outcome reported `at_s` seconds after the start; negative or -1",
        " * fields are absent (not checked / no hint). */",
        "typedef struct session_step {",
        "  double at_s; int error_kind; int http_status; double retry_after_s;",
        "  int action; double delay_s; int reason; int from_retry_after;",
        "} session_step;",
        "",
        "/* A policy (-1 = not set, keep the default) and its script. */",
        "typedef struct session_vector {",
        "  const char *name; int max_attempts; int backoff; double base_delay_s;",
        "  double multiplier; double max_delay_s; int jitter; double deadline_s;",
        "  double retry_after_max_s; int retry_after_clamp; int replay_safe;",
        "  size_t step_count; const session_step *steps;",
        "} session_vector;",
        "",
    ]
    out += backoff_cases(load("backoff.json")) + [""]
    out += retry_after_cases(load("retry_after.json")) + [""]
    out += session_cases(load("deadline.json")) + [""]
    out.append("#endif /* MULLIGAN_CAPI_VECTORS_H_ */")
    text = "\n".join(out) + "\n"
    tmp = output + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
