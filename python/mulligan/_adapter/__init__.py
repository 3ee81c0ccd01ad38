"""What the client adapters (:mod:`mulligan.adapters`) share: their options,
checked once, and the steps of one logical request through the engine's
HTTP pipeline. Private; the public classes live in ``mulligan.adapters``.

.. versionadded:: 0.3.0
"""

from __future__ import annotations

__all__: list[str] = []
