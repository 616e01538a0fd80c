#!/usr/bin/env bash
# Run every test: lint (ruff, sqlfluff), dbt parse, the Python allocation core (pytest + hypothesis; the
# lazy narwhals core on DuckDB and local PySpark), the generator, end-to-end dbt builds (generated month,
# the real FOCUS sample, tamper tests, dbt unit tests and data tests), and the SQL layer on local Spark
# (the `spark` target, docs/spark.md). Sets up .venv from the project's own files if needed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# --no-compile: Python compiles (and caches) only the modules a run imports, not every file of every package
# installed (measured 2026-11-26 on a fresh venv: 52.6 -> 31.3 s of CPU for this install)
.venv/bin/python -m pip install --quiet --no-compile -c constraints.txt -e ".[test,spark]"
export DBT_SEND_ANONYMOUS_USAGE_STATS=false
# Python caches each module's bytecode (__pycache__) the first time a run imports it, and every later
# process reads it; a machine that sets PYTHONDONTWRITEBYTECODE (this sandbox does) makes every dbt,
# sqlfluff and pytest process compile dbt, sklearn and pandas from source again (measured 2026-11-26:
# importing them took 15.9 s of CPU without the cache, 5.5 s with it; one sqlfluff file 37.5 -> 20.7 s)
unset PYTHONDONTWRITEBYTECODE

# each step's heading says when it started, in seconds since this script did (bash's SECONDS), so a slow CI run
# shows which step took the time (docs/testing.md: this machine's speed differs from one session to the next)
step() { echo "== $1 (at ${SECONDS} s)"; }

step "ruff"
.venv/bin/ruff check src tests python_models dashboard
.venv/bin/ruff format --check src tests python_models dashboard

scratch="$(mktemp -d)"
spark_pid=""
# on any exit: stop the background Spark build (its own process group: dbt and its JVM), then clean up
trap '[ -n "$spark_pid" ] && kill -- -"$spark_pid" 2>/dev/null; rm -rf "$scratch"' EXIT
mkdir -p "$scratch/landing"

# The SQL layer on local Spark (docs/spark.md) builds in the background while sqlfluff and dbt parse run
# (each mostly one core of two); pytest starts when they are done, and the Spark build's result is read
# after pytest (it ends in pytest's first minute: the core is not left idle waiting for it).
step "dbt build on local Spark (target spark, selector sql_only; in the background)"
setsid bash scripts/spark_build.sh "$scratch/spark" >"$scratch/spark.out" 2>&1 &
spark_pid=$!

step "sqlfluff (duckdb dialect, dbt templater)"
# sqlfluff's Rust parser (sqlfluffrs, the rs extra) leaves nanobind's leak report of DuckDB's objects on
# stderr at exit (the dbt templater's adapter): noise, filtered; sqlfluff's own exit status stands
GPUCOST_LANDING_DIR="$scratch/landing" GPUCOST_WAREHOUSE="$scratch/lint.duckdb" \
    .venv/bin/sqlfluff lint models tests/singular 2>&1 \
    | { grep -v -E '^(nanobind: |See https://nanobind| - leaked | - \.\.\. skipped remainder)' || true; }

step "dbt parse"
# laid out as the tests' parse is (tests/python/landing_zones.py parse_template: the warehouse named
# relative to dbt's working folder, one thread as under pytest-xdist), so pytest starts from this parse
root="$PWD"
mkdir -p "$scratch/parse/landing"
(cd "$scratch/parse" && GPUCOST_LANDING_DIR="$scratch/parse/landing" GPUCOST_WAREHOUSE=gpucost.duckdb \
    GPUCOST_THREADS=1 GPUCOST_DUCKDB_THREADS=1 "$root/.venv/bin/dbt" parse --project-dir "$root" \
    --profiles-dir "$root" --target-path "$scratch/parse/target" --log-path "$scratch/parse/logs" >/dev/null)
export GPUCOST_TEST_PARSE_SEED="$scratch/parse/target/partial_parse.msgpack"

step "dbt-score and dbt-bouncer (the parsed manifest: docs, keys, layers; docs/dbt-conventions.md)"
.venv/bin/dbt-score lint --manifest "$scratch/parse/target/manifest.json" --show failing-items
DBT_PROJECT_DIR="$scratch/parse" .venv/bin/dbt-bouncer run --config-file dbt-bouncer.yml --output-only-failures

step "browser for the dashboard test (Debian chromium, playwright-core via npm ci)"
bash scripts/install_browser.sh
step "prometheus and promtool for the collector test (Debian's prometheus package)"
bash scripts/install_prometheus.sh

step "pytest"
# GPUCOST_TEST_WORKERS processes (default 2 = pytest-xdist, loadgroup; 1 = serial); extra arguments go to pytest
workers="${GPUCOST_TEST_WORKERS:-2}"
parallel=()
if [ "$workers" != 1 ]; then
    # tests sharing a built warehouse stay on one worker (tests/python/conftest.py)
    # in conftest's order (the longest suites first), not xdist's (most tests first)
    parallel=(-n "$workers" --dist loadgroup --no-loadscope-reorder)
fi
pytest_status=0
GPUCOST_REQUIRE_SPARK=1 .venv/bin/python -m pytest tests/python "${parallel[@]}" "$@" || pytest_status=$?

step "dbt build on local Spark: result (seeds, SQL models, data tests; every table equal to DuckDB's)"
spark_status=0
wait "$spark_pid" || spark_status=$?
spark_pid=""
cat "$scratch/spark.out"
[ "$spark_status" -eq 0 ] || { echo "spark build failed (exit $spark_status)"; exit 1; }
echo "== done (at ${SECONDS} s)"
exit "$pytest_status"
