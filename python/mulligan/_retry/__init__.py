"""The retry part: ``@mulligan.retry``, ``mulligan.retrying`` and their drivers.

Private: the package re-exports the public names (mulligan/__init__.py).

- ``options``: the options, validated and compiled once (``_Config``)
- ``decorator``: ``retry()``, ``RetryDecorator``, ``RetryingCallable``
- ``sync_driver`` / ``async_driver``: the wrappers and their failure paths
- ``call``: one logical call on the failure path (``_Call``), shared by both
- ``block``: ``retrying()``, ``RetryBlock``, ``Attempt``
- ``hooks``: ``RetryDetails``, ``RetryHook``, ``RetryStatistics``, logging
- ``fallback``: the ``fallback=`` rule (also used by the HTTP clients)
- ``state``: the process-wide switches of :mod:`mulligan.testing`
"""
