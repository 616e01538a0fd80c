"""``gpucost export-focus``: write the allocation as FOCUS 1.4 split cost allocation rows.

    gpucost export-focus --out allocated.csv       CSV, money as exact decimal text (18 places)
    gpucost export-focus --out allocated.parquet   Parquet, money as DECIMAL(38, 18)

Reads ``marts.rpt_focus_allocated_charges`` (one allocated charge per fct_cost_allocation row, with
every Mandatory FOCUS 1.4 column, the Allocated* columns and the GPU-hours of GPU usage shares) and
writes it through DuckDB, so money never becomes a float. The rows of each origin charge
(``x_OriginChargeId``) sum exactly to its BilledCost, EffectiveCost, ListCost, ContractedCost and
quantities; see docs/focus-export.md.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from gpucost.commands.safe_output import (
    Pseudonymiser,
    csv_cell_sql,
    default_project_dir,
    owner_user_tag_keys,
)

MART = "marts.rpt_focus_allocated_charges"
# the mart's columns for building it by charge (each charge's input digest): not FOCUS data
BOOKKEEPING = ("input_key", "input_fingerprint")

MONTH_PATTERN = re.compile(r"\d{4}-(0[1-9]|1[0-2])")

FORMATS = {".csv": "csv", ".parquet": "parquet"}

# Timestamps as FOCUS writes them: ISO 8601, UTC, with a Z.
CSV_TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def _quote_path(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def export_focus(
    warehouse: Path, out: Path, month: str | None = None, pseudonymiser: Pseudonymiser | None = None
) -> int:
    """Write the FOCUS allocated rows of ``warehouse`` (optionally one billing month, ``YYYY-MM``)
    to ``out`` (``.csv`` or ``.parquet``); returns the number of rows written.

    Money columns keep their DECIMAL(38, 18) type: Parquet stores them as decimals, CSV as their
    exact decimal text. Rows are ordered by origin charge and allocation id, so exports diff
    cleanly. In CSV, text cells that a spreadsheet would run as a formula are neutralised
    (:func:`gpucost.commands.safe_output.csv_cell_sql`); user ids are pseudonymised when
    ``gpucost_pseudonymise_users`` is on (``pseudonymiser``, by default from the settings).
    """
    import duckdb

    kind = FORMATS.get(out.suffix.lower())
    if kind is None:
        raise ValueError(f"--out must end in .csv or .parquet, not {out.name!r}")
    if pseudonymiser is None:
        pseudonymiser = Pseudonymiser.from_settings()
    where = ""
    if month is not None:
        if not MONTH_PATTERN.fullmatch(month):
            raise ValueError(f"month must be YYYY-MM, not {month!r}")
        # a validated literal: COPY takes no prepared parameters
        where = f"where strftime(\"BillingPeriodStart\", '%Y-%m') = '{month}'"
    if kind == "csv":
        options = f"format csv, header true, timestampformat '{CSV_TIMESTAMP_FORMAT}'"
    else:
        options = "format parquet, compression zstd"
    out.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        tables = con.sql(
            "select count(*) from information_schema.tables "
            "where table_schema = 'marts' and table_name = 'rpt_focus_allocated_charges'"
        ).fetchall()
        if not tables[0][0]:
            raise LookupError(
                f"{warehouse} has no {MART}; run `gpucost build` with this version first"
            )
        if pseudonymiser.enabled:
            pseudonymiser.register(con, owner_user_tag_keys(default_project_dir()))
        columns = con.sql(f"describe select * from {MART}").fetchall()
        select = ", ".join(
            _column_sql(name, data_type, kind, pseudonymiser)
            for name, data_type, *_ in columns
            if name not in BOOKKEEPING
        )
        query = f'select {select} from {MART} {where} order by "x_OriginChargeId", "x_AllocationId"'
        rows = con.sql(f"select count(*) from {MART} {where}").fetchall()[0][0]
        con.execute(f"copy ({query}) to {_quote_path(out)} ({options})")
    return int(rows)


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _column_sql(name: str, data_type: str, kind: str, pseudonymiser: Pseudonymiser) -> str:
    """One exported column: pseudonymised when it holds user ids, neutralised for spreadsheets
    when it is text written to CSV, otherwise as stored."""
    expression = pseudonymiser.column_sql(name, _quote(name))
    if kind == "csv" and data_type.upper() == "VARCHAR":
        expression = csv_cell_sql(expression)
    return f"{expression} as {_quote(name)}"


def _valid_month(value: str) -> str:
    if not MONTH_PATTERN.fullmatch(value):
        raise argparse.ArgumentTypeError(f"expected YYYY-MM, got {value!r}")
    return value


def cmd_export_focus(args: argparse.Namespace) -> int:
    from gpucost.commands.project import find_project_dir, warehouse_path

    warehouse = warehouse_path(find_project_dir(), args.warehouse)
    if not warehouse.is_file():
        print(f"gpucost: no warehouse at {warehouse}; run `gpucost build` first", file=sys.stderr)
        return 2
    out = Path(args.out)
    try:
        rows = export_focus(warehouse, out, args.month)
    except (ValueError, LookupError) as error:
        print(f"gpucost: {error}", file=sys.stderr)
        return 2
    print(f"Wrote {rows} FOCUS 1.4 allocated rows to {out}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export-focus",
        help="write the allocation as FOCUS 1.4 split cost allocation rows (CSV or Parquet)",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("--out", required=True, help="FILE.csv or FILE.parquet")
    parser.add_argument("--month", type=_valid_month, help="only this billing month, YYYY-MM")
    parser.add_argument("--warehouse", help="DuckDB file (default $GPUCOST_WAREHOUSE)")
    parser.set_defaults(func=cmd_export_focus)
