"""The ``mulligan`` command. Private: ``mulligan._cli.main:main`` is the
console script (pyproject.toml) and ``python -m mulligan`` runs it.

- ``main``: the parser, ``get`` / ``request`` / ``dashboard``, exit codes
- ``config_check``: ``mulligan config check FILE...``
"""
