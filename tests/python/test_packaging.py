"""The package surface: one version, a private _core, an explicit __all__."""

from __future__ import annotations

import importlib.metadata
import os

import mulligan
from mulligan import _core


def test_version_matches_metadata_and_core() -> None:
    assert mulligan.__version__ == importlib.metadata.version("mulligan")
    assert _core.version_string() == mulligan.__version__


# Public submodules imported on demand (their extras may be missing); once
# imported they show up as attributes of the package.
OPTIONAL_SUBMODULES = {"otel", "prometheus"}


def test_all_is_explicit_and_complete() -> None:
    public = {name for name in dir(mulligan) if not name.startswith("_")} - OPTIONAL_SUBMODULES
    assert set(mulligan.__all__) - {"__version__"} == public
    for name in mulligan.__all__:
        assert getattr(mulligan, name) is not None


def test_py_typed_is_shipped() -> None:
    assert os.path.exists(os.path.join(os.path.dirname(mulligan.__file__), "py.typed"))


def test_errors_module_does_not_import_core() -> None:
    import ast

    import mulligan._errors as errors_module

    with open(errors_module.__file__, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.module != "_core" and "_core" not in [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            assert all("_core" not in a.name for a in node.names)


def test_error_hierarchy() -> None:
    for cls in (
        mulligan.TransportError,
        mulligan.RetriesExhausted,
        mulligan.HTTPStatusError,
    ):
        assert issubclass(cls, mulligan.MulliganError)
        assert cls.__doc__
    for cls in (mulligan.ConnectionRefused, mulligan.AttemptTimeout, mulligan.DeadlineExceeded):
        assert issubclass(cls, mulligan.TransportError)
    assert issubclass(mulligan.AttemptTimeout, TimeoutError)
    assert issubclass(mulligan.InvalidURL, ValueError)


def test_transport_error_attributes_and_pickle() -> None:
    import pickle

    e = mulligan.ConnectionRefused("connection_refused", 3, "refused", stop_reason="attempts_exhausted")
    assert (e.kind, e.attempts, e.message, e.stop_reason) == (
        "connection_refused",
        3,
        "refused",
        "attempts_exhausted",
    )
    copy = pickle.loads(pickle.dumps(e))
    assert type(copy) is mulligan.ConnectionRefused
    assert (copy.kind, copy.attempts, copy.message, copy.stop_reason) == (
        e.kind,
        e.attempts,
        e.message,
        e.stop_reason,
    )
