"""FOCUS billing exports: billing/focus/**/*.csv | *.csv.gz | *.parquet.

Read as text, like read_focus_exports in macros/landing.sql (CSV: header, all columns
VARCHAR, '' and NULL are null; Parquet: every column cast to VARCHAR), one frame per
distinct header, so a missing column names exactly the files that lack it. Money stays text: the
suite checks that staging's exact DECIMAL(38, 18) cast will succeed, it never computes with it.
"""

from __future__ import annotations

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
    relative,
    sql_string,
)

SUITE = "focus_exports"

# The FOCUS columns the suite reads. Which of them a file must have is the build's rule, the dbt var
# gpucost_required_bill_columns.focus (plus BillingCurrency unless a default currency is declared);
# the others are added as null when a file lacks them (FOCUS 1.4 has no ProviderName).
READ_COLUMNS = (
    "BilledCost",
    "EffectiveCost",
    "BillingCurrency",
    "BillingPeriodStart",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeCategory",
    "ProviderName",
    "ServiceProviderName",
    "BillingAccountId",
    "Tags",
)
MONEY_COLUMNS = ("BilledCost", "EffectiveCost")
TIMESTAMP_COLUMNS = ("BillingPeriodStart", "ChargePeriodStart", "ChargePeriodEnd")
CHARGE_CATEGORIES = ("Usage", "Purchase", "Tax", "Credit", "Adjustment")

# A decimal number as DuckDB's DECIMAL cast accepts it (staging trims first): optional sign,
# digits with an optional fraction, optional exponent; at most 20 integer digits fit
# DECIMAL(38, 18). No NaN, Inf, thousands separators or currency symbols.
DECIMAL_PATTERN = r"^\s*[+-]?(?:[0-9]{1,20}(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,2})?\s*$"
CURRENCY_PATTERN = r"^[A-Z]{3}$"


# The offset pattern of duckdb__parse_utc_timestamp (macros/types_and_time.sql), character for
# character (a test reads the macro): text that ends in Z, +hh, +hhmm or +hh:mm is cast as it is (so
# a date-only 2026-10-01 is read as midnight, as the build reads it), anything else as UTC.
OFFSET_PATTERN = "(Z|[+-][0-9]{2}(:?[0-9]{2})?)$"


def parse_utc_timestamp_sql(column: str) -> str:
    """DuckDB expression: the UTC timestamp of a FOCUS timestamp text, or null, by the build's rule
    (duckdb__parse_utc_timestamp in macros/types_and_time.sql)."""
    text = f'trim("{column}")'
    return (
        "cast(try_cast(case "
        f"when regexp_matches({text}, '{OFFSET_PATTERN}') then {text} "
        f"else {text} || 'Z' end as timestamptz) at time zone 'UTC' as timestamp)"
    )


def required_columns() -> list[str]:
    """The columns every FOCUS file must have, as the build requires them (one name each; an
    entry of alternatives is shown as ``a | b`` by the loader and checked there)."""
    from gpucost.validation.expectations.base import required_bill_columns

    return [entry for entry in required_bill_columns().get("focus", []) if isinstance(entry, str)]


def build_suite() -> gx.ExpectationSuite:
    expectations: list[gxe.Expectation] = [
        gxe.ExpectTableRowCountToBeBetween(
            min_value=1,
            severity="warning",
            description="The export has at least one bill line.",
        )
    ]
    for column in required_columns():
        expectations.append(
            gxe.ExpectColumnToExist(
                column=column, description=f"Required FOCUS column {column} is present."
            )
        )
        expectations.append(
            gxe.ExpectColumnValuesToNotBeNull(
                column=column, description=f"{column} is never empty or NULL."
            )
        )
    for column in MONEY_COLUMNS:
        expectations.append(
            gxe.ExpectColumnValuesToMatchRegex(
                column=column,
                regex=DECIMAL_PATTERN,
                description=(
                    f"{column} is a decimal number that fits DECIMAL(38, 18) "
                    "(no NaN, Inf, separators or symbols)."
                ),
            )
        )
    expectations.append(
        gxe.ExpectColumnValuesToMatchRegex(
            column="BillingCurrency",
            regex=CURRENCY_PATTERN,
            description="BillingCurrency is a 3-letter ISO 4217 code (upper case).",
        )
    )
    for column in TIMESTAMP_COLUMNS:
        expectations.append(
            gxe.ExpectColumnValuesToBeNull(
                column=f"{column}__unparsed",
                meta={"column": column},
                description=(
                    f"{column} parses as a UTC timestamp the way staging parses it "
                    "(ISO 8601, T or space, optional Z or offset); the derived column holds "
                    "the raw text of values that do not."
                ),
            )
        )
    expectations.append(
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="ChargePeriodEnd__utc",
            column_B="ChargePeriodStart__utc",
            or_equal=False,
            ignore_row_if="either_value_is_missing",
            meta={"column": "ChargePeriodStart, ChargePeriodEnd"},
            description="ChargePeriodStart is before ChargePeriodEnd.",
        )
    )
    expectations.append(
        gxe.ExpectColumnValuesToBeInSet(
            column="ChargeCategory",
            value_set=list(CHARGE_CATEGORIES),
            description="ChargeCategory is a FOCUS value: " + ", ".join(CHARGE_CATEGORIES),
        )
    )
    expectations.append(
        gxe.ExpectColumnValuesToBeJsonParseable(
            column="Tags", description="Tags, when present, is valid JSON."
        )
    )
    return gx.ExpectationSuite(
        name=SUITE,
        expectations=expectations,
        meta={"notes": "FOCUS 1.0-1.4 exports as the warehouse reads them (macros/landing.sql)."},
    )


def _read_file(con: duckdb.DuckDBPyConnection, path: Path) -> duckdb.DuckDBPyRelation:
    """The file as text columns, named as the spec spells them whatever their case (DuckDB binds
    names case-insensitively: the build reads ``billedcost`` as BilledCost); gzip by its bytes."""
    name = path.name.lower()
    if name.endswith(".parquet"):
        rel = con.sql(
            "select columns(* exclude (file_row_number))::varchar, "
            "file_row_number + 1 as source_row_number "
            f"from read_parquet({sql_string(path)}, file_row_number = true)"
        )
    else:
        compression = ", compression = 'gzip'" if is_gzip(path) else ""
        rel = con.sql(
            "select *, row_number() over () as source_row_number "
            f"from read_csv({sql_string(path)}, header = true, all_varchar = true, "
            f"nullstr = ['', 'NULL']{compression})"
        )
    spelled = {column.lower(): column for column in (*READ_COLUMNS, *required_columns())}
    if all(spelled.get(column.lower(), column) == column for column in rel.columns):
        return rel
    return rel.project(
        ", ".join(
            f"{_quote(column)} as {_quote(spelled.get(column.lower(), column))}"
            for column in rel.columns
        )
    )


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _with_derived(con: duckdb.DuckDBPyConnection, rel: duckdb.DuckDBPyRelation) -> pd.DataFrame:
    columns = set(rel.columns)
    derived = []
    for column in TIMESTAMP_COLUMNS:
        if column in columns:
            parsed = parse_utc_timestamp_sql(column)
            derived.append(f'{parsed} as "{column}__utc"')
            derived.append(
                f'case when "{column}" is not null and {parsed} is null '
                f'then "{column}" end as "{column}__unparsed"'
            )
        else:
            derived.append(f'cast(null as timestamp) as "{column}__utc"')
            derived.append(f'cast(null as varchar) as "{column}__unparsed"')
    required = set(required_columns())
    for column in READ_COLUMNS:
        if column not in columns and column not in required:
            derived.append(f'cast(null as varchar) as "{column}"')
    con.register("focus_file", rel)
    try:
        frame = con.sql(f"select *, {', '.join(derived)} from focus_file").df()
    finally:
        con.unregister("focus_file")
    return frame


def load(
    con: duckdb.DuckDBPyConnection, files: list[Path], landing: Path, sample_rows: int | None
) -> Loaded:
    """One frame per distinct set of columns (usually one for all files)."""
    loaded = Loaded()
    groups: dict[tuple[str, ...], list[tuple[str, pd.DataFrame]]] = {}
    for path in files:
        name = relative(path, landing)
        try:
            rel = _read_file(con, path)
            header = tuple(column for column in rel.columns if column != "source_row_number")
            frame = _with_derived(con, rel)
        except duckdb.Error as error:
            loaded.problems.append(
                FileProblem(name, f"cannot be read as FOCUS: {first_line(error)}")
            )
            continue
        frame.insert(0, "source_file", name)
        groups.setdefault(tuple(sorted(header)), []).append((name, frame))
    for members in groups.values():
        frame = pd.concat([frame for _, frame in members], ignore_index=True)
        frame["source_file"] = frame["source_file"].astype("category")
        loaded.batches.append(
            Batch(
                SUITE,
                frame,
                [name for name, _ in members],
                index_columns=["source_file", "source_row_number"],
            )
        )
    return loaded


SOURCE = Source(
    name="focus",
    title="FOCUS billing exports",
    folder="billing/focus",
    patterns=("billing/focus/**/*.csv", "billing/focus/**/*.csv.gz", "billing/focus/**/*.parquet"),
    required=False,
    suites=lambda: [build_suite()],
    load=load,
)
