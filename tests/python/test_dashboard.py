"""The showback dashboard: its numbers (gpucost.commands.dashboard_data) against the marts, and the page
itself in Debian's headless chromium (tests/browser, playwright-core) against the marts, to the cent.

The browser test needs /usr/bin/chromium and tests/browser/node_modules: `bash scripts/install_browser.sh`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import date, timedelta
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, localcontext
from pathlib import Path

import duckdb
import pytest

from gpucost.commands import dashboard_data as data
from gpucost.commands import dashboard_detail as detail
from gpucost.commands import labels
from gpucost.commands.publish import publish_marts
from gpucost.commands.statements_labels import METHOD_LABELS

PROJECT_DIR = Path(__file__).resolve().parents[2]
BROWSER_DIR = PROJECT_DIR / "tests" / "browser"
CHROMIUM = Path("/usr/bin/chromium")
INSTALL_HINT = "run `bash scripts/install_browser.sh` (Debian chromium + npm ci in tests/browser)"


@pytest.fixture(scope="module")
def published(generated_warehouse, tmp_path_factory) -> Path:
    out_dir = tmp_path_factory.mktemp("dashboard") / "parquet"
    publish_marts(generated_warehouse.path, out_dir, log=None)
    return out_dir


@pytest.fixture(scope="module")
def con(published):
    connection = data.load(published)
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def month(generated_warehouse) -> date:
    return generated_warehouse.sql(
        "select max(billing_period_start) from marts.rpt_reconciliation"
    )[0][0]


def _cents(value: Decimal) -> Decimal:
    return data.cents(value)


# --- the numbers ------------------------------------------------------------------------------


def test_money_is_formatted_from_decimal_without_float():
    assert data.fmt_money(Decimal("1234.565")) == "1,234.57"  # half away from zero
    assert data.fmt_money(Decimal("-1234.565"), "USD") == "-1,234.57 USD"
    assert data.fmt_money(Decimal("0.005")) == "0.01"
    assert data.fmt_money(None) == "0.00"
    # 23 significant digits: a float would print 12,345,678,901,234,567,168.00
    assert data.fmt_money(Decimal("12345678901234567890.125")) == "12,345,678,901,234,567,890.13"
    assert data.fmt_ratio(Decimal("1"), Decimal("3")) == "33.3%"
    assert data.fmt_ratio(Decimal("1"), Decimal("0")) == "-"


def test_key_figures_equal_the_marts(generated_warehouse, con, month):
    [figures] = data.key_figures(con, data.Filters(month=month))
    [(billed, allocated, quarantined, residual)] = generated_warehouse.sql(
        "select sum(billed_cost), sum(allocated_billed_cost), sum(quarantined_billed_cost), "
        f"sum(billed_residual) from marts.rpt_reconciliation where billing_period_start = '{month}'"
    )
    assert figures["billing_currency"] == "USD"
    assert figures["billed_cost"] == billed
    assert figures["allocated_billed_cost"] == allocated
    assert figures["quarantined_billed_cost"] == quarantined
    assert figures["billed_residual"] == residual == 0
    assert figures["is_reconciled"] is True
    # no cluster filter: the statement's cents, which add up to the bill rounded to cents
    assert figures["cost_source"] == "fct_chargeback_monthly"
    assert figures["total_cost"] == _cents(allocated)
    [(team, cost)] = generated_warehouse.sql(
        "select team_id, sum(billed_cost) from marts.fct_chargeback_monthly "
        f"where billing_period_start = '{month}' and team_id not like '\\_\\_%' escape '\\' "
        "group by 1 order by 2 desc limit 1"
    )
    assert (figures["largest_team"], figures["largest_team_cost"]) == (team, cost)
    # the statement rounds each project x kind cell to cents (each moves by less than a cent), so the
    # team's statement is within that many cents of its exact allocation
    [(exact, cells)] = generated_warehouse.sql(
        "select sum(billed_cost), count(distinct project_id || '|' || allocation_kind)"
        " from marts.fct_cost_allocation "
        f"where billing_period_start = '{month}' and team_id = '{team}'"
    )
    assert abs(exact - cost) < Decimal("0.01") * cells
    [figures] = data.key_figures(con, data.Filters(team=team))
    assert figures["total_cost"] == cost


def test_filters_select_the_same_rows_as_sql(generated_warehouse, con, month):
    [cluster] = generated_warehouse.sql(
        "select cluster_id from marts.fct_cost_allocation where cluster_id is not null "
        "group by 1 order by sum(billed_cost) desc limit 1"
    )[0]
    [(team, expected)] = generated_warehouse.sql(
        "select team_id, sum(billed_cost) from marts.fct_cost_allocation "
        f"where cluster_id = '{cluster}' and team_id not like '\\_\\_%' escape '\\' "
        "group by 1 order by 2 desc limit 1"
    )
    [figures] = data.key_figures(con, data.Filters(month=month, cluster=cluster, team=team))
    assert figures["cost_source"] == "fct_cost_allocation"
    assert figures["total_cost"] == expected
    assert figures["largest_team"] == team
    # the bill is not split by cluster or team
    assert figures["billed_cost"] == data.key_figures(con, data.Filters())[0]["billed_cost"]
    # lines without a cluster
    [(no_cluster,)] = generated_warehouse.sql(
        "select sum(billed_cost) from marts.fct_cost_allocation where cluster_id is null"
    )
    [figures] = data.key_figures(con, data.Filters(cluster=data.NO_CLUSTER))
    assert figures["total_cost"] == no_cluster > 0
    options = data.filter_options(con)
    assert options["months"] == [month]
    assert cluster in options["clusters"] and data.NO_CLUSTER in options["clusters"]
    assert {"__idle__", "__unallocated__", team} <= set(options["teams"])


PERIODIC_SQL = "charge_period_end_at - charge_period_start_at > interval 1 day"


@pytest.mark.parametrize("dimension", ["team", "project", "user"])
def test_daily_and_periodic_charges_add_up_apart(generated_warehouse, con, dimension):
    rows = data.cost_over_time(con, data.Filters(), dimension, top=3)
    [(total, daily_total, days)] = generated_warehouse.sql(
        f"select sum(billed_cost), sum(billed_cost) filter (where not ({PERIODIC_SQL})), "
        f"count(distinct cast(charge_period_start_at as date)) filter (where not ({PERIODIC_SQL}))"
        " from marts.fct_cost_allocation"
    )
    assert sum((row["billed_cost"] for row in rows), Decimal(0)) == daily_total
    assert len({row["cost_date"] for row in rows}) == days >= 3
    periodic = detail.periodic_charges(con, data.Filters())
    periodic_total = sum((row["billed_cost"] for row in periodic), Decimal(0))
    # the monthly charges (support, tax, credits) are shown apart; the two add up to the bill
    assert periodic_total != 0 and daily_total + periodic_total == total
    for row in periodic:
        assert row["charge_period_end"] - row["charge_period_start"] > timedelta(1), row
    by_owner = detail.periodic_by_owner(con, data.Filters(), dimension)
    assert sum((row["billed_cost"] for row in by_owner), Decimal(0)) == periodic_total
    owners = {row["owner"] for row in rows}
    assert len(owners) <= 4 and data.OTHER in owners
    column = data.DIMENSIONS[dimension]
    top = generated_warehouse.sql(
        f"select coalesce({column}, '{data.NO_USER}') as owner "
        f"from marts.fct_cost_allocation where not ({PERIODIC_SQL}) "
        "group by 1 order by sum(billed_cost) desc, owner limit 3"
    )
    assert owners - {data.OTHER} == {owner for (owner,) in top}


def test_one_figure_per_team_from_the_statements_cents(generated_warehouse, con, month):
    statement = {
        team: (billed, idle, unallocated)
        for team, billed, idle, unallocated in generated_warehouse.sql(
            "select team_id, sum(billed_cost), sum(idle_cost), sum(unallocated_cost) "
            f"from marts.fct_chargeback_monthly where billing_period_start = '{month}' group by 1"
        )
    }
    filters = data.Filters(month=month)
    by_owner = {row["owner"]: row["billed_cost"] for row in data.cost_by_owner(con, filters)}
    drill = {row["owner"]: row["billed_cost"] for row in detail.drill_down(con, month)}
    table = {row["team_id"]: row["billed_cost"] for row in data.chargeback_by_team(con, filters)}
    billed = {team: figures[0] for team, figures in statement.items()}
    assert by_owner == drill == table == billed
    idle = data.idle_cost_by_team(con, filters)
    assert {row["team_id"]: row["billed_cost"] for row in idle} == {
        team: figures[1] for team, figures in statement.items() if figures[1]
    }
    for row in idle:  # the resource parts are apportioned to the team's idle cents
        parts = [row[f"{part}_cost"] for part in data.IDLE_PARTS]
        assert sum(parts) == row["billed_cost"], row["team_id"]
    unallocated = data.unallocated_by_team(con, filters)
    assert {row["team_id"]: row["billed_cost"] for row in unallocated} == {
        team: figures[2] for team, figures in statement.items() if figures[2]
    }
    # users are not on the statement: the exact allocation
    [(user, exact)] = generated_warehouse.sql(
        "select user_id, sum(billed_cost) from marts.fct_cost_allocation "
        "where user_id is not null group by 1 order by 2 desc limit 1"
    )
    users = {row["owner"]: row for row in data.cost_by_owner(con, data.Filters(), "user")}
    assert users[user]["billed_cost"] == exact
    assert users[user]["cost_source"] == "fct_cost_allocation"


def test_idle_parts_name_the_resource_left_idle(generated_warehouse, con):
    """__idle__ of fct_gpu_usage (GPU time nobody requested) and __idle__ of the allocation (idle
    the policy placed on nobody) are different money: each has its own words."""
    # idle is GPU-node money: none on lines without a cluster
    assert data.idle_cost_by_team(con, data.Filters(cluster=data.NO_CLUSTER)) == []
    [(cluster,)] = generated_warehouse.sql(
        "select cluster_id from marts.fct_cost_allocation where allocation_kind = 'idle' "
        "group by 1 order by sum(billed_cost) desc limit 1"
    )
    exact = generated_warehouse.sql(
        "select team_id, case when allocation_basis like 'cpu:%' then 'cpu' "
        "when allocation_basis like 'memory:%' then 'memory' else 'gpu' end as part, "
        "sum(billed_cost) from marts.fct_cost_allocation "
        f"where allocation_kind = 'idle' and cluster_id = '{cluster}' group by 1, 2"
    )
    rows = data.idle_cost_by_team(con, data.Filters(cluster=cluster))
    got = {
        (row["team_id"], part): row[f"{part}_cost"]
        for row in rows
        for part in data.IDLE_PARTS
        if row[f"{part}_cost"]
    }
    assert got == {(team, part): cost for team, part, cost in exact if cost}
    assert {part for _, part, _ in exact} >= {"gpu", "cpu", "memory"}
    assert labels.owner_label("__idle__", "gpu_usage") != labels.owner_label("__idle__")
    assert labels.resource_part("memory:idle_proportional") == "memory"
    assert labels.resource_part("idle_proportional") == "GPU"


def test_gpu_idle_and_unallocated_views_equal_the_marts(generated_warehouse, con):
    gpu = data.gpu_cost_by_team(con, data.Filters())
    for row in gpu:
        assert row["utilised_cost"] + row["wasted_cost"] == row["billed_cost"], row["team_id"]
    expected = generated_warehouse.sql(
        "select team_id, sum(billed_cost), sum(utilised_cost), sum(wasted_cost) "
        "from marts.fct_gpu_usage group by 1 order by 1"
    )
    got = sorted(
        (row["team_id"], row["billed_cost"], row["utilised_cost"], row["wasted_cost"])
        for row in gpu
    )
    assert got == expected
    assert any(row["team_id"] == "__idle__" and row["utilised_cost"] == 0 for row in gpu)

    idle = data.idle_cost_by_team(con, data.Filters())
    [(idle_total, unallocated_total)] = generated_warehouse.sql(
        "select sum(idle_billed_cost), sum(unallocated_billed_cost) from marts.rpt_reconciliation"
    )
    [(idle_cents,)] = generated_warehouse.sql(
        "select sum(idle_cost) from marts.fct_chargeback_monthly"
    )
    # the statement's idle cents: the exact idle cost, each team's cell rounded by largest remainder
    assert sum((row["billed_cost"] for row in idle), Decimal(0)) == idle_cents
    assert abs(idle_cents - idle_total) < Decimal("0.01") * len(idle) and idle_total > 0

    reasons = data.unallocated_by_reason(con, data.Filters())
    teams = data.unallocated_by_team(con, data.Filters())
    assert sum((row["billed_cost"] for row in reasons), Decimal(0)) == unallocated_total > 0
    # the statement's cents of the same money (each team's figure as on the statement)
    [(unallocated_cents,)] = generated_warehouse.sql(
        "select sum(unallocated_cost) from marts.fct_chargeback_monthly"
    )
    assert sum((row["billed_cost"] for row in teams), Decimal(0)) == unallocated_cents
    assert "__unallocated__" in {row["team_id"] for row in teams}
    # every reason in words: no identifier left outside the bill's own detail in brackets
    codes = generated_warehouse.sql(
        "select distinct unallocated_reason from marts.fct_cost_allocation "
        "where allocation_kind = 'unallocated'"
    )
    assert {code for row in reasons for code in row["codes"]} == {code for (code,) in codes}
    for row in reasons:
        words = row["reason"].split(" (")[0]
        assert "_" not in words and words != labels.NO_REASON, row["codes"]


def test_review_queue_is_the_marts_first_workloads(generated_warehouse, con):
    queue = detail.review_queue(con, data.Filters(), limit=5)
    expected = generated_warehouse.sql(
        "select review_rank, workload_id, unattributed_reason, billed_cost "
        "from marts.rpt_attribution_review order by review_rank limit 5"
    )
    assert expected, "the generated month has workloads to review"
    got = [
        (row["review_rank"], row["workload_id"], row["unattributed_reason"], row["billed_cost"])
        for row in queue
    ]
    assert got == expected
    assert all("_" not in row["reason"] for row in queue)
    [(cluster,)] = generated_warehouse.sql(
        "select cluster_id from marts.rpt_attribution_review where cluster_id is not null "
        "order by review_rank desc limit 1"
    )
    assert {
        row["workload_id"] for row in detail.review_queue(con, data.Filters(cluster=cluster))
    } <= {
        workload
        for (workload,) in generated_warehouse.sql(
            f"select workload_id from marts.rpt_attribution_review where cluster_id = '{cluster}'"
        )
    }


def test_statement_cents_add_up_to_the_bill(generated_warehouse, con):
    rows = data.chargeback_by_team(con, data.Filters())
    [(bill,)] = generated_warehouse.sql("select sum(billed_cost) from marts.rpt_reconciliation")
    assert sum((row["billed_cost"] for row in rows), Decimal(0)) == _cents(bill)
    for row in rows:
        kinds = ("direct_cost", "usage_cost", "idle_cost", "shared_cost", "unallocated_cost")
        assert sum(row[kind] for kind in kinds) == row["billed_cost"], row["team_id"]


def _headline_from_marts(warehouse, month: date, team: str | None = None) -> dict:
    """The headline figures computed here from the marts, with DuckDB."""
    team_sql = f" and team_id = '{team}'" if team else ""
    [(total, idle, unallocated)] = warehouse.sql(
        "select sum(billed_cost), sum(idle_cost), sum(unallocated_cost) "
        f"from marts.fct_chargeback_monthly where billing_period_start = '{month}'{team_sql}"
    )
    [(allocated, model_placed)] = warehouse.sql(
        "select sum(billed_cost), "
        "coalesce(sum(billed_cost) filter (where attribution_method in ('model', 'model_team',"
        " 'cold_start', 'cold_start_team', 'declared_name', 'rule')), 0) "
        f"from marts.fct_cost_allocation where billing_period_start = '{month}'{team_sql}"
    )
    [(budgets, at_risk)] = warehouse.sql(
        "select count(*), count(*) filter (where status <> 'ok') from marts.rpt_budget_status "
        f"where billing_period_start = '{month}'{team_sql}"
    )
    return {
        "total_cost": total,
        "idle_cost": idle,
        "unallocated_cost": unallocated,
        "allocated_cost": allocated,
        "model_placed_cost": model_placed,
        "budget_count": budgets,
        "budgets_at_risk": at_risk,
    }


def test_headline_equals_the_marts(generated_warehouse, con, month):
    [row] = detail.headline(con, data.Filters())
    expected = _headline_from_marts(generated_warehouse, month)
    assert {key: row[key] for key in expected} == expected
    assert row["month"] == month and row["billing_currency"] == "USD"
    assert row["previous_month"] is None and row["change"] is None  # one month: no previous
    assert expected["model_placed_cost"] > 0 and expected["idle_cost"] > 0
    [(bill,)] = generated_warehouse.sql(
        f"select sum(billed_cost) from marts.rpt_reconciliation where billing_period_start = "
        f"'{month}'"
    )
    assert row["total_cost"] == _cents(bill)  # the statement's cents add up to the bill
    assert len(row["at_risk"]) == row["budgets_at_risk"]
    # a team: its own figures, the cluster filter ignored (the statement is not per cluster)
    [(team,)] = generated_warehouse.sql(
        "select team_id from marts.fct_chargeback_monthly where team_id not like '\\_\\_%' "
        "escape '\\' group by 1 order by sum(billed_cost) desc limit 1"
    )
    [row] = detail.headline(con, data.Filters(team=team, cluster="any-cluster"))
    expected = _headline_from_marts(generated_warehouse, month, team)
    assert {key: row[key] for key in expected} == expected


def test_headline_change_against_the_previous_month(published, month):
    """A second month: the page's own tables with an earlier month added, built from the latest
    one with every statement line 1.00 cheaper."""
    with data.load(published) as connection:
        connection.execute(
            "insert into fct_chargeback_monthly by name select * replace ("
            "cast(billing_period_start - interval 1 month as date) as billing_period_start, "
            "billed_cost - 1 as billed_cost) from fct_chargeback_monthly"
        )
        [(lines, team_lines)] = connection.execute(
            "select count(*), count(*) filter (where team_id = '__unallocated__') "
            "from fct_chargeback_monthly where billing_period_start = ?",
            [month],
        ).fetchall()
        [row] = detail.headline(connection, data.Filters(month=month))
        assert row["previous_month"] == (month - timedelta(days=1)).replace(day=1)
        assert row["change"] == lines and row["previous_cost"] == row["total_cost"] - lines
        [row] = detail.headline(connection, data.Filters(month=month, team="__unallocated__"))
        assert row["change"] == team_lines > 0
        [row] = detail.headline(connection, data.Filters(month=row["previous_month"]))
        assert row["previous_month"] is None and row["change"] is None


def test_drill_down_adds_up_at_every_level_to_a_workload(generated_warehouse, con, month):
    teams = detail.drill_down(con, month)
    path: tuple[str, ...] = ()
    parent_cents = sum((row["billed_cost"] for row in teams), Decimal(0))
    [(bill,)] = generated_warehouse.sql("select sum(billed_cost) from marts.rpt_reconciliation")
    assert parent_cents == _cents(bill)
    rows = teams
    for level in detail.LEVELS[1:]:
        # the largest real owner at each level (a user with a label, a workload with GPU time)
        chosen = next(
            row
            for row in rows
            if row["owner"] not in (*data.SYSTEM_TEAMS, data.NO_USER, detail.NO_WORKLOAD)
        )
        path = (*path, chosen["owner"])
        rows = detail.drill_down(con, month, path)
        assert rows, (level, path)
        # each level adds up exactly to its parent's cents, and its exact amounts to the parent's
        assert sum((row["billed_cost"] for row in rows), Decimal(0)) == chosen["billed_cost"]
        assert sum((row["exact_cost"] for row in rows), Decimal(0)) == chosen["exact_cost"]
    team, project, user = path
    [(exact,)] = generated_warehouse.sql(
        "select sum(billed_cost) from marts.fct_cost_allocation "
        f"where team_id = '{team}' and project_id = '{project}' and user_id = '{user}'"
    )
    assert sum((row["exact_cost"] for row in rows), Decimal(0)) == exact
    workload = next(row for row in rows if row["owner"] != detail.NO_WORKLOAD)
    got = detail.workload_detail(con, month, workload["owner"])
    [(method, confidence, exact_cost)] = generated_warehouse.sql(
        "select any_value(attribution_method), any_value(attribution_confidence), "
        "sum(billed_cost) from marts.fct_cost_allocation "
        f"where workload_id = '{workload['owner']}' having count(distinct attribution_method) = 1"
    )
    [(gpu_hours, used)] = generated_warehouse.sql(
        "select sum(gpu_hours), sum(used_gpu_hours) from marts.fct_gpu_usage "
        f"where workload_id = '{workload['owner']}'"
    )
    assert (got["team_id"], got["project_id"], got["user_id"]) == (team, project, user)
    assert got["attribution_method"] == method and got["attribution_confidence"] == confidence
    assert (workload["attribution_method"], workload["attribution_confidence"]) == (
        method,
        confidence,
    )
    assert got["exact_cost"] == workload["exact_cost"] == exact_cost
    assert (got["gpu_hours"], got["used_gpu_hours"]) == (gpu_hours, used) and gpu_hours > 0
    assert abs(workload["billed_cost"] - exact_cost) < Decimal("0.10")
    assert detail.workload_detail(con, month, "no/such/workload") is None
    with pytest.raises(ValueError, match="at most 3 levels"):
        detail.drill_down(con, month, ("a", "b", "c", "d"))


def test_apportion_keeps_the_parent_total_in_cents():
    # floors 1.00 + 2.00 - 0.34 = 2.66; the 2 missing cents go to the largest dropped fractions:
    # -0.333 (0.7 of a cent above its floor), then 1.005 (0.5)
    exact = {"a": Decimal("1.005"), "b": Decimal("2.004"), "c": Decimal("-0.333")}
    assert data.apportion(exact, Decimal("2.68")) == {
        "a": Decimal("1.01"),
        "b": Decimal("2.00"),
        "c": Decimal("-0.33"),
    }
    assert sum(data.apportion(exact, Decimal("2.70")).values()) == Decimal("2.70")
    assert data.cents(Decimal("-0.005")) == Decimal("-0.01")  # half away from zero


def test_reasons_and_methods_in_words():
    assert labels.reason_label("gpu_usage_of_workload_missing_project_label") == (
        "GPU time of a workload without a project label"
    )
    assert labels.reason_label("unknown_project_tag: rag-serch") == (
        "Bill line tagged with a project that does not exist (rag-serch)"
    )
    assert labels.reason_label("cpu_idle_share_of_suspense_workload_unknown_project_label") == (
        "Idle CPU share of a workload whose project label names no known project, parked in "
        "suspense (the model was not sure enough)"
    )
    # an unknown reason is shown as it is, never behind a wrong word
    assert labels.reason_label("brand_new_reason: x") == "brand_new_reason: x"
    assert labels.reason_label(None) == labels.NO_REASON
    assert set(METHOD_LABELS) >= {"bill_tag", "pod_label", "rule", "model", "none"}


def test_budgets_shown_when_published_and_noted_when_not(generated_warehouse, published, tmp_path):
    has_budgets = (published / "rpt_budget_status.parquet").is_file()
    with data.load(published) as connection:
        rows = data.budget_status(connection, data.Filters())
    if has_budgets:
        expected = generated_warehouse.sql(
            "select count(*), sum(month_to_date_cost) from marts.rpt_budget_status"
        )
        assert [
            (len(rows), sum((row["month_to_date_cost"] for row in rows), Decimal(0)))
        ] == expected
    without = tmp_path / "without_budgets"
    shutil.copytree(published, without)
    (without / "rpt_budget_status.parquet").unlink(missing_ok=True)
    with data.load(without) as connection:
        assert data.budget_status(connection, data.Filters()) is None


def test_missing_parquet_is_a_clear_error(published, tmp_path):
    partial = tmp_path / "partial"
    shutil.copytree(published, partial)
    (partial / "rpt_reconciliation.parquet").unlink()
    with pytest.raises(
        data.DashboardDataError, match=r"rpt_reconciliation\.parquet.*gpucost publish"
    ):
        data.load(partial)


# --- the unit cost of inference -----------------------------------------------------------------

INFERENCE_KEY = ("cluster_id", "namespace", "deployment_name", "model_name", "engine", "team_id")


def _per(cost: Decimal, count: int, per: int) -> Decimal | None:
    """cost x per / count, truncated toward zero at 1e-18, in Decimal arithmetic (80 digits)."""
    if not count:
        return None
    with localcontext() as context:
        context.prec = 80
        return (Decimal(cost) * per / count).quantize(Decimal("1e-18"), rounding=ROUND_DOWN)


def _inference_from_marts(warehouse, month: date, team: str | None = None) -> dict:
    """The panel's rows computed here from marts.fct_inference_unit_cost: key -> exact cost,
    tokens in, tokens out, requests, per 1M tokens, per 1k requests."""
    where = f"date_trunc('month', usage_date) = '{month}'"
    if team is not None:
        where += f" and team_id = '{team}'"
    rows = warehouse.sql(
        f"select billing_currency, {', '.join(INFERENCE_KEY)}, sum(effective_cost), "
        "sum(prompt_tokens), sum(generation_tokens), sum(request_count) "
        f"from marts.fct_inference_unit_cost where {where} group by all"
    )
    out = {}
    for currency, *key, cost, tokens_in, tokens_out, requests in rows:
        out[(currency, *key)] = {
            "effective_cost": cost,
            "prompt_tokens": tokens_in,
            "generation_tokens": tokens_out,
            "request_count": requests,
            "cost_per_million_tokens": _per(cost, tokens_in + tokens_out, 1_000_000),
            "cost_per_thousand_requests": _per(cost, requests, 1_000),
        }
    return out


def test_unit_cost_is_the_marts_ratio_rule(generated_warehouse):
    """detail.unit_cost gives every day of the mart the mart's own two ratios, to 1e-18."""
    rows = generated_warehouse.sql(
        "select effective_cost, total_tokens, request_count, cost_per_million_tokens, "
        "cost_per_thousand_requests from marts.fct_inference_unit_cost"
    )
    assert rows and any(per_tokens is not None for *_, per_tokens, _ in rows)
    for cost, tokens, requests, per_tokens, per_requests in rows:
        assert detail.unit_cost(cost, tokens, 1_000_000) == per_tokens
        assert detail.unit_cost(cost, requests, 1_000) == per_requests
        assert per_tokens == _per(cost, tokens, 1_000_000)
    assert detail.unit_cost(Decimal("-1"), 3, 1) == Decimal("-0.333333333333333333")
    assert detail.unit_cost(Decimal("5"), 0, 1000) is None


@pytest.mark.parametrize("by_team", [False, True])
def test_inference_panel_equals_the_mart(generated_warehouse, con, month, by_team):
    team = None
    if by_team:
        [(team,)] = generated_warehouse.sql(
            "select team_id from marts.fct_inference_unit_cost where billing_currency is not null "
            "group by 1 order by sum(effective_cost) desc limit 1"
        )
    rows = detail.inference_unit_cost(con, data.Filters(month=month, team=team))
    expected = _inference_from_marts(generated_warehouse, month, team)
    assert rows and len(rows) == len(expected)
    assert not by_team or {row["team_id"] for row in rows} == {team}
    for row in rows:
        key = (row["billing_currency"], *(row[column] for column in INFERENCE_KEY))
        assert {name: row[name] for name in expected[key]} == expected[key], key
        assert abs(row["cost_cents"] - row["effective_cost"]) < Decimal("0.01")
    # per currency: the exact cost is the mart's, the cents add up to its cent total
    totals = detail.inference_totals(rows)
    by_currency = generated_warehouse.sql(
        "select billing_currency, coalesce(sum(effective_cost), 0), sum(total_tokens), "
        "sum(request_count) from marts.fct_inference_unit_cost "
        f"where date_trunc('month', usage_date) = '{month}'"
        + (f" and team_id = '{team}'" if team else "")
        + " group by 1"
    )
    assert {
        total["billing_currency"]: (
            total["effective_cost"],
            total["total_tokens"],
            total["request_count"],
        )
        for total in totals
    } == {currency: (cost, tokens, requests) for currency, cost, tokens, requests in by_currency}
    for total in totals:
        assert total["cost_cents"] == _cents(total["effective_cost"])
        assert total["cost_cents"] == sum(
            (
                row["cost_cents"]
                for row in rows
                if row["billing_currency"] == total["billing_currency"]
            ),
            Decimal(0),
        )
        assert total["cost_per_million_tokens"] == _per(
            total["effective_cost"], total["total_tokens"], 1_000_000
        )
    assert any(total["billing_currency"] and total["effective_cost"] > 0 for total in totals)


def test_inference_panel_noted_when_the_mart_is_not_published(published, tmp_path):
    without = tmp_path / "without_inference"
    shutil.copytree(published, without)
    (without / "fct_inference_unit_cost.parquet").unlink()
    with data.load(without) as connection:
        assert detail.inference_unit_cost(connection, data.Filters()) is None


# --- the page's filters, in process (streamlit.testing) ----------------------------------------


def _app(monkeypatch, parquet_dir: Path):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("GPUCOST_PARQUET_DIR", str(parquet_dir))
    return AppTest.from_file(str(PROJECT_DIR / "dashboard" / "app.py"), default_timeout=60)


def test_page_filters_by_cluster_and_team(generated_warehouse, published, monkeypatch):
    app = _app(monkeypatch, published).run()
    assert not app.exception
    [(cluster, team, expected)] = generated_warehouse.sql(
        "select cluster_id, team_id, round(sum(billed_cost), 2) from marts.fct_cost_allocation "
        "where cluster_id is not null and team_id not like '\\_\\_%' escape '\\' "
        "group by 1, 2 order by 3 desc limit 1"
    )
    month, cluster_box, team_box = app.sidebar.selectbox
    assert [month.label, cluster_box.label, team_box.label] == ["Month", "Cluster", "Team"]
    cluster_box.select(cluster)
    team_box.select(team)
    app.radio[0].set_value("user")
    app.run()
    assert not app.exception
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Total cost"] == f"{expected:,.2f} USD"
    assert metrics[f"Largest team ({team})"] == f"{expected:,.2f} USD"
    bill = generated_warehouse.sql(
        "select round(sum(billed_cost), 2) from marts.rpt_reconciliation"
    )
    assert metrics["Billed"] == f"{bill[0][0]:,.2f} USD"  # the bill ignores cluster and team


def test_page_without_published_marts_says_how_to_publish(tmp_path, monkeypatch):
    app = _app(monkeypatch, tmp_path / "empty").run()
    assert not app.exception
    assert "gpucost publish" in app.error[0].value
    assert str(tmp_path) not in app.error[0].value  # no machine path on the page


def test_page_turns_red_when_a_month_does_not_reconcile(generated_warehouse, tmp_path, monkeypatch):
    tampered = generated_warehouse.copy("dashboard_unreconciled")
    with duckdb.connect(str(tampered)) as connection:
        connection.execute(
            "update marts.rpt_reconciliation set is_reconciled = false, "
            "billed_residual = billed_residual + 0.000000000000000001"
        )
    out_dir = tmp_path / "parquet"
    publish_marts(tampered, out_dir, log=None)
    app = _app(monkeypatch, out_dir).run()
    assert not app.exception
    assert "NOT RECONCILED" in app.error[0].value
    assert not [alert for alert in app.success if "RECONCILED to the cent" in alert.value]
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Residual"] == "0.000000000000000001 USD"  # not rounded away to 0.00


# --- the page in a browser --------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_page_script(
    node: str, script: list[str], url: str, server: subprocess.Popen, log: Path
) -> dict:
    """Run a tests/browser script against the served dashboard once it is healthy, stop the server
    (its process group) whatever happens, and return the JSON the script printed last."""
    try:
        _wait_until_healthy(url, server, log)
        result = subprocess.run(
            [node, *script],
            cwd=BROWSER_DIR,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    assert result.returncode == 0, f"{result.stderr[-4000:]}\n{log.read_text()[-2000:]}"
    return json.loads(result.stdout.strip().splitlines()[-1])


def _wait_until_healthy(url: str, server: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"streamlit exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"streamlit did not answer on {url} within {timeout}s:\n{log.read_text()[-3000:]}")


def _metric(metrics: list[dict], label: str) -> tuple[str, Decimal, str]:
    """(label, amount, currency) of the first metric whose label starts with ``label``."""
    for metric in metrics:
        if metric["label"].startswith(label):
            amount, currency = metric["value"].rsplit(" ", 1)
            return metric["label"], Decimal(amount.replace(",", "")), currency
    raise AssertionError(f"no metric {label!r} on the page: {metrics}")


def _metric_text(metrics: list[dict], label: str) -> dict:
    """The metric (label, value, delta as the page shows them) whose label is ``label``."""
    for metric in metrics:
        if metric["label"] == label:
            return metric
    raise AssertionError(f"no metric {label!r} on the page: {metrics}")


def _drill_path(warehouse, month: date) -> dict:
    """The largest team of the statement, its largest project, that project's largest labelled
    user by exact allocation and the user's costliest workload with GPU time, from the marts."""
    [(team, team_cost)] = warehouse.sql(
        "select team_id, sum(billed_cost) from marts.fct_chargeback_monthly "
        f"where billing_period_start = '{month}' and team_id not like '\\_\\_%' escape '\\' "
        "group by 1 order by 2 desc, 1 limit 1"
    )
    [(project, project_cost)] = warehouse.sql(
        "select project_id, sum(billed_cost) from marts.fct_chargeback_monthly "
        f"where billing_period_start = '{month}' and team_id = '{team}' "
        "and project_id not like '\\_\\_%' escape '\\' group by 1 order by 2 desc, 1 limit 1"
    )
    [(user,)] = warehouse.sql(
        "select user_id from marts.fct_cost_allocation "
        f"where billing_period_start = '{month}' and team_id = '{team}' "
        f"and project_id = '{project}' and user_id is not null "
        "group by 1 order by sum(billed_cost) desc, 1 limit 1"
    )
    [(workload, method, confidence, exact, gpu_hours)] = warehouse.sql(
        "select allocation.workload_id, any_value(allocation.attribution_method), "
        "any_value(allocation.attribution_confidence), sum(allocation.billed_cost), "
        "any_value(usage.gpu_hours) from marts.fct_cost_allocation as allocation "
        "inner join (select workload_id, sum(gpu_hours) as gpu_hours from marts.fct_gpu_usage "
        f"where billing_period_start = '{month}' group by 1) as usage "
        "on allocation.workload_id = usage.workload_id "
        f"where allocation.billing_period_start = '{month}' and allocation.team_id = '{team}' "
        f"and allocation.project_id = '{project}' and allocation.user_id = '{user}' "
        "group by 1 having count(distinct allocation.attribution_method) = 1 "
        "order by 4 desc, 1 limit 1"
    )
    # the workload's cents as the page shows them: the project's statement cents apportioned over
    # its users' exact amounts, then the user's cents over the user's workloads (largest remainder)
    scope = (
        f"from marts.fct_cost_allocation where billing_period_start = '{month}' "
        f"and team_id = '{team}' and project_id = '{project}'"
    )
    users = dict(
        warehouse.sql(
            f"select coalesce(user_id, '{data.NO_USER}'), sum(billed_cost) {scope} group by 1"
        )
    )
    workloads = dict(
        warehouse.sql(
            f"select coalesce(workload_id, '{detail.NO_WORKLOAD}'), sum(billed_cost) {scope} "
            f"and user_id = '{user}' group by 1"
        )
    )
    cents = data.apportion(workloads, data.apportion(users, project_cost)[user])[workload]
    return {
        "path": [team, project, user, workload],
        "cents": cents,
        "team_cost": team_cost,
        "project_cost": project_cost,
        "method": method,
        "confidence": confidence,
        "exact": exact,
        "gpu_hours": gpu_hours,
    }


def test_page_drills_down_to_a_workload(generated_warehouse, published, month, monkeypatch):
    expected = _drill_path(generated_warehouse, month)
    app = _app(monkeypatch, published).run()
    for label, owner in zip(
        ("Drill-down team", "Drill-down project", "Drill-down user", "Drill-down workload"),
        expected["path"],
        strict=True,
    ):
        [box] = [box for box in app.selectbox if box.label == label]
        assert owner in box.options or any(
            option.startswith(f"{owner}: ") for option in box.options
        )
        box.select(owner)
        app.run()
        assert not app.exception
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Workload GPU-hours"] == f"{expected['gpu_hours']:,.2f}"
    assert metrics["Workload method"] == METHOD_LABELS[expected["method"]]
    assert metrics["Workload confidence"] == f"{expected['confidence']:.2f}"
    cost = Decimal(metrics["Workload cost"].removesuffix(" USD").replace(",", ""))
    assert cost == expected["cents"] and abs(cost - expected["exact"]) < Decimal("0.10")


def test_dashboard_in_headless_chromium_shows_the_marts_to_the_cent(
    generated_warehouse, published, month, tmp_path
):
    missing = []
    if not CHROMIUM.exists():
        missing.append(str(CHROMIUM))
    if not (BROWSER_DIR / "node_modules" / "playwright-core").is_dir():
        missing.append(str(BROWSER_DIR / "node_modules" / "playwright-core"))
    node = shutil.which("node")
    if node is None:
        missing.append("node")
    if missing:
        pytest.fail(f"browser test prerequisites missing: {', '.join(missing)}; {INSTALL_HINT}")

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "streamlit.log"
    screenshot = tmp_path / "target" / "screenshots" / "dashboard.png"
    env = os.environ | {"GPUCOST_PARQUET_DIR": str(published)}
    command = [sys.executable, "-m", "streamlit", "run", "dashboard/app.py"]
    command += ["--server.headless", "true", "--server.port", str(port)]
    command += ["--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    command += ["--server.fileWatcherType", "none"]
    with log.open("w") as log_file:
        server = subprocess.Popen(
            command,
            cwd=PROJECT_DIR,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    drill = _drill_path(generated_warehouse, month)
    script = ["dashboard.mjs", "--url", url, "--screenshot", str(screenshot)]
    page = run_page_script(node, [*script, "--drill", json.dumps(drill["path"])], url, server, log)

    assert page["exceptions"] == [] and page["page_errors"] == []
    assert page["charts"] >= 6 and page["tables"] >= 8
    # no machine path and no debug text on the page
    assert str(published) not in page["text"] and str(PROJECT_DIR) not in page["text"]
    assert "rendered" not in page["text"].lower() and ".parquet" not in page["text"]
    assert screenshot.is_file() and screenshot.stat().st_size > 50_000

    [(billed, allocated, quarantined, residual)] = generated_warehouse.sql(
        "select round(sum(billed_cost), 2), round(sum(allocated_billed_cost), 2), "
        "round(sum(quarantined_billed_cost), 2), round(sum(billed_residual), 2) "
        f"from marts.rpt_reconciliation where billing_period_start = '{month}'"
    )
    [(team, team_cost)] = generated_warehouse.sql(
        "select team_id, sum(billed_cost) from marts.fct_chargeback_monthly "
        f"where billing_period_start = '{month}' and team_id not like '\\_\\_%' escape '\\' "
        "group by 1 order by 2 desc limit 1"
    )
    metrics = page["metrics"]
    assert _metric(metrics, "Billed")[1:] == (billed, "USD")
    assert _metric(metrics, "Allocated")[1:] == (allocated, "USD")
    assert _metric(metrics, "Quarantined")[1:] == (quarantined, "USD")
    assert _metric(metrics, "Residual")[1:] == (residual, "USD") == (Decimal("0.00"), "USD")
    assert _metric(metrics, "Total cost")[1:] == (allocated, "USD")
    assert _metric(metrics, "Largest team") == (f"Largest team ({team})", team_cost, "USD")
    assert billed > 1000 and team_cost > 100

    [(gpu_billed, gpu_wasted)] = generated_warehouse.sql(
        "select round(sum(billed_cost), 2), round(sum(wasted_cost), 2) "
        f"from marts.fct_gpu_usage where billing_period_start = '{month}'"
    )
    assert _metric(metrics, "GPU cost")[1] == gpu_billed
    assert _metric(metrics, "Wasted")[1] == gpu_wasted

    alerts = "\n".join(page["alerts"])
    assert f"{month:%Y-%m} USD: RECONCILED to the cent" in alerts
    for header in (
        f"The month: {month:%Y-%m}",
        "Reconciliation",
        "Daily cost by owner",
        "Monthly charges",
        "Drill-down",
        "Budget burn",
        "Unallocated money",
        "Unit cost of inference",
    ):
        assert any(h.startswith(header) for h in page["headers"]), header

    # the headline, computed here from the marts
    headline = _headline_from_marts(generated_warehouse, month)
    money = data.fmt_money
    assert _metric_text(metrics, "Month total")["value"] == money(headline["total_cost"], "USD")
    assert _metric_text(metrics, "Change vs previous month")["value"] == "no previous month"
    for label, amount, base in (
        ("Idle", headline["idle_cost"], headline["total_cost"]),
        ("Unallocated", headline["unallocated_cost"], headline["total_cost"]),
        ("Model-placed", headline["model_placed_cost"], headline["allocated_cost"]),
    ):
        share = (amount * 100 / base).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
        assert _metric_text(metrics, label) == {
            "label": label,
            "value": f"{share}%",
            "delta": f"{money(amount)} USD",
        }
    budgets = _metric_text(metrics, "Budgets at risk")
    assert budgets["value"] == f"{headline['budgets_at_risk']} of {headline['budget_count']}"

    # the drill-down: team and project options in the statement's cents, then the workload
    drill_team, drill_project = drill["path"][:2]
    options = page["drill"]["options"]
    assert f"{drill_team}: {money(drill['team_cost'], 'USD')}" in options[0]
    assert f"{drill_project}: {money(drill['project_cost'], 'USD')}" in options[1]
    shown = {metric["label"]: metric["value"] for metric in page["drill"]["metrics"]}
    assert shown["Workload GPU-hours"] == f"{drill['gpu_hours']:,.2f}"
    assert shown["Workload method"] == METHOD_LABELS[drill["method"]]
    assert shown["Workload confidence"] == f"{drill['confidence']:.2f}"
    cost = Decimal(shown["Workload cost"].removesuffix(" USD").replace(",", ""))
    assert cost == drill["cents"] and abs(cost - drill["exact"]) < Decimal("0.10")

    # the unit cost of inference: every row of the panel and its totals, from the mart
    _assert_inference_panel(generated_warehouse, month, page)


def _assert_inference_panel(warehouse, month: date, page: dict) -> None:
    """The panel's table (every cell as the page shows it) and its per-currency metrics equal
    marts.fct_inference_unit_cost's month, computed here; the cents by largest remainder."""
    from gpucost.commands.labels import owner_label
    from gpucost.core.money import round_to_cents, to_units

    expected = _inference_from_marts(warehouse, month)
    header, *cells = page["inference"]
    # every column in view: the data grid's accessible table holds only those
    figures = ["cost", "tokens in / out", "requests", "per 1M tokens", "per 1k requests"]
    assert ["deployment", "model", "team", *figures] == header
    shown = [dict(zip(header, row, strict=True)) for row in cells]
    assert len(shown) == len(expected) > 0

    def money(value, currency):
        return "n/a" if value is None else data.fmt_money(value, currency)

    wanted = []
    for currency in {key[0] for key in expected}:
        keys = [key for key in expected if key[0] == currency]
        cents = round_to_cents({key: to_units(expected[key]["effective_cost"]) for key in keys})
        for key in keys:
            _, cluster, namespace, deployment, model, _, team = key
            row = expected[key]
            item = {
                "deployment": f"{cluster}/{namespace}/{deployment}",
                "model": model or "n/a",
                "team": owner_label(team),
                "cost": data.fmt_money(Decimal(cents[key]) / 100, currency),
                "tokens in / out": f"{row['prompt_tokens']:,} / {row['generation_tokens']:,}",
                "requests": f"{row['request_count']:,}",
                "per 1M tokens": money(row["cost_per_million_tokens"], currency),
                "per 1k requests": money(row["cost_per_thousand_requests"], currency),
            }
            wanted.append(item)
    assert sorted(shown, key=str) == sorted(wanted, key=str)

    metrics = page["metrics"]
    for currency, cost, tokens_in, tokens_out, requests in warehouse.sql(
        "select billing_currency, sum(effective_cost), sum(prompt_tokens), "
        "sum(generation_tokens), sum(request_count) from marts.fct_inference_unit_cost "
        f"where date_trunc('month', usage_date) = '{month}' and billing_currency is not null "
        "group by 1"
    ):
        assert _metric(metrics, "Inference cost")[1:] == (_cents(cost), currency)
        assert _metric_text(metrics, "Tokens in")["value"] == f"{tokens_in:,}"
        assert _metric_text(metrics, "Tokens out")["value"] == f"{tokens_out:,}"
        assert _metric_text(metrics, "Requests")["value"] == f"{requests:,}"
        per_tokens = _per(cost, tokens_in + tokens_out, 1_000_000)
        assert _metric(metrics, "Per 1M tokens")[1:] == (_cents(per_tokens), currency)
        per_requests = _per(cost, requests, 1_000)
        assert _metric(metrics, "Per 1k requests")[1:] == (_cents(per_requests), currency)
