"""What a call that finally failed returns instead: the ``fallback=`` option.

Shared by the retry drivers and the HTTP clients, so a fallback behaves the
same at every front door (the first strategy of DESIGN.md section 2).

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from typing import Any

__all__ = ["call_fallback"]


def call_fallback(fallback: Any, exc: BaseException) -> Any:
    """A callable fallback is called with the final exception; any other value is returned.

    An exception the fallback raises is chained to the final one (``__cause__``),
    so the original failure stays in the traceback.
    """
    if not callable(fallback):
        return fallback
    try:
        return fallback(exc)
    except Exception as fallback_error:
        if fallback_error is not exc and fallback_error.__cause__ is None:
            raise fallback_error from exc
        raise
