"""``@box.job(name)``: a function that is an outbox job (issue 21's "a
decorator that enqueues").

The idiom is Celery's ``@app.task``: the decorator registers the function as
the handler of the job ``name`` and returns an :class:`OutboxJob`. Calling
the job runs the function now, in this process (as calling a Celery task
does); ``job.delay(*args, **kwargs)`` writes an entry instead (Celery's
``delay``), which a worker later delivers by calling the function with the
same arguments; ``job.enqueue(args, kwargs, idempotency_key=...)`` is the
long form (Celery's ``apply_async``).

Serialization is explicit and never pickle: ``serializer="json"`` (the
default) stores the arguments as the JSON text
``{"args": [...], "kwargs": {...}}`` (UTF-8, keys sorted, no NaN), so only
JSON values travel (a tuple comes back as a list); ``serializer="raw"`` takes
one bytes or str argument (str is stored as UTF-8) and calls the function
with the stored bytes.

.. versionadded:: 0.6.0
"""

from __future__ import annotations

import json as _json
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Generic, Optional, ParamSpec, Protocol, TypeVar

from .records import OutboxEntry

__all__ = ["OutboxJob", "SERIALIZERS"]

P = ParamSpec("P")
R = TypeVar("R")


class _JobQueue(Protocol):
    """What a job needs of its :class:`mulligan.Outbox` (named structurally, so
    that this module does not import outbox.py, which imports it)."""

    def enqueue_job(
        self, job: str, payload: bytes, *, idempotency_key: Optional[str] = None
    ) -> OutboxEntry: ...

#: The payload encodings a job may use.
SERIALIZERS = ("json", "raw")


class OutboxJob(Generic[P, R]):
    """A function registered as the handler of outbox job :attr:`name`.

    Made by :meth:`mulligan.Outbox.job`; not constructed directly.

    Attributes:
        name: the job's name (the entries' ``job`` field).
        serializer: ``"json"`` or ``"raw"`` (see the module docstring).
        with_key: when true, the worker passes the entry's Idempotency-Key
            as the keyword argument ``idempotency_key`` (the function must
            accept it), so the function can deduplicate its own effects.

    Thread-safety: immutable; :meth:`delay` may be called from any thread
    (the outbox serializes its writes).

    .. versionadded:: 0.6.0
    """

    def __init__(
        self, box: _JobQueue, name: str, fn: Callable[P, R], serializer: str, with_key: bool
    ) -> None:
        self._box = box
        self._fn = fn
        self.name = name
        self.serializer = serializer
        self.with_key = with_key
        self.__wrapped__ = fn
        self.__doc__ = fn.__doc__

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Runs the function now, here, with these arguments (nothing is
        enqueued), as calling a Celery task does."""
        return self._fn(*args, **kwargs)

    def delay(self, *args: P.args, **kwargs: P.kwargs) -> OutboxEntry:
        """Enqueues a call of the function with these arguments (a fresh
        Idempotency-Key); returns the stored :class:`mulligan.OutboxEntry`.

        Raises:
            TypeError: an argument the serializer cannot store (not
                JSON-serializable; for ``"raw"``, not exactly one bytes or
                str argument).
            ValueError: a float NaN or infinity under ``"json"``.
            mulligan.OutboxError: the entry could not be written (read-only
                file, full disk); nothing was written.
        """
        return self.enqueue(args, kwargs)

    def enqueue(
        self,
        args: Sequence[Any] = (),
        kwargs: Optional[Mapping[str, Any]] = None,
        *,
        idempotency_key: Optional[str] = None,
    ) -> OutboxEntry:
        """The long form of :meth:`delay` (Celery's ``apply_async``): the
        positional and keyword arguments as a sequence and a mapping, and the
        entry's Idempotency-Key (default a fresh UUID v4; a key already in the
        outbox is refused with ValueError, so enqueueing twice with one key
        enqueues once). Raises what :meth:`delay` raises."""
        return self._box.enqueue_job(
            self.name, self._encode(args, kwargs or {}), idempotency_key=idempotency_key
        )

    def _encode(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> bytes:
        owner = f"mulligan.Outbox job {self.name!r}"
        if self.serializer == "raw":
            if kwargs or len(args) != 1 or not isinstance(args[0], (bytes, bytearray, str)):
                raise TypeError(
                    f"{owner}: serializer='raw' takes exactly one bytes or str argument, "
                    f"got {len(args)} positional and {len(kwargs)} keyword arguments"
                )
            value = args[0]
            return value.encode("utf-8") if isinstance(value, str) else bytes(value)
        try:
            text = _json.dumps(
                {"args": list(args), "kwargs": dict(kwargs)},
                separators=(",", ":"),
                sort_keys=True,
                ensure_ascii=False,
                allow_nan=False,
            )
        except TypeError as e:
            raise TypeError(
                f"{owner}: arguments must be JSON-serializable (serializer='json'): {e}"
            ) from None
        except ValueError as e:
            raise ValueError(f"{owner}: {e} (serializer='json')") from None
        return text.encode("utf-8")

    def _decode(self, payload: bytes) -> tuple[list[Any], dict[str, Any]]:
        if self.serializer == "raw":
            return [payload], {}
        doc = _json.loads(payload.decode("utf-8"))
        if (
            not isinstance(doc, dict)
            or not isinstance(doc.get("args"), list)
            or not isinstance(doc.get("kwargs"), dict)
            or set(doc) != {"args", "kwargs"}
        ):
            raise ValueError(
                f"mulligan.Outbox job {self.name!r}: the payload is not "
                '{"args": [...], "kwargs": {...}}'
            )
        return doc["args"], doc["kwargs"]

    def _handle(self, payload: bytes, idempotency_key: str) -> Any:
        """The worker's handler: decodes the payload and calls the function.
        An undecodable payload raises ValueError, a failed attempt like any
        other handler failure."""
        args, kwargs = self._decode(payload)
        if self.with_key:
            kwargs["idempotency_key"] = idempotency_key
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<mulligan.OutboxJob {self.name!r} serializer={self.serializer!r}>"
