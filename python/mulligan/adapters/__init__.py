"""Adapters that bring mulligan's pipeline to the HTTP clients you already use.

One module per library, each importable only when that library is installed
(``pip install 'mulligan[requests]'``, ``'mulligan[httpx]'``,
``'mulligan[aiohttp]'``, ``'mulligan[grpc]'``); importing one without its library raises
ImportError naming the extra:

- :mod:`mulligan.adapters.requests`: ``Adapter``, a requests transport
  adapter (``session.mount("https://", Adapter(...))``) replacing urllib3's
  ``Retry``.
- :mod:`mulligan.adapters.httpx`: ``Transport`` and ``AsyncTransport``,
  wrapping httpx's own transports (``httpx.Client(transport=...)``).
- :mod:`mulligan.adapters.aiohttp`: ``Middleware``, an aiohttp (>= 3.12)
  client middleware (``aiohttp.ClientSession(middlewares=[...])``).
- :mod:`mulligan.adapters.grpc`: ``RetryInterceptor`` and
  ``AsyncRetryInterceptor``, grpcio client interceptors
  (``grpc.intercept_channel(channel, RetryInterceptor(...))``,
  ``grpc.aio.insecure_channel(target, interceptors=[...])``) with gRPC
  status classification, A6 pushback and service config policies
  (added in 0.4.0).

Every adapter is a front door of the one pipeline (the engine decides, the
adapter acts): the retry policy, Retry-After, the breakers per origin, the
method rules and the Idempotency-Key rule, the metrics and the fallback are
those of :class:`mulligan.Client`, with the same option names; the adapter
only runs attempts with its library and maps that library's exceptions to
the engine's failure kinds. Waits go through mulligan.testing's clock, so a
``FakeClock`` makes them instant (and records them).

This package imports none of the libraries itself.

.. versionadded:: 0.3.0
"""

from __future__ import annotations

__all__: list[str] = []
