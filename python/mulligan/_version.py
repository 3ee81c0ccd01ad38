"""The one package version, and the check that the native module agrees.

``__version__`` comes from the installed distribution's metadata; the compiled
``_core`` reports the CMake project version it was built as. A mismatch means a
stale build or a broken install, so importing mulligan fails loudly instead of
mixing a Python layer with an engine of another version.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from . import _core

try:
    __version__: str = version("mulligan")
except PackageNotFoundError:  # pragma: no cover - only in a broken checkout
    raise ImportError(
        "mulligan is not installed (no distribution metadata); install it with `pip install .`"
    ) from None

if _core.version_string() != __version__:
    raise ImportError(
        f"mulligan: the native module mulligan._core is version {_core.version_string()} "
        f"but the package is {__version__}; rebuild and reinstall (pip install .)"
    )
