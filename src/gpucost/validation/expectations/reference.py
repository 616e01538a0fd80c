"""The optional org mapping: reference/*.csv (project_id, project_name, team_id, ...).

Read like read_optional_csv in macros/landing.sql (header, all VARCHAR, '' and
NULL are null), one frame per distinct header. Staging keys projects by
lower(trim(project_id)), so uniqueness is checked on that key (project_id__key).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import great_expectations as gx
import great_expectations.expectations as gxe
import pandas as pd

from gpucost.validation.expectations.base import (
    Batch,
    FileProblem,
    Loaded,
    Source,
    relative,
    sql_string,
)

SUITE = "reference_org_mapping"
REQUIRED_COLUMNS = ("project_id", "team_id")


def build_suite() -> gx.ExpectationSuite:
    expectations: list[gxe.Expectation] = []
    for column in REQUIRED_COLUMNS:
        expectations.append(
            gxe.ExpectColumnToExist(column=column, description=f"Column {column} is present.")
        )
        expectations.append(
            gxe.ExpectColumnValuesToNotBeNull(
                column=column, description=f"{column} is never empty."
            )
        )
    expectations.append(
        gxe.ExpectColumnValuesToBeUnique(
            column="project_id__key",
            meta={"column": "project_id"},
            description=(
                "project_id is unique across all mapping files, compared as staging keys it "
                "(trimmed, lower case)."
            ),
        )
    )
    return gx.ExpectationSuite(
        name=SUITE,
        expectations=expectations,
        meta={"notes": "Org mapping CSVs: one row per project."},
    )


def load(
    con: duckdb.DuckDBPyConnection, files: list[Path], landing: Path, sample_rows: int | None
) -> Loaded:
    """One frame for all files (columns a file lacks are null in its rows, so a missing
    column fails the not-null check naming that file, and uniqueness spans every file)."""
    loaded = Loaded()
    frames: list[pd.DataFrame] = []
    names: list[str] = []
    for path in files:
        name = relative(path, landing)
        try:
            rel = con.sql(
                "select *, row_number() over () as source_row_number "
                f"from read_csv({sql_string(path)}, header = true, all_varchar = true, "
                "nullstr = ['', 'NULL'])"
            )
            key = (
                "lower(trim(project_id))"
                if "project_id" in rel.columns
                else "cast(null as varchar)"
            )
            con.register("reference_file", rel)
            try:
                frame = con.sql(f"select *, {key} as project_id__key from reference_file").df()
            finally:
                con.unregister("reference_file")
        except duckdb.Error as error:
            loaded.problems.append(FileProblem(name, f"cannot be read as CSV: {error}"))
            continue
        frame.insert(0, "source_file", name)
        frames.append(frame)
        names.append(name)
    if frames:
        frame = pd.concat(frames, ignore_index=True)
        frame["source_file"] = frame["source_file"].astype("category")
        loaded.batches.append(
            Batch(SUITE, frame, names, index_columns=["source_file", "source_row_number"])
        )
    return loaded


SOURCE = Source(
    name="reference",
    title="Org mapping",
    folder="reference",
    patterns=("reference/*.csv",),
    required=False,
    suites=lambda: [build_suite()],
    load=load,
)
