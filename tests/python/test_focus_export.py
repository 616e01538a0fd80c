"""FOCUS 1.4 allocation export: the allocated rows add back up to each origin charge, exactly (costs
and quantities), and GPU usage shares carry their GPU-hours."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from gpucost.commands import cli
from gpucost.commands.focus_export import BOOKKEEPING, export_focus

# The FOCUS 1.4 columns the export carries, in the spec's (alphabetical) order: every Mandatory column,
# the Allocated* columns and the Conditional / Recommended ones the bill gives (test_focus14 checks them
# against the spec's list).
FOCUS_COLUMNS = [
    "AllocatedMethodDetails",
    "AllocatedMethodId",
    "AllocatedResourceId",
    "AllocatedResourceName",
    "AllocatedTags",
    "AvailabilityZone",
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "CommitmentDiscountCategory",
    "CommitmentDiscountId",
    "CommitmentDiscountName",
    "CommitmentDiscountStatus",
    "CommitmentDiscountType",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ContractedCost",
    "ContractedUnitPrice",
    "EffectiveCost",
    "HostProviderName",
    "InvoiceId",
    "InvoiceIssuerName",
    "ListCost",
    "ListUnitPrice",
    "PricingCategory",
    "PricingQuantity",
    "PricingUnit",
    "RegionId",
    "RegionName",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceCategory",
    "ServiceName",
    "ServiceProviderName",
    "SkuId",
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
    "Tags",
]
CUSTOM_COLUMNS = [
    "x_AllocationId",
    "x_OriginChargeId",
    "x_TeamId",
    "x_ProjectId",
    "x_UserId",
    "x_ClusterId",
    "x_NodeName",
    "x_WorkloadId",
    "x_AllocationKind",
    "x_AllocationBasis",
    "x_AttributionMethod",
    "x_UnallocatedReason",
    "x_AllocatedRatio",
    "x_GpuHours",
]


def _origin_charges(warehouse) -> dict[str, tuple[Decimal, Decimal]]:
    """charge_id -> (BilledCost, EffectiveCost) of every usable bill line, from staging."""
    rows = warehouse.sql(
        "select charge_id, billed_cost, effective_cost from staging.stg_focus__charges "
        "where quarantine_reason is null"
    )
    return {charge: (billed, effective) for charge, billed, effective in rows}


def _sums(rows) -> dict[str, list[Decimal]]:
    totals: dict[str, list[Decimal]] = defaultdict(lambda: [Decimal(0), Decimal(0)])
    for charge, billed, effective in rows:
        totals[charge][0] += Decimal(billed)
        totals[charge][1] += Decimal(effective)
    return totals


def test_mart_has_the_focus_columns(generated_warehouse):
    """The FOCUS columns, the custom ones, and the digest of each charge's inputs the build keeps
    (which the export leaves out: test_focus14 checks every exported column against the spec)."""
    columns = [
        row[0]
        for row in generated_warehouse.sql(
            "select column_name from information_schema.columns "
            "where table_schema = 'marts' and table_name = 'rpt_focus_allocated_charges' "
            "order by ordinal_position"
        )
    ]
    assert columns == FOCUS_COLUMNS + CUSTOM_COLUMNS + list(BOOKKEEPING)


def test_allocated_rows_sum_exactly_to_each_origin_charge(generated_warehouse, generated_month):
    origin = _origin_charges(generated_warehouse)
    exported = _sums(
        generated_warehouse.sql(
            'select "x_OriginChargeId", "BilledCost", "EffectiveCost" '
            "from marts.rpt_focus_allocated_charges"
        )
    )
    assert len(origin) > 100
    assert set(exported) == set(origin)
    for charge, (billed, effective) in origin.items():
        assert exported[charge] == [billed, effective], charge
    # and against the generator's own total, computed without the warehouse
    _, summary = generated_month
    assert sum(b for b, _ in exported.values()) == summary["billed_total"]
    assert sum(e for _, e in exported.values()) == summary["effective_total"]


def test_ratios_in_method_details_sum_to_one_per_origin_charge(generated_warehouse):
    rows = generated_warehouse.sql(
        'select "x_OriginChargeId", "AllocatedMethodDetails", "x_AllocatedRatio", '
        '"AllocatedMethodId", "x_AllocationKind", "x_AllocationBasis", "AllocatedTags", '
        '"x_TeamId", "x_ProjectId", "AllocatedResourceId" '
        "from marts.rpt_focus_allocated_charges"
    )
    ratio_sums: dict[str, Decimal] = defaultdict(Decimal)
    for charge, details, ratio, method_id, kind, basis, tags, team, project, resource in rows:
        parsed = json.loads(details, parse_float=Decimal)
        (element,) = parsed["Elements"]
        assert isinstance(element["AllocatedRatio"], Decimal)
        assert element["AllocatedRatio"] == ratio  # all 18 places survive the JSON
        assert element["x_AllocationKind"] == kind and element["x_AllocationBasis"] == basis
        assert method_id == f"gpucost/{kind}/{basis}"
        if tags is not None:
            tag_values = json.loads(tags)
            assert set(tag_values) <= {"team_id", "project_id", "user_id"}
            assert tag_values.get("team_id", team) == team
            assert tag_values.get("project_id", project) == project
            assert None not in tag_values.values()
        if kind == "usage":
            assert resource and resource.count("/") >= 2
        ratio_sums[charge] += element["AllocatedRatio"]
    assert len(ratio_sums) > 100
    not_one = {charge: total for charge, total in ratio_sums.items() if total != 1}
    assert not_one == {}
    # at least one split is not a round number: the test would see a rounded ratio
    assert any(len(str(row[2]).rstrip("0")) > 12 for row in rows)


@pytest.fixture(scope="module")
def exported_csv(generated_warehouse, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("focus_export") / "allocated.csv"
    code = cli.main(
        ["export-focus", "--out", str(out), "--warehouse", str(generated_warehouse.path)]
    )
    assert code == 0
    return out


def test_exported_csv_has_focus_names_and_reads_back_exactly(generated_warehouse, exported_csv):
    with exported_csv.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == FOCUS_COLUMNS + CUSTOM_COLUMNS
        rows = list(reader)
    count = generated_warehouse.sql("select count(*) from marts.rpt_focus_allocated_charges")
    assert len(rows) == count[0][0]
    exported = _sums((r["x_OriginChargeId"], r["BilledCost"], r["EffectiveCost"]) for r in rows)
    origin = _origin_charges(generated_warehouse)
    assert set(exported) == set(origin)
    for charge, (billed, effective) in origin.items():
        assert exported[charge] == [billed, effective], charge
    ratios: dict[str, Decimal] = defaultdict(Decimal)
    for row in rows:
        details = json.loads(row["AllocatedMethodDetails"], parse_float=Decimal)
        ratios[row["x_OriginChargeId"]] += details["Elements"][0]["AllocatedRatio"]
    assert set(ratios.values()) == {Decimal(1)}
    # FOCUS timestamps: ISO 8601 UTC with a Z
    assert rows[0]["BillingPeriodStart"] == "2026-10-01T00:00:00Z"
    assert all(r["ChargePeriodStart"].endswith("Z") for r in rows if r["ChargePeriodStart"])


def test_parquet_export_keeps_decimal_money(generated_warehouse, tmp_path):
    out = tmp_path / "allocated.parquet"
    rows = export_focus(generated_warehouse.path, out, month="2026-10")
    with duckdb.connect() as con:
        types = dict(
            con.execute(
                "select column_name, column_type from (describe select * from read_parquet(?))",
                [str(out)],
            ).fetchall()
        )
        total = con.execute(
            'select count(*), sum("BilledCost"), sum("EffectiveCost") from read_parquet(?)',
            [str(out)],
        ).fetchall()[0]
    assert types["BilledCost"] == types["EffectiveCost"] == "DECIMAL(38,18)"
    assert types["x_AllocatedRatio"] == "DECIMAL(38,18)"
    origin = _origin_charges(generated_warehouse)
    assert total == (
        rows,
        sum(b for b, _ in origin.values()),
        sum(e for _, e in origin.values()),
    )
    assert export_focus(generated_warehouse.path, tmp_path / "none.parquet", month="2026-09") == 0


def test_export_rejects_unknown_formats(generated_warehouse, tmp_path, capsys):
    code = cli.main(
        [
            "export-focus",
            "--out",
            str(tmp_path / "x.json"),
            "--warehouse",
            str(generated_warehouse.path),
        ]
    )
    assert code == 2
    assert ".csv or .parquet" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


SUMMABLE = {
    "ListCost": "list_cost",
    "ContractedCost": "contracted_cost",
    "PricingQuantity": "pricing_quantity",
    "ConsumedQuantity": "consumed_quantity",
}
UNIT = Decimal("1e-18")


def test_summable_metrics_split_exactly_by_the_ratio(generated_warehouse):
    """FOCUS split cost allocation: an allocated charge's summable metrics add up to the origin
    charge's exactly, and each row's share is origin x ratio to within one 1e-18 unit (computed here
    with Decimal, not by the warehouse)."""
    origin = {
        row[0]: dict(zip(SUMMABLE, row[1:], strict=True))
        for row in generated_warehouse.sql(
            "select charge_id, " + ", ".join(SUMMABLE.values()) + " from staging.stg_focus__charges"
            " where quarantine_reason is null"
        )
    }
    rows = generated_warehouse.sql(
        'select "x_OriginChargeId", "x_AllocatedRatio", '
        + ", ".join(f'"{name}"' for name in SUMMABLE)
        + " from marts.rpt_focus_allocated_charges"
    )
    totals: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    split_rows = 0
    for charge, ratio, *values in rows:
        for name, value in zip(SUMMABLE, values, strict=True):
            expected = origin[charge][name]
            if expected is None:
                assert value is None, (charge, name)
                continue
            assert abs(Decimal(value) - Decimal(expected) * ratio) < UNIT, (charge, name)
            totals[charge][name] += value
            split_rows += ratio not in (0, 1)
    assert split_rows > 100  # real splits, not only whole lines
    for charge, metrics in origin.items():
        for name, expected in metrics.items():
            if expected is not None:
                assert totals[charge][name] == expected, (charge, name)


def test_gpu_usage_shares_carry_their_gpu_hours(generated_warehouse):
    """GPU-hours are the allocated usage quantity: on every share that a workload's GPU time sized
    (usage, or unallocated when the workload has no owner) AllocatedMethodDetails has UsageUnit
    GPU-Hours and UsageQuantity = the workload's GPU-hours on that node line (fct_gpu_usage); every
    fct_gpu_usage usage row is exported so; no other row carries a usage quantity."""
    rows = generated_warehouse.sql(
        'select "x_OriginChargeId", "x_WorkloadId", "x_AllocationKind", "x_AllocationBasis",'
        ' "AllocatedMethodDetails", "x_GpuHours" from marts.rpt_focus_allocated_charges'
    )
    usage = {
        (charge, workload): hours
        for charge, workload, hours in generated_warehouse.sql(
            "select charge_id, workload_id, gpu_hours from marts.fct_gpu_usage"
            " where usage_kind = 'usage'"
        )
    }
    seen = set()
    for charge, workload, kind, basis, details, hours in rows:
        (element,) = json.loads(details, parse_float=Decimal)["Elements"]
        gpu_share = (
            kind in ("usage", "unallocated")
            and basis in ("requested", "used", "max")
            and (charge, workload) in usage
        )
        if gpu_share:
            assert element["UsageUnit"] == "GPU-Hours"
            assert element["UsageQuantity"] == hours == usage[(charge, workload)]
            seen.add((charge, workload))
        else:
            assert "UsageQuantity" not in element and hours is None
    assert len(seen) > 100
    assert seen == set(usage)


def test_allocated_resource_columns_follow_the_spec(generated_warehouse):
    """FOCUS: AllocatedResourceId is null exactly on the unallocated portion of the origin charge
    (unallocated rows, idle kept visible on the idle owner), AllocatedResourceName and AllocatedTags
    null with it; AllocatedTags repeat no tag the origin charge's Tags carry with the same value, and
    hold the owner's team and project wherever Tags do not."""
    rows = generated_warehouse.sql(
        'select "x_AllocationKind", "x_TeamId", "x_ProjectId", "x_UserId", "AllocatedResourceId",'
        ' "AllocatedResourceName", "AllocatedTags", "Tags" from marts.rpt_focus_allocated_charges'
    )
    kinds: dict[tuple[str, bool], int] = defaultdict(int)
    for kind, team, project, user, resource, name, allocated_tags, tags in rows:
        unallocated_portion = kind == "unallocated" or team in ("__idle__", "__unallocated__")
        kinds[(kind, unallocated_portion)] += 1
        assert (resource is None) == unallocated_portion, (kind, team, resource)
        assert (name is None) == (resource is None)
        if unallocated_portion:
            assert allocated_tags is None
            continue
        origin = json.loads(tags) if tags else {}
        allocated = json.loads(allocated_tags) if allocated_tags else {}
        owner = {"team_id": team, "project_id": project, "user_id": user}
        for key, value in owner.items():
            if value is None or origin.get(key) == value:
                assert key not in allocated, (key, allocated, origin)
            else:
                assert allocated[key] == value, (key, allocated, origin)
        if resource.startswith("project:"):
            assert resource == f"project:{team}/{project}" and name == project
        else:
            assert resource.count("/") >= 2 and name == resource.split("/")[2]
    # every case is there: owned rows of each kind, unallocated rows, idle kept visible
    assert {kind for kind, portion in kinds if not portion} >= {"direct", "usage", "idle", "shared"}
    assert ("unallocated", True) in kinds and ("idle", True) in kinds


def test_user_names_in_the_origin_tags_are_pseudonymised(generated_warehouse, tmp_path):
    """The export's Tags are the bill line's own tags, which may name a user: with pseudonymisation
    on, the user key of Tags gets the same pseudonym as x_UserId, and the name is nowhere."""
    from gpucost.commands.safe_output import Pseudonymiser

    path = generated_warehouse.copy("tags_with_user")
    with duckdb.connect(str(path)) as con:
        changed = con.execute(
            'update marts.rpt_focus_allocated_charges set "Tags" = ?'
            " where \"x_AllocationKind\" = 'direct'",
            ['{"team_id":"nlp","user_id":"alice.smith"}'],
        ).fetchall()
    assert changed[0][0] > 0
    pseudonymiser = Pseudonymiser(b"test-secret-of-32-characters-xx")
    out = tmp_path / "allocated.csv"
    export_focus(path, out, pseudonymiser=pseudonymiser)
    text = out.read_text(encoding="utf-8")
    assert "alice.smith" not in text
    with out.open(newline="", encoding="utf-8") as handle:
        tags = [
            row["Tags"] for row in csv.DictReader(handle) if row["x_AllocationKind"] == "direct"
        ]
    assert len(tags) == changed[0][0]
    assert {json.loads(tag)["user_id"] for tag in tags} == {pseudonymiser("alice.smith")}
