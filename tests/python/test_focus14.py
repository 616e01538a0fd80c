"""FOCUS 1.4: bills with the 1.4 provider columns land like the 1.0 ones, and the FOCUS export has the
columns of the spec's 1.4 Cost and Usage list (tests/fixtures/focus_spec, with its source).

The column check reads the spec's list as data: every Mandatory column is exported with the spec's
data type, every exported column without an ``x_`` prefix is a 1.4 column, and the names 1.4 drops
(ProviderName, PublisherName) are absent. The checker is shown failing on tampered headers too.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from gpucost.commands import cli
from tests.python.landing_zones import (
    PROJECT_DIR,
    small_month_cases,
    small_month_warehouse,
)

# one xdist group with test_inference_unit_cost, which reads the same session warehouse (landing_zones.
# small_month_cases): one worker builds it while the other gets on with other suites, none waits on it
pytestmark = pytest.mark.xdist_group("small_month_cases")

SPEC_COLUMNS = (
    PROJECT_DIR / "tests" / "fixtures" / "focus_spec" / "focus_1_4_cost_and_usage_columns.csv"
)

# The FOCUS data types as the export stores them (DuckDB / Parquet); JSON is a serialized JSON object
# in a string column, as the spec allows ("serialized as a String where necessary").
STORED_TYPES = {
    "String": ("VARCHAR",),
    "JSON": ("VARCHAR",),
    "Decimal": ("DECIMAL(",),
    "Date/Time": ("TIMESTAMP", "TIMESTAMP WITH TIME ZONE"),
}


def spec_columns() -> list[dict[str, str]]:
    with SPEC_COLUMNS.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def spec_problems(exported: dict[str, str]) -> list[str]:
    """What is wrong with an export's columns (name -> stored type) against the FOCUS 1.4 list."""
    rows = spec_columns()
    current = {row["column_id"]: row for row in rows if row["status"] == "current"}
    removed = {row["column_id"] for row in rows if row["status"] == "removed"}
    problems = []
    for name, row in current.items():
        if row["feature_level"] != "Mandatory":
            continue
        if name not in exported:
            problems.append(f"Mandatory column {name} missing")
        elif not exported[name].upper().startswith(STORED_TYPES[row["data_type"]]):
            problems.append(f"{name} is {exported[name]}, the spec says {row['data_type']}")
    for name, stored in exported.items():
        if name in removed:
            problems.append(f"{name} is deprecated and removed in FOCUS 1.4")
        elif name.startswith("x_"):
            continue
        elif name not in current:
            problems.append(f"{name} is neither a FOCUS 1.4 column nor x_-prefixed")
        elif not stored.upper().startswith(STORED_TYPES[current[name]["data_type"]]):
            problems.append(f"{name} is {stored}, the spec says {current[name]['data_type']}")
    return problems


def test_spec_list_is_the_1_4_list():
    rows = spec_columns()
    names = [row["column_id"] for row in rows]
    assert len(names) == len(set(names))
    current = {row["column_id"]: row for row in rows if row["status"] == "current"}
    mandatory = {name for name, row in current.items() if row["feature_level"] == "Mandatory"}
    # 1.4's provider columns replace the two it drops
    assert {"ServiceProviderName", "HostProviderName", "InvoiceIssuerName"} <= mandatory
    assert {row["column_id"] for row in rows if row["status"] == "removed"} == {
        "ProviderName",
        "PublisherName",
    }
    # columns of later drafts (1.5) are not in it
    assert not {"PrincipalId", "CredentialId", "CredentialDetails"} & set(current)
    assert {row["data_type"] for row in rows} == set(STORED_TYPES)
    assert {row["feature_level"] for row in rows} == {"Mandatory", "Recommended", "Conditional"}


@pytest.mark.parametrize(
    ("tamper", "expected"),
    [
        (lambda c: c.pop("HostProviderName"), "Mandatory column HostProviderName missing"),
        (lambda c: c.update(ProviderName="VARCHAR"), "ProviderName is deprecated"),
        (lambda c: c.update(PublisherName="VARCHAR"), "PublisherName is deprecated"),
        (lambda c: c.update(AllocatedRatio="DECIMAL(38,18)"), "AllocatedRatio is neither"),
        (lambda c: c.update(BilledCost="DOUBLE"), "BilledCost is DOUBLE"),
        (lambda c: c.update(ChargePeriodStart="VARCHAR"), "ChargePeriodStart is VARCHAR"),
    ],
)
def test_the_column_check_fails_on_a_tampered_export(exported_types, tamper, expected):
    assert spec_problems(exported_types) == []
    tampered = dict(exported_types)
    tamper(tampered)
    assert any(expected in problem for problem in spec_problems(tampered))


@pytest.fixture(scope="module")
def exported_parquet(generated_warehouse, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("focus14") / "allocated.parquet"
    code = cli.main(
        ["export-focus", "--out", str(out), "--warehouse", str(generated_warehouse.path)]
    )
    assert code == 0
    return out


@pytest.fixture(scope="module")
def exported_types(exported_parquet) -> dict[str, str]:
    with duckdb.connect() as con:
        return dict(
            con.execute(
                "select column_name, column_type from (describe select * from read_parquet(?))",
                [str(exported_parquet)],
            ).fetchall()
        )


def test_export_passes_the_column_check_against_the_spec(exported_types):
    assert spec_problems(exported_types) == []
    assert "ProviderName" not in exported_types and "PublisherName" not in exported_types


def test_export_fills_the_columns_the_spec_does_not_let_be_null(exported_parquet):
    """Mandatory columns that allow no nulls have a value on every exported row of the month; the
    JSON columns hold JSON objects (AllocatedMethodDetails with its Elements array)."""
    not_null = [
        row["column_id"]
        for row in spec_columns()
        if row["status"] == "current"
        and row["feature_level"] == "Mandatory"
        and row["allows_nulls"] == "False"
    ]
    with duckdb.connect() as con:
        relation = con.read_parquet(str(exported_parquet))
        counts = relation.aggregate(
            ", ".join([f'count(*) - count("{name}") as "{name}"' for name in not_null])
        ).fetchall()[0]
        json_rows = relation.select('"AllocatedMethodDetails", "AllocatedTags", "Tags"').fetchall()
    assert dict(zip(not_null, counts, strict=True)) == dict.fromkeys(not_null, 0)
    assert len(json_rows) > 100
    for details, allocated_tags, tags in json_rows:
        parsed = json.loads(details, parse_float=Decimal)
        assert isinstance(parsed["Elements"], list) and parsed["Elements"]
        assert all(k in {"Elements"} or k.startswith("x_") for k in parsed)
        for element in parsed["Elements"]:
            assert {"AllocatedRatio"} <= set(element)
            assert all(
                k in {"AllocatedRatio", "UsageUnit", "UsageQuantity"} or k.startswith("x_")
                for k in element
            )
            # UsageUnit must be present when UsageQuantity is
            assert ("UsageQuantity" in element) == ("UsageUnit" in element)
        assert allocated_tags is None or isinstance(json.loads(allocated_tags), dict)
        assert tags is None or isinstance(json.loads(tags), dict)


# --- ingest: a 1.4-shaped bill ------------------------------------------------------------------------


def as_focus_1_4(source: Path, target: Path) -> tuple[int, set[str]]:
    """Rewrite a FOCUS 1.0-shaped CSV bill as FOCUS 1.4 would deliver it: ProviderName becomes
    ServiceProviderName, PublisherName is gone, HostProviderName and InvoiceDetailId (1.4) are
    added, and the columns come in another order. Returns the rows written and the host names."""
    with source.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
    hosts: set[str] = set()
    out_rows = []
    for number, row in enumerate(rows, start=1):
        row = dict(row)
        row["ServiceProviderName"] = row.pop("ProviderName")
        # a distinct value, so that the test sees the host column itself come through
        row["HostProviderName"] = f"{row.pop('PublisherName')} (host)"
        hosts.add(row["HostProviderName"])
        row["InvoiceDetailId"] = f"{row['InvoiceId']}-{number:06d}" if row["InvoiceId"] else ""
        out_rows.append(row)
    header = sorted(out_rows[0], reverse=True)
    assert "ProviderName" not in header and "PublisherName" not in header
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        writer.writerows(out_rows)
    return len(out_rows), hosts


def land_focus_1_4(landing: Path) -> tuple[int, set[str]]:
    """Every FOCUS bill file of a landing zone rewritten in the 1.4 shape (in place); returns the
    rows written and the host names."""
    bills = sorted((landing / "billing" / "focus").rglob("*.csv"))
    assert bills, "the small month has no FOCUS CSV bill"
    written, hosts = 0, set()
    for bill in bills:
        rows, file_hosts = as_focus_1_4(bill, bill)
        written += rows
        hosts |= file_hosts
    return written, hosts


@pytest.fixture(scope="module")
def focus14_month(tmp_path_factory):
    """The small month with every FOCUS bill file rewritten in the 1.4 shape, built: the session's
    small month of cases (landing_zones.small_month_cases), where the serving counters are
    test_inference_unit_cost's (they feed only the inference marts and the quarantine, never
    fct_cost_allocation, which the test below compares with the 1.0-shaped month's)."""
    warehouse, cases = small_month_cases(tmp_path_factory)
    written, hosts = cases["focus_1_4"]
    return warehouse, written, hosts


def _money_by_owner(warehouse) -> dict[tuple, tuple[Decimal, Decimal]]:
    rows = warehouse.sql(
        "select team_id, project_id, billing_currency, allocation_kind, cost_component,"
        " sum(billed_cost), sum(effective_cost) from marts.fct_cost_allocation group by all"
    )
    return {tuple(row[:5]): (row[5], row[6]) for row in rows}


def test_focus_1_4_bill_reconciles_exactly_like_the_1_0_bill(focus14_month, tmp_path_factory):
    warehouse, written, _ = focus14_month
    reference = small_month_warehouse(tmp_path_factory)
    lines = warehouse.sql(
        "select count(*), sum(billed_cost), sum(effective_cost) from staging.stg_focus__charges"
        " where quarantine_reason is null and not is_superseded"
    )[0]
    reference_lines = reference.sql(
        "select count(*), sum(billed_cost), sum(effective_cost) from staging.stg_focus__charges"
        " where quarantine_reason is null and not is_superseded"
    )[0]
    assert lines[0] == written > 0
    assert lines == reference_lines
    residuals = warehouse.sql(
        "select count(*), count(*) filter (where is_reconciled), sum(abs(billed_residual)),"
        " sum(abs(effective_residual)) from marts.rpt_reconciliation"
    )[0]
    assert residuals[0] > 0 and residuals[0] == residuals[1]
    assert residuals[2:] == (0, 0)
    # every cent lands on the same owner, kind and component as from the 1.0-shaped bill
    assert _money_by_owner(warehouse) == _money_by_owner(reference)


def test_focus_1_4_provider_columns_reach_the_export(focus14_month, tmp_path):
    warehouse, _, hosts = focus14_month
    providers = warehouse.sql(
        "select distinct provider_name, host_provider_name from intermediate.int_bill_line_items"
        " where source_format = 'focus'"
    )
    assert providers and all(provider for provider, _ in providers)
    assert {host for _, host in providers} == hosts
    out = tmp_path / "allocated.csv"
    assert cli.main(["export-focus", "--out", str(out), "--warehouse", str(warehouse.path)]) == 0
    with out.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        rows = list(reader)
    assert "ProviderName" not in header and "PublisherName" not in header
    assert {row["HostProviderName"] for row in rows} == hosts
    assert {row["ServiceProviderName"] for row in rows} == {p for p, _ in providers}
    billed: dict[str, Decimal] = defaultdict(Decimal)
    for row in rows:
        billed[row["BillingCurrency"]] += Decimal(row["BilledCost"])
    bill = warehouse.sql(
        "select billing_currency, sum(billed_cost) from staging.stg_focus__charges"
        " where quarantine_reason is null and not is_superseded group by 1"
    )
    assert dict(billed) == dict(bill)


def test_focus_1_4_bill_passes_validation(focus14_month, tmp_path):
    """`gpucost validate` reads a 1.4 bill by the build's rules: no ProviderName is no failure."""
    import shutil

    from gpucost.validation.validate import validate_landing

    warehouse, written, _ = focus14_month
    landing = tmp_path / "landing"
    shutil.copytree(warehouse.landing / "billing" / "focus", landing / "billing" / "focus")
    report = validate_landing(landing)
    assert report.success, report.summary()
    (focus,) = [suite for suite in report.suites if suite.suite == "focus_exports"]
    assert focus.rows == written
