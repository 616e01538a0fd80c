"""GPU cost showback dashboard: ``streamlit run dashboard/app.py``.

Reads only the Parquet files published by ``gpucost publish`` (folder ``$GPUCOST_PARQUET_DIR``,
default ``warehouse/parquet``), never the DuckDB warehouse. Every number comes from a pure
function in ``gpucost.commands.dashboard_data``; money stays ``Decimal`` and is formatted from it.
Charts get amounts as decimal strings, turned into numbers only inside the browser to place the
marks. Identifiers reach the page in words (``gpucost.commands.labels``, the statements' method
labels) and as plain text only (never HTML).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import altair as alt
import streamlit as st
import widgets  # dashboard/widgets.py: streamlit puts the script's folder on sys.path

from gpucost.commands import dashboard_data as data
from gpucost.commands import dashboard_detail as detail
from gpucost.commands.labels import BUDGET_STATUSES, COST_COMPONENTS, RESOURCE_PARTS, owner_label
from gpucost.commands.statements_labels import method_label

PROJECT_DIR = Path(__file__).resolve().parents[1]
ALL = "All"
STATUSES = list(BUDGET_STATUSES.values())
STATUS_COLOURS = ["#2e7d32", "#f9a825", "#ef6c00", "#e57373", "#b71c1c"]
# Metric values in a smaller font, so that amounts in the millions fit four to a row.
CSS = """
<style>
[data-testid="stMetricValue"] { font-size: 1.55rem; }
</style>
"""

st.set_page_config(page_title="GPU cost showback", page_icon=":bar_chart:", layout="wide")


@st.cache_resource(max_entries=2, show_spinner="Loading the published marts")
def _snapshot(signature: tuple):
    """One in-memory copy of the Parquet files per published version (see data.signature)."""
    return data.load(Path(signature[0]))


def _sidebar(options: dict[str, list]) -> data.Filters:
    st.sidebar.header("Filters")
    months = options["months"]
    month = st.sidebar.selectbox(
        "Month",
        [ALL, *months],
        index=1 if months else 0,
        format_func=lambda value: value if value == ALL else value.strftime("%Y-%m"),
    )
    cluster = st.sidebar.selectbox("Cluster", [ALL, *options["clusters"]])
    team = st.sidebar.selectbox("Team", [ALL, *options["teams"]])
    st.sidebar.caption(
        "The reconciliation is per bill: only the month applies to it. The statement and the "
        "budgets are per team: the cluster does not apply to them. "
        f"`{data.NO_CLUSTER}`: bill lines not matched to a GPU node (storage, network, tax...)."
    )
    return data.Filters(
        month=None if month == ALL else month,
        cluster=None if cluster == ALL else cluster,
        team=None if team == ALL else team,
    )


def _headline(con, filters: data.Filters) -> None:
    month = detail.headline_month(con, filters)
    if month is None:
        st.header("The month")
        st.info("No statement in the published marts yet.")
        return
    scope = f" for {owner_label(filters.team)}" if filters.team else ""
    st.header(f"The month: {month:%Y-%m}{scope}")
    rows = detail.headline(con, filters)
    if not rows:
        st.info("No statement line for this selection in that month.")
    for row in rows:
        currency = row["billing_currency"]
        total = row["total_cost"]
        columns = st.columns([1.2, 1.5, 0.85, 0.85, 0.9, 1.1])
        columns[0].metric("Month total", data.fmt_money(total, currency))
        if row["previous_month"] is None:
            columns[1].metric("Change vs previous month", "no previous month")
        else:
            columns[1].metric(
                f"Change vs {row['previous_month']:%Y-%m}",
                widgets.signed_money(row["change"], currency),
                delta=data.fmt_ratio(row["change"], row["previous_cost"]),
                delta_color="inverse",
            )
        shares = (
            ("Idle", row["idle_cost"], total, "the statement's idle cents"),
            ("Unallocated", row["unallocated_cost"], total, "the statement's unallocated cents"),
            (
                "Model-placed",
                row["model_placed_cost"],
                row["allocated_cost"],
                "cost whose owner the learned model or a rule decided",
            ),
        )
        for column, (label, amount, base, meaning) in zip(columns[2:5], shares, strict=True):
            column.metric(
                label,
                data.fmt_ratio(amount, base),
                delta=data.fmt_money(amount, currency),
                delta_color="off",
                delta_arrow="off",
                help=f"{meaning}, as a share of the month's cost",
            )
        if row["budget_count"] is None:
            columns[5].metric("Budgets at risk", "not published")
        else:
            levels = ", ".join(
                f"{count} {words}"
                for status, words in BUDGET_STATUSES.items()
                if (count := sum(1 for item in row["at_risk"] if item["status"] == status))
            )
            columns[5].metric(
                "Budgets at risk",
                f"{row['budgets_at_risk']} of {row['budget_count']}",
                delta=levels or "all ok",
                delta_color="off",
                delta_arrow="off",
                help="Budgets of the month whose status is not ok (see Budget burn)",
            )
    st.caption(
        "Month total, idle and unallocated are the statement's cents (fct_chargeback_monthly); "
        "idle is idle GPU, CPU and memory capacity of GPU nodes, whoever carries it; unallocated "
        "is money whose project is unknown. Model-placed is the exact cost whose owner was "
        "inferred (the learned attribution model, the org mapping's names or a declarative "
        "rule), not declared by a tag, label, Slurm account or human override "
        "(fct_cost_allocation). The cluster filter does not apply here."
    )


def _reconciliation(con, filters: data.Filters) -> None:
    st.header("Reconciliation: bill vs allocation")
    figures = data.key_figures(con, filters)
    for row in figures:
        currency = row["billing_currency"]
        bill = st.columns(4)
        bill[0].metric("Billed", data.fmt_money(row.get("billed_cost"), currency))
        bill[1].metric("Allocated", data.fmt_money(row.get("allocated_billed_cost"), currency))
        bill[2].metric("Quarantined", data.fmt_money(row.get("quarantined_billed_cost"), currency))
        bill[3].metric("Residual", widgets.residual(row.get("billed_residual"), currency))
        selection = st.columns(4)
        selection[0].metric("Total cost", data.fmt_money(row.get("total_cost"), currency))
        if row.get("largest_team"):
            selection[1].metric(
                f"Largest team ({row['largest_team']})",
                data.fmt_money(row["largest_team_cost"], currency),
            )
    sources = {row.get("cost_source") for row in figures}
    source = (
        "the statement's cents (fct_chargeback_monthly)"
        if sources == {"fct_chargeback_monthly"}
        else "the exact allocation (fct_cost_allocation) rounded to cents"
    )
    st.caption(
        "Billed, Allocated, Quarantined and Residual are the bill of the selected month "
        "(rpt_reconciliation; residual = billed - allocated - quarantined, exactly 0 when "
        f"reconciled). Total cost and Largest team follow the filters: {source}; system owners "
        "are not counted as Largest team."
    )
    months = data.reconciliation_by_month(con, filters)
    if not months:
        st.warning("No bill for this selection.")
    for row in months:
        label = f"{row['billing_period_start']:%Y-%m} {row['billing_currency']}"
        detail = (
            f"billed {data.fmt_money(row['billed_cost'])} = allocated "
            f"{data.fmt_money(row['allocated_billed_cost'])} + quarantined "
            f"{data.fmt_money(row['quarantined_billed_cost'])}; residual "
            f"{row['billed_residual'].normalize():f} (exact), effective residual "
            f"{row['effective_residual'].normalize():f}; {row['bill_line_count']} bill lines, "
            f"{row['quarantined_line_count']} quarantined"
        )
        if row["is_reconciled"]:
            st.success(
                f"**{label}: RECONCILED to the cent.** {detail}", icon=":material/check_circle:"
            )
        else:
            st.error(f"**{label}: NOT RECONCILED.** {detail}", icon=":material/error:")


def _cost_by_owner(con, filters: data.Filters) -> None:
    st.header("Daily cost by owner")
    dimension = st.radio("Group by", list(data.DIMENSIONS), horizontal=True, key="group_by")
    daily = data.cost_over_time(con, filters, dimension)
    if not daily:
        st.info("No daily charges in this selection.")
    else:
        values = widgets.money_rows(daily, ("billed_cost",))
        for value in values:
            value["owner_label"] = _owner(value["owner"], dimension)
        chart = (
            alt.Chart(alt.Data(values=values), height=320)
            .transform_calculate(cost="toNumber(datum.billed_cost)")
            .mark_bar()
            .encode(
                x=alt.X("cost_date:T", timeUnit="utcyearmonthdate", title="Day (UTC)"),
                y=alt.Y("cost:Q", title="Billed cost", stack="zero", axis=alt.Axis(format="~s")),
                color=alt.Color("owner_label:N", title=dimension),
                tooltip=[
                    alt.Tooltip("cost_date:N", title="day"),
                    alt.Tooltip("owner_label:N", title=dimension),
                    alt.Tooltip("billed_cost_text:N", title="billed cost"),
                ],
            )
        )
        st.caption(
            "Bill lines charged for an hour or a day (GPU nodes, storage, network), by the day "
            "their charge period starts, exact allocation. Charges billed once for the month "
            "(support, tax, credits, commitments) are in the next section."
        )
        st.altair_chart(chart, width="stretch")
    owners = data.cost_by_owner(con, filters, dimension)
    for row in owners:
        row["owner_label"] = _owner(row["owner"], dimension)
    widgets.table(
        owners,
        {
            "owner_label": dimension,
            "billing_currency": "currency",
            "billed_cost": "billed cost (month, all charges)",
            "effective_cost": "effective cost",
        },
        money=("billed_cost", "effective_cost"),
    )
    sources = {row["cost_source"] for row in owners}
    st.caption(
        "The table is the whole cost of the selection, daily and monthly charges: "
        + (
            "the statement's cents (fct_chargeback_monthly), the figures of the statement, the "
            "drill-down and the budgets."
            if sources == {"fct_chargeback_monthly"}
            else "the exact allocation (fct_cost_allocation) rounded to cents: users and single "
            "clusters are not on the statement."
        )
    )


def _owner(owner: str, dimension: str = "team") -> str:
    """A team or project id, system owners in words; users as they are."""
    return owner if dimension == "user" else owner_label(owner)


def _periodic(con, filters: data.Filters) -> None:
    st.header("Monthly charges")
    lines = detail.periodic_charges(con, filters)
    if not lines:
        st.info("No charge billed once per period in this selection.")
        return
    dimension = st.session_state.get("group_by", "team")
    owners = detail.periodic_by_owner(con, filters, dimension)
    for row in owners:
        row["owner_label"] = _owner(row["owner"], dimension)
        row["component"] = COST_COMPONENTS.get(row["cost_component"], row["cost_component"])
    for row in lines:
        row["component"] = COST_COMPONENTS.get(row["cost_component"], row["cost_component"])
        row["period"] = f"{row['charge_period_start'] or '?'} to {row['charge_period_end'] or '?'}"
    st.altair_chart(
        widgets.bar(
            owners,
            "component",
            "billed_cost",
            title="Billed cost",
            color="owner_label",
            height=60 + 40 * len({row["component"] for row in owners}),
        ),
        width="stretch",
    )
    widgets.table(
        lines,
        {
            "component": "what",
            "charge_category": "category",
            "service_name": "service",
            "period": "charge period (end exclusive)",
            "billing_currency": "currency",
            "billed_cost": "billed cost",
            "line_count": "bill lines",
        },
        money=("billed_cost",),
    )
    st.caption(
        "Charges billed once for a period longer than a day (support, tax, credits, commitments), "
        "kept out of the daily chart so that a charge on the 1st does not dwarf the daily trend. "
        "The bars show whom each was spread to (shared overheads) or charged to (a tag)."
    )


DRILL_LABELS = ("Drill-down team", "Drill-down project", "Drill-down user", "Drill-down workload")


def _drill_down(con, filters: data.Filters) -> None:
    month = detail.headline_month(con, filters)
    st.header("Drill-down: team, project, user, workload")
    if month is None:
        st.info("No statement in the published marts yet.")
        return
    path: list[str] = []
    columns = [*st.columns([1, 1]), *st.columns([1, 1])]
    rows: list[dict] = []
    for level, (column, label) in enumerate(zip(columns, DRILL_LABELS, strict=True)):
        rows = detail.drill_down(con, month, tuple(path))
        if not rows:
            break
        cost = {row["owner"]: row for row in rows}
        default = filters.team if level == 0 and filters.team in cost else None
        choice = column.selectbox(
            label,
            list(cost),
            index=list(cost).index(default) if default else None,
            placeholder=f"Choose a {detail.LEVELS[level]}",
            format_func=lambda owner, cost=cost, level=level: (
                f"{owner if level >= 2 else owner_label(owner)}: "
                f"{data.fmt_money(cost[owner]['billed_cost'], cost[owner]['billing_currency'])}"
            ),
            key=f"drill_{level}_{'|'.join(path)}",
        )
        if choice is None:
            break
        path.append(choice)
    if len(path) < 4:
        level = detail.LEVELS[len(path)]
        shown = [
            {
                **row,
                "owner_label": row["owner"] if path[1:] else owner_label(row["owner"]),
                "method": method_label(row["attribution_method"])
                if row.get("attribution_method")
                else "-",
                "confidence": widgets.confidence(row.get("attribution_confidence")),
            }
            for row in rows
        ]
        columns = {
            "owner_label": level,
            "billing_currency": "currency",
            "billed_cost": "billed cost",
            "exact_cost": "exact allocation",
        }
        if level == "workload":
            columns |= {"method": "method", "confidence": "confidence"}
        widgets.table(shown, columns, money=("billed_cost",))
    else:
        _workload(con, month, path)
    st.caption(
        f"{month:%Y-%m}. Teams and projects are the statement's cents (fct_chargeback_monthly); "
        "below a project, the exact allocation (fct_cost_allocation) is apportioned to the "
        "project's cents by largest remainder, so every level adds up to the one above. Not split "
        "by cluster."
    )


def _workload(con, month: date, path: list[str]) -> None:
    workload = detail.workload_detail(con, month, path[3])
    if workload is None:
        st.info(
            "Tagged bill lines and spread overheads have no workload: choose a workload to see "
            "its GPU time."
        )
        return
    currency = workload["billing_currency"]
    cents = {
        row["owner"]: row["billed_cost"] for row in detail.drill_down(con, month, tuple(path[:3]))
    }
    method = workload["attribution_method"]
    confidence = workload["attribution_confidence"]
    columns = st.columns([1, 1, 3, 1])
    columns[0].metric("Workload GPU-hours", f"{workload['gpu_hours']:,.2f}")
    columns[1].metric("Workload cost", data.fmt_money(cents[path[3]], currency))
    columns[2].metric("Workload method", method_label(method), help=method)
    columns[3].metric("Workload confidence", widgets.confidence(confidence))
    facts = [
        ("workload", workload["workload_id"]),
        ("owner", f"{workload['team_id']} / {workload['project_id']}"),
        ("user", workload["user_id"] or data.NO_USER),
        ("cluster", workload["cluster_id"] or data.NO_CLUSTER),
        ("method", method_label(method)),
        ("rule or override", workload["attribution_rule_id"] or "-"),
        ("GPU-hours (allocation basis)", f"{workload['gpu_hours']:,.2f}"),
        ("GPU-hours requested", f"{workload['requested_gpu_hours']:,.2f}"),
        ("GPU-hours used (busy)", f"{workload['used_gpu_hours']:,.2f}"),
        ("GPU models", workload["gpu_models"] or "-"),
        ("own use (exact, rounded)", data.fmt_money(workload["usage_cost"], currency)),
        ("share of idle capacity", data.fmt_money(workload["idle_cost"], currency)),
        ("unallocated", data.fmt_money(workload["unallocated_cost"], currency)),
        ("exact allocation", data.fmt_money(workload["exact_cost"], currency)),
    ]
    widgets.table(
        [{"field": key, "value": value} for key, value in facts],
        {"field": "workload detail", "value": "value"},
        whole=True,
    )


def _gpu(con, filters: data.Filters) -> None:
    st.header("GPU cost: utilised vs wasted")
    rows = data.gpu_cost_by_team(con, filters)
    if not rows:
        st.info("No GPU node cost in this selection.")
        return
    by_currency: dict[str, dict] = {}
    for row in rows:
        total = by_currency.setdefault(
            row["billing_currency"], {"billed_cost": 0, "utilised_cost": 0, "wasted_cost": 0}
        )
        for key in total:
            total[key] += row[key]
    for currency, total in by_currency.items():
        columns = st.columns(4)
        columns[0].metric("GPU cost", data.fmt_money(total["billed_cost"], currency))
        columns[1].metric("Utilised", data.fmt_money(total["utilised_cost"], currency))
        columns[2].metric("Wasted", data.fmt_money(total["wasted_cost"], currency))
        columns[3].metric(
            "Utilisation (cost)", data.fmt_ratio(total["utilised_cost"], total["billed_cost"])
        )
    stacked = [
        {
            "team": owner_label(row["team_id"], "gpu_usage"),
            "billing_currency": row["billing_currency"],
            "part": part,
            "amount": row[f"{part}_cost"],
        }
        for row in rows
        for part in ("utilised", "wasted")
    ]
    left, right = st.columns([1, 1])
    left.altair_chart(
        widgets.bar(
            stacked,
            "team",
            "amount",
            title="GPU cost",
            color="part",
            color_scale=alt.Scale(domain=["utilised", "wasted"], range=["#2e7d32", "#e57373"]),
        ),
        width="stretch",
    )
    with right:
        widgets.table(
            [
                {
                    **row,
                    "team": owner_label(row["team_id"], "gpu_usage"),
                    "utilisation": data.fmt_ratio(row["utilised_cost"], row["billed_cost"]),
                    "gpu_hours_text": f"{row['gpu_hours']:,.1f}",
                }
                for row in rows
            ],
            {
                "team": "team",
                "billed_cost": "GPU cost",
                "utilised_cost": "utilised",
                "wasted_cost": "wasted",
                "utilisation": "util.",
                "gpu_hours_text": "GPU-hours",
            },
            money=("billed_cost", "utilised_cost", "wasted_cost"),
        )
    st.caption(
        "fct_gpu_usage: the GPU part of GPU node lines, before the idle policy spreads idle GPU "
        "time. Wasted = GPU time allocated to a workload but not used (DCGM busy time); "
        "(GPU time nobody requested) is the idle GPU time that the next section spreads."
    )


def _idle(con, filters: data.Filters) -> None:
    st.header("Idle capacity of GPU nodes and who carries it")
    rows = data.idle_cost_by_team(con, filters)
    if not rows:
        st.info("No idle cost in this selection.")
        return
    for row in rows:
        row["team"] = owner_label(row["team_id"])
    stacked = [
        {
            "team": row["team"],
            "billing_currency": row["billing_currency"],
            "resource": RESOURCE_PARTS[part],
            "amount": row[f"{part}_cost"],
        }
        for row in rows
        for part in data.IDLE_PARTS
    ]
    left, right = st.columns([1, 1])
    left.altair_chart(
        widgets.bar(stacked, "team", "amount", title="Idle cost", color="resource"), width="stretch"
    )
    with right:
        widgets.table(
            rows,
            {
                "team": "carried by",
                "billed_cost": "idle cost",
                "gpu_cost": "GPU",
                "cpu_cost": "CPU",
                "memory_cost": "memory",
            },
            money=("billed_cost", "gpu_cost", "cpu_cost", "memory_cost"),
        )
    st.caption(
        "fct_cost_allocation rows of kind idle: GPU time nobody used, and the CPU and memory of "
        "GPU nodes no workload requested, spread by the idle policy. (idle capacity placed on "
        "nobody) is idle the policy kept visible or found no workload to place on. "
        + (
            "Idle cost per team is the statement's idle cents, the parts apportioned to them."
            if rows[0]["cost_source"] == "fct_chargeback_monthly"
            else "Exact allocation of the selected cluster, rounded."
        )
    )


def _unallocated(con, filters: data.Filters) -> None:
    st.header("Unallocated money")
    st.caption(
        "Money whose project is unknown, by reason and by the team label it carries ((owner "
        "unknown) when it has none either); the workloads behind it that the attribution model "
        "could not place are ranked in the review queue below."
    )
    reasons = data.unallocated_by_reason(con, filters)
    if not reasons:
        st.success("Nothing unallocated in this selection.")
        return
    left, right = st.columns([1, 1])
    left.altair_chart(
        widgets.bar(reasons, "reason", "billed_cost", title="Unallocated cost"), width="stretch"
    )
    with right:
        teams = data.unallocated_by_team(con, filters)
        for row in teams:
            row["team"] = owner_label(row["team_id"])
        widgets.table(
            teams,
            {"team": "team label", "billed_cost": "unallocated", "workload_count": "workloads"},
            money=("billed_cost",),
        )
    widgets.table(
        reasons,
        {"reason": "why", "billed_cost": "unallocated", "workload_count": "workloads"},
        money=("billed_cost",),
    )
    queue = detail.review_queue(con, filters)
    if queue:
        st.subheader("Review queue: the first workloads to place")
        for row in queue:
            guess = row["candidate_1_project_id"]
            row["best"] = (
                f"{guess} (p = {widgets.confidence(row['candidate_1_probability'])})"
                if guess
                else "-"
            )
            if row["label_project_id"]:
                row["reason"] += f": {row['label_project_id']}"
        widgets.table(
            queue,
            {
                "review_rank": "rank",
                "billed_cost": "cost at stake",
                "best": "model's best guess",
                "reason": "why",
                "workload_id": "workload",
            },
            money=("billed_cost",),
            widths={"rank": "small", "why": "large"},
        )
        st.caption(
            "rpt_attribution_review, all months: workloads without a declared owner that the "
            "learned model could not place at its confidence threshold, by cost at stake. Decide "
            "on them on the review page (sidebar: review) or with `gpucost review`: each decision "
            "is an override row that the next build reads."
        )


def _budgets(con, filters: data.Filters) -> None:
    st.header("Budget burn")
    rows = data.budget_status(con, filters)
    if rows is None:
        st.info(
            "No budgets published yet: `rpt_budget_status.parquet` is not in the Parquet folder "
            "(the budget mart is built by a newer version of the warehouse)."
        )
        return
    if not rows:
        st.info("No budget for this selection.")
        return
    for row in rows:
        row["budget"] = row["team_id"] + (f"/{row['project_id']}" if row["project_id"] else "")
        row["status"] = BUDGET_STATUSES.get(row["status"], row["status"])
        row["burn"] = data.fmt_ratio(row["burn_ratio"], 1)
        row["forecast"] = data.fmt_ratio(row["forecast_ratio"], 1)
    values = widgets.money_rows(rows, ("budget_amount", "month_to_date_cost", "forecast_cost"))
    for value, row in zip(values, rows, strict=True):
        value["burn_ratio"] = str(row["burn_ratio"])
        value["forecast_ratio"] = str(row["forecast_ratio"])
    height = max(160, 30 * len(rows))
    base = alt.Chart(alt.Data(values=values)).transform_calculate(
        burn="toNumber(datum.burn_ratio) * 100", forecast="toNumber(datum.forecast_ratio) * 100"
    )
    tooltip = [
        alt.Tooltip("budget:N"),
        alt.Tooltip("status:N"),
        alt.Tooltip("month_to_date_cost_text:N", title="month to date"),
        alt.Tooltip("forecast_cost_text:N", title="forecast"),
        alt.Tooltip("budget_amount_text:N", title="budget"),
        alt.Tooltip("burn:N", title="burn %"),
        alt.Tooltip("forecast:N", title="forecast %"),
    ]
    y_axis = alt.Y("budget:N", title=None, sort=None, axis=alt.Axis(labelLimit=260))
    chart = alt.layer(
        base.mark_bar(color="#c9c9c9").encode(
            y=y_axis, x=alt.X("forecast:Q", title="% of budget"), tooltip=tooltip
        ),
        base.mark_bar(height={"band": 0.5}).encode(
            y=y_axis,
            x="burn:Q",
            color=alt.Color(
                "status:N", title="status", scale=alt.Scale(domain=STATUSES, range=STATUS_COLOURS)
            ),
            tooltip=tooltip,
        ),
        base.mark_rule(color="#b71c1c", strokeDash=[4, 3]).encode(x=alt.datum(100)),
    ).properties(height=height)
    st.altair_chart(chart, width="stretch")
    widgets.table(
        rows,
        {
            "budget": "budget of",
            "status": "status",
            "budget_amount": "amount",
            "month_to_date_cost": "month to date",
            "forecast_cost": "forecast",
            "burn": "burn",
            "forecast": "forecast %",
        },
        money=("budget_amount", "month_to_date_cost", "forecast_cost"),
    )
    st.caption(
        "Coloured bar: spent so far, by status; grey bar: forecast for the month; dashed line: "
        "the budget (100%)."
    )


NONE = "n/a"
INFERENCE_COLUMNS = {
    "deployment": "deployment",
    "model": "model",
    "team": "team",
    "cost": "cost",
    "tokens_text": "tokens in / out",
    "request_count_text": "requests",
    "cost_per_million_tokens_text": "per 1M tokens",
    "cost_per_thousand_requests_text": "per 1k requests",
}
"""The panel's table (key -> header), narrow enough to show every column at 1440 px (the data
grid's accessible table, which the browser test reads, holds only the columns in view)."""
INFERENCE_WIDTHS = {"deployment": 180, "model": 160, "team": 70}


def _ratio(value, currency: str | None) -> str:
    """A unit cost to the cent; n/a when nothing was counted."""
    return NONE if value is None else data.fmt_money(value, currency)


def _inference(con, filters: data.Filters) -> None:
    st.header("Unit cost of inference")
    rows = detail.inference_unit_cost(con, filters)
    if rows is None:
        st.info(
            "No inference costs published yet: `fct_inference_unit_cost.parquet` is not in the "
            "Parquet folder (the mart is built by a newer version of the warehouse)."
        )
        return
    if not rows:
        st.info("No serving deployment exported token or request counters in this selection.")
        return
    for total in detail.inference_totals(rows):
        currency = total["billing_currency"]
        if currency is None:
            continue  # counted, but allocated no cost: their rows are in the table
        cost, tokens_in, tokens_out = st.columns(3)
        cost.metric("Inference cost", data.fmt_money(total["cost_cents"], currency))
        tokens_in.metric("Tokens in", f"{total['prompt_tokens']:,}")
        tokens_out.metric("Tokens out", f"{total['generation_tokens']:,}")
        requests, per_tokens, per_requests = st.columns(3)
        requests.metric("Requests", f"{total['request_count']:,}")
        per_tokens.metric("Per 1M tokens", _ratio(total["cost_per_million_tokens"], currency))
        per_requests.metric(
            "Per 1k requests", _ratio(total["cost_per_thousand_requests"], currency)
        )
    for row in rows:
        row["deployment"] = f"{row['cluster_id']}/{row['namespace']}/{row['deployment_name']}"
        row["model"] = row["model_name"] or NONE
        row["team"] = owner_label(row["team_id"])
        row["cost"] = data.fmt_money(row["cost_cents"], row["billing_currency"])
        row["tokens_text"] = f"{row['prompt_tokens']:,} / {row['generation_tokens']:,}"
        row["request_count_text"] = f"{row['request_count']:,}"
        for key in ("cost_per_million_tokens", "cost_per_thousand_requests"):
            row[f"{key}_text"] = _ratio(row[key], row["billing_currency"])
    # every row shown (the browser test reads the cells), as plain text
    with st.container(key="inference-unit-cost"):
        widgets.table(rows, INFERENCE_COLUMNS, whole=True, widths=INFERENCE_WIDTHS)
    st.caption(
        "fct_inference_unit_cost: the GPU node cost allocated to the serving pods (exact; in cents "
        "by largest remainder, adding up to the month's cent total) and what their engines "
        "counted. The unit costs divide the month's exact cost by its tokens or requests; n/a "
        "when nothing was counted. TGI exports no model name."
    )


def _statement(con, filters: data.Filters) -> None:
    st.header("Chargeback statement (cents)")
    rows = data.chargeback_by_team(con, filters)
    for row in rows:
        row["team"] = owner_label(row["team_id"])
    widgets.table(
        rows,
        {
            "billing_period_start": "month",
            "billing_currency": "currency",
            "team": "team",
            "direct_cost": "direct",
            "usage_cost": "usage",
            "idle_cost": "idle",
            "shared_cost": "shared",
            "unallocated_cost": "unallocated",
            "billed_cost": "billed",
            "effective_cost": "effective",
        },
        money=(
            "direct_cost",
            "usage_cost",
            "idle_cost",
            "shared_cost",
            "unallocated_cost",
            "billed_cost",
            "effective_cost",
        ),
    )
    st.caption("fct_chargeback_monthly: each month's cents add up to the bill's cent total.")


def main() -> None:
    st.markdown(CSS, unsafe_allow_html=True)
    st.title("GPU cost showback")
    directory = data.parquet_dir(PROJECT_DIR)
    try:
        con = _snapshot(data.signature(directory)).cursor()
    except data.DashboardDataError as error:
        st.error(str(error))
        st.stop()
    published = (directory / "fct_cost_allocation.parquet").stat().st_mtime
    st.caption(f"Marts published {datetime.fromtimestamp(published, tz=UTC):%Y-%m-%d %H:%M} UTC")
    filters = _sidebar(data.filter_options(con))
    try:
        _headline(con, filters)
        _reconciliation(con, filters)
        _cost_by_owner(con, filters)
        _periodic(con, filters)
        _drill_down(con, filters)
        _gpu(con, filters)
        _inference(con, filters)
        _idle(con, filters)
        _unallocated(con, filters)
        _budgets(con, filters)
        _statement(con, filters)
    finally:
        con.close()
    # an empty marker written last: the browser test waits for it (no text on the page)
    st.markdown('<span id="gpucost-dashboard-rendered"></span>', unsafe_allow_html=True)


main()
