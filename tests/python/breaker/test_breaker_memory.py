"""Breakers the registry evicted are collectable, whatever API touched them.

A child process looks up 200,000 distinct names in the default registry
(``mulligan.breakers``, at most 10,000 breakers) and uses each breaker once
through one of the APIs, in turn: ``with``, ``async with``, a decorated
function, a decorated coroutine, and a listener plus ``with``. It prints its
resident set size (``/proc/self/statm``) after 20,000 names (the registry
long full, the allocator warm) and after all 200,000.

The bound: at most 4 MiB of growth over the last 180,000 names, that is
under 24 bytes a name. Before the fix each breaker used as ``with breaker:``
left a ``contextvars.ContextVar`` (with its name and its slot in the
context) reachable for ever: about 200 bytes a name (63 MB for 200,000), so
any leak of that kind fails by an order of magnitude, while the flat run
stays well under it (the growth measured after the fix is under 1 MiB:
allocator noise). The child also keeps weak references to the first 1,000
breakers and checks that every one is dead after ``gc.collect()``, and that
their names left the registry.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading

import pytest

import mulligan
from mulligan.testing import FakeClock

CHILD = textwrap.dedent(
    """
    import asyncio, gc, json, os, weakref
    import mulligan

    def rss_mib():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    async def block(b):
        async with b:
            pass

    loop = asyncio.new_event_loop()
    refs = []
    marks = {}
    for i in range(200_000):
        b = mulligan.circuit_breaker(f"user-{i}")
        kind = i % 5
        if kind == 0:
            with b:
                pass
        elif kind == 1:
            loop.run_until_complete(block(b))
        elif kind == 2:
            @b
            def f():
                return 1
            f()
        elif kind == 3:
            @b
            async def g():
                return 1
            loop.run_until_complete(g())
        else:
            b.add_listener(lambda transition: None)
            with b:
                pass
        if i < 1000:
            refs.append(weakref.ref(b))
        del b
        if i + 1 in (20_000, 200_000):
            gc.collect()
            marks[i + 1] = rss_mib()
    gc.collect()
    print(json.dumps({
        "rss": marks,
        "alive": sum(r() is not None for r in refs),
        "registered": sum(f"user-{i}" in mulligan.breakers for i in range(1000)),
        "size": len(mulligan.breakers),
    }))
    """
)

BOUND_MIB = 4.0


def test_evicted_breakers_leave_memory_flat() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=240, check=True
    )
    result = json.loads(out.stdout)
    growth = result["rss"]["200000"] - result["rss"]["20000"]
    assert growth <= BOUND_MIB, (
        f"RSS grew {growth:.1f} MiB over 180,000 evicted breakers (bound {BOUND_MIB} MiB): {result}"
    )
    assert result["alive"] == 0, result
    assert result["registered"] == 0, result
    assert result["size"] == 10_000, result


def test_with_blocks_nest_and_stay_apart_across_threads_and_tasks() -> None:
    # The one context variable behind `with breaker:`: nested blocks of one
    # breaker and of two, blocks in another thread and in tasks each record
    # their own permit (counted by the breakers' successes).
    clock = FakeClock()
    a = mulligan.CircuitBreaker("a", failure_threshold=1, reset_timeout=1.0, clock=clock.monotonic)
    b = mulligan.CircuitBreaker("b", failure_threshold=1, reset_timeout=1.0, clock=clock.monotonic)
    with a:
        with b:
            with a:
                pass
        assert a.counts["successes"] == 1 and b.counts["successes"] == 1
    assert a.counts["successes"] == 2

    errors: list[BaseException] = []

    def in_thread() -> None:
        try:
            with a:
                pass
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    with a:
        t = threading.Thread(target=in_thread)
        t.start()
        t.join()
    assert not errors
    assert a.counts["successes"] == 4

    async def task_block() -> None:
        with b:
            await asyncio.sleep(0)

    async def main() -> None:
        with b:
            await asyncio.gather(task_block(), task_block())

    asyncio.run(main())
    assert b.counts["successes"] == 4

    try:
        with a:
            raise TimeoutError
    except TimeoutError:
        pass
    assert a.state == "open"


def test_exit_without_enter_is_a_clear_error() -> None:
    breaker = mulligan.CircuitBreaker("lonely")
    with pytest.raises(RuntimeError, match="'lonely': __exit__ without a matching __enter__"):
        breaker.__exit__(None, None, None)
