"""GPU cost showback dashboard: ``streamlit run dashboard/app.py``.

Reads only the Parquet files published by ``gpucost publish`` (folder ``$GPUCOST_PARQUET_DIR``,
default ``warehouse/parquet``), never the DuckDB warehouse. Every number comes from a pure
function in ``gpucost.commands.dashboard_data``; money stays ``Decimal`` and is formatted from it.
Charts
get amounts as decimal strings, turned into numbers only inside the browser to place the marks.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import altair as alt
import streamlit as st

from gpucost.commands import dashboard_data as data

PROJECT_DIR = Path(__file__).resolve().parents[1]
ALL = "All"
STATUSES = ["ok", "forecast_warning", "warning", "forecast_critical", "critical"]
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


def _money_rows(rows: list[dict], money: tuple[str, ...]) -> list[dict]:
    """Rows for a chart or table: money as exact cent strings (``"1234.57"``) and a formatted
    ``<column>_text`` (``"1,234.57"``) for tooltips."""
    out = []
    for row in rows:
        item = {
            key: (value.isoformat() if isinstance(value, date) else value)
            for key, value in row.items()
            if key not in money
        }
        for key in money:
            item[key] = str(data.cents(row[key]))
            item[f"{key}_text"] = data.fmt_money(row[key], row.get("billing_currency"))
        out.append(item)
    return out


def _table(rows: list[dict], columns: dict[str, str], money: tuple[str, ...] = ()) -> None:
    """A table with the given columns (key -> header); money formatted from Decimal."""
    shown = [
        {
            header: (
                data.fmt_money(row[key])
                if key in money
                else (row[key].isoformat() if isinstance(row[key], date) else row[key])
            )
            for key, header in columns.items()
        }
        for row in rows
    ]
    st.dataframe(shown, hide_index=True, width="stretch")


def _bar(
    rows: list[dict],
    category: str,
    amount: str,
    *,
    title: str,
    color: str | None = None,
    color_scale: alt.Scale | None = None,
    height: int = 260,
) -> alt.Chart:
    """Horizontal bars of an amount per category (stacked by ``color``)."""
    values = _money_rows(rows, (amount,))
    tooltip = [alt.Tooltip(f"{category}:N"), alt.Tooltip(f"{amount}_text:N", title=title)]
    encoding = {
        "y": alt.Y(f"{category}:N", sort="-x", title=None, axis=alt.Axis(labelLimit=320)),
        "x": alt.X("amount_value:Q", title=title, stack="zero", axis=alt.Axis(format="~s")),
        "tooltip": tooltip,
    }
    if color:
        encoding["color"] = alt.Color(f"{color}:N", title=None, scale=color_scale or alt.Undefined)
        tooltip.insert(1, alt.Tooltip(f"{color}:N"))
    return (
        alt.Chart(alt.Data(values=values), height=height)
        .transform_calculate(amount_value=f"toNumber(datum.{amount})")
        .mark_bar()
        .encode(**encoding)
    )


def _residual(value, currency: str) -> str:
    """The residual in cents, or exactly when it is not zero but rounds to 0.00."""
    if value and not data.cents(value):
        return f"{value.normalize():f} {currency}"
    return data.fmt_money(value, currency)


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


def _reconciliation(con, filters: data.Filters) -> None:
    st.header("Reconciliation: bill vs allocation")
    figures = data.key_figures(con, filters)
    for row in figures:
        currency = row["billing_currency"]
        bill = st.columns(4)
        bill[0].metric("Billed", data.fmt_money(row.get("billed_cost"), currency))
        bill[1].metric("Allocated", data.fmt_money(row.get("allocated_billed_cost"), currency))
        bill[2].metric("Quarantined", data.fmt_money(row.get("quarantined_billed_cost"), currency))
        bill[3].metric("Residual", _residual(row.get("billed_residual"), currency))
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
    st.header("Cost by owner over time")
    dimension = st.radio("Group by", list(data.DIMENSIONS), horizontal=True)
    daily = data.cost_over_time(con, filters, dimension)
    if not daily:
        st.info("No cost in this selection.")
        return
    values = _money_rows(daily, ("billed_cost",))
    chart = (
        alt.Chart(alt.Data(values=values), height=320)
        .transform_calculate(cost="toNumber(datum.billed_cost)")
        .mark_bar()
        .encode(
            x=alt.X("cost_date:T", timeUnit="utcyearmonthdate", title="Day (UTC)"),
            y=alt.Y("cost:Q", title="Billed cost", stack="zero", axis=alt.Axis(format="~s")),
            color=alt.Color("owner:N", title=dimension),
            tooltip=[
                alt.Tooltip("cost_date:N", title="day"),
                alt.Tooltip("owner:N", title=dimension),
                alt.Tooltip("billed_cost_text:N", title="billed cost"),
            ],
        )
    )
    st.caption(
        "Monthly charges (support, storage, tax, credits...) land on the day their charge period "
        "starts, usually the 1st. Amounts here are the exact allocation rounded to cents; the "
        "statement below rounds each month by largest remainder so that it adds up to the bill, "
        "so a team's two figures can differ by a cent."
    )
    st.altair_chart(chart, width="stretch")
    _table(
        data.cost_by_owner(con, filters, dimension),
        {
            "owner": dimension,
            "billing_currency": "currency",
            "billed_cost": "billed cost",
            "effective_cost": "effective cost",
        },
        money=("billed_cost", "effective_cost"),
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
            "team_id": row["team_id"],
            "billing_currency": row["billing_currency"],
            "part": part,
            "amount": row[f"{part}_cost"],
        }
        for row in rows
        for part in ("utilised", "wasted")
    ]
    left, right = st.columns([1, 1])
    left.altair_chart(
        _bar(
            stacked,
            "team_id",
            "amount",
            title="GPU cost",
            color="part",
            color_scale=alt.Scale(domain=["utilised", "wasted"], range=["#2e7d32", "#e57373"]),
        ),
        width="stretch",
    )
    with right:
        _table(
            [
                {
                    **row,
                    "utilisation": data.fmt_ratio(row["utilised_cost"], row["billed_cost"]),
                    "gpu_hours_text": f"{row['gpu_hours']:,.1f}",
                }
                for row in rows
            ],
            {
                "team_id": "team",
                "billed_cost": "GPU cost",
                "utilised_cost": "utilised",
                "wasted_cost": "wasted",
                "utilisation": "util.",
                "gpu_hours_text": "GPU-hours",
            },
            money=("billed_cost", "utilised_cost", "wasted_cost"),
        )
    st.caption(
        "fct_gpu_usage: GPU node lines before idle spreading. Wasted = allocated GPU time not used "
        "(DCGM busy time); `__idle__` = GPU time nobody requested."
    )


def _idle(con, filters: data.Filters) -> None:
    st.header("Idle GPU cost and who carries it")
    rows = data.idle_cost_by_team(con, filters)
    if not rows:
        st.info("No idle cost in this selection.")
        return
    left, right = st.columns([1, 1])
    left.altair_chart(_bar(rows, "team_id", "billed_cost", title="Idle cost"), width="stretch")
    with right:
        _table(
            rows,
            {"team_id": "team", "billed_cost": "idle cost", "allocation_row_count": "rows"},
            money=("billed_cost",),
        )
    st.caption(
        "fct_cost_allocation rows of kind idle, spread by the idle policy; `__idle__` carries idle "
        "kept visible (policy visible)."
    )


def _unallocated(con, filters: data.Filters) -> None:
    st.header("Unallocated money")
    st.info(
        "The review queue for unallocated money does not exist yet. Until it does, this is the "
        "money whose project is unknown, by reason and by the team label it carries "
        "(`__unallocated__` when it has none)."
    )
    reasons = data.unallocated_by_reason(con, filters)
    if not reasons:
        st.success("Nothing unallocated in this selection.")
        return
    left, right = st.columns([1, 1])
    left.altair_chart(
        _bar(reasons, "unallocated_reason", "billed_cost", title="Unallocated cost"),
        width="stretch",
    )
    with right:
        _table(
            data.unallocated_by_team(con, filters),
            {"team_id": "team label", "billed_cost": "unallocated", "workload_count": "workloads"},
            money=("billed_cost",),
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
        row["burn"] = data.fmt_ratio(row["burn_ratio"], 1)
        row["forecast"] = data.fmt_ratio(row["forecast_ratio"], 1)
    values = _money_rows(rows, ("budget_amount", "month_to_date_cost", "forecast_cost"))
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
    _table(
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


def _statement(con, filters: data.Filters) -> None:
    st.header("Chargeback statement (cents)")
    rows = data.chargeback_by_team(con, filters)
    _table(
        rows,
        {
            "billing_period_start": "month",
            "billing_currency": "currency",
            "team_id": "team",
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
    st.caption(
        f"Published marts from `{directory}`, "
        f"{datetime.fromtimestamp(published, tz=UTC):%Y-%m-%d %H:%M} UTC"
    )
    filters = _sidebar(data.filter_options(con))
    try:
        _reconciliation(con, filters)
        _cost_by_owner(con, filters)
        _gpu(con, filters)
        _idle(con, filters)
        _unallocated(con, filters)
        _budgets(con, filters)
        _statement(con, filters)
    finally:
        con.close()
    st.markdown(
        '<span id="gpucost-dashboard-rendered">Dashboard rendered.</span>', unsafe_allow_html=True
    )


main()
