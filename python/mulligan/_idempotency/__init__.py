"""The idempotency part (server side). Private: the package re-exports the public names.

- ``store``: :class:`IdempotencyStore`, :class:`IdempotencyReservation`,
  ``parse_idempotency_key``, request fingerprints, ``@store.idempotent``
- ``rules``: which requests a middleware handles
- ``problems``: the middlewares' own answers (RFC 9457 problems, replays)
- ``asgi`` / ``wsgi``: :class:`IdempotencyMiddleware`, :class:`WSGIIdempotencyMiddleware`
"""
