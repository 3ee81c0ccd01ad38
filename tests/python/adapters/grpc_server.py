"""A real grpcio server on a free loopback port, scripted per call.

Generic handlers with bytes in and out (no protoc): ``/test.Echo/Unary``
answers ``b"ok:" + request``; ``/test.Echo/Stream`` sends the scripted
messages; ``/other.Svc/Unary`` is a second service. Each call takes the next
step of its method's script (then the default: success) and the server
records every attempt's metadata, so a test asserts what the server saw.

A step is ``Step(code=..., pushback=..., messages=..., hold=...)``: ``code``
the status to end with (None: OK), ``pushback`` a ``grpc-retry-pushback-ms``
trailing value, ``messages`` the stream messages sent before the end,
``hold`` seconds to wait before answering (an Event wait, cut short when
the RPC ends first: a cancelled call, recorded as ``Seen.cancelled``),
``tag`` a stream's initial metadata ``x-tag`` (tells copies apart),
``pause`` seconds a stream waits after its first message.
"""

from __future__ import annotations

import collections
import functools
import threading
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any, Optional

import grpc
import pytest

UNARY = "/test.Echo/Unary"
STREAM = "/test.Echo/Stream"
OTHER = "/other.Svc/Unary"


@dataclass
class Step:
    code: Optional[grpc.StatusCode] = None
    pushback: Optional[str] = None
    messages: tuple[bytes, ...] = ()
    hold: float = 0.0
    # The unary answer instead of b"ok:" + request (tells copies apart).
    reply: Optional[bytes] = None
    # A stream's initial metadata ("x-tag", tag), sent after the hold.
    tag: Optional[str] = None
    # Seconds a stream waits after its first message (cut short when the
    # RPC ends first).
    pause: float = 0.0


@dataclass
class Seen:
    method: str
    metadata: dict[str, str] = field(default_factory=dict)
    # Every (key, value) pair as received, repeated keys kept.
    pairs: list[tuple[str, str]] = field(default_factory=list)
    # A held call whose RPC ended (the client cancelled it) before its hold
    # was over: grpcio ran the context's callback, and is_active() is false.
    cancelled: bool = False


class ScriptedServer:
    """The server, its script and what it saw (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._steps: dict[str, collections.deque[Step]] = collections.defaultdict(collections.deque)
        self.seen: list[Seen] = []
        self._stop = threading.Event()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        handlers = {
            "Unary": grpc.unary_unary_rpc_method_handler(functools.partial(self._unary, UNARY)),
            "Stream": grpc.unary_stream_rpc_method_handler(self._stream),
        }
        self._server.add_generic_rpc_handlers((
            grpc.method_handlers_generic_handler("test.Echo", handlers),
            grpc.method_handlers_generic_handler(
                "other.Svc", {"Unary": grpc.unary_unary_rpc_method_handler(functools.partial(self._unary, OTHER))}
            ),
        ))
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self.target = f"127.0.0.1:{self.port}"
        self._server.start()

    def script(self, method: str, *steps: Step) -> None:
        with self._lock:
            self._steps[method] = collections.deque(steps)
            self.seen = []

    def attempts(self, method: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.method == method]

    def _take(self, method: str, context: Any) -> Step:
        pairs = [(k, v) for k, v in context.invocation_metadata() if isinstance(v, str)]
        seen = Seen(method, dict(pairs), pairs)
        with self._lock:
            self.seen.append(seen)
            steps = self._steps[method]
            step = steps.popleft() if steps else Step()
        if step.hold:
            # grpcio runs the callback when the RPC terminates: here, before
            # the answer, only when the client cancelled (or the server stops).
            ended = threading.Event()
            context.add_callback(ended.set)
            ended.wait(step.hold)
            seen.cancelled = ended.is_set() and not context.is_active()
        return step

    @staticmethod
    def _end(step: Step, context: Any) -> None:
        if step.code is None:
            return
        if step.pushback is not None:
            context.set_trailing_metadata((("grpc-retry-pushback-ms", step.pushback),))
        context.abort(step.code, f"scripted {step.code.name}")

    def _unary(self, method: str, request: bytes, context: Any) -> bytes:
        step = self._take(method, context)
        self._end(step, context)
        return b"ok:" + request if step.reply is None else step.reply

    def _stream(self, request: bytes, context: Any) -> Iterator[bytes]:
        step = self._take(STREAM, context)
        if step.tag is not None:
            context.send_initial_metadata((("x-tag", step.tag),))
        for index, message in enumerate(step.messages):
            yield message
            if index == 0 and step.pause:
                ended = threading.Event()
                context.add_callback(ended.set)
                ended.wait(step.pause)
        self._end(step, context)

    def stop(self) -> None:
        self._stop.set()
        self._server.stop(grace=None)


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    s = ScriptedServer()
    try:
        yield s
    finally:
        s.stop()
