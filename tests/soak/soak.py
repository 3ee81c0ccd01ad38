#!/usr/bin/env python3
"""The chaos soak: mixed traffic through a real toxiproxy whose toxics
change at random, for a set time, then checks that nothing was lost.

Started by scripts/soak.sh (not by the test suite: it runs for minutes).
It starts the test nginx (tests/nginx/nginx_server.py) and toxiproxy
(tests/toxiproxy/toxiproxy_server.py) on loopback, with the proxy in front
of nginx, and runs for ``--seconds`` (default 600):

- ``--threads`` sync workers (default 3), each with its own
  ``mulligan.Client``, and ``--tasks`` coroutines (default 6) sharing one
  ``mulligan.AsyncClient`` on an event loop thread. Each call picks (from a
  generator seeded by ``--seed``) GET /ok, GET /flaky (503 half the time),
  a keyed POST /echo or an unkeyed POST /echo, with a fallback on about a
  third of them. Every client has 3 attempts of at most 1 s and a 3 s
  deadline.
- A switcher replaces the toxic every 0.5 to 3 s (same generator): none,
  latency (down- or upstream), a stall, a stall that closes, reset_peer,
  slicer, limit_data (any cut point, response or request), slow_close or
  bandwidth, on a random share of the connections.

Checks (the exit status is 1 if any fails):

- every call ends, within its deadline plus ``SLACK`` seconds, with a
  success (status 200 and exactly the body nginx sends: a truncated answer
  that came back as a success would be "corrupt"), a final status that the
  retries gave up on (a 503 of /flaky), a documented mulligan error
  (TransportError by kind) or its fallback; nothing else ("lost");
- nginx's access log: no unkeyed POST reached nginx twice (each carries a
  unique id in its query), and every line of a keyed POST carries the key
  its query names (one key on every attempt). The log may hold more lines
  than the metrics count attempts: libcurl sends a replay-safe request
  again, within the attempt, when a kept-alive connection turns out dead
  before any response byte (an unkeyed POST never reuses a connection, so
  it is never sent twice; see core/src/http/exchange.cc);
- RSS is flat: it grows at most ``RSS_BOUND_MIB`` from the end of the warm-up
  (the first tenth of the run, at most 60 s) to the end;
- the metrics add up (mulligan.metrics_snapshot(), the one origin every
  call went to): calls = successes + failures, attempts = calls + retries,
  calls = the calls made, fallbacks = the fallbacks returned, nothing left
  in flight or waiting.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import importlib.util
import json
import logging
import os
import random
import sys
import threading
import time
import urllib.parse
import uuid
from typing import Any, Dict, Optional

import mulligan

_HERE = os.path.dirname(os.path.abspath(__file__))
_TESTS = os.path.dirname(_HERE)

ATTEMPTS = 3
TIMEOUT = 1.0  # seconds per attempt
DEADLINE = 3.0  # seconds per call
SLACK = 3.0  # seconds a loaded machine may add to a deadline before a call counts as late
RSS_BOUND_MIB = 16.0
CLIENT = dict(attempts=ATTEMPTS, timeout=TIMEOUT, deadline=DEADLINE, base_delay=0.05,
              max_delay=0.5)
FALLBACK = "fallback"


def _load(name: str, path: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def rss_mib() -> float:
    """The resident set size of this process, in MiB (/proc/self/status)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmRSS in /proc/self/status")


# -- toxics ---------------------------------------------------------------------


def random_toxic(rng: random.Random) -> Optional[Dict[str, Any]]:
    """A toxic for toxiproxy's API (kind, stream, toxicity, attributes), or
    None for a healthy spell."""
    kind = rng.choice(["none", "latency", "latency", "timeout", "reset_peer", "slicer",
                       "limit_data", "limit_data", "slow_close", "bandwidth"])
    stream = "downstream"
    if kind == "none":
        return None
    if kind == "latency":
        attributes = {"latency": rng.randint(50, 1500), "jitter": rng.randint(0, 200)}
        stream = rng.choice(["downstream", "upstream"])
    elif kind == "timeout":
        attributes = {"timeout": rng.choice([0, rng.randint(50, 500)])}
    elif kind == "reset_peer":
        attributes = {"timeout": rng.choice([0, rng.randint(10, 300)])}
        stream = rng.choice(["downstream", "upstream"])
    elif kind == "slicer":
        # toxiproxy requires size_variation < average_size (it panics otherwise).
        average = rng.randint(1, 32)
        attributes = {"average_size": average, "size_variation": rng.randint(0, average - 1),
                      "delay": rng.randint(0, 2000)}  # microseconds
    elif kind == "limit_data":
        attributes = {"bytes": rng.randint(1, 400)}
        stream = rng.choice(["downstream", "downstream", "upstream"])
    elif kind == "slow_close":
        attributes = {"delay": rng.randint(50, 1000)}
    else:
        attributes = {"rate": rng.randint(1, 50)}  # KB/s
    toxicity = rng.choice([1.0, 1.0, round(rng.uniform(0.2, 0.9), 2)])
    return {"kind": kind, "stream": stream, "toxicity": toxicity, "attributes": attributes}


# -- calls ----------------------------------------------------------------------


class Tally:
    """Outcome counters shared by every worker (under one lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.outcomes: collections.Counter[str] = collections.Counter()
        self.by_door: collections.Counter[str] = collections.Counter()
        self.late = 0
        self.max_elapsed = 0.0
        self.examples: list[str] = []  # the first few lost or corrupt calls

    def record(self, door: str, outcome: str, elapsed: float, detail: str = "") -> None:
        with self.lock:
            self.outcomes[outcome] += 1
            self.by_door[door] += 1
            self.max_elapsed = max(self.max_elapsed, elapsed)
            if elapsed > DEADLINE + SLACK:
                self.late += 1
            if outcome in ("lost", "corrupt") and len(self.examples) < 10:
                self.examples.append(f"{door}: {detail}")

    @property
    def calls(self) -> int:
        with self.lock:
            return sum(self.outcomes.values())


def plan_call(rng: random.Random, base: str) -> tuple[str, str, Optional[str], bytes, bool]:
    """Returns (method, url, idempotency key, expected body, with fallback)."""
    pick = rng.random()
    call_id = uuid.uuid4().hex
    fallback = rng.random() < 0.33
    if pick < 0.35:
        return "GET", f"{base}/ok?id={call_id}", None, b"ok\n", fallback
    if pick < 0.5:
        return "GET", f"{base}/flaky?id={call_id}", None, b"flaky ok\n", fallback
    if pick < 0.8:
        key = str(uuid.uuid4())
        body = b"method=POST\nidempotency_key=%s\nbody=x\n" % key.encode()
        return "POST", f"{base}/echo?id={call_id}&key={key}", key, body, fallback
    body = b"method=POST\nidempotency_key=\nbody=x\n"
    return "POST", f"{base}/echo?id={call_id}&unkeyed=1", None, body, fallback


def classify(result: Any, error: Optional[BaseException], expected: bytes) -> tuple[str, str]:
    """Returns (outcome, detail) for one finished call."""
    if error is not None:
        if isinstance(error, mulligan.TransportError):
            return "error:" + str(error.kind), ""
        if isinstance(error, mulligan.CircuitOpenError):
            return "error:circuit_open", ""
        return "lost", repr(error)
    if isinstance(result, str) and result == FALLBACK:
        return "fallback", ""
    if isinstance(result, mulligan.Response):
        if result.status_code == 200:
            if result.content == expected:
                return "success", ""
            return "corrupt", f"200 with {result.content!r}, expected {expected!r}"
        if result.status_code == 503 and result.stop_reason in (
                "attempts_exhausted", "deadline", "not_replay_safe"):
            return "gave_up_status", ""
        return "lost", f"status {result.status_code} ({result.stop_reason})"
    return "lost", f"returned {result!r}"


def sync_worker(index: int, base: str, seed: int, stop: threading.Event, tally: Tally) -> None:
    rng = random.Random(seed * 1000 + index)
    with mulligan.Client(**CLIENT) as client:  # type: ignore[arg-type]
        while not stop.is_set():
            method, url, key, expected, fallback = plan_call(rng, base)
            extra: Dict[str, Any] = {"fallback": FALLBACK} if fallback else {}
            start = time.monotonic()
            result: Any = None
            error: Optional[BaseException] = None
            try:
                if method == "GET":
                    result = client.get(url, **extra)
                else:
                    result = client.post(url, data=b"x", idempotency_key=key, **extra)
            except Exception as exc:  # noqa: BLE001 - classified below
                error = exc
            outcome, detail = classify(result, error, expected)
            tally.record("sync", outcome, time.monotonic() - start, detail)


async def async_main(base: str, seed: int, tasks: int, stop: threading.Event,
                     tally: Tally) -> None:
    async def worker(index: int, client: Any) -> None:
        rng = random.Random(seed * 1000 + 500 + index)
        while not stop.is_set():
            method, url, key, expected, fallback = plan_call(rng, base)
            extra: Dict[str, Any] = {"fallback": FALLBACK} if fallback else {}
            start = time.monotonic()
            result: Any = None
            error: Optional[BaseException] = None
            try:
                if method == "GET":
                    result = await client.get(url, **extra)
                else:
                    result = await client.post(url, data=b"x", idempotency_key=key, **extra)
            except Exception as exc:  # noqa: BLE001 - classified below
                error = exc
            outcome, detail = classify(result, error, expected)
            tally.record("async", outcome, time.monotonic() - start, detail)

    async with mulligan.AsyncClient(**CLIENT) as client:  # type: ignore[arg-type]
        await asyncio.gather(*(worker(i, client) for i in range(tasks)))


# -- checks ---------------------------------------------------------------------


def check_access_log(path: str) -> Dict[str, int]:
    """Reads nginx's access log once, line by line: unkeyed POSTs seen more
    than once (any line counts, a 400 for a cut head too), keyed lines whose
    key is not the one their query names (among the whole requests: a 400
    for a head cut before the key's field arrived is counted apart)."""
    unkeyed: collections.Counter[str] = collections.Counter()
    lines = keyed_lines = wrong_key = cut_heads = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            lines += 1
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(entry["uri"]).query)
            if "unkeyed" in query:
                unkeyed[query["id"][0]] += 1
            elif "key" in query:
                keyed_lines += 1
                if entry["status"] == "400":
                    # An upstream limit_data cut the request's head: nginx
                    # logs what it read (the request line), answers 400 and
                    # runs nothing; the key's field had not arrived.
                    cut_heads += 1
                elif entry["idempotency_key"] != query["key"][0]:
                    wrong_key += 1
    return {
        "lines": lines,
        "unkeyed_posts_seen": len(unkeyed),
        "unkeyed_posts_seen_twice": sum(1 for n in unkeyed.values() if n > 1),
        "keyed_lines": keyed_lines,
        "keyed_lines_cut_in_the_head": cut_heads,
        "keyed_lines_with_another_key": wrong_key,
    }


def check_metrics(origin: str, tally: Tally) -> tuple[Dict[str, Any], list[str]]:
    snapshot = [m for m in mulligan.metrics_snapshot() if m["name"] == origin]
    if len(snapshot) != 1:
        return {}, [f"no metrics for {origin}: {[m['name'] for m in mulligan.metrics_snapshot()]}"]
    m = snapshot[0]
    figures = {k: m[k] for k in ("calls", "attempts", "retries", "successes", "failures",
                                 "fallbacks", "in_flight", "waiting_to_retry")}
    problems = []
    if m["calls"] != m["successes"] + m["failures"]:
        problems.append("calls != successes + failures")
    if m["attempts"] != m["calls"] + m["retries"]:
        problems.append("attempts != calls + retries")
    if m["calls"] != tally.calls:
        problems.append(f"metrics count {m['calls']} calls, the workers made {tally.calls}")
    if m["fallbacks"] != tally.outcomes["fallback"]:
        problems.append(f"metrics count {m['fallbacks']} fallbacks, the workers got "
                        f"{tally.outcomes['fallback']}")
    if m["in_flight"] or m["waiting_to_retry"]:
        problems.append("calls left in flight or waiting")
    return figures, problems


# -- main -----------------------------------------------------------------------


def switch_toxics(toxiproxy: Any, rng: random.Random, start: float, stop_at: float,
                  switches: "collections.Counter[str]", rss: list[tuple[float, float]],
                  tally: Tally) -> None:
    """Until `stop_at`: replaces the toxic every 0.5 to 3 s, samples RSS
    every 5 s, and tells the progress every 60 s on stderr."""
    next_switch = next_sample = last_report = start
    while time.monotonic() < stop_at:
        now = time.monotonic()
        if now >= next_switch:
            toxiproxy.reset()
            toxic = random_toxic(rng)
            if toxic is not None:
                toxiproxy.add_toxic("nginx", toxic["kind"], toxic["attributes"],
                                    stream=toxic["stream"], toxicity=toxic["toxicity"])
            switches["none" if toxic is None else toxic["kind"]] += 1
            next_switch = now + rng.uniform(0.5, 3.0)
        if now >= next_sample:
            rss.append((now - start, rss_mib()))
            next_sample = now + 5.0
        if now - last_report >= 60.0:
            last_report = now
            print(f"soak: {now - start:.0f} s, {tally.calls} calls, RSS {rss[-1][1]:.1f} MiB",
                  file=sys.stderr, flush=True)
        time.sleep(min(0.1, max(0.0, stop_at - now)))


def run(args: argparse.Namespace) -> Dict[str, Any]:
    nginx_mod = _load("mulligan_soak_nginx", os.path.join(_TESTS, "nginx", "nginx_server.py"))
    toxi_mod = _load("mulligan_soak_toxiproxy",
                     os.path.join(_TESTS, "toxiproxy", "toxiproxy_server.py"))
    tally = Tally()
    switches: collections.Counter[str] = collections.Counter()
    rss: list[tuple[float, float]] = []
    failure = ""
    with nginx_mod.NginxServer() as nginx, toxi_mod.ToxiproxyServer(seed=args.seed) as toxiproxy:
        port = toxiproxy.create_proxy("nginx", "127.0.0.1:%d" % nginx.port)
        base = "http://127.0.0.1:%d" % port
        start = time.monotonic()
        stop_at = start + args.seconds
        stop = threading.Event()  # set at stop_at, or when toxiproxy fails
        workers = [threading.Thread(target=sync_worker, args=(i, base, args.seed, stop, tally),
                                    name=f"soak-sync-{i}", daemon=True)
                   for i in range(args.threads)]
        workers.append(threading.Thread(
            target=lambda: asyncio.run(async_main(base, args.seed, args.tasks, stop, tally)),
            name="soak-async", daemon=True))
        for w in workers:
            w.start()

        try:
            switch_toxics(toxiproxy, random.Random(args.seed), start, stop_at, switches, rss,
                          tally)
            toxiproxy.reset()
        except toxi_mod.ToxiproxyError as e:
            failure = f"toxiproxy failed: {e}; its log ends: {toxiproxy.log()[-2000:]}"
        stop.set()
        # Every call in flight ends within its deadline (plus slack).
        for w in workers:
            w.join(timeout=DEADLINE + SLACK + 5.0)
        hung = [w.name for w in workers if w.is_alive()]
        elapsed = time.monotonic() - start
        rss.append((elapsed, rss_mib()))
        # After the last RSS sample: the log check holds a counter per unkeyed POST.
        time.sleep(0.5)  # nginx logs just after answering
        log = check_access_log(nginx.access_log_path)
        origin = base
    metrics, metric_problems = check_metrics(origin, tally)

    warm_up = min(60.0, args.seconds / 10.0)
    rss_start = next((m for t, m in rss if t >= warm_up), rss[-1][1])
    rss_end = rss[-1][1]
    problems = list(metric_problems)
    if failure:
        problems.append(failure)
    if hung:
        problems.append(f"workers still running after the deadline: {hung}")
    if tally.outcomes["lost"] or tally.outcomes["corrupt"]:
        problems.append(f"{tally.outcomes['lost']} lost, {tally.outcomes['corrupt']} corrupt: "
                        f"{tally.examples}")
    if tally.late:
        problems.append(f"{tally.late} calls took longer than {DEADLINE + SLACK} s")
    if log["unkeyed_posts_seen_twice"]:
        problems.append(f"{log['unkeyed_posts_seen_twice']} unkeyed POSTs reached nginx twice")
    if log["keyed_lines_with_another_key"]:
        problems.append(f"{log['keyed_lines_with_another_key']} keyed attempts with another key")
    if rss_end - rss_start > RSS_BOUND_MIB:
        problems.append(f"RSS grew {rss_end - rss_start:.1f} MiB after the warm-up "
                        f"(bound {RSS_BOUND_MIB} MiB)")
    return {
        "seconds": round(elapsed, 1),
        "seed": args.seed,
        "threads": args.threads,
        "tasks": args.tasks,
        "calls": tally.calls,
        "calls_by_door": dict(tally.by_door),
        "outcomes": dict(sorted(tally.outcomes.items())),
        "max_call_seconds": round(tally.max_elapsed, 3),
        "toxic_switches": dict(sorted(switches.items())),
        "rss_mib": {"after_warm_up": round(rss_start, 1), "end": round(rss_end, 1),
                    "max": round(max(m for _, m in rss), 1), "warm_up_seconds": warm_up,
                    "bound_mib": RSS_BOUND_MIB},
        "metrics": metrics,
        "access_log": log,
        "problems": problems,
    }


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600.0, help="run time (default 600)")
    parser.add_argument("--seed", type=int, default=1, help="seeds the toxics and the calls")
    parser.add_argument("--threads", type=int, default=3, help="sync workers (default 3)")
    parser.add_argument("--tasks", type=int, default=6, help="async workers (default 6)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    # Each retry and give-up is a WARNING on the "mulligan" logger: tens of
    # thousands here. The figures say what happened.
    logging.getLogger("mulligan").setLevel(logging.CRITICAL)
    if args.seconds <= 0 or args.threads < 0 or args.tasks < 0 or args.threads + args.tasks == 0:
        parser.error("--seconds must be > 0 and there must be at least one worker")
    report = run(args)
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    if report["problems"]:
        print("soak: FAILED:\n  " + "\n  ".join(report["problems"]), file=sys.stderr)
        return 1
    print("soak: passed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
