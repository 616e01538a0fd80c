"""Print an md5 per mart table (and per intermediate table with --all) of a built warehouse.

The digest is order-independent: each row is rendered as text and hashed, the row hashes
are sorted and hashed per bucket (their first three hex digits), then the buckets in order,
so two builds that hold the same rows give the same digest whatever order they were written
in. The buckets keep each aggregated string small: one string of every row (until 2026-11-28)
passed DuckDB's maximum string size on the 128-node month.
Used to prove a refactor leaves every mart unchanged:
    python scripts/mart_checksums.py warehouse/gpucost.duckdb --all
"""

from __future__ import annotations

import argparse
import sys

import duckdb

# When a row's inputs were loaded (int_telemetry_sample_intervals, int_gpu_usage_hourly): it differs
# between an incremental and a fresh build of the same files, so it is left out of the digest.
BOOKKEEPING = "inputs_loaded_at"


def checksums(path: str, schemas: tuple[str, ...]) -> dict[str, str]:
    con = duckdb.connect(path, read_only=True)
    try:
        tables = con.execute(
            "select table_schema, table_name from information_schema.tables "
            "where table_schema = any(?) and table_type = 'BASE TABLE' order by 1, 2",
            [list(schemas)],
        ).fetchall()
        out: dict[str, str] = {}
        for schema, table in tables:
            ident = f'"{schema}"."{table}"'
            columns = {
                name
                for (name,) in con.execute(
                    "select column_name from information_schema.columns"
                    " where table_schema = ? and table_name = ?",
                    [schema, table],
                ).fetchall()
            }
            if BOOKKEEPING in columns:
                ident = f"(select * exclude ({BOOKKEEPING}) from {ident})"
            (digest,) = con.execute(
                f"with row_hashes as (select md5(cast(t as varchar)) as h from {ident} as t),"
                " buckets as (select left(h, 3) as b, md5(string_agg(h, '' order by h)) as d"
                " from row_hashes group by 1)"
                " select md5(coalesce(string_agg(b || d, '' order by b), '')) from buckets"
            ).fetchall()[0]
            out[f"{schema}.{table}"] = digest
        return out
    finally:
        con.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("warehouse")
    parser.add_argument("--all", action="store_true", help="intermediate tables too")
    args = parser.parse_args(argv)
    schemas = ("main_marts", "marts") + (("main_intermediate", "intermediate") if args.all else ())
    for name, digest in checksums(args.warehouse, schemas).items():
        print(f"{digest}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
