"""Native bill exports: billing/aws_cur, azure, gcp, oci, onprem (and any other folder the dbt var
``gpucost_required_bill_columns`` names), read the way the build's readers read them.

One frame per folder with one row per file: its rows, and the required columns it lacks (the var's
entry for the folder; names match case-insensitively, and the two AWS CUR spellings alike, as the
build binds them). A file DuckDB cannot read at all is a ``file_readable`` failure with DuckDB's
first line (never the file's content). Typing the money and times of each native format is the
build's staging (macros/bill_charges.sql): its quarantine rows say which lines could not be typed.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from pathlib import Path

import duckdb
import great_expectations as gx
import great_expectations.expectations as gxe
import pandas as pd

from gpucost.commands.safe_output import first_line
from gpucost.validation.expectations.base import (
    Batch,
    FileProblem,
    Loaded,
    Source,
    is_gzip,
    missing_columns,
    relative,
    required_bill_columns,
    sql_string,
)

TABULAR = ("**/*.csv", "**/*.csv.gz", "**/*.parquet")
# Folder, title and the files the build reads there (macros/native_billing.sql, stg_onprem__...).
FORMATS = {
    "aws_cur": ("AWS Cost and Usage Reports (legacy CUR, CUR 2.0)", TABULAR),
    "azure": ("Azure cost exports", TABULAR),
    "gcp": (
        "GCP billing exports",
        ("**/*.json", "**/*.jsonl", "**/*.json.gz", "**/*.jsonl.gz", *TABULAR),
    ),
    "oci": ("OCI cost reports", TABULAR),
    "onprem": ("On-prem cost items", ("**/*.csv",)),
}
JSON_KEYS_SAMPLE = 1000
"""JSON lines read for a GCP export's field names (every row is one export schema)."""


def build_suite(name: str, folder: str, required: list) -> gx.ExpectationSuite:
    shown = ", ".join(" | ".join(e) if isinstance(e, list) else str(e) for e in required)
    return gx.ExpectationSuite(
        name=name,
        expectations=[
            gxe.ExpectColumnValuesToBeNull(
                column="missing_columns",
                meta={"column": "(header)"},
                description=(
                    f"The file has the columns the build requires of billing/{folder} "
                    f"(var gpucost_required_bill_columns.{folder}: {shown or 'none'})."
                ),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="rows",
                min_value=1,
                severity="warning",
                description="The file holds at least one bill line.",
            ),
        ],
        meta={"notes": f"Native bill files of billing/{folder}, one row per file."},
    )


def _json_fields(path: Path) -> tuple[list[str], int]:
    """The field paths (``invoice.month``) of a newline-delimited JSON export, and its rows."""
    opener = gzip.open if is_gzip(path) else open
    fields: dict[str, None] = {}
    rows = 0
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            rows += 1
            if rows <= JSON_KEYS_SAMPLE:
                fields.update(dict.fromkeys(_paths(json.loads(line))))
    return list(fields), rows


def _paths(value: object, prefix: str = "") -> Iterable[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}{key}"
            yield path
            yield from _paths(item, path + ".")


def _tabular_fields(con: duckdb.DuckDBPyConnection, path: Path) -> tuple[list[str], int]:
    """Column names (nested Parquet fields also as ``a.b``) and rows of a CSV or Parquet file,
    read as the build reads it (CSV as text with a header; gzip by its bytes, whatever its name)."""
    if path.name.lower().endswith(".parquet"):
        import pyarrow.parquet as pq

        schema = pq.read_schema(path)
        names = list(schema.names)
        names += [field.name for field in schema.flatten() if "." in field.name]
        rows = pq.read_metadata(path).num_rows
        return names, rows
    compression = ", compression = 'gzip'" if is_gzip(path) else ""
    rel = con.sql(
        f"select * from read_csv({sql_string(path)}, header = true, all_varchar = true, "
        f"nullstr = ['', 'NULL']{compression})"
    )
    names = list(rel.columns)
    rows = con.sql(
        f"select count(*) from read_csv({sql_string(path)}, header = true, "
        f"all_varchar = true{compression})"
    ).fetchall()[0][0]
    return names, int(rows)


def _loader(suite: str, folder: str):
    def load(
        con: duckdb.DuckDBPyConnection,
        files: list[Path],
        landing: Path,
        sample_rows: int | None,
    ) -> Loaded:
        required = required_bill_columns().get(folder, [])
        loaded = Loaded()
        records = []
        for path in files:
            name = relative(path, landing)
            try:
                if path.name.lower().endswith((".json", ".jsonl", ".json.gz", ".jsonl.gz")):
                    fields, rows = _json_fields(path)
                else:
                    fields, rows = _tabular_fields(con, path)
            except (duckdb.Error, OSError, UnicodeDecodeError, ValueError) as error:
                loaded.problems.append(
                    FileProblem(name, f"cannot be read as a {folder} bill: {first_line(error)}")
                )
                continue
            missing = missing_columns(fields, required) if fields else []
            records.append(
                {
                    "source_file": name,
                    "rows": rows,
                    "missing_columns": ", ".join(missing) if missing else None,
                }
            )
        if records:
            frame = pd.DataFrame.from_records(records)
            frame["missing_columns"] = frame["missing_columns"].astype("object")
            loaded.batches.append(
                Batch(
                    suite,
                    frame,
                    [record["source_file"] for record in records],
                    note="one row per file",
                    rows=int(frame["rows"].sum()),
                )
            )
        return loaded

    return load


def sources() -> list[Source]:
    """One source per native folder: the known formats, then any other folder of the var."""
    folders = dict(FORMATS)
    for folder in required_bill_columns():
        if folder != "focus" and folder not in folders:
            folders[folder] = (f"{folder} bill files", TABULAR)
    found = []
    for folder, (title, patterns) in folders.items():
        suite = f"bills_{folder}"
        required = required_bill_columns().get(folder, [])
        found.append(
            Source(
                name=f"bills_{folder}",
                title=title,
                folder=f"billing/{folder}",
                patterns=tuple(f"billing/{folder}/{pattern}" for pattern in patterns),
                required=False,
                suites=lambda suite=suite, folder=folder, required=required: [
                    build_suite(suite, folder, required)
                ],
                load=_loader(suite, folder),
            )
        )
    return found
