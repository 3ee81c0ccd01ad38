"""The configuration part. Private: the package re-exports the public names.

- ``policies``: the process-wide registry of named retry policies, breakers
  and clients (``load_config``, ``policy``, ...) and the lookups behind
  ``@retry(policy=...)`` and ``Client(policy=...)``

``mulligan config check`` lives with the command (``_cli.config_check``).
"""
