#!/usr/bin/env python3
"""The cost of mulligan's OpenTelemetry traces, per attempt (issue 20).

Run after `pip install .[test]` (opentelemetry-sdk), with nginx installed for
the HTTP rows (tests/nginx; they are skipped without it):

    python bench/otel_tracing.py [--repeat 5] [--number 20000]

Three modes, measured in this one run on the same functions and clients:

* off: tracing never turned on (the default);
* no SDK: ``mulligan.otel.instrument(tracing=True)`` with the API's default
  global provider, no SDK ever set (what an application without an SDK gets);
* SDK: an SDK ``TracerProvider`` with a SimpleSpanProcessor and an exporter
  that drops every span (the cost of building and ending spans, not of
  shipping them).

Yardstick, same run: one bare SDK span (``tracer.start_span(...).end()``
on the same provider), the least any tracing of an attempt costs.

Rows: a decorated function that succeeds at once (1 attempt), the same
failing twice then succeeding with zero wait (3 attempts), and a
``mulligan.Client`` GET of nginx's /ok (1 attempt). Each figure is the
minimum over ``repeat`` timeit runs, in ns per call; "per attempt" is the
difference with "off" divided by the attempts of the call.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import timeit
from typing import Any, Callable, Optional, Sequence

import mulligan
import mulligan.otel

HERE = os.path.dirname(os.path.abspath(__file__))


def best_ns(stmt: Callable[[], Any], number: int, repeat: int) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e9


def sdk_provider() -> Any:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Drop()))
    return provider


def calls(url: Optional[str]) -> list[tuple[str, int, Callable[[], Any]]]:
    @mulligan.retry(on=ConnectionError, base_delay=0)
    def ok() -> int:
        return 1

    left = [0]

    @mulligan.retry(on=ConnectionError, base_delay=0, attempts=3)
    def flaky() -> int:
        if left[0]:
            left[0] -= 1
            raise ConnectionError("flaky")
        return 1

    def twice_then_ok() -> int:
        left[0] = 2
        return flaky()

    rows: list[tuple[str, int, Callable[[], Any]]] = [
        ("@retry, succeeds at once", 1, ok),
        ("@retry, 2 failures then success", 3, twice_then_ok),
    ]
    if url is not None:
        client = mulligan.Client()
        rows.append(("Client.get(/ok), nginx", 1, lambda: client.get(url)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--number", type=int, default=20_000)
    parser.add_argument("--http-number", type=int, default=2_000)
    args = parser.parse_args()

    import logging

    logging.getLogger("mulligan").setLevel(logging.ERROR)
    server: Any = None
    url: Optional[str] = None
    try:
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "nginx"))
        from nginx_server import NginxServer

        server = NginxServer().start()
        url = server.url("/ok")
    except Exception as e:  # nginx missing: decorator rows only
        print(f"(HTTP row skipped: {e})")
    from importlib.metadata import version

    print(
        f"Python {platform.python_version()} on {platform.machine()}, mulligan "
        f"{mulligan.__version__}, opentelemetry-sdk {version('opentelemetry-sdk')}; "
        f"min of {args.repeat} runs\n"
    )
    rows = calls(url)
    modes: list[tuple[str, Any]] = [
        ("off", None),
        ("no SDK", "global"),
        ("SDK", sdk_provider()),
    ]
    results: dict[tuple[str, str], float] = {}
    try:
        for mode, provider in modes:
            bridge = None
            if provider == "global":
                bridge = mulligan.otel.instrument(tracing=True)
            elif provider is not None:
                bridge = mulligan.otel.instrument(tracing=True, tracer_provider=provider)
            try:
                for name, _, fn in rows:
                    number = args.http_number if name.startswith("Client") else args.number
                    fn()
                    results[(name, mode)] = best_ns(fn, number, args.repeat)
            finally:
                if bridge is not None:
                    bridge.uninstrument()
    finally:
        if server is not None:
            server.stop()
    tracer = modes[2][1].get_tracer("bench")
    bare_span = best_ns(lambda: tracer.start_span("x").end(), args.number, args.repeat)
    print(f"One bare SDK span (start + end), the yardstick: {bare_span:.0f} ns\n")
    print("| call | attempts | off (ns) | no SDK (ns) | SDK (ns) | no SDK per attempt | SDK per attempt |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, attempts, _ in rows:
        off = results[(name, "off")]
        none = results[(name, "no SDK")]
        sdk = results[(name, "SDK")]
        print(
            f"| {name} | {attempts} | {off:.0f} | {none:.0f} | {sdk:.0f} | "
            f"{(none - off) / attempts:+.0f} | {(sdk - off) / attempts:+.0f} |"
        )


if __name__ == "__main__":
    main()
