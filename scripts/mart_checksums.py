"""Print an md5 per mart table (and per intermediate table with --all) of a built warehouse.

The digest is order-independent: each row is rendered as text, the rows are sorted, then hashed,
so two builds that hold the same rows give the same digest whatever order they were written in.
Used to prove a refactor leaves every mart unchanged:
    python scripts/mart_checksums.py warehouse/gpucost.duckdb --all
"""

from __future__ import annotations

import argparse
import sys

import duckdb


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
            (digest,) = con.execute(
                f"select md5(coalesce(string_agg(r, chr(10) order by r), '')) "
                f"from (select cast(t as varchar) as r from {ident} as t)"
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
