"""The test suite's nginx helper (tests/nginx/nginx_server.py), loaded by
path for the benches that measure against a real nginx on loopback.

``nginx_server_module()`` returns the module (its ``NginxServer`` starts nginx
on a free port). Raises FileNotFoundError when run outside the repository.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def nginx_server_module() -> Any:
    path = os.path.join(ROOT, "tests", "nginx", "nginx_server.py")
    spec = importlib.util.spec_from_file_location("mulligan_bench_nginx", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
