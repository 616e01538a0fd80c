"""The dashboard's headline row and its drill-down from team to workload, as plain rows.

Split from :mod:`gpucost.commands.dashboard_data` (same snapshot, same :class:`Filters`, money as
exact ``Decimal``). Every team and project figure here is the statement's cents
(``fct_chargeback_monthly``), so the headline, the drill-down and the statement table show one
figure per team. Below a project (users, then workloads) the exact allocation
(``fct_cost_allocation``) is apportioned to the project's cents by largest remainder
(:func:`gpucost.commands.dashboard_data.apportion`, through
:func:`gpucost.core.money.round_to_cents`): each level adds up exactly to the level above it.
Also the periodic charges, the attribution review queue and the unit cost of inference
(``fct_inference_unit_cost`` per deployment, model and team: :func:`inference_unit_cost`).
"""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from itertools import groupby

import duckdb

from gpucost.commands.dashboard_data import (
    DIMENSIONS,
    NO_USER,
    PERIODIC,
    Filters,
    _rows,
    _where,
    apportion,
    has_table,
)
from gpucost.commands.labels import reason_label
from gpucost.commands.statements_labels import INFERRED_METHODS
from gpucost.core.money import from_units, round_to_cents, to_units

MODEL_PLACED_METHODS = INFERRED_METHODS
"""Attribution methods whose owner was inferred (the learned model, the org mapping's names, a
declarative rule) rather than declared (a bill tag, a pod label, a Slurm account, a human
override): the statements' inferred methods."""
AT_RISK = "status <> 'ok'"
"""A budget at risk: any status but ok (warning, critical, or forecast to cross either)."""
NO_WORKLOAD = "(no workload: tagged lines, overheads)"
LEVELS = ("team", "project", "user", "workload")


def headline_month(con: duckdb.DuckDBPyConnection, filters: Filters) -> date | None:
    """The month the headline and the drill-down show: the selected one, else the latest."""
    if filters.month is not None:
        return filters.month
    rows = con.execute("select max(billing_period_start) from fct_chargeback_monthly").fetchall()
    return rows[0][0]


def headline(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[dict]:
    """Per currency, for the headline month (and the selected team; the statement and the budgets
    are not split by cluster, so the cluster filter does not apply):

    - ``total_cost``: the statement's cents; ``previous_month`` / ``previous_cost``: the latest
      earlier month with a statement in that currency (None when there is none), ``change``;
    - ``idle_cost`` / ``unallocated_cost``: the statement's idle and unallocated cents;
    - ``model_placed_cost`` over ``allocated_cost``: the exact cost whose owner the model or a rule
      decided (MODEL_PLACED_METHODS), over the exact cost of the same rows' month;
    - ``budget_count`` / ``budgets_at_risk`` / ``at_risk``: budgets of the month, those whose
      status is not ok (None when ``rpt_budget_status`` was not published).
    """
    month = headline_month(con, filters)
    if month is None:
        return []
    scoped = Filters(month=month, team=filters.team)
    where, params = _where(scoped, cluster=None)
    figures = {
        row["billing_currency"]: row
        for row in _rows(
            con,
            f"""
            select
                billing_period_start as month,
                billing_currency,
                sum(billed_cost) as total_cost,
                sum(idle_cost) as idle_cost,
                sum(unallocated_cost) as unallocated_cost,
            from fct_chargeback_monthly
            {where}
            group by all
            order by billing_currency
            """,
            params,
        )
    }
    for row in _rows(
        con,
        f"""
        select
            billing_currency,
            sum(billed_cost) as allocated_cost,
            coalesce(sum(billed_cost) filter (
                where attribution_method in ({", ".join("?" for _ in MODEL_PLACED_METHODS)})
            ), 0) as model_placed_cost,
        from fct_cost_allocation
        {where}
        group by all
        """,
        [*MODEL_PLACED_METHODS, *params],
    ):
        if row["billing_currency"] in figures:
            figures[row["billing_currency"]].update(row)
    team_clause = "and team_id = ?" if filters.team is not None else ""
    team_params = [filters.team] if filters.team is not None else []
    for currency, row in figures.items():
        row.setdefault("allocated_cost", Decimal(0))
        row.setdefault("model_placed_cost", Decimal(0))
        [(previous,)] = con.execute(
            "select max(billing_period_start) from fct_chargeback_monthly "
            "where billing_currency = ? and billing_period_start < ?",
            [currency, month],
        ).fetchall()
        row["previous_month"] = previous
        row["previous_cost"] = row["change"] = None
        if previous is not None:
            [(cost,)] = con.execute(
                "select coalesce(sum(billed_cost), 0) from fct_chargeback_monthly "
                f"where billing_currency = ? and billing_period_start = ? {team_clause}",
                [currency, previous, *team_params],
            ).fetchall()
            row["previous_cost"] = cost
            row["change"] = row["total_cost"] - cost
        row.update(_budget_risk(con, month, currency, filters.team))
    return [figures[currency] for currency in sorted(figures)]


def _budget_risk(
    con: duckdb.DuckDBPyConnection, month: date, currency: str, team: str | None
) -> dict:
    if not has_table(con, "rpt_budget_status"):
        return {"budget_count": None, "budgets_at_risk": None, "at_risk": []}
    where, params = _where(Filters(month=month, team=team), cluster=None)
    rows = _rows(
        con,
        f"""
        select
            team_id,
            project_id,
            status,
            {AT_RISK} as is_at_risk,
        from rpt_budget_status
        {where} and billing_currency = ?
        order by team_id, project_id nulls first
        """,
        [*params, currency],
    )
    at_risk = [row for row in rows if row["is_at_risk"]]
    return {
        "budget_count": len(rows),
        "budgets_at_risk": len(at_risk),
        "at_risk": [
            {
                "budget": row["team_id"] + (f"/{row['project_id']}" if row["project_id"] else ""),
                "status": row["status"],
            }
            for row in at_risk
        ],
    }


# --- drill-down: team -> project -> user -> workload ------------------------------------------


def drill_down(
    con: duckdb.DuckDBPyConnection, month: date, path: tuple[str, ...] = ()
) -> list[dict]:
    """The owners one level below ``path`` (``()``: teams; ``(team,)``: its projects; ``(team,
    project)``: its users; ``(team, project, user)``: its workloads) in ``month``, largest first,
    each with ``owner``, ``billing_currency``, ``billed_cost`` (cents: the statement's for teams
    and projects, apportioned below) and ``exact_cost`` (the exact allocation); workloads also
    with their ``attribution_method`` and ``attribution_confidence``.

    Rows of one level add up exactly to their parent's cents. Users without a label are
    ``NO_USER``; allocation rows without a workload (tagged bill lines, spread overheads) are
    ``NO_WORKLOAD``."""
    if len(path) > 3:
        raise ValueError(f"a drill-down path has at most 3 levels: {path!r}")
    if len(path) < 2:
        return _statement_level(con, month, path)
    team, project, *rest = path
    column = "user_id" if not rest else "workload_id"
    label = NO_USER if not rest else NO_WORKLOAD
    clauses = ["billing_period_start = ?", "team_id = ?", "project_id = ?"]
    params: list = [month, team, project]
    if rest:
        clauses.append("coalesce(user_id, ?) = ?")
        params += [NO_USER, rest[0]]
    exact = _rows(
        con,
        f"""
        select
            coalesce({column}, ?) as owner,
            billing_currency,
            sum(billed_cost) as exact_cost,
            -- a workload has one owner, so one method and confidence (the costliest row's)
            arg_max(attribution_method, abs(billed_cost)) as attribution_method,
            arg_max(attribution_confidence, abs(billed_cost)) as attribution_confidence,
        from fct_cost_allocation
        where {" and ".join(clauses)}
        group by all
        """,
        [label, *params],
    )
    facts = {(row["owner"], row["billing_currency"]): row for row in exact}
    parent_cents = {
        row["billing_currency"]: row["billed_cost"]
        for row in drill_down(con, month, tuple(path[:-1]))
        if row["owner"] == path[-1]
    }
    rows = []
    for currency, target in parent_cents.items():
        amounts = {
            row["owner"]: row["exact_cost"] for row in exact if row["billing_currency"] == currency
        }
        if not amounts:
            continue
        for owner, cents in apportion(amounts, target).items():
            row = {
                "owner": owner,
                "billing_currency": currency,
                "billed_cost": cents,
                "exact_cost": amounts[owner],
            }
            if rest and owner != NO_WORKLOAD:
                fact = facts[(owner, currency)]
                row["attribution_method"] = fact["attribution_method"]
                row["attribution_confidence"] = fact["attribution_confidence"]
            rows.append(row)
    return sorted(
        rows, key=lambda row: (row["billing_currency"], -row["billed_cost"], row["owner"])
    )


def _statement_level(
    con: duckdb.DuckDBPyConnection, month: date, path: tuple[str, ...]
) -> list[dict]:
    column = "team_id" if not path else "project_id"
    where = "billing_period_start = ?" + (" and team_id = ?" if path else "")
    statement = _rows(
        con,
        f"""
        select
            {column} as owner,
            billing_currency,
            sum(billed_cost) as billed_cost,
        from fct_chargeback_monthly
        where {where}
        group by all
        """,
        [month, *path],
    )
    exact = {
        (row["owner"], row["billing_currency"]): row["exact_cost"]
        for row in _rows(
            con,
            f"""
            select {column} as owner, billing_currency, sum(billed_cost) as exact_cost,
            from fct_cost_allocation
            where {where}
            group by all
            """,
            [month, *path],
        )
    }
    for row in statement:
        row["exact_cost"] = exact.get((row["owner"], row["billing_currency"]), Decimal(0))
    return sorted(
        statement, key=lambda row: (row["billing_currency"], -row["billed_cost"], row["owner"])
    )


def workload_detail(con: duckdb.DuckDBPyConnection, month: date, workload_id: str) -> dict | None:
    """One workload in ``month``: its owner, method and confidence (from its allocation rows: one
    owner per workload), exact cost by allocation kind, and its GPU time from ``fct_gpu_usage``
    (GPU-hours on the allocation basis, requested and used GPU-hours, GPU models, cluster)."""
    rows = _rows(
        con,
        """
        select
            workload_id,
            any_value(team_id) as team_id,
            any_value(project_id) as project_id,
            any_value(user_id) as user_id,
            any_value(cluster_id) as cluster_id,
            arg_max(attribution_method, abs(billed_cost)) as attribution_method,
            arg_max(attribution_rule_id, abs(billed_cost)) as attribution_rule_id,
            arg_max(attribution_confidence, abs(billed_cost)) as attribution_confidence,
            any_value(billing_currency) as billing_currency,
            sum(billed_cost) as exact_cost,
            coalesce(sum(billed_cost) filter (where allocation_kind = 'usage'), 0) as usage_cost,
            coalesce(sum(billed_cost) filter (where allocation_kind = 'idle'), 0) as idle_cost,
            coalesce(sum(billed_cost) filter (where allocation_kind = 'unallocated'), 0)
                as unallocated_cost,
            count(distinct team_id || '|' || project_id) as owner_count,
        from fct_cost_allocation
        where billing_period_start = ? and workload_id = ?
        group by workload_id
        """,
        [month, workload_id],
    )
    if not rows:
        return None
    [detail] = rows
    [gpu] = _rows(
        con,
        """
        select
            coalesce(sum(gpu_hours), 0) as gpu_hours,
            coalesce(sum(requested_gpu_hours), 0) as requested_gpu_hours,
            coalesce(sum(used_gpu_hours), 0) as used_gpu_hours,
            coalesce(sum(billed_cost), 0) as gpu_cost,
            string_agg(distinct gpu_model, ', ' order by gpu_model) as gpu_models,
        from fct_gpu_usage
        where billing_period_start = ? and workload_id = ?
        """,
        [month, workload_id],
    )
    detail.update(gpu)
    return detail


# --- charges billed once per period -----------------------------------------------------------


def periodic_charges(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[dict]:
    """The charges billed once for a period longer than a day (``dashboard_data.PERIODIC``:
    support, tax, credits, commitments...), grouped by what they bought: billing month, cost
    component, charge category, service and charge period, with their exact cost in the selection
    and how many bill lines they are. Together with ``cost_over_time`` (the daily charges) they
    are the whole allocation of the selection."""
    where, params = _where(filters, extra=[PERIODIC])
    return _rows(
        con,
        f"""
        select
            billing_period_start,
            cost_component,
            charge_category,
            service_name,
            cast(charge_period_start_at as date) as charge_period_start,
            cast(charge_period_end_at as date) as charge_period_end,
            billing_currency,
            sum(billed_cost) as billed_cost,
            count(distinct charge_id) as line_count,
        from fct_cost_allocation
        {where}
        group by all
        order by billing_period_start desc, billing_currency, billed_cost desc, cost_component
        """,
        params,
    )


def periodic_by_owner(
    con: duckdb.DuckDBPyConnection, filters: Filters, dimension: str = "team"
) -> list[dict]:
    """The periodic charges of the selection per owner (team / project / user) and cost
    component, exact: who they were spread to (the shared policy) or charged to (a tag)."""
    column = DIMENSIONS[dimension]
    where, params = _where(filters, extra=[PERIODIC])
    return _rows(
        con,
        f"""
        select
            coalesce({column}, ?) as owner,
            cost_component,
            billing_currency,
            sum(billed_cost) as billed_cost,
        from fct_cost_allocation
        {where}
        group by all
        order by billing_currency, billed_cost desc, owner, cost_component
        """,
        [NO_USER, *params],
    )


# --- the attribution review queue -------------------------------------------------------------


def review_queue(
    con: duckdb.DuckDBPyConnection, filters: Filters, limit: int = 10
) -> list[dict] | None:
    """The first ``limit`` workloads of the attribution review queue (``rpt_attribution_review``:
    unallocated because no owner was declared and the model was not sure enough), by rank, with
    the reason in words and the model's best candidate; None when that mart was not published.
    The cluster filter applies, and the team filter to the team label; the queue is not per
    month (it covers every month of the warehouse)."""
    if not has_table(con, "rpt_attribution_review"):
        return None
    where, params = _where(filters, month=None, team="label_team_id")
    rows = _rows(
        con,
        f"""
        select
            review_rank,
            workload_id,
            label_team_id,
            label_project_id,
            unattributed_reason,
            candidate_1_project_id,
            candidate_1_probability,
            billing_currency,
            billed_cost,
        from rpt_attribution_review
        {where}
        order by review_rank
        limit ?
        """,
        [*params, limit],
    )
    for row in rows:
        row["reason"] = reason_label(row["unattributed_reason"])
    return rows


REVIEW_REASONS = {
    "unplaced": "Unplaced workloads: no declared owner, the model below its threshold",
    "team_only": "Placed on a team only: the project is still to be found",
    "suspected_mislabel": "Suspected mislabels: the signals contradict the tag (reject keeps it)",
}
"""``rpt_attribution_review.review_reason`` in words, in the order the review page shows them; a
reason not listed here gets a section of its own, after these, under its code."""


_MARKDOWN_SPECIAL = re.compile(r"([!-/:-@\[-`{-~])")


def markdown_literal(text: str) -> str:
    """``text`` for Streamlit markdown, shown as it is: every ASCII punctuation character
    backslash-escaped (CommonMark), so no landed value becomes a link, an image, emphasis, a
    ``:colour[...]`` or ``:material/...:`` directive, LaTeX or HTML; line breaks become spaces."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def review_items(
    con: duckdb.DuckDBPyConnection, filters: Filters, limit: int | None = None
) -> list[dict]:
    """The review queue (``rpt_attribution_review``) by rank, the first ``limit`` items (all when
    None), each with its ``review_reason`` (``unplaced`` when the mart predates the column), the
    reason in words, and ``candidates``: up to three ``{rank, project_id, team_id, probability}``
    (team None when the project is not in the org mapping). The cluster filter applies, and the
    team filter to the team label; [] when the mart was not published."""
    if not has_table(con, "rpt_attribution_review"):
        return []
    where, params = _where(filters, month=None, team="label_team_id")
    rows = _rows(
        con,
        f"select * from rpt_attribution_review {where} order by review_rank"
        + (" limit ?" if limit is not None else ""),
        [*params, *([limit] if limit is not None else [])],
    )
    for row in rows:
        row["review_reason"] = row.get("review_reason") or "unplaced"
        row["reason"] = reason_label(row["unattributed_reason"])
        row["candidates"] = [
            {
                "rank": rank,
                "project_id": row[f"candidate_{rank}_project_id"],
                "team_id": row.get(f"candidate_{rank}_team_id"),
                "probability": row[f"candidate_{rank}_probability"],
            }
            for rank in (1, 2, 3)
            if row.get(f"candidate_{rank}_project_id")
        ]
    return rows


def review_sections(items: list[dict]) -> list[tuple[str, str, list[dict]]]:
    """The items grouped by ``review_reason``: (reason, heading, items in rank order), the known
    reasons first (REVIEW_REASONS' order), then any other reason under its code."""
    reasons = [
        reason for reason in REVIEW_REASONS if any(i["review_reason"] == reason for i in items)
    ]
    reasons += sorted({i["review_reason"] for i in items} - set(REVIEW_REASONS))
    return [
        (
            reason,
            REVIEW_REASONS.get(reason, reason),
            [item for item in items if item["review_reason"] == reason],
        )
        for reason in reasons
    ]


def team_handovers(con: duckdb.DuckDBPyConnection) -> list[dict] | None:
    """The projects the org mapping gives to their old team (``rpt_team_handovers``: their own pods
    name another team since a date), by rank, one row per project and currency; None when that mart
    was not published. Not filtered: the org mapping is one for every month and cluster."""
    if not has_table(con, "rpt_team_handovers"):
        return None
    return _rows(con, "select * from rpt_team_handovers order by handover_rank")


def org_projects(con: duckdb.DuckDBPyConnection) -> dict[str, str] | None:
    """The org mapping's projects and their teams (``dim_projects`` rows from the org mapping), or
    None when there is none to check against (not published, or no mapping landed: then, as in the
    build, any project id is accepted)."""
    if not has_table(con, "dim_projects"):
        return None
    rows = con.execute(
        "select project_id, team_id from dim_projects where project_source = 'org_mapping' "
        "order by project_id"
    ).fetchall()
    return dict(rows) or None


# --- the unit cost of inference ---------------------------------------------------------------

TOKENS_PER_RATIO = 1_000_000
REQUESTS_PER_RATIO = 1_000


def unit_cost(cost: Decimal, count: int | None, per: int) -> Decimal | None:
    """``cost`` x ``per`` / ``count`` on the exact cost's integer 1e-18 units, truncated at 1e-18
    (toward zero), as ``fct_inference_unit_cost`` computes its ``cost_per_million_tokens`` and
    ``cost_per_thousand_requests``; None when nothing was counted."""
    if not count:
        return None
    units = to_units(cost) * per
    quotient = abs(units) // count
    return from_units(quotient if units >= 0 else -quotient)


def inference_unit_cost(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[dict] | None:
    """The unit cost of inference of the selection per deployment, model, team and currency
    (``fct_inference_unit_cost``'s days added up), or None when that mart was not published.

    The month filter applies to the usage day's month, the cluster and team filters to the row's.
    ``effective_cost`` is exact; ``cost_cents`` is it in cents by largest remainder within each
    currency (:func:`gpucost.core.money.round_to_cents`), adding up to the currency's total rounded
    to the cent. A row counted with no cost has no currency and costs 0. The ratios are computed
    from the exact cost summed over the month, as the mart computes them per day
    (:func:`unit_cost`): a ratio of the month is not a sum of the days' ratios."""
    if not has_table(con, "fct_inference_unit_cost"):
        return None
    where, params = _where(filters, month="date_trunc('month', usage_date)")
    rows = _rows(
        con,
        f"""
        select
            billing_currency,
            cluster_id,
            namespace,
            deployment_name,
            model_name,
            engine,
            team_id,
            count(distinct usage_date) as day_count,
            sum(pod_count) as pod_days,
            sum(prompt_tokens) as prompt_tokens,
            sum(generation_tokens) as generation_tokens,
            sum(total_tokens) as total_tokens,
            sum(request_count) as request_count,
            sum(effective_cost) as effective_cost,
        from fct_inference_unit_cost
        {where}
        group by all
        order by billing_currency nulls last, effective_cost desc, cluster_id, namespace,
            deployment_name, model_name nulls first, team_id
        """,
        params,
    )
    for _, group in groupby(rows, key=lambda row: row["billing_currency"]):
        members = list(group)
        cents_of = round_to_cents(
            {index: to_units(row["effective_cost"] or 0) for index, row in enumerate(members)}
        )
        for index, row in enumerate(members):
            row["effective_cost"] = row["effective_cost"] or Decimal(0)
            row["cost_cents"] = (Decimal(cents_of[index]) / 100).quantize(Decimal("0.01"))
    for row in rows:
        _add_ratios(row)
    return rows


def inference_totals(rows: list[dict]) -> list[dict]:
    """Per currency (rows with no cost last, currency None): the rows of
    :func:`inference_unit_cost` added up, with the ratios of the exact total."""
    totals: dict[str | None, dict] = {}
    for row in rows:
        total = totals.setdefault(
            row["billing_currency"],
            {
                "billing_currency": row["billing_currency"],
                "row_count": 0,
                "prompt_tokens": 0,
                "generation_tokens": 0,
                "total_tokens": 0,
                "request_count": 0,
                "effective_cost": Decimal(0),
                "cost_cents": Decimal("0.00"),
            },
        )
        total["row_count"] += 1
        for key in ("prompt_tokens", "generation_tokens", "total_tokens", "request_count"):
            total[key] += row[key] or 0
        total["effective_cost"] += row["effective_cost"]
        total["cost_cents"] += row["cost_cents"]
    out = list(totals.values())
    for total in out:
        _add_ratios(total)
    return out


def _add_ratios(row: dict) -> None:
    row["cost_per_million_tokens"] = unit_cost(
        row["effective_cost"], row["total_tokens"], TOKENS_PER_RATIO
    )
    row["cost_per_thousand_requests"] = unit_cost(
        row["effective_cost"], row["request_count"], REQUESTS_PER_RATIO
    )
