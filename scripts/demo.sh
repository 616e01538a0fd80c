#!/usr/bin/env bash
# Set up a fresh machine (Python 3.11 + pip) and run the main job: generate a realistic month into
# landing/, dbt build the warehouse (warehouse/gpucost.duckdb), print the chargeback summary.
# Extra arguments go to `gpucost demo` (e.g. --nodes 32 --days 7 --step 60).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    echo "Creating .venv with $($PYTHON --version)"
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# bytecode cached on first import, so dbt's later runs do not compile dbt and sklearn again (scripts/test.sh)
unset PYTHONDONTWRITEBYTECODE
echo "Installing gpucost and its pinned dependencies (dbt-core 1.11, dbt-duckdb 1.11) into .venv"
.venv/bin/python -m pip install --quiet -c constraints.txt -e ".[test]"
exec .venv/bin/gpucost demo --force "$@"
