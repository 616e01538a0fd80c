"""Run two compiled versions of one model's SQL on a built warehouse, one after the other, and print
each one's wall time, DuckDB CPU time and peak buffer memory, then whether their results are equal
row for row (`except all` both ways). For a rewrite that must not change a table:

    python scripts/compare_sql.py --warehouse W old.sql new.sql [--repeat 3]

The SQL files are dbt's compiled models (target/compiled/...); they run as dbt's connections run
them: profiles.yml's memory_limit (GPUCOST_MEMORY_LIMIT) and GPUCOST_DUCKDB_THREADS when set."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import duckdb

from gpucost.commands.project import profile_settings
from gpucost.engines.duckdb_plugin import cap_threads


def measure(con: duckdb.DuckDBPyConnection, name: str, sql: str) -> str:
    with tempfile.TemporaryDirectory() as folder:
        profile = Path(folder) / "profile.json"
        con.execute("pragma enable_profiling = 'json'")
        con.execute(f"pragma profiling_output = '{profile}'")
        start = time.perf_counter()
        con.execute(f"create or replace temp table {name} as {sql}")
        wall = time.perf_counter() - start
        con.execute("pragma disable_profiling")
        report = json.loads(profile.read_text(encoding="utf-8"))
    cpu = report["query"]["cpu_time"]
    peak = report["system"]["peak_buffer_memory"] / 1e9
    return f"{name}: {wall:.1f} s wall, {cpu:.1f} s CPU, peak buffer {peak:.2f} GB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    con = duckdb.connect(args.warehouse)
    # as dbt's connections: the profile's memory_limit, GPUCOST_DUCKDB_THREADS if set (the
    # profile's threads are how many models dbt runs at once, not DuckDB's)
    _, memory_limit = profile_settings()
    cap_threads(con)
    con.execute("set memory_limit = ?", [memory_limit])
    for _ in range(args.repeat):
        for name, path in (("old", args.old), ("new", args.new)):
            print(measure(con, name, path.read_text(encoding="utf-8")), flush=True)

        def count(query: str) -> int:
            return con.execute(query).fetchall()[0][0]

        rows = count("select count(*) from old")
        only_old = count("select count(*) from (from old except all from new)")
        only_new = count("select count(*) from (from new except all from old)")
        print(f"rows {rows}; only in old {only_old}, only in new {only_new}", flush=True)


if __name__ == "__main__":
    main()
