"""``gpucost publish``: the marts as Parquet files, for the dashboard and any BI tool.

    gpucost publish                            every table of schema marts -> warehouse/parquet/
    gpucost publish --out /srv/bi/gpucost      somewhere else (or set GPUCOST_PARQUET_DIR)

DuckDB lets one process write its file and holds a lock on it: a dashboard or BI tool that kept the
warehouse open would block ``dbt build``, and a build would break the dashboard. So readers never
open the warehouse. They read ``<out>/<table>.parquet``, one file per table of schema ``marts``.

Each file is written under a temporary name in the same folder, checked, then renamed over the old
one with ``os.replace``: a reader sees the old file or the new one, never half of one, and a reader
that has the old file open keeps reading the old file. Types are exact: DECIMAL columns stay
DECIMAL in Parquet (with the same precision and scale), and a mart with a HUGEINT or floating-point
column is refused before anything is written, since DuckDB would write such a column as a DOUBLE.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from gpucost.commands.safe_output import Pseudonymiser, default_project_dir, owner_user_tag_keys

SCHEMA = "marts"
PARQUET_DIR_ENV = "GPUCOST_PARQUET_DIR"

# Column types that must not reach a published file: DuckDB writes HUGEINT as DOUBLE, and floats
# are not exact. Money is DECIMAL (or integer cents).
REFUSED_TYPES = ("HUGEINT", "UHUGEINT", "DOUBLE", "FLOAT", "REAL", "FLOAT4", "FLOAT8")
_DECIMAL = re.compile(r"DECIMAL\((\d+),\s*(\d+)\)")


class PublishError(RuntimeError):
    """A mart cannot be published exactly (or the warehouse cannot be read)."""


@dataclass(frozen=True)
class Column:
    name: str
    data_type: str


def default_parquet_dir(warehouse: Path) -> Path:
    """``$GPUCOST_PARQUET_DIR``, else ``parquet/`` next to the warehouse file."""
    env = os.environ.get(PARQUET_DIR_ENV)
    return Path(env) if env else warehouse.parent / "parquet"


def mart_columns(con: duckdb.DuckDBPyConnection) -> dict[str, list[Column]]:
    """Every base table of schema ``marts`` and its columns, in table and column order."""
    rows = con.execute(
        """
        select columns.table_name, columns.column_name, columns.data_type
        from information_schema.columns as columns
        inner join information_schema.tables as tables
            on columns.table_catalog = tables.table_catalog
            and columns.table_schema = tables.table_schema
            and columns.table_name = tables.table_name
        where columns.table_schema = ? and tables.table_type = 'BASE TABLE'
        order by columns.table_name, columns.ordinal_position
        """,
        [SCHEMA],
    ).fetchall()
    tables: dict[str, list[Column]] = {}
    for table, column, data_type in rows:
        tables.setdefault(table, []).append(Column(column, data_type.upper()))
    return tables


def check_exact_types(tables: dict[str, list[Column]]) -> None:
    """Raise ``PublishError`` naming every table.column that would not be published exactly."""
    refused = [
        f"{SCHEMA}.{table}.{column.name} ({column.data_type})"
        for table, columns in tables.items()
        for column in columns
        if column.data_type in REFUSED_TYPES
    ]
    if refused:
        raise PublishError(
            "refusing to publish column(s) that Parquet would not hold exactly: "
            + ", ".join(refused)
            + "; cast money to DECIMAL (or integer cents) in the mart"
        )


def _check_parquet_schema(table: str, columns: list[Column], schema: pa.Schema) -> None:
    """The written file has the mart's columns, DECIMALs as decimals of the same precision and
    scale, and no floating-point column."""
    if schema.names != [column.name for column in columns]:
        raise PublishError(f"{table}: Parquet columns {schema.names} differ from the mart's")
    for column, field in zip(columns, schema, strict=True):
        if pa.types.is_floating(field.type):
            raise PublishError(f"{table}.{column.name}: written as {field.type}, not exact")
        match = _DECIMAL.fullmatch(column.data_type)
        if match:
            precision, scale = int(match[1]), int(match[2])
            if not (
                pa.types.is_decimal(field.type)
                and field.type.precision == precision
                and field.type.scale == scale
            ):
                raise PublishError(
                    f"{table}.{column.name}: {column.data_type} was written as {field.type}"
                )


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def publish_marts(
    warehouse: Path,
    out_dir: Path,
    *,
    log: Callable[[str], None] | None = print,
    pseudonymiser: Pseudonymiser | None = None,
) -> dict[str, dict]:
    """Write every table of schema ``marts`` to ``<out_dir>/<table>.parquet``, atomically.

    Opens the warehouse read-only and closes it before returning. Refuses (``PublishError``,
    naming table and column) a mart with a HUGEINT or floating-point column, before writing
    anything. Returns ``{table: {"path": Path, "rows": int}}``; ``log`` (default ``print``)
    receives one line per table written.

    With ``gpucost_pseudonymise_users`` on (``pseudonymiser``, by default from the settings: see
    :mod:`gpucost.commands.safe_output`), user ids are written as their keyed pseudonyms, in every
    mart.
    """
    if pseudonymiser is None:
        pseudonymiser = Pseudonymiser.from_settings()
    warehouse = Path(warehouse)
    out_dir = Path(out_dir)
    if not warehouse.is_file():
        raise PublishError(f"no warehouse at {warehouse}; run `gpucost build` first")
    # a locked or unreadable warehouse raises duckdb's own error: the command prints it on one line
    con = duckdb.connect(str(warehouse), read_only=True)
    published: dict[str, dict] = {}
    try:
        tables = mart_columns(con)
        if not tables:
            raise PublishError(f"{warehouse} has no tables in schema {SCHEMA}; build it first")
        check_exact_types(tables)
        if pseudonymiser.enabled:
            pseudonymiser.register(con, owner_user_tag_keys(default_project_dir()))
        out_dir.mkdir(parents=True, exist_ok=True)
        for table, columns in tables.items():
            target = out_dir / f"{table}.parquet"
            handle, temporary = tempfile.mkstemp(
                prefix=f".{table}.", suffix=".parquet.tmp", dir=out_dir
            )
            os.close(handle)
            try:
                select = ", ".join(
                    f"{pseudonymiser.column_sql(column.name, _quote(column.name))}"
                    f" as {_quote(column.name)}"
                    for column in columns
                )
                written = con.execute(
                    f"copy (select {select} from {_quote(SCHEMA)}.{_quote(table)}) "
                    f"to '{temporary.replace(chr(39), chr(39) * 2)}' "
                    "(format parquet, compression zstd)"
                ).fetchall()
                rows = int(written[0][0])
                _check_parquet_schema(table, columns, pq.read_schema(temporary))
                os.chmod(temporary, 0o644)
                os.replace(temporary, target)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
            published[table] = {"path": target, "rows": rows}
            if log:
                log(f"  {table:<32} {rows:>10,} rows  {target}")
    finally:
        con.close()
    if log:
        log(f"Published {len(published)} marts from {warehouse} to {out_dir}")
    return published


def cmd_publish(args: argparse.Namespace) -> int:
    from gpucost.commands.project import find_project_dir, warehouse_path

    project_dir = find_project_dir()
    warehouse = warehouse_path(project_dir, args.warehouse)
    out_dir = Path(args.out) if args.out else default_parquet_dir(warehouse)
    if not out_dir.is_absolute():
        out_dir = project_dir / out_dir
    try:
        publish_marts(warehouse, out_dir)
    except PublishError as error:
        print(f"gpucost publish: {error}", file=sys.stderr)
        return 1
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "publish",
        help="export the marts as Parquet files for the dashboard and BI tools",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("--warehouse", help="DuckDB file (default $GPUCOST_WAREHOUSE)")
    parser.add_argument(
        "--out",
        help=f"folder for the Parquet files (default ${PARQUET_DIR_ENV} or parquet/ next to "
        "the warehouse)",
    )
    parser.set_defaults(func=cmd_publish)
