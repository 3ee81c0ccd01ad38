"""The HTTP client part. Private: the package re-exports the public names.

- ``client``: :class:`Client` and the module-level ``get``, ``post``, ...
- ``async_client``: :class:`AsyncClient` (asyncio, libcurl's multi interface)
- ``base``: the configuration and call handling both clients share
- ``request``: request preparation (URL, method, query, body, key, policy)
- ``headers``: :class:`Headers`, request header checks, Retry-After and
  Idempotency-Key values
- ``response``: :class:`Response`
- ``events``: :class:`RetryEvent` and the retry/give-up logs
"""
