"""The durable outbox: :class:`mulligan.Outbox` (issue 21).

A thin shell over the core's outbox (``_core.Outbox``, on SQLite,
core/include/mulligan/outbox/outbox.h, or since 0.6 on Redis Streams,
redis_outbox.h), which writes entries, leases them,
records attempts and decides every retry time with the retry policy. This
package only delivers: HTTP entries through :class:`mulligan.Client` (one
attempt per lease, the entry's Idempotency-Key on every attempt) and jobs
through the handlers registered by name.

.. versionadded:: 0.5.0
"""

from __future__ import annotations

from .job import OutboxJob  # (0.6)
from .outbox import Outbox, OutboxAttempt, OutboxEntry, OutboxStats

__all__ = ["Outbox", "OutboxAttempt", "OutboxEntry", "OutboxJob", "OutboxStats"]
