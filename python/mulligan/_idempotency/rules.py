"""Which requests an idempotency middleware handles, and how: :class:`_Rules`,
validated once and shared by the ASGI and WSGI middlewares.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Callable, Optional, Union

from .store import IdempotencyStore

__all__ = ["PathRule"]

PathRule = Union[None, str, Sequence[str], Callable[[str], bool]]

# Responses the client may retry (mulligan's defaults): storing one would make
# every retry with the same key replay the failure.
_NOT_STORED = frozenset({408, 429})


class _Rules:
    """Which requests a middleware handles, and how (validated once)."""

    __slots__ = ("methods", "paths", "required", "scope", "store", "store_status", "header")

    def __init__(
        self,
        store: IdempotencyStore,
        methods: Iterable[str],
        paths: PathRule,
        required: Union[bool, Callable[[str, str], bool]],
        scope: Optional[Callable[[Any], str]],
        store_status: Optional[Callable[[int], bool]],
    ) -> None:
        if not isinstance(store, IdempotencyStore):
            raise TypeError(f"store must be a mulligan.IdempotencyStore, got {store!r}")
        self.store = store
        self.methods = frozenset(m.upper() for m in methods)
        if paths is None:
            self.paths: Callable[[str], bool] = lambda path: True
        elif isinstance(paths, str):
            prefix = paths
            self.paths = lambda path: path.startswith(prefix)
        elif callable(paths):
            self.paths = paths
        else:
            prefixes = tuple(paths)
            if not all(isinstance(p, str) for p in prefixes):
                raise TypeError("paths must be a prefix, a sequence of prefixes or a predicate")
            self.paths = lambda path: path.startswith(prefixes)
        if callable(required):
            self.required: Callable[[str, str], bool] = required
        else:
            flag = bool(required)
            self.required = lambda method, path: flag
        self.scope = scope
        self.store_status = store_status or _default_store_status

    def applies(self, method: str, path: str) -> bool:
        return method in self.methods and self.paths(path)


def _default_store_status(status: int) -> bool:
    return status < 500 and status not in _NOT_STORED
