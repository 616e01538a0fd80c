"""Bill files that their reader cannot read through, and why.

The build's readers read every accepted bill file of a folder in one DuckDB query, so one file that
fails half way (a truncated ``.csv.gz``, a CSV row with an unterminated quote, a GCP JSON line cut
off) would stop the whole build. Each landed bill file is read here on its own, with the build's
reader options, before that query runs; a file that fails is refused by stg_landing__bill_files
with the first line of the reader's error (paths and quoted file content cut out) and is
quarantined, and the other files build.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb
import pyarrow as pa

from gpucost.commands.safe_output import first_line
from gpucost.validation.landing_links import is_outside_landing, resolve_landing_dir

SCHEMA = pa.schema([("source_file", pa.string()), ("read_error", pa.string())])

# The types the bill readers read (macros/landing.sql bill_data_files; GCP also reads JSON lines).
TABULAR = (".csv", ".csv.gz", ".parquet")
JSON_LINES = (".json", ".jsonl", ".json.gz", ".jsonl.gz")
MANIFEST = re.compile(r"manifest[^/]*\.json$", re.IGNORECASE)
# The build's CSV options (macros/landing.sql text_csv_options, less the multi-file ones).
CSV_OPTIONS = "header = true, all_varchar = true, nullstr = ['', 'NULL']"


def glob_escape(path: str) -> str:
    """A path DuckDB reads literally (macros/landing.sql glob_escape)."""
    return path.replace("[", "[[]").replace("*", "[*]").replace("?", "[?]")


def sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def reader_query(path: str) -> str | None:
    """The query that reads ``path`` through as the build's reader does, or None for a type the
    bill readers do not read (stg_landing__bill_files rejects those by name)."""
    name = path.lower()
    source = sql_text(glob_escape(path))
    compression = "gzip" if name.endswith(".gz") else "none"
    if name.endswith(".parquet"):
        return f"select count(*) from read_parquet({source})"
    if name.endswith((".csv", ".csv.gz")):
        return (
            f"select count(*) from read_csv({source}, {CSV_OPTIONS}, compression = '{compression}')"
        )
    if name.endswith(JSON_LINES) and not MANIFEST.search(name):
        return (
            f"select count(*) from read_json_objects({source}, format = 'newline_delimited',"
            f" maximum_object_size = 268435456, compression = '{compression}')"
        )
    return None


def probe(path: str) -> str | None:
    """None when the build's reader reads ``path`` through; else why not, in one line."""
    query = reader_query(path)
    if query is None:
        return None
    try:
        with duckdb.connect() as con:
            con.sql(query).fetchall()
    except (duckdb.Error, OSError) as error:
        return "unreadable: " + (
            first_line(error, hide=(glob_escape(path), path), hide_quoted=True)
            or type(error).__name__
        )
    return None


def bill_files(landing_dir: str) -> list[str]:
    """Every regular bill file under ``<landing_dir>/billing`` with a type the readers read, as
    ``<landing_dir>/<relative path>`` (the spelling DuckDB's glob gives). A symlink out of the
    landing zone is never opened (stg_landing__links refuses it)."""
    root = Path(landing_dir, "billing")
    if not root.is_dir():
        return []
    found = []
    for folder, _folders, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            if is_outside_landing(path, landing_dir) or os.path.getsize(path) == 0:
                continue
            if name.lower().endswith(TABULAR + JSON_LINES):
                found.append(path)
    return sorted(found)


def probe_rows(landing_dir: str) -> list[tuple[str, str]]:
    """(file, reason) for each bill file that its reader cannot read through."""
    rows = []
    for path in bill_files(landing_dir):
        reason = probe(path)
        if reason:
            rows.append((path, reason))
    return rows


def probes_table(landing_dir: str) -> pa.Table:
    rows = probe_rows(resolve_landing_dir(landing_dir))
    return pa.table(
        [list(column) for column in zip(*rows, strict=True)] if rows else [[], []],
        schema=SCHEMA,
    )
