"""The circuit breaker part. Private: the package re-exports the public names.

- ``breaker``: :class:`CircuitBreaker` (decorator, context manager, the
  acquire/record hooks the retry drivers use) and :class:`BreakerTransition`
- ``registry``: :class:`BreakerRegistry`, the process-wide ``breakers`` and
  ``circuit_breaker(name)``
"""
