"""Shared state backends: where state shared by the processes of a service
lives (Redis), handed to the parts that take ``state=``.

.. versionadded:: 0.5.0
"""

from __future__ import annotations

from .redis import RedisState

__all__ = ["RedisState"]
