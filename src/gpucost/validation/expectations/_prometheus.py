"""Shared by the DCGM and kube-state-metrics sources: Prometheus /api/v1/query_range JSON.

Two frames per source:

- responses, one row per file: status (<not valid JSON> / <unreadable> when DuckDB
  cannot read the file), resultType, the error Prometheus returned, series and sample counts;
- samples, one row per sample, flattened like read_prometheus_series in
  macros/landing.sql (only responses with status success and resultType matrix, as the
  warehouse reads them): the series' labels the suites check, series (the full sorted label set,
  a series' identity), sampled_epoch (unix seconds), value (the text Prometheus returned)
  and value_number (the same as a double, null when not numeric; telemetry, never money).

Label-derived text columns are pandas categoricals (a month holds millions of samples but only
thousands of series), so a full month fits in a few hundred MB.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb
import great_expectations as gx
import great_expectations.expectations as gxe
import pandas as pd
from great_expectations.expectations.row_conditions import Column

from gpucost.validation.expectations.base import Batch, Loaded, relative, sql_list, sql_string

# Prometheus renders sample values as Go floats: digits, fraction, exponent; NaN and +Inf/-Inf
# are legal there but useless as telemetry, so they fail.
NUMBER_PATTERN = r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
EPOCH_2015 = 1_420_070_400  # 2015-01-01T00:00:00Z
EPOCH_2100 = 4_102_444_800  # 2100-01-01T00:00:00Z

# The largest JSON object (one query_range response) read, as the build reads it
# (maximum_object_size in macros/landing.sql; DuckDB's default, 16 MB, refuses a day of 1-minute
# DCGM).
MAX_JSON_OBJECT_BYTES = 268_435_456

# The JSON read like read_prometheus_series reads it (values as text, labels as a map).
RESULT_TYPE = 'struct(metric map(varchar, varchar), "values" varchar[][])[]'
RESPONSE_COLUMNS = {
    "status": "varchar",
    "errorType": "varchar",
    "error": "varchar",
    "data": f"struct(resultType varchar, result {RESULT_TYPE})",
}


def responses_suite(name: str) -> gx.ExpectationSuite:
    return gx.ExpectationSuite(
        name=name,
        expectations=[
            gxe.ExpectColumnValuesToBeInSet(
                column="status",
                value_set=["success"],
                description="The response's status is success (not error, not unreadable).",
            ),
            gxe.ExpectColumnValuesToBeInSet(
                column="resultType",
                value_set=["matrix"],
                description="resultType is matrix (a query_range response).",
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="series_count",
                min_value=1,
                row_condition=Column("status") == "success",
                severity="warning",
                description="A successful response holds at least one series.",
            ),
        ],
        meta={"notes": "One row per landed Prometheus query_range JSON file."},
    )


def sample_expectations() -> list[gxe.Expectation]:
    """Checks every Prometheus sample gets: numeric value, sane time, no duplicate sample."""
    return [
        gxe.ExpectColumnValuesToNotBeNull(
            column="metric_name", meta={"column": "__name__"}, description="The series has a name."
        ),
        gxe.ExpectColumnValuesToNotBeNull(
            column="value", description="Every sample has a value ([time, value] pairs)."
        ),
        gxe.ExpectColumnValuesToMatchRegex(
            column="value",
            regex=NUMBER_PATTERN,
            description="The sample value is a finite number (no NaN, Inf or text).",
        ),
        gxe.ExpectColumnValuesToNotBeNull(
            column="sampled_epoch",
            meta={"column": "timestamp"},
            description="The sample time is a number (unix seconds).",
        ),
        gxe.ExpectColumnValuesToBeBetween(
            column="sampled_epoch",
            min_value=EPOCH_2015,
            max_value=EPOCH_2100,
            meta={"column": "timestamp"},
            description="The sample time is between 2015-01-01 and 2100-01-01 (seconds, not ms).",
        ),
        gxe.ExpectCompoundColumnsToBeUnique(
            column_list=["series", "sampled_epoch"],
            meta={"column": "series, timestamp"},
            description=(
                "No duplicate samples: each series (full label set) has one value per timestamp, "
                "across all files."
            ),
        ),
    ]


def _read_responses(con: duckdb.DuckDBPyConnection, files: list[Path], table: str) -> list[tuple]:
    """Create table (one row per readable file); return (file, status, message) for the others."""
    columns = ", ".join(f"{key}: '{value}'" for key, value in RESPONSE_COLUMNS.items())

    def read(paths: Sequence[Path]) -> str:
        return (
            f"select filename, status, errorType as error_type, error, "
            f"data.resultType as result_type, data.result as result "
            f"from read_json({sql_list(paths)}, format = 'auto', filename = true, "
            f"maximum_object_size = {MAX_JSON_OBJECT_BYTES}, columns = {{{columns}}})"
        )

    problems: list[tuple] = []
    try:
        con.execute(f"create or replace temp table {table} as {read(files)}")
        return problems
    except duckdb.Error:
        pass
    # Some file breaks the batch read: read them one by one to name it.
    con.execute(
        f"create or replace temp table {table} (filename varchar, status varchar, "
        f"error_type varchar, error varchar, result_type varchar, result {RESULT_TYPE})"
    )
    for path in files:
        try:
            con.execute(f"insert into {table} {read([path])}")
        except duckdb.Error as error:
            valid = True
            if not path.name.lower().endswith(".gz"):
                valid = con.sql(
                    f"select json_valid(content) from read_text({sql_string(path)})"
                ).fetchall()[0][0]
            status = "<unreadable>" if valid else "<not valid JSON>"
            problems.append((path, status, str(error).splitlines()[0][:300]))
    return problems


def load(
    con: duckdb.DuckDBPyConnection,
    files: list[Path],
    landing: Path,
    sample_rows: int | None,
    *,
    prefix: str,
    labels: dict[str, str],
    locate: tuple[str, ...],
) -> Loaded:
    """Frames <prefix>_responses and <prefix>_samples.

    labels maps frame columns to DuckDB expressions over labels (the series' label map);
    locate names the label columns that identify a sample in a failure message.
    With sample_rows, the samples frame holds every sample of a random subset of series
    (seeded), about that many rows, so the duplicate check stays exact within each kept series.
    """
    table = f"gpucost_{prefix}_responses"
    problems = _read_responses(con, files, table)

    label_sql = ",\n            ".join(f'{expr} as "{name}"' for name, expr in labels.items())
    con.execute(
        f"""
        create or replace temp table gpucost_{prefix}_series as
        with series as (
            select filename, unnest(result) as series
            from {table}
            where status = 'success' and result_type = 'matrix'
        )
        select
            cast(row_number() over (order by filename) - 1 as integer) as series_row,
            filename as source_file,
            series.metric as labels,
            cast(map_from_entries(list_sort(map_entries(series.metric))) as varchar) as series,
            series."values" as samples,
            len(series."values") as sample_count
        from series
        """
    )
    responses = con.sql(
        f"""
        with counted as (
            select source_file, sum(sample_count) as sample_count
            from gpucost_{prefix}_series
            group by source_file
        )
        select
            responses.filename as source_file,
            coalesce(responses.status, '<missing>') as status,
            responses.result_type as "resultType",
            nullif(concat_ws(': ', responses.error_type, responses.error), '') as error,
            coalesce(len(responses.result), 0) as series_count,
            coalesce(counted.sample_count, 0) as sample_count
        from {table} as responses
        left join counted on responses.filename = counted.source_file
        order by responses.filename
        """
    ).df()
    if problems:
        broken = pd.DataFrame(
            {
                "source_file": [str(path) for path, _, _ in problems],
                "status": [status for _, status, _ in problems],
                "resultType": [None] * len(problems),
                "error": [message for _, _, message in problems],
                "series_count": [0] * len(problems),
                "sample_count": [0] * len(problems),
            }
        )
        responses = pd.concat([responses, broken], ignore_index=True)
    responses["source_file"] = [relative(path, landing) for path in responses["source_file"]]

    series_filter = ""
    total_samples = con.sql(
        f"select coalesce(sum(sample_count), 0) from gpucost_{prefix}_series"
    ).fetchall()[0][0]
    note = ""
    if sample_rows is not None and total_samples > sample_rows:
        fraction = sample_rows / total_samples
        series_filter = f"where hash(series) % 1000000 < {int(fraction * 1_000_000)}"
        note = f"sampled: every sample of {fraction:.0%} of series"

    series = con.sql(
        f"""
        select
            series_row,
            source_file,
            labels['__name__'] as metric_name,
            {label_sql},
            series
        from gpucost_{prefix}_series
        {series_filter}
        order by series_row
        """
    ).df()
    samples = con.sql(
        f"""
        select
            series_row,
            try_cast(sample[1] as double) as sampled_epoch,
            sample[2] as value,
            try_cast(sample[2] as double) as value_number
        from (
            select series_row, unnest(samples) as sample
            from gpucost_{prefix}_series
            {series_filter}
        )
        """
    ).to_arrow_table()
    con.execute(f"drop table gpucost_{prefix}_series")
    con.execute(f"drop table {table}")

    frame = samples.to_pandas()
    # Series attributes as categoricals indexed by series_row (cheap: codes, not strings).
    names = {path: relative(path, landing) for path in series["source_file"].unique()}
    series["source_file"] = series["source_file"].map(names)
    position = pd.Series(range(len(series)), index=series["series_row"])
    codes = position.reindex(frame["series_row"]).to_numpy(dtype="int64")
    columns: dict[str, pd.Series | pd.Categorical] = {}
    for column in ["source_file", "metric_name", *labels, "series"]:
        categorical = series[column].astype("category")
        columns[column] = pd.Categorical.from_codes(
            categorical.cat.codes.to_numpy()[codes], dtype=categorical.dtype
        )
    frame = pd.DataFrame(
        {
            **columns,
            "sampled_epoch": frame["sampled_epoch"],
            "value": frame["value"],
            "value_number": frame["value_number"],
        }
    )
    files_with_samples = sorted(series["source_file"].unique())
    return Loaded(
        batches=[
            Batch(
                f"{prefix}_responses",
                responses,
                list(responses["source_file"]),
                index_columns=["source_file", "error"],
            ),
            Batch(
                f"{prefix}_samples",
                frame,
                files_with_samples,
                note=note,
                rows=int(total_samples),
                index_columns=["source_file", "metric_name", *locate, "sampled_epoch"],
            ),
        ]
    )
