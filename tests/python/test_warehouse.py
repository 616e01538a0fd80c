"""End to end: land files, dbt build, and check the marts against the raw bill to the cent."""

from __future__ import annotations

import csv
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import duckdb
import pytest

from tests.python.conftest import REAL_FOCUS, run_dbt

pytestmark = pytest.mark.warehouse

MARTS = (
    "fct_cost_allocation",
    "fct_chargeback_monthly",
    "rpt_reconciliation",
    "dim_teams",
    "dim_projects",
)


def bill_from_csv(landing: Path) -> tuple[int, Decimal, Decimal]:
    """Lines and exact totals of every FOCUS CSV in a landing zone, read with the csv module."""
    lines, billed, effective = 0, Decimal(0), Decimal(0)
    for path in sorted((landing / "billing" / "focus").rglob("*.csv")):
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                lines += 1
                billed += Decimal(row["BilledCost"])
                effective += Decimal(row["EffectiveCost"])
    return lines, billed, effective


def cents(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


# --- the generated month -------------------------------------------------------------------------


def test_generated_month_reconciles_to_the_raw_bill(generated_warehouse, generated_month):
    _, summary = generated_month
    lines, billed, effective = bill_from_csv(generated_warehouse.landing)
    assert billed == summary["billed_total"]
    ((allocated_billed, allocated_effective, allocated_lines),) = generated_warehouse.sql(
        "select sum(billed_cost), sum(effective_cost), count(distinct charge_id)"
        " from marts.fct_cost_allocation"
    )
    assert (allocated_billed, allocated_effective, allocated_lines) == (billed, effective, lines)
    ((statement_billed, statement_effective),) = generated_warehouse.sql(
        "select sum(billed_cost), sum(effective_cost) from marts.fct_chargeback_monthly"
    )
    assert (statement_billed, statement_effective) == (cents(billed), cents(effective))
    assert generated_warehouse.sql(
        "select bool_and(is_reconciled) from marts.rpt_reconciliation"
    ) == [(True,)]


def test_marts_hold_money_as_decimal_never_float(generated_warehouse):
    rows = generated_warehouse.sql(
        "select table_name, column_name, data_type from information_schema.columns"
        " where table_schema = 'marts'"
    )
    assert set(MARTS) <= {table for table, _, _ in rows}
    floats = [row for row in rows if row[2] in ("DOUBLE", "FLOAT", "REAL", "HUGEINT")]
    assert floats == []
    money = {(t, c): d for t, c, d in rows if c.endswith("_cost") or c.endswith("_residual")}
    assert money and all(d.startswith("DECIMAL") for d in money.values()), money


def test_every_kind_of_money_is_visible(generated_warehouse):
    kinds = dict(
        generated_warehouse.sql(
            "select allocation_kind, count(*) from marts.fct_cost_allocation group by 1"
        )
    )
    assert {"direct", "usage", "idle", "shared", "unallocated"} <= set(kinds)
    reasons = dict(
        generated_warehouse.sql(
            "select unallocated_reason, count(*) from marts.fct_cost_allocation"
            " where allocation_kind = 'unallocated' group by 1"
        )
    )
    assert None not in reasons
    assert "gpu_usage_of_workload_missing_project_label" in reasons
    assert "gpu_usage_of_workload_unknown_project_label" in reasons  # the generator's typo labels


def test_untagged_share_matches_the_generator(generated_warehouse, generated_month):
    _, summary = generated_month
    ((attributed, unattributed),) = generated_warehouse.sql(
        "select count(*) filter (where attribution_method = 'pod_label'),"
        " count(*) filter (where attribution_method <> 'pod_label') from intermediate.int_workloads"
        " where workload_id not like '%/slurm/%'"  # the pods; Slurm jobs are the queue's
    )
    assert attributed + unattributed == summary["pods"]  # every pod that ran, once
    assert 0.35 <= unattributed / (attributed + unattributed) <= 0.65


def test_rules_attribute_untagged_workloads_and_say_which_rule(generated_warehouse):
    # the default rule reads the project from CI image names (ghcr.io/acme/<project>-<role>)
    rows = generated_warehouse.sql(
        "select workloads.image_repository, workloads.project_id, workloads.label_project_id"
        " from intermediate.int_workloads as workloads"
        " where workloads.attribution_method = 'rule' and workloads.attribution_rule_id = 'acme-image-name'"
    )
    assert rows
    for image, project, label in rows:
        assert image.startswith(f"ghcr.io/acme/{project}-")
        assert label is None or label != project  # only workloads without a valid label
    ((rule_rows,),) = generated_warehouse.sql(
        "select count(*) from marts.fct_cost_allocation"
        " where attribution_method = 'rule' and attribution_rule_id = 'acme-image-name'"
        " and allocation_kind in ('usage', 'idle')"
    )
    assert rule_rows > 0


def test_node_lines_are_prorated_by_requested_gpu_time(generated_warehouse):
    # For every prorated node line, a workload's share equals its requested GPU-ms over max(capacity,
    # sum of requests): recompute one line in SQL from the usage model, independently of Python.
    rows = generated_warehouse.sql(
        """
        with line as (
            -- the line's GPU part (its CPU and memory parts go by cores and memory)
            select lines.charge_id, lines.capacity_gpu_ms, parts.billed_cost
            from intermediate.int_gpu_node_lines as lines
            inner join intermediate.int_gpu_node_line_parts as parts
                on lines.charge_id = parts.charge_id and parts.resource_part = 'gpu'
            where lines.capacity_gpu_ms > 0 order by lines.charge_id limit 50
        ),
        requested as (
            select charge_id, workload_id, requested_gpu_ms from intermediate.int_gpu_node_line_workloads
            where requested_gpu_ms > 0
        ),
        expected as (
            select line.charge_id, requested.workload_id,
                line.billed_cost * requested.requested_gpu_ms
                / greatest(line.capacity_gpu_ms, sum(requested.requested_gpu_ms) over (partition by line.charge_id))
                    as expected_cost
            from line inner join requested using (charge_id)
        )
        select expected.charge_id, expected.workload_id, expected.expected_cost, prorated.billed_cost
        from expected
        inner join intermediate.int_gpu_costs_prorated as prorated
            on expected.charge_id = prorated.charge_id and expected.workload_id = prorated.workload_id
        """
    )
    assert len(rows) > 20
    for _, _, expected, actual in rows:
        assert abs(Decimal(str(expected)) - actual) < Decimal("1e-12")


def test_idle_of_a_node_hour_nobody_used_goes_to_the_cluster_days_owners(generated_warehouse):
    # A node line without usage spreads its idle over the cluster-day, one row per owner (not per
    # workload): each owner's share of the line is its GPU time in the cluster-day over everyone's,
    # recomputed here from the prorated usage and the workloads' owners.
    rows = generated_warehouse.sql(
        """
        with usage as (
            select lines.cluster_id, lines.charge_date,
                coalesce(w.team_id, '__unallocated__') as team_id,
                coalesce(w.project_id, '__unallocated__') as project_id,
                sum(prorated.basis_gpu_ms) as gpu_ms
            from intermediate.int_gpu_costs_prorated as prorated
            inner join intermediate.int_gpu_node_lines as lines using (charge_id)
            left join intermediate.int_workloads as w using (workload_id)
            where prorated.allocation_kind = 'usage'
            group by all
        ),
        spread as (
            select spread.charge_id, lines.cluster_id, lines.charge_date, fct.team_id, fct.project_id,
                fct.workload_id, fct.billed_cost
            from intermediate.int_gpu_idle_costs_spread as spread
            inner join intermediate.int_gpu_node_lines as lines using (charge_id)
            inner join marts.fct_cost_allocation as fct
                on fct.charge_id = spread.charge_id and fct.allocation_basis = 'idle_proportional'
                and fct.workload_id is null and fct.attribution_method <> 'policy'
            where spread.recipient = 'owner'
        )
        select spread.charge_id, spread.team_id, spread.project_id, count(spread.workload_id),
            sum(spread.billed_cost) / sum(sum(spread.billed_cost)) over (partition by spread.charge_id),
            any_value(usage.gpu_ms) / sum(any_value(usage.gpu_ms)) over (partition by spread.charge_id),
            count(*) over (partition by spread.charge_id),
            any_value((select count(*) from usage as u
                where u.cluster_id = spread.cluster_id and u.charge_date = spread.charge_date))
        from spread
        inner join usage using (cluster_id, charge_date, team_id, project_id)
        group by spread.charge_id, spread.team_id, spread.project_id
        """
    )
    assert len({r[0] for r in rows}) >= 3
    for _, _, _, workload_rows, share, expected, owners_paid, owners_active in rows:
        assert workload_rows == 0
        assert abs(Decimal(str(share)) - Decimal(str(expected))) < Decimal("1e-9")
        assert owners_paid == owners_active


# Rebuilds of a copy of the generated month under other vars (from the models that read them): two
# rebuilds serve the three tests below. The visible idle policy and the used allocation basis share
# one: the basis decides how a node line's GPU time is split among its workloads (and so how much is
# idle), the policy only who is handed the idle, and each test reads only its own var's effect
# (the idle owners; the basis of int_gpu_costs_prorated), the build's data tests reconciling both.
REBUILDS = {
    "platform": ("int_gpu_idle_costs_spread+", "int_node_compute_costs_prorated+"),
    "visible_used": (
        "int_gpu_idle_costs_spread+",
        "int_node_compute_costs_prorated+",
        "int_gpu_node_lines+",
    ),
}
REBUILD_VARS = {
    "platform": "{gpucost_idle_policy: platform}",
    "visible_used": "{gpucost_idle_policy: visible, gpucost_allocation_basis: used}",
}


@pytest.fixture(scope="module")
def rebuilt(generated_warehouse):
    """``rebuilt(name)``: a copy of the generated month rebuilt under REBUILD_VARS[name] (once)."""
    done: dict[str, Path] = {}

    def rebuild(name: str) -> Path:
        if name not in done:
            target = generated_warehouse.copy(f"rebuilt_{name}")
            # dbt's target folder beside the copy: the worker's own keeps the default vars' parse,
            # which the tamper tests' dbt runs below reuse
            result = run_dbt(
                generated_warehouse.landing,
                target,
                target.parent,
                "build",
                "--select",
                *REBUILDS[name],
                "--vars",
                REBUILD_VARS[name],
            )
            assert result.returncode == 0, result.stdout[-4000:]
            done[name] = target
        return done[name]

    return rebuild


@pytest.mark.parametrize(
    ("rebuild", "team", "project"),
    [("platform", "platform", "gpu-platform"), ("visible_used", "__idle__", "__idle__")],
)
def test_idle_policies_route_idle_cost_and_still_reconcile(
    generated_warehouse, rebuilt, rebuild, team, project
):
    owners = generated_warehouse.sql(
        "select distinct team_id, project_id from marts.fct_cost_allocation where allocation_kind = 'idle'",
        warehouse=rebuilt(rebuild),
    )
    assert owners == [(team, project)]


def test_used_basis_builds_and_reconciles(generated_warehouse, rebuilt):
    assert generated_warehouse.sql(
        "select distinct allocation_basis from intermediate.int_gpu_costs_prorated",
        warehouse=rebuilt("visible_used"),
    ) == [("used",)]


# --- the guards fail when one cent moves ---------------------------------------------------------


def _tamper(warehouse_file: Path, statement: str) -> None:
    with duckdb.connect(str(warehouse_file)) as con:
        con.execute(statement)


def test_moving_one_cent_in_one_allocation_fails_the_reconciliation(generated_warehouse):
    target = generated_warehouse.copy("tampered_allocation")
    _tamper(
        target,
        "update marts.fct_cost_allocation set billed_cost = billed_cost + 0.01"
        " where allocation_id = (select min(allocation_id) from marts.fct_cost_allocation)",
    )
    result = generated_warehouse.dbt(
        "test", "--select", "assert_allocations_reconcile_to_each_bill_line", warehouse=target
    )
    assert result.returncode == 1
    assert "FAIL 1 assert_allocations_reconcile_to_each_bill_line" in result.stdout
    # and an untouched copy passes the same test: the failure is the cent, not the test (a copy: dbt
    # opens its warehouse for writing, and the shared one is read by the other worker meanwhile)
    clean = generated_warehouse.dbt(
        "test",
        "--select",
        "assert_allocations_reconcile_to_each_bill_line",
        warehouse=generated_warehouse.copy("untampered_allocation"),
    )
    assert clean.returncode == 0, clean.stdout[-3000:]


def test_a_dropped_allocation_row_fails_the_reconciliation_report(generated_warehouse):
    target = generated_warehouse.copy("tampered_report")
    _tamper(
        target,
        "delete from marts.fct_cost_allocation"
        " where allocation_id = (select min(allocation_id) from marts.fct_cost_allocation"
        " where billed_cost <> 0)",
    )
    result = generated_warehouse.dbt("build", "--select", "rpt_reconciliation", warehouse=target)
    assert result.returncode == 1
    assert "FAIL 1 gpucost_expression_is_true_rpt_reconciliation" in result.stdout


def test_moving_one_cent_between_statements_fails_the_cents_test(generated_warehouse):
    target = generated_warehouse.copy("tampered_statement")
    _tamper(
        target,
        "update marts.fct_chargeback_monthly set billed_cost = billed_cost + 0.01"
        " where chargeback_id = (select min(chargeback_id) from marts.fct_chargeback_monthly)",
    )
    result = generated_warehouse.dbt(
        "test", "--select", "assert_monthly_cents_reconcile_to_bill", warehouse=target
    )
    assert result.returncode == 1
    assert "FAIL 1 assert_monthly_cents_reconcile_to_bill" in result.stdout


# --- the real FOCUS sample -----------------------------------------------------------------------


def test_real_focus_sample_loses_nothing(real_focus_warehouse):
    lines, billed, effective = bill_from_csv_with_nulls(REAL_FOCUS)
    assert lines == 1000
    ((allocated_billed, allocated_effective, allocated_lines),) = real_focus_warehouse.sql(
        "select sum(billed_cost), sum(effective_cost), count(distinct charge_id)"
        " from marts.fct_cost_allocation"
    )
    assert (allocated_billed, allocated_effective, allocated_lines) == (billed, effective, 1000)
    kinds = dict(
        real_focus_warehouse.sql(
            "select allocation_kind, count(distinct charge_id) from marts.fct_cost_allocation group by 1"
        )
    )
    assert (
        kinds.get("direct", 0) > 0
        and kinds.get("shared", 0) > 0
        and kinds.get("unallocated", 0) > 0
    )
    gpu = real_focus_warehouse.sql(
        "select count(distinct charge_id), min(unallocated_reason) from marts.fct_cost_allocation"
        " where unallocated_reason like 'gpu_resource_without_telemetry%'"
    )
    assert gpu == [(8, "gpu_resource_without_telemetry: g5.4xlarge")]  # the 8 g5.4xlarge rows
    assert (
        real_focus_warehouse.sql(
            "select bool_and(is_reconciled), count(*) from marts.rpt_reconciliation"
        )[0][0]
        is True
    )


def bill_from_csv_with_nulls(path: Path) -> tuple[int, Decimal, Decimal]:
    lines, billed, effective = 0, Decimal(0), Decimal(0)
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            lines += 1
            billed += Decimal(row["BilledCost"])
            effective += Decimal(row["EffectiveCost"])
    return lines, billed, effective


def test_focus_parquet_export_lands_like_the_csv(real_focus_warehouse, tmp_path):
    # The same real sample as typed Parquet (decimal money, timestamp periods), as Data Exports write it.
    landing = tmp_path / "landing"
    (landing / "billing" / "focus" / "2024-09").mkdir(parents=True)
    target = landing / "billing" / "focus" / "2024-09" / "focus.parquet"
    with duckdb.connect() as con:
        con.execute(
            f"""
            copy (
                select * replace (
                    cast("BilledCost" as decimal(38, 11)) as "BilledCost",
                    cast("EffectiveCost" as decimal(38, 11)) as "EffectiveCost",
                    cast("ChargePeriodStart" as timestamp) as "ChargePeriodStart",
                    cast("ChargePeriodEnd" as timestamp) as "ChargePeriodEnd"
                )
                from read_csv('{REAL_FOCUS}', all_varchar = true, nullstr = ['', 'NULL'])
            ) to '{target}' (format parquet)
            """
        )
    work = tmp_path / "work"
    work.mkdir()
    # only what the allocation mart needs, and the tests all of whose parents that builds (the
    # reconciliation of every bill line among them): the test compares that mart with the CSV's
    warehouse = work / "gpucost.duckdb"
    select = ("--select", "+fct_cost_allocation", "--indirect-selection", "buildable")
    result = run_dbt(landing, warehouse, work, "build", *select)
    assert result.returncode == 0, result.stdout[-4000:]
    assert "assert_allocations_reconcile_to_each_bill_line" in result.stdout
    query = (
        "select count(distinct charge_id), sum(billed_cost), sum(effective_cost)"
        " from marts.fct_cost_allocation"
    )
    with duckdb.connect(str(warehouse), read_only=True) as con:
        from_parquet = con.sql(query).fetchall()
    assert from_parquet == real_focus_warehouse.sql(query)
    assert from_parquet[0][0] == 1000
