"""The blocking :class:`mulligan.Client`'s hedged requests (``hedge=``, 0.6).

Hedging needs several transfers of one request in flight at once. The
blocking client's engine (``_core.HttpClient``) runs one transfer per call,
so a client that hedges sends its requests through the async engine instead:
one private :class:`mulligan.AsyncClient` (the same arguments) on one asyncio
event loop, which runs in one thread of the client's own. Every copy of
every request is a transfer on that loop's one libcurl multi handle: no
thread per copy, and no event loop of mulligan's own (asyncio drives the
async engine as it does for AsyncClient). The calling thread blocks on the
request's future; Ctrl-C (or any exception while waiting) cancels the
request, which aborts its transfers.

.. versionadded:: 0.6.0
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, Callable, Optional

__all__: list[str] = []


class HedgeLoop:
    """One event loop in one thread, holding the AsyncClient that runs a
    blocking Client's requests. ``make_client`` is called on the loop's
    thread (the AsyncClient binds to that loop at its first request).

    Thread-safety: ``run`` may be called from any thread but the loop's own
    (a hook running on it that called the blocking client again would wait
    for itself: RuntimeError); ``close`` once, from any other thread."""

    def __init__(self, make_client: Callable[[], Any]) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="mulligan-hedge-loop", daemon=True)
        self._thread.start()

        async def make() -> Any:
            return make_client()

        self.client: Any = self.run(make())

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Runs `coro` on the loop and returns its result (or raises its
        exception). An exception raised while waiting (KeyboardInterrupt)
        cancels it first."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError(
                "mulligan.Client: a hedging client cannot be called from its own loop's thread "
                "(an on_retry hook or a fallback that sends through the same client)"
            )
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            # close() cancelled what was still running on the loop.
            raise RuntimeError("mulligan.Client: the client was closed while this request ran") from None
        except BaseException:
            future.cancel()
            raise

    def close(self) -> None:
        """Closes the AsyncClient (its connections) and stops the thread.
        Requests in flight in other threads raise RuntimeError: every task
        still on the loop is ended (cancelled if need be) and its caller's
        future settled before the loop stops, so no caller waits forever."""
        if self._loop.is_closed():
            return
        try:
            self.run(self._shutdown())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()

    async def _shutdown(self) -> None:
        """On the loop: closes the client, then ends the other tasks (the
        requests of other threads) and lets their done-callbacks, which
        settle those threads' futures, run before returning."""
        try:
            await self.client.aclose()
        finally:
            me = asyncio.current_task()
            others = [t for t in asyncio.all_tasks() if t is not me]
            if others:
                # aclose() makes them raise RuntimeError; give them a moment.
                _, late = await asyncio.wait(others, timeout=1.0)
                for task in late:
                    task.cancel()
                if late:
                    await asyncio.wait(late, timeout=1.0)
            await asyncio.sleep(0)  # the futures' callbacks (call_soon) run here


def async_kwargs(
    kwargs: dict[str, Any], max_connections: Optional[int], policy: Optional[str]
) -> dict[str, Any]:
    """The AsyncClient arguments of a blocking Client's: the same ones, and
    its connection cap (None: none, as the blocking client's default)."""
    return {**kwargs, "max_connections": max_connections, "policy": policy}
