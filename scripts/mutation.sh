#!/usr/bin/env bash
# Mutation testing of the Python layer with mutmut (PyPI), by hand, not in CI.
#
# Mutates the decorator (the sync and async retry drivers), the breaker
# wrapper and the HTTP clients' Python side, runs the pytest files that cover
# each, and prints the score and the surviving mutants. The engine (C++) is
# not mutated here: its decisions are pinned by tests/core and tests/vectors.
#
#   PYTHON=/work/venv-me/bin/python scripts/mutation.sh          # everything
#   PYTHON=... scripts/mutation.sh breaker                        # one part
#   MUTATION_TIME_LIMIT=1800 scripts/mutation.sh                  # seconds
#   MUTATION_SURVIVORS_ONLY=1 scripts/mutation.sh                 # after adding tests
#
# Needs: mutmut and the test extra in $PYTHON's environment
# ($PYTHON -m pip install mutmut '.[test]'), and the package installed there
# (pip install . or pip install -e .): the compiled mulligan._core is taken
# from that install. Nothing is written outside build-mutation/.
#
# How: mutmut 3 mutates a copy of the sources under mutants/ and imports them
# by the module path of each file, stripping a leading src/. So the package is
# laid out as build-mutation/src/mulligan (with the installed _core beside
# it) and the tests are copied next to it; the repository is never modified.
# The run is bounded by MUTATION_TIME_LIMIT (default 3600 s); mutmut keeps its
# results in build-mutation/mutants, so running again resumes where it stopped
# (MUTATION_FRESH=1 starts over). MUTATION_SURVIVORS_ONLY=1 tests again only
# the mutants that survived the previous run (with the current tests): the
# quick way to see what new tests kill.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
LIMIT=${MUTATION_TIME_LIMIT:-3600}
CHILDREN=${MUTATION_CHILDREN:-2}
WORK=build-mutation

# The parts: files to mutate (globs under python/mulligan/) and the pytest
# files that cover them (globs under tests/python/). Globs, not names, so that
# the list survives the move of python/mulligan into one subpackage per part;
# a glob that matches nothing is skipped.
declare -A SOURCES=(
  [decorator]="_retry.py _asyncio.py retry/*.py"
  [breaker]="_circuit.py breaker/*.py"
  [http]="_http.py _async_http.py http/*.py"
)
declare -A TESTS=(
  [decorator]="test_retry*.py test_vectors.py retry/test_*.py"
  [breaker]="test_breaker*.py test_retry_breaker.py breaker/test_*.py"
  [http]="test_http*.py test_async_client.py http/test_*.py"
)
PARTS=("$@")
[ ${#PARTS[@]} -gt 0 ] || PARTS=(decorator breaker http)

"$PYTHON" -c "import mutmut" 2>/dev/null || {
  echo "mutation.sh: mutmut is not installed for $PYTHON ($PYTHON -m pip install mutmut)" >&2
  exit 2
}
CORE=$("$PYTHON" -c "import mulligan._core as c; print(c.__file__)") || {
  echo "mutation.sh: mulligan is not installed for $PYTHON (pip install .)" >&2
  exit 2
}

# Expands the globs of one part into paths relative to `root`.
expand() {
  local root=$1 g f
  local -a patterns
  read -ra patterns <<< "$2"  # split only: `read` does not expand the globs
  shopt -s nullglob
  for g in "${patterns[@]}"; do
    for f in "$root"/$g; do echo "${f#"$root"/}"; done
  done
  shopt -u nullglob
}

sources=() tests=()
for part in "${PARTS[@]}"; do
  [ -n "${SOURCES[$part]:-}" ] || { echo "mutation.sh: unknown part '$part'" >&2; exit 2; }
  while read -r f; do [ -n "$f" ] && sources+=("src/mulligan/$f"); done \
    < <(expand python/mulligan "${SOURCES[$part]}")
  while read -r f; do [ -n "$f" ] && tests+=("tests/python/$f"); done \
    < <(expand tests/python "${TESTS[$part]}")
done
[ ${#sources[@]} -gt 0 ] || { echo "mutation.sh: no source file matched" >&2; exit 2; }
# A test file may cover two parts: keep each once.
mapfile -t tests < <(printf '%s\n' "${tests[@]}" | sort -u)

if [ "${MUTATION_FRESH:-0}" = 1 ]; then rm -rf "$WORK"; fi
mkdir -p "$WORK/src"
# The sources and tests are refreshed every time; mutmut's own mutants/ stays
# (it notices changed files and reruns their mutants).
rm -rf "$WORK/src/mulligan" "$WORK/tests"
cp -rp python/mulligan "$WORK/src/mulligan"  # -p: mutmut compares mtimes
find "$WORK/src/mulligan" -name '__pycache__' -prune -exec rm -rf {} +
cp -p "$CORE" "$WORK/src/mulligan/"
cp -rp tests "$WORK/tests"

toml_list() {
  local out="" x
  for x in "$@"; do out+="\"$x\", "; done
  echo "[${out%, }]"
}
# pytest's settings (warnings as errors, markers) come from the repository's
# pyproject.toml; mutmut's are appended to the copy.
cp pyproject.toml "$WORK/pyproject.toml"
cat >> "$WORK/pyproject.toml" <<EOF

[tool.mutmut]
source_paths = ["src/mulligan"]
only_mutate = $(toml_list "${sources[@]}")
pytest_add_cli_args = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
pytest_add_cli_args_test_selection = $(toml_list "${tests[@]}")
use_git_change_detection = false
EOF

echo "mutation.sh: mutating ${sources[*]}"
echo "mutation.sh: with ${tests[*]}"
REPO=$PWD
cd "$WORK"
status=0
# mutmut is started through this launcher, which drops an editable install's
# import redirection (scikit-build-core's finder and the repository's python/
# on sys.path), so that `import mulligan` finds the mutated copy.
LAUNCH='
import pathlib, sys
repo = pathlib.Path(sys.argv.pop(1)).resolve()
sys.meta_path[:] = [f for f in sys.meta_path if "ScikitBuild" not in type(f).__name__]
sys.path[:] = [p for p in sys.path if pathlib.Path(p or ".").resolve() != repo / "python"]
sys.argv[0] = "mutmut"
from mutmut.__main__ import cli
cli()
'
names=()
if [ "${MUTATION_SURVIVORS_ONLY:-0}" = 1 ] && [ -f survivors.txt ]; then
  mapfile -t names < <(sed -n 's/^ *\([^ :]*\): survived$/\1/p' survivors.txt)
  echo "mutation.sh: testing again the ${#names[@]} survivors of the previous run"
fi
timeout --signal=INT --kill-after=60 "$LIMIT" "$PYTHON" -c "$LAUNCH" "$REPO" run \
  --max-children "$CHILDREN" "${names[@]}" > mutmut-run.log 2>&1 || status=$?
if [ "$status" = 124 ]; then
  echo "mutation.sh: stopped after $LIMIT s; run again to resume"
elif [ "$status" != 0 ]; then
  tail -30 mutmut-run.log >&2
  echo "mutation.sh: mutmut run failed ($status); see $WORK/mutmut-run.log" >&2
  exit "$status"
fi
# mutmut forgets the verdicts of the mutants a run did not test (a survivors-
# only run), so the verdicts are merged into results.json across runs: a
# mutant keeps its last verdict until a run tests it again. Adding tests can
# only turn survivors into kills, which is what a survivors-only run looks at.
"$PYTHON" - "${sources[@]}" <<'EOF'
import json, os, sys
from collections import Counter

# mutmut's exit codes (mutmut/stats.py).
KIND = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped",
        36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout", 255: "timeout",
        -11: "segfault", -9: "segfault", 37: "caught by type check"}
merged = json.load(open("results.json")) if os.path.exists("results.json") else {}
current = {}
for source in sys.argv[1:]:
    meta = os.path.join("mutants", source + ".meta")
    if os.path.exists(meta):
        current.update(json.load(open(meta))["exit_code_by_key"])
results = {key: code if code is not None else merged.get(key) for key, code in current.items()}
json.dump(results, open("results.json", "w"), indent=0, sort_keys=True)
kinds = Counter("not checked" if c is None else KIND.get(c, "suspicious") for c in results.values())
# A mutant no selected test reaches counts as surviving: it is a gap too.
caught = kinds["killed"] + kinds["timeout"] + kinds["caught by type check"]
judged = caught + kinds["survived"] + kinds["no tests"] + kinds["suspicious"] + kinds["segfault"]
score = 100.0 * caught / judged if judged else 0.0
print(f"mutation score: {score:.1f}% ({kinds['killed']} killed, {kinds['timeout']} timed out, "
      f"{kinds['survived']} survived, {kinds['no tests']} not covered, "
      f"{kinds['segfault']} crashed, {kinds['not checked']} not checked, {len(results)} in all)")
with open("survivors.txt", "w") as out:
    for key in sorted(k for k, c in results.items() if c == 0):
        out.write(f"    {key}: survived\n")
EOF
echo "mutation.sh: survivors in $WORK/survivors.txt ($(grep -c ': survived' survivors.txt || true));" \
  "show one with: (cd $WORK && $PYTHON -m mutmut show NAME)"
