#!/usr/bin/env python3
"""Instruction counts of mulligan's hot paths, gated by bench/budgets.json (issue 19).

Run after `pip install .` (the gate in scripts/test.sh runs it on the installed
wheel), with valgrind, nginx (as for the tests) and, for the C++ paths, the
bench programs of a CMake build configured with -DMULLIGAN_BUILD_BENCH=ON:

    python bench/instructions.py [--budgets bench/budgets.json] [--cxx-build build]
                                 [--paths a,b] [--scale 1.0] [--runs 1]
                                 [--write-budgets FILE] [--json FILE]

What is counted: instructions executed in user space (callgrind's Ir, the
same count `valgrind --tool=callgrind` reports), per iteration of each hot
path, with no wall-clock time anywhere, so the figure cannot flake with the
load of the machine. Each path runs N and then 2N iterations and the cost of
one iteration is (Ir(2N) - Ir(N)) / N: start-up, imports and set-up cancel
out (the method of CodSpeed's and of the Python/CPython benchmark gates).

  * Python paths run in one interpreter under callgrind with
    --dump-before=getppid: the child calls os.getppid() (libc's getppid,
    which nothing else here calls) as a marker before and after each phase,
    and each call makes callgrind write the counts since the previous marker
    to its own file and zero them. A path's phases are: set-up and a warm-up
    (which lets CPython 3.11+ specialise its bytecode), N iterations, 2N
    iterations. The interpreter runs with PYTHONHASHSEED=0, so dictionary
    and set layouts are the same in every run.
  * C++ paths run a bench program twice (N and 2N calls) and take the
    difference of the whole-program totals.
  * The sequential GET goes to a real nginx (tests/nginx) on a loopback port,
    started by this script outside valgrind; only the client is counted.

The gate: a path whose count exceeds its budget by more than --tolerance
(default 5%) fails the run (exit status 1), and the message names the path
and both counts; a path more than 5% under its budget is printed as a hint
to lower the budget. A change that legitimately costs more updates the
budget in the same commit and says why. Exit status 2: bad arguments, a
malformed budgets file, a path without a budget, or a tool missing.

Stability: for one build, the paths without I/O repeat to within 0.1%
between runs (the C++ ones exactly). The two GET paths also count libcurl's
and the event loop's user-space polling, which depends on when nginx's answer
arrives (a read that finds nothing yet costs one more poll round), so their
counts spread between runs: the sequential GET by up to about 3%, the
concurrent one (where it also decides how many answers each turn of the event
loop finds ready) by about 5%, as much as the tolerance, so that one is
measured and printed but not gated. budgets.json records each path's
spread_percent.

Counts depend on the build (compiler, flags, CPython version): the budgets
are measured with the build CI uses, and budgets.json's "measured" field says
which. --write-budgets FILE measures and writes a budgets file (--runs K
measures K times and records the highest count of each path).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_BUDGETS = os.path.join(HERE, "budgets.json")
DEFAULT_TOLERANCE = 0.05
CONCURRENCY = 10  # requests in flight on the concurrent GET path
MARKER = "getppid"  # the libc function whose entry makes callgrind dump (see above)


@dataclass(frozen=True)
class Path:
    """One hot path: its name (the key in budgets.json), what one iteration
    does, the iteration count N at --scale 1, and where it runs ("python",
    or the C++ bench program and its case argument)."""

    name: str
    what: str
    n: int
    program: Optional[str] = None  # C++ bench program (None: a Python path)
    case: Optional[str] = None  # its case argument
    gated: bool = True  # False: measured and printed for comparison, never gated
    default: bool = True  # False: measured only when named in --paths


PATHS: Sequence[Path] = (
    Path("py_passthrough_reference", "a plain functools.wraps pass-through wrapper around a "
         "function that returns 1 (the floor; reference, not gated)", 2000, gated=False),
    Path("py_retry_success", "@mulligan.retry(on=ConnectionError, attempts=3) call that "
         "succeeds at once", 2000),
    Path("py_retry_failure", "@mulligan.retry(on=ConnectionError, attempts=3, base_delay=0.0) "
         "call: two ConnectionErrors, then success, zero wait", 400),
    Path("py_breaker_with", "`with breaker:` block (mulligan.CircuitBreaker, closed) around a "
         "call that returns 1", 2000),
    Path("py_breaker_decorator", "mulligan.CircuitBreaker (closed) used as a decorator, call "
         "that returns 1", 2000),
    Path("py_http_get_sequential", "mulligan.Client(attempts=3).get() of nginx's /ok on "
         "loopback, kept-alive connection", 300),
    # Not gated: its count spreads by about 5% between runs (how many answers
    # each turn of the event loop finds ready depends on timing), as much as
    # the gate's tolerance; it is measured and printed for the record.
    Path("py_http_get_concurrent", "one GET of nginx's /ok through mulligan.AsyncClient("
         "attempts=3), 10 in flight on one asyncio loop (not gated: spreads ~5% between runs)",
         300, gated=False),
    # The client adapters against what they replace (issue 20), off by
    # default and never gated: their counts are mostly requests', urllib3's,
    # httpx's and tenacity's, whose versions come from PyPI. Run them with
    #   python bench/instructions.py --paths py_http_requests_bare,...
    # (names below); the adapters' README table comes from such a run.
    Path("py_http_requests_bare", "requests.Session GET of nginx's /ok through HTTPAdapter("
         "max_retries=0) (no retry layer)", 100, gated=False, default=False),
    Path("py_http_requests_urllib3", "requests.Session GET of nginx's /ok through HTTPAdapter("
         "max_retries=urllib3 Retry(total=3, backoff_factor=0.2, status_forcelist=[408, 429, "
         "500, 502, 503, 504]))", 100, gated=False, default=False),
    Path("py_http_requests_mulligan", "requests.Session GET of nginx's /ok through "
         "mulligan.adapters.requests.Adapter(attempts=3)", 100, gated=False, default=False),
    Path("py_http_httpx_bare", "httpx.Client GET of nginx's /ok (no retry layer)", 100,
         gated=False, default=False),
    Path("py_http_httpx_tenacity", "httpx.Client GET of nginx's /ok inside tenacity's "
         "Retrying(stop_after_attempt(3), wait_exponential, retry on TransportError or a "
         "retryable status)", 100, gated=False, default=False),
    Path("py_http_httpx_mulligan", "httpx.Client GET of nginx's /ok through "
         "mulligan.adapters.httpx.Transport(attempts=3)", 100, gated=False, default=False),
    Path("cxx_bare_call_reference", "C++ bare call of the success cases' operation, no "
         "RetryCall (bench/core_retry_bench.cc, case bare; the floor; reference, not gated)",
         100_000, program="core_retry_bench", case="bare", gated=False),
    Path("cxx_retry_success", "C++ RetryCall(RetryPolicy::Default(), ok) success, no metrics "
         "(bench/core_retry_bench.cc, case success)", 100_000,
         program="core_retry_bench", case="success"),
    Path("cxx_retry_success_metrics", "C++ RetryCall(RetryPolicy::Default(), ok) success, "
         "metrics on (bench/core_retry_bench.cc, case success_metrics)", 100_000,
         program="core_retry_bench", case="success_metrics"),
    Path("cxx_retry_two_failures_metrics", "C++ RetryCall(zero-wait policy) two transport "
         "errors, then success, metrics on (bench/core_retry_bench.cc, case "
         "two_failures_metrics)", 10_000, program="core_retry_bench",
         case="two_failures_metrics"),
    Path("cxx_breaker_acquire_record", "C++ CircuitBreaker Acquire + Record(success), closed, "
         "no window (bench/core_breaker_bench.cc, case acquire_record)", 100_000,
         program="core_breaker_bench", case="acquire_record"),
)
PATHS_BY_NAME = {p.name: p for p in PATHS}


class GateError(Exception):
    """A usage or environment error (exit status 2), not a budget failure."""


# -- the Python child (runs under callgrind) -----------------------------------


def _marker() -> None:
    os.getppid()


def _python_path(name: str, url: str) -> Callable[[int], None]:
    """Returns run(n), which runs `n` iterations of the Python path `name`."""
    import functools
    import logging

    import mulligan

    # Every retry is logged at WARNING; as in bench/python_retry_bench.py, the
    # record is not built when the logger is off, and the gate counts the engine.
    logging.getLogger("mulligan").setLevel(logging.ERROR)

    def target() -> int:
        return 1

    if name == "py_passthrough_reference":
        @functools.wraps(target)
        def wrapper(*args: Any, **kwargs: Any) -> int:
            return target(*args, **kwargs)

        return lambda n: _loop(wrapper, n)
    if name == "py_retry_success":
        decorated_ok = mulligan.retry(on=ConnectionError, attempts=3)(target)
        return lambda n: _loop(decorated_ok, n)
    if name == "py_retry_failure":
        left = [0]

        def flaky() -> int:
            if left[0]:
                left[0] -= 1
                raise ConnectionError("flaky")
            return 1

        decorated = mulligan.retry(on=ConnectionError, attempts=3, base_delay=0.0)(flaky)

        def run_failure(n: int) -> None:
            for _ in range(n):
                left[0] = 2
                decorated()

        return run_failure
    if name == "py_breaker_with":
        breaker = mulligan.CircuitBreaker("instructions-with")

        def with_block() -> int:
            with breaker:
                return target()

        return lambda n: _loop(with_block, n)
    if name == "py_breaker_decorator":
        guarded = mulligan.CircuitBreaker("instructions-decorator")(target)
        return lambda n: _loop(guarded, n)
    if name == "py_http_get_sequential":
        client = mulligan.Client(attempts=3)
        ok_url = url + "/ok"

        def run_get(n: int) -> None:
            for _ in range(n):
                if client.get(ok_url).status_code != 200:
                    raise RuntimeError("GET /ok did not answer 200")

        return run_get
    if name == "py_http_get_concurrent":
        return _concurrent_gets(mulligan, url + "/ok")
    if name.startswith(("py_http_requests_", "py_http_httpx_")):
        return _adapter_gets(name, url + "/ok")
    raise GateError(f"no Python path named {name!r}")


def _adapter_gets(name: str, ok_url: str) -> Callable[[int], None]:
    """run(n): n sequential GETs of `ok_url` through the client of path `name`
    (one kept-alive connection), each checked for its 200."""
    if name.startswith("py_http_requests_"):
        import requests
        import urllib3

        import mulligan.adapters.requests

        session = requests.Session()
        session.trust_env = False  # no proxy or netrc look-ups from the environment
        adapter: Any = {
            "py_http_requests_bare": lambda: requests.adapters.HTTPAdapter(max_retries=0),
            "py_http_requests_urllib3": lambda: requests.adapters.HTTPAdapter(
                max_retries=urllib3.Retry(total=3, backoff_factor=0.2,
                                          status_forcelist=[408, 429, 500, 502, 503, 504])),
            "py_http_requests_mulligan": lambda: mulligan.adapters.requests.Adapter(attempts=3),
        }[name]()
        session.mount("http://", adapter)
        get: Callable[[], Any] = lambda: session.get(ok_url)  # noqa: E731
    else:
        import httpx

        import mulligan.adapters.httpx

        if name == "py_http_httpx_mulligan":
            client = httpx.Client(transport=mulligan.adapters.httpx.Transport(attempts=3))
        else:
            client = httpx.Client()
        get = lambda: client.get(ok_url)  # noqa: E731
        if name == "py_http_httpx_tenacity":
            import tenacity

            retrying = tenacity.Retrying(
                stop=tenacity.stop_after_attempt(3), wait=tenacity.wait_exponential(0.2),
                retry=tenacity.retry_if_exception_type(httpx.TransportError)
                | tenacity.retry_if_result(lambda r: r.status_code in (408, 429, 500, 502, 503,
                                                                       504)),
                reraise=True)
            plain = get
            get = lambda: retrying(plain)  # noqa: E731

    def run_gets(n: int) -> None:
        for _ in range(n):
            if get().status_code != 200:
                raise RuntimeError("GET /ok did not answer 200")

    return run_gets


def _concurrent_gets(mulligan: Any, ok_url: str) -> Callable[[int], None]:
    """run(n): n GETs through one mulligan.AsyncClient on one event loop
    (kept between phases, with its connections), CONCURRENCY in flight."""
    import asyncio

    loop = asyncio.new_event_loop()
    client = loop.run_until_complete(_open_async_client(mulligan))

    async def gets(n: int) -> None:
        todo = iter(range(n))

        async def worker() -> None:
            for _ in todo:
                if (await client.get(ok_url)).status_code != 200:
                    raise RuntimeError("GET /ok did not answer 200")

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))

    return lambda n: loop.run_until_complete(gets(n))


async def _open_async_client(mulligan: Any) -> Any:
    return mulligan.AsyncClient(attempts=3)


def _loop(fn: Callable[[], Any], n: int) -> None:
    for _ in range(n):
        fn()


def child_main(names: List[str], counts: List[int], url: str) -> int:
    """The interpreter under callgrind: for each path, set-up and warm-up,
    marker, N iterations, marker, 2N iterations, marker."""
    for name, n in zip(names, counts):
        run = _python_path(name, url)
        run(max(50, n // 10))  # warm-up: bytecode specialisation, caches, connection
        _marker()
        run(n)
        _marker()
        run(2 * n)
        _marker()
    return 0


# -- the driver -----------------------------------------------------------------


def _valgrind() -> str:
    found = shutil.which("valgrind")
    if not found:
        raise GateError("valgrind not found (Debian: apt-get install valgrind; scripts/setup.sh "
                        "installs it)")
    return found


def _callgrind_total(path: str) -> int:
    """Returns the Ir total of one callgrind output file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    raise GateError(f"no totals in callgrind output {path}")


def _run_callgrind(argv: List[str], workdir: str, extra: Sequence[str] = (),
                   env: Optional[Dict[str, str]] = None) -> str:
    """Runs argv under callgrind in workdir; returns the output file prefix."""
    prefix = os.path.join(workdir, "cg")
    cmd = [_valgrind(), "--tool=callgrind", "--callgrind-out-file=" + prefix + ".%p", *extra,
           *argv]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if proc.returncode != 0:
        raise GateError(f"{' '.join(argv)} failed under callgrind (status {proc.returncode}):\n"
                        + proc.stderr[-3000:] + proc.stdout[-2000:])
    return prefix


def _files_by_dump(workdir: str) -> Dict[int, str]:
    """Maps dump number (1, 2, ...) to its file; 0 is the final file (at exit)."""
    out: Dict[int, str] = {}
    for entry in os.listdir(workdir):
        m = re.fullmatch(r"cg\.\d+(?:\.(\d+))?", entry)
        if m:
            out[int(m.group(1) or 0)] = os.path.join(workdir, entry)
    return out


def measure_python(paths: List[Path], scale: float, url: str) -> Dict[str, float]:
    """Counts the Python paths in one interpreter; returns Ir per iteration."""
    counts = [max(1, int(p.n * scale)) for p in paths]
    env = dict(os.environ, PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory(prefix="mulligan-instructions-") as workdir:
        argv = [sys.executable, os.path.abspath(__file__), "--child", "--url", url,
                "--paths", ",".join(p.name for p in paths),
                "--counts", ",".join(str(c) for c in counts)]
        _run_callgrind(argv, workdir, extra=["--dump-before=" + MARKER], env=env)
        dumps = _files_by_dump(workdir)
        expected = 3 * len(paths)
        if sorted(k for k in dumps if k) != list(range(1, expected + 1)):
            raise GateError(f"expected {expected} callgrind dumps (3 per path), found "
                            f"{sorted(k for k in dumps if k)}: did something else call {MARKER}?")
        result: Dict[str, float] = {}
        for i, (p, n) in enumerate(zip(paths, counts)):
            once = _callgrind_total(dumps[3 * i + 2])
            twice = _callgrind_total(dumps[3 * i + 3])
            result[p.name] = (twice - once) / n
        return result


def _find_program(cxx_build: str, program: str) -> str:
    for candidate in (os.path.join(cxx_build, "bench", program), os.path.join(cxx_build, program)):
        if os.access(candidate, os.X_OK):
            return candidate
    raise GateError(f"{program} not found in {cxx_build}/bench: configure that build with "
                    f"-DMULLIGAN_BUILD_BENCH=ON and build the target {program}")


def measure_cxx(path: Path, scale: float, cxx_build: str) -> float:
    """Counts one C++ path: whole-program Ir of N and of 2N calls."""
    assert path.program and path.case
    program = _find_program(cxx_build, path.program)
    n = max(1, int(path.n * scale))
    totals = []
    for calls in (n, 2 * n):
        with tempfile.TemporaryDirectory(prefix="mulligan-instructions-") as workdir:
            _run_callgrind([program, str(calls), path.case], workdir)
            dumps = _files_by_dump(workdir)
            if list(dumps) != [0]:
                raise GateError(f"expected one callgrind output for {program}, found {dumps}")
            totals.append(_callgrind_total(dumps[0]))
    return (totals[1] - totals[0]) / n


def measure(paths: List[Path], scale: float, cxx_build: str) -> Dict[str, float]:
    """Returns Ir per iteration for each path (Python paths in one child)."""
    result: Dict[str, float] = {}
    python_paths = [p for p in paths if p.program is None]
    if python_paths:
        if any(p.name.startswith("py_http_") for p in python_paths):
            sys.path.insert(0, os.path.join(ROOT, "tests", "nginx"))
            from nginx_server import NginxServer  # type: ignore[import-not-found]  # tests/nginx

            with NginxServer() as server:
                result.update(measure_python(python_paths, scale, server.base_url))
        else:
            result.update(measure_python(python_paths, scale, ""))
    for p in paths:
        if p.program is not None:
            result[p.name] = measure_cxx(p, scale, cxx_build)
    return result


# -- budgets ----------------------------------------------------------------------


def load_budgets(path: str) -> Dict[str, int]:
    """Reads a budgets file: {"comment": ..., "measured": {...}, "paths":
    {name: {"budget": int > 0, "what": str, "spread_percent": float}}}. Raises GateError naming the
    field that is wrong."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise GateError(f"cannot read budgets file {path}: {e}") from e
    if not isinstance(data, dict) or not isinstance(data.get("paths"), dict):
        raise GateError(f"{path}: the field 'paths' must be an object of path name -> "
                        "{\"budget\": instructions per iteration}")
    budgets: Dict[str, int] = {}
    for name, entry in data["paths"].items():
        budget = entry.get("budget") if isinstance(entry, dict) else None
        if not isinstance(budget, int) or isinstance(budget, bool) or budget <= 0:
            raise GateError(f"{path}: paths.{name}.budget must be a positive integer "
                            f"(instructions per iteration), got {budget!r}")
        if name not in PATHS_BY_NAME:
            raise GateError(f"{path}: paths.{name} is not a path this script measures "
                            f"(known: {', '.join(PATHS_BY_NAME)})")
        budgets[name] = budget
    return budgets


def compare(measured: Dict[str, float], budgets: Dict[str, int],
            tolerance: float) -> tuple[List[str], List[str]]:
    """Returns (failures, hints): one message per path over budget by more
    than `tolerance`, and one per path under it by more than `tolerance`."""
    failures: List[str] = []
    hints: List[str] = []
    for name, count in measured.items():
        if not PATHS_BY_NAME[name].gated:
            continue
        if name not in budgets:
            raise GateError(f"the path {name} has no budget in the budgets file")
        budget = budgets[name]
        if count > budget * (1 + tolerance):
            failures.append(f"{name}: {count:.0f} instructions per iteration, budget {budget} "
                            f"(+{(count / budget - 1) * 100:.1f}%, more than the "
                            f"{tolerance * 100:.0f}% allowed)")
        elif count < budget * (1 - tolerance):
            hints.append(f"{name}: {count:.0f} instructions per iteration, budget {budget} "
                         f"({(count / budget - 1) * 100:.1f}%): lower the budget")
    return failures, hints


def _compiler(cxx_build: str) -> str:
    compiler = "c++"
    cache = os.path.join(cxx_build, "CMakeCache.txt")
    build_type = "?"
    if os.path.exists(cache):
        with open(cache, encoding="utf-8") as f:
            for line in f:
                if line.startswith("CMAKE_CXX_COMPILER:"):
                    compiler = line.split("=", 1)[1].strip()
                elif line.startswith("CMAKE_BUILD_TYPE:"):
                    build_type = line.split("=", 1)[1].strip()
    try:
        version = subprocess.run([compiler, "--version"], stdout=subprocess.PIPE, text=True,
                                 check=False).stdout.splitlines()[0]
    except (OSError, IndexError):
        version = compiler
    return f"{version}; C++ bench programs from {os.path.basename(cxx_build)}/ ({build_type})"


def write_budgets(path: str, runs: List[Dict[str, float]], cxx_build: str) -> None:
    import mulligan

    names = [n for n in runs[0] if PATHS_BY_NAME[n].gated]
    data = {
        "comment": "Instructions per iteration of each hot path (callgrind Ir, (Ir(2N) - Ir(N)) / "
                   "N), the budgets of bench/instructions.py. A path more than 5% over its budget "
                   "fails scripts/test.sh. A change that legitimately costs more raises the "
                   "budget in the same commit and says why.",
        "measured": {
            "date": datetime.date.today().isoformat(),
            "how": f"python bench/instructions.py --runs {len(runs)} --write-budgets; the highest "
                   "count of the runs, rounded up; spread_percent: highest over lowest count, "
                   "minus 1",
            "python": f"CPython {platform.python_version()}",
            "mulligan": f"{mulligan.__version__}, the installed package (CI: the wheel of "
                        "scripts/build_wheel.sh, Release)",
            "compiler": _compiler(cxx_build),
            "valgrind": subprocess.run([_valgrind(), "--version"], stdout=subprocess.PIPE,
                                       text=True).stdout.strip(),
        },
        "paths": {
            n: {"budget": int(-(-max(r[n] for r in runs) // 1)), "what": PATHS_BY_NAME[n].what,
                "spread_percent": round((max(r[n] for r in runs) / min(r[n] for r in runs) - 1)
                                        * 100, 2)}
            for n in names
        },
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


# -- command line -------------------------------------------------------------------


def _parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default=DEFAULT_BUDGETS, help="budgets file (JSON)")
    parser.add_argument("--cxx-build", default=os.path.join(ROOT, "build"),
                        help="CMake build directory with the bench programs (default build/)")
    parser.add_argument("--paths", default="", help="comma-separated path names (default: all)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiplies every path's iteration count N (default 1)")
    parser.add_argument("--runs", type=int, default=1, help="measure this many times")
    parser.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                        help="allowed growth over a budget, a fraction (default 0.05)")
    parser.add_argument("--write-budgets", metavar="FILE",
                        help="write the measured counts to FILE as budgets, gate nothing")
    parser.add_argument("--json", metavar="FILE", help="write the measured counts to FILE")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", default="", help=argparse.SUPPRESS)
    parser.add_argument("--counts", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.scale <= 0 or args.runs < 1 or not 0 <= args.tolerance < 1:
        raise GateError("--scale must be > 0, --runs >= 1 and --tolerance in [0, 1)")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        args = _parse(argv)
        names = [n for n in args.paths.split(",") if n] or [p.name for p in PATHS if p.default]
        unknown = [n for n in names if n not in PATHS_BY_NAME]
        if unknown:
            raise GateError(f"unknown path {', '.join(unknown)} "
                            f"(known: {', '.join(PATHS_BY_NAME)})")
        if args.child:
            return child_main(names, [int(c) for c in args.counts.split(",")], args.url)
        budgets = {} if args.write_budgets else load_budgets(args.budgets)
        paths = [PATHS_BY_NAME[n] for n in names]
        runs = [measure(paths, args.scale, args.cxx_build) for _ in range(args.runs)]
    except GateError as e:
        print(f"instructions: {e}", file=sys.stderr)
        return 2

    print(f"Instructions per iteration (callgrind Ir, (Ir(2N) - Ir(N)) / N), CPython "
          f"{platform.python_version()}, {len(runs)} run(s)\n")
    print("| path | instructions | budget | vs budget |")
    print("| --- | ---: | ---: | ---: |")
    for name in names:
        counts = [r[name] for r in runs]
        shown = f"{counts[0]:.1f}" if len(counts) == 1 else \
            f"{min(counts):.1f} .. {max(counts):.1f}"
        budget = budgets.get(name)
        ref = "" if PATHS_BY_NAME[name].gated else " (not gated)"
        vs = f"{(max(counts) / budget - 1) * 100:+.1f}%" if budget else ""
        print(f"| {name}{ref} | {shown} | {budget or ''} | {vs} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"runs": runs}, f, indent=2)
    if args.write_budgets:
        write_budgets(args.write_budgets, runs, args.cxx_build)
        print(f"\nwrote {args.write_budgets}")
        return 0

    worst = {n: max(r[n] for r in runs) for n in names}
    try:
        failures, hints = compare(worst, budgets, args.tolerance)
    except GateError as e:
        print(f"instructions: {e}", file=sys.stderr)
        return 2
    for hint in hints:
        print(f"cheaper: {hint}")
    for failure in failures:
        print(f"OVER BUDGET: {failure}", file=sys.stderr)
    if failures:
        return 1
    print(f"\ninstruction gate: {len(names)} path(s) within {args.tolerance * 100:.0f}% of budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
