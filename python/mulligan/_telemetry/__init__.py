"""The telemetry part. Private: the package re-exports the public names.

- ``metrics``: snapshots, Prometheus text, JSON, status and the event stream,
  read from the engine's registry (and the hot-path success counters)
- ``dashboard``: the live dashboard server (its page is ``static/dashboard.html``)

The exporters for other libraries stay public modules of their own:
:mod:`mulligan.prometheus` and :mod:`mulligan.otel`.
"""
