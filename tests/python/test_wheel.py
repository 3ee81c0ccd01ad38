"""The wheel that installs anywhere (issue 20), run where nothing helps it.

scripts/build_wheel.sh builds the wheel and repairs it with auditwheel
(libcurl and its libraries vendored in mulligan.libs/, a manylinux tag);
scripts/make_wheel_root.sh makes a minimal Debian root (debootstrap minbase
plus python3 and python3-venv). These tests install that wheel into a fresh
virtualenv inside that root and run a retried GET there against the suite's
nginx on a host loopback port (chroot keeps the host's network namespace),
after showing that the root has no libcurl, no Boost and no compiler.

They run when the environment names both: ``MULLIGAN_WHEEL`` (the repaired
wheel) and ``MULLIGAN_WHEEL_ROOT`` (the root). scripts/test.sh builds both and
sets them, so in CI a failure fails; a developer's plain pytest skips them.
``MULLIGAN_SOURCE_PYTHON`` names the interpreter of a virtualenv where
test.sh ran ``pip install .`` from source: the same GET runs there too. Being
root, the tests chroot; otherwise they try ``unshare --map-root-user --root``.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shutil
import subprocess
import tempfile
import uuid
from typing import Any

import pytest

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RETRIED_GET_PY = os.path.join(TESTS_DIR, "wheel", "retried_get.py")

WHEEL = os.environ.get("MULLIGAN_WHEEL", "")
ROOT = os.environ.get("MULLIGAN_WHEEL_ROOT", "")
SOURCE_PYTHON = os.environ.get("MULLIGAN_SOURCE_PYTHON", "")

# A wheel file name (PEP 427): name-version-pythontag-abitag-platformtag.whl.
WHEEL_NAME = re.compile(
    r"^mulligan-(?P<version>[^-]+)-cp(?P<major>3)(?P<minor>\d+)-cp\d+-(?P<platform>[^-]+)\.whl$"
)

# Debian packages that would give the root libcurl, Boost or a compiler
# (gcc-12-base, which libgcc-s1 needs, holds only documentation: allowed).
FORBIDDEN_PACKAGES = re.compile(
    r"^(libcurl.*|libboost.*|gcc(-\d+)?|g\+\+(-\d+)?|cpp(-\d+)?|clang(-\d+)?|tcc"
    r"|build-essential|libgcc-\d+-dev|libstdc\+\+-\d+-dev|libc6-dev)$"
)
# File names that would be libcurl or Boost, wherever they sit.
FORBIDDEN_FILES = re.compile(r"^(libcurl|libboost)")
COMPILERS = ("cc", "c++", "gcc", "g++", "cpp", "clang", "clang++", "tcc", "x86_64-linux-gnu-gcc")

# The environment of a command inside the root: nothing of the host's.
ROOT_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}


def _wheel_and_root() -> tuple[str, str]:
    if not WHEEL and not ROOT:
        pytest.skip("MULLIGAN_WHEEL and MULLIGAN_WHEEL_ROOT are unset (scripts/test.sh sets them)")
    assert WHEEL and os.path.isfile(WHEEL), f"MULLIGAN_WHEEL names no file: {WHEEL!r}"
    assert ROOT and os.path.isdir(ROOT), f"MULLIGAN_WHEEL_ROOT names no directory: {ROOT!r}"
    return WHEEL, ROOT


def _in_root(root: str, *argv: str, timeout: float = 600.0) -> str:
    """Runs argv inside `root` with ROOT_ENV; returns its stdout, fails with
    its stderr when it exits non-zero."""
    # Found on the host's PATH (sbin included): ROOT_ENV's PATH is the root's.
    search = os.environ.get("PATH", "") + ":/usr/sbin:/sbin:/usr/bin:/bin"
    if os.geteuid() == 0:
        tool = shutil.which("chroot", path=search)
        prefix = [tool or "chroot", root]
    else:
        tool = shutil.which("unshare", path=search)
        prefix = [tool or "unshare", "--map-root-user", "--root", root]
    done = subprocess.run(
        prefix + list(argv), env=ROOT_ENV, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{argv} in {root}: exit {done.returncode}\n{done.stderr}"
    return done.stdout


def _installed_packages(root: str) -> set[str]:
    """The packages dpkg's database in `root` calls installed."""
    packages: set[str] = set()
    with open(os.path.join(root, "var/lib/dpkg/status"), encoding="utf-8") as f:
        for paragraph in f.read().split("\n\n"):
            fields = dict(
                line.split(": ", 1) for line in paragraph.splitlines() if ": " in line and line[0] != " "
            )
            if fields.get("Status") == "install ok installed":
                packages.add(fields["Package"])
    return packages


def test_the_root_has_no_libcurl_no_boost_and_no_compiler() -> None:
    _, root = _wheel_and_root()
    packages = _installed_packages(root)
    assert {"python3", "python3-venv", "libc6"} <= packages
    assert sorted(p for p in packages if FORBIDDEN_PACKAGES.match(p)) == []

    found = []
    for directory, subdirs, files in os.walk(root):
        if directory == root:
            subdirs[:] = [d for d in subdirs if d not in ("proc", "sys", "dev", "tmp")]
        found += [os.path.join(directory, n) for n in files + subdirs if FORBIDDEN_FILES.match(n)]
        if os.path.relpath(directory, root) in ("usr/include", "usr/local/include"):
            found += [os.path.join(directory, d) for d in subdirs if d == "boost"]
    assert found == []

    for name in COMPILERS:
        for bin_dir in ("usr/bin", "usr/local/bin", "bin", "usr/sbin"):
            assert not os.path.lexists(os.path.join(root, bin_dir, name)), f"/{bin_dir}/{name}"
    # And as the root's own shell sees it: `command -v` finds none of them.
    assert _in_root(root, "/bin/sh", "-c", "command -v " + " ".join(COMPILERS) + " || true") == ""


def _check_get(result: dict[str, Any], call_id: str, server: Any) -> None:
    # /script answers the first request with this id by 503 and the second by
    # 200 "step 2 of <id>: 200\n" (tests/nginx/script.js): two attempts.
    assert (result["status"], result["text"], result["attempts"]) == (
        200, f"step 2 of {call_id}: 200\n", 2
    )
    logged = [e for e in server.wait_for_requests("/script", 2) if f"id={call_id}&" in e["uri"]]
    assert [(e["method"], e["status"]) for e in logged] == [("GET", 503), ("GET", 200)]


def test_the_repaired_wheel_runs_a_retried_get_in_the_root(server: Any) -> None:
    wheel, root = _wheel_and_root()
    name = WHEEL_NAME.match(os.path.basename(wheel))
    assert name, os.path.basename(wheel)
    assert name["platform"].startswith("manylinux_"), name["platform"]
    python_version = _in_root(root, "/usr/bin/python3", "-c",
                              "import sys; print('%d.%d' % sys.version_info[:2])").strip()
    assert python_version == f"{name['major']}.{name['minor']}", (
        f"the wheel is for Python {name['major']}.{name['minor']}, the root has {python_version}"
    )

    os.makedirs(os.path.join(root, "tmp"), exist_ok=True)
    work = tempfile.mkdtemp(prefix="mulligan-wheel-", dir=os.path.join(root, "tmp"))
    inside = "/tmp/" + os.path.basename(work)
    try:
        shutil.copy(wheel, work)
        shutil.copy(RETRIED_GET_PY, work)
        _in_root(root, "/usr/bin/python3", "-m", "venv", inside + "/venv")
        venv_python = inside + "/venv/bin/python"
        _in_root(root, venv_python, "-m", "pip", "install", "--quiet", "--no-index",
                 "--no-cache-dir", "--disable-pip-version-check",
                 inside + "/" + os.path.basename(wheel))

        # The extension resolves libcurl to the wheel's own copy, and nothing
        # is missing (ldd is the root's own, from libc-bin).
        site = f"{inside}/venv/lib/python{python_version}/site-packages"
        cores = [n for n in os.listdir(root + site + "/mulligan") if n.startswith("_core") and n.endswith(".so")]
        assert len(cores) == 1, cores
        ldd = _in_root(root, "/usr/bin/ldd", f"{site}/mulligan/{cores[0]}")
        assert "not found" not in ldd, ldd
        curl = [posixpath.normpath(line.split("=>")[1].split()[0])
                for line in ldd.splitlines() if "libcurl" in line]
        assert len(curl) == 1 and curl[0].startswith(f"{site}/mulligan.libs/libcurl-"), ldd

        call_id = "wheel-" + uuid.uuid4().hex[:12]
        url = server.url(f"/script?id={call_id}&steps=503,200")
        result = json.loads(_in_root(root, venv_python, inside + "/retried_get.py", url))
        _check_get(result, call_id, server)
        assert result["core"] == f"{site}/mulligan/{cores[0]}"
        assert result["version"] == name["version"]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_pip_install_from_source_runs_the_same_get(server: Any) -> None:
    if not SOURCE_PYTHON:
        if WHEEL or ROOT:
            pytest.fail("MULLIGAN_SOURCE_PYTHON is unset while the wheel tests run")
        pytest.skip("MULLIGAN_SOURCE_PYTHON is unset (scripts/test.sh sets it)")
    call_id = "source-" + uuid.uuid4().hex[:12]
    url = server.url(f"/script?id={call_id}&steps=503,200")
    done = subprocess.run([SOURCE_PYTHON, RETRIED_GET_PY, url], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    _check_get(result, call_id, server)
    # A source install links the system's libcurl, not a vendored copy.
    ldd = subprocess.run(["ldd", result["core"]], capture_output=True, text=True, check=True).stdout
    curl = [line.split("=>")[1].split()[0] for line in ldd.splitlines() if "libcurl" in line]
    assert len(curl) == 1 and "mulligan.libs" not in curl[0], ldd
