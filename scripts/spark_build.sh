#!/usr/bin/env bash
# The SQL layer on local Spark, as CI runs it (docs/spark.md): the `spark` target (dbt-spark, method:
# session, pyspark on Java 17) builds the seeds, SQL models, data tests and unit tests of the `sql_only`
# selector from the smallest generated month that gives them rows (scripts/spark_landing.py), with the
# session settings that keep a small build cheap: one shuffle partition, the in-memory catalog (a fresh
# metastore each run, no Derby), the JVM's quick JIT only. Then the same seeds and models on DuckDB from
# the same landing, and every Spark table must equal DuckDB's (scripts/spark_equals_duckdb.py): passing
# data tests alone missed seeds loaded as 'None' and hours stepping by seconds. Prints dbt's summary and
# the wall times.
# Usage: scripts/spark_build.sh <work dir>   (needs .venv with the [spark] extra)
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:?usage: scripts/spark_build.sh <work dir>}"
rm -rf "$work"
mkdir -p "$work"
start=$(date +%s)
.venv/bin/python scripts/spark_landing.py "$work/landing"
export GPUCOST_LANDING_DIR="$work/landing" GPUCOST_SPARK_DIR="$work"
export GPUCOST_SPARK_PARTITIONS="${GPUCOST_SPARK_PARTITIONS:-1}"
export GPUCOST_SPARK_CATALOG="${GPUCOST_SPARK_CATALOG:-in-memory}"
export GPUCOST_SPARK_JAVA_OPTIONS="${GPUCOST_SPARK_JAVA_OPTIONS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC}"
.venv/bin/dbt build --project-dir . --profiles-dir . --target spark --selector sql_only \
    --target-path "$work/target" --log-path "$work/logs" >"$work/build.log" 2>&1 \
    || { grep -E "ERROR|Error in|Failure in|FAIL" "$work/build.log" | head -40; exit 1; }
grep -E "Done\." "$work/build.log" | sed 's/^.*Done/spark build: Done/'
echo "spark build: $(( $(date +%s) - start )) s wall (landing + dbt)"
start=$(date +%s)
GPUCOST_WAREHOUSE="$work/sql_only.duckdb" .venv/bin/dbt build --project-dir . --profiles-dir . --target duckdb \
    --selector sql_only --resource-type seed --resource-type model \
    --target-path "$work/duckdb-target" --log-path "$work/logs" >"$work/duckdb.log" 2>&1 \
    || { grep -E "ERROR|Error in|Failure in|FAIL" "$work/duckdb.log" | head -40; exit 1; }
.venv/bin/python scripts/spark_equals_duckdb.py "$work/tables" "$work/sql_only.duckdb"
echo "spark equals DuckDB: $(( $(date +%s) - start )) s wall (DuckDB build + comparison)"
