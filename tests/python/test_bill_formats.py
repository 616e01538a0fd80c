"""The same generated month, billed in every native format (gpucost.bill_formats), builds and
reconciles, with the same bill and the same per-team totals as far as each format can carry them."""

from __future__ import annotations

import csv
import gzip
import json
import shutil
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from gpucost.bill_formats import BILL_FORMATS, read_focus_lines, render_bill
from tests.python.conftest import _build

pytestmark = pytest.mark.warehouse

NATIVE = [fmt for fmt in BILL_FORMATS if fmt != "focus"]


@pytest.fixture(scope="module")
def small_month(tmp_path_factory) -> Path:
    from gpucost.generator import generate_month

    landing = tmp_path_factory.mktemp("formats") / "focus" / "landing"
    generate_month(landing, seed=11, nodes=2, days=1, step_seconds=900, clusters=1)
    return landing


@pytest.fixture(scope="module")
def builds(small_month, tmp_path_factory) -> dict:
    """One warehouse per format, from copies of the same generated month."""
    built = {"focus": _build(small_month, tmp_path_factory.mktemp("build_focus"))}
    for fmt in NATIVE:
        landing = tmp_path_factory.mktemp(f"landing_{fmt}") / "landing"
        shutil.copytree(small_month, landing)
        render_bill(landing, fmt)
        built[fmt] = _build(landing, tmp_path_factory.mktemp(f"build_{fmt}"))
    return built


def _billed_in_files(landing: Path, fmt: str) -> Decimal:
    """The bill's total read back from the rendered files with plain Python / DuckDB."""
    total = Decimal(0)
    if fmt == "cur-legacy":
        for path in landing.rglob("*.csv.gz"):
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                total += sum(Decimal(r["lineItem/UnblendedCost"]) for r in csv.DictReader(handle))
    elif fmt == "cur2":
        for path in landing.rglob("*.parquet"):
            with duckdb.connect() as con:
                total += con.sql(
                    f"select sum(line_item_unblended_cost) from read_parquet('{path}')"
                ).fetchall()[0][0]
    elif fmt == "gcp":
        for path in landing.rglob("*.jsonl"):
            for text in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(text, parse_float=Decimal, parse_int=Decimal)
                total += row["cost"] + sum(credit["amount"] for credit in row["credits"])
    elif fmt == "azure":
        for path in (landing / "billing" / "azure").rglob("*.csv"):
            with path.open(newline="", encoding="utf-8") as handle:
                total += sum(Decimal(r["CostInBillingCurrency"]) for r in csv.DictReader(handle))
    elif fmt == "oci":
        for path in (landing / "billing" / "oci").rglob("*.csv"):
            with path.open(newline="", encoding="utf-8") as handle:
                total += sum(Decimal(r["cost/myCost"]) for r in csv.DictReader(handle))
    return total


@pytest.mark.parametrize("fmt", NATIVE)
def test_rendering_keeps_every_billed_cent(small_month, tmp_path, fmt):
    focus_total = sum(Decimal(line["BilledCost"]) for line in read_focus_lines(small_month))
    landing = tmp_path / "landing"
    shutil.copytree(small_month, landing)
    written = render_bill(landing, fmt)
    assert written and not (landing / "billing" / "focus").exists()
    assert _billed_in_files(landing, fmt) == focus_total


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown bill format 'cur3'"):
        render_bill(tmp_path, "cur3")


def _per_team(warehouse, where: str = "true") -> dict:
    return {
        team: (billed, effective)
        for team, billed, effective in warehouse.sql(
            "select team_id, sum(billed_cost), sum(effective_cost) from marts.fct_cost_allocation"
            f" where {where} group by 1"
        )
    }


@pytest.mark.parametrize("fmt", NATIVE)
def test_each_format_reconciles_to_the_same_bill(builds, fmt):
    reference = builds["focus"].sql(
        "select sum(billed_cost), count(*) from marts.rpt_reconciliation"
    )
    got = builds[fmt].sql(
        "select sum(billed_cost), count(*), bool_and(is_reconciled), max(abs(billed_residual)),"
        " max(abs(effective_residual)), sum(quarantined_line_count) from marts.rpt_reconciliation"
    )
    assert got == [(reference[0][0], reference[0][1], True, 0, 0, 0)]


@pytest.mark.parametrize("fmt", ["cur-legacy", "cur2"])
def test_cur_formats_give_exactly_the_focus_per_team_totals(builds, fmt):
    # both ledgers survive per line, so every allocation step sees the same numbers
    assert _per_team(builds[fmt]) == _per_team(builds["focus"])


@pytest.mark.parametrize("fmt", ["gcp", "oci"])
def test_hourly_single_amount_formats_place_every_non_shared_cent_the_same(builds, fmt):
    # GCP and OCI carry one amount per line (effective = billed), so only the spreading of shared
    # lines, which weighs owners by effective cost, may differ from the FOCUS month
    not_shared = (
        "allocation_kind in ('direct', 'usage', 'idle') or (allocation_kind = 'unallocated'"
        " and unallocated_reason <> 'shared_cost_share_of_unallocated_cost')"
    )
    focus = {team: money[0] for team, money in _per_team(builds["focus"], not_shared).items()}
    native = {team: money[0] for team, money in _per_team(builds[fmt], not_shared).items()}
    assert native == focus
