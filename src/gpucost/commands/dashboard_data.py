"""The numbers behind the showback dashboard (``dashboard/app.py``), as plain rows.

The dashboard reads only the Parquet files that ``gpucost publish`` writes (never the DuckDB
warehouse, which a build holds locked). :func:`load` copies them into an in-memory DuckDB database,
one table per file, so one page view reads one consistent snapshot; every other function takes that
connection and a :class:`Filters` and returns a list of dicts whose money is ``Decimal``, exact
(DuckDB DECIMAL end to end, no float, no pandas). Rounding to cents happens only for display, in
:func:`cents` / :func:`fmt_money` (half away from zero, as in the marts, by
:func:`gpucost.core.money.round_half_away_to_cents`).

A figure per team or project is the statement's cents (``fct_chargeback_monthly``) wherever the
selection is one the statement has (no cluster filter), so two tables never show a team a cent
apart; the headline and the drill-down are in :mod:`gpucost.commands.dashboard_detail`.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from gpucost.commands.labels import reason_label, resource_part
from gpucost.commands.safe_output import first_line
from gpucost.core.money import round_half_away_to_cents, round_to_cents, to_units

K = TypeVar("K", bound=Hashable)

PARQUET_DIR_ENV = "GPUCOST_PARQUET_DIR"
DEFAULT_PARQUET_DIR = "warehouse/parquet"

REQUIRED_TABLES = (
    "fct_cost_allocation",
    "fct_chargeback_monthly",
    "fct_gpu_usage",
    "rpt_reconciliation",
    "dim_teams",
)
OPTIONAL_TABLES = (
    "dim_projects",
    "rpt_budget_status",
    "rpt_attribution_review",
    "rpt_team_handovers",
    "fct_inference_unit_cost",
)

NO_CLUSTER = "(no cluster)"
"""Cluster filter value for bill lines not matched to a GPU node (storage, network, tax...)."""
OTHER = "(other)"
NO_USER = "(no user)"
SYSTEM_TEAMS = ("__unallocated__", "__idle__")
PERIODIC = (
    "(charge_period_start_at is null or charge_period_end_at is null"
    " or charge_period_end_at > charge_period_start_at + interval 1 day)"
)
"""A charge billed once for a period longer than a day (support, tax, credits, commitments...),
or with no valid period: shown apart from the daily trend."""
DIMENSIONS = {"team": "team_id", "project": "project_id", "user": "user_id"}
CENT = Decimal("0.01")
IDLE_PARTS = ("gpu", "cpu", "memory")


class DashboardDataError(RuntimeError):
    """The published Parquet files are missing or unreadable."""


@dataclass(frozen=True)
class Filters:
    """What the page shows: one billing month (None = all), one cluster, one team."""

    month: date | None = None
    cluster: str | None = None
    team: str | None = None


# --- money for display ------------------------------------------------------------------------


def cents(value: Decimal | int | None) -> Decimal:
    """Round an exact amount to cents, half away from zero (the marts' rule, written once in
    :func:`gpucost.core.money.round_half_away_to_cents`). None -> 0.00."""
    return (Decimal(round_half_away_to_cents(to_units(value or 0))) * CENT).quantize(CENT)


def apportion(exact: Mapping[K, Decimal], total: Decimal) -> dict[K, Decimal]:
    """``exact`` amounts in cents adding up to ``total`` (a cent amount): the one largest-remainder
    rule, :func:`gpucost.core.money.round_to_cents`, on Decimals."""
    cents_of = round_to_cents(
        {key: to_units(value) for key, value in exact.items()},
        int((Decimal(total) / CENT).to_integral_value()),
    )
    return {key: (Decimal(value) * CENT).quantize(CENT) for key, value in cents_of.items()}


def fmt_money(value: Decimal | int | None, currency: str | None = None) -> str:
    """``1,234.57`` (or ``1,234.57 USD``) from a Decimal, never through float."""
    text = f"{cents(value):,.2f}"
    return f"{text} {currency}" if currency else text


def fmt_ratio(numerator: Decimal | None, denominator: Decimal | None) -> str:
    """A percentage with one decimal from two Decimals; an em dash when undefined."""
    if not denominator:
        return "-"
    share = (Decimal(numerator or 0) * 100 / Decimal(denominator)).quantize(
        Decimal("0.1"), rounding=ROUND_HALF_UP
    )
    return f"{share}%"


# --- the snapshot -------------------------------------------------------------------------------


def parquet_dir(project_dir: Path | None = None) -> Path:
    """``$GPUCOST_PARQUET_DIR``, else ``warehouse/parquet`` (relative to ``project_dir``)."""
    path = Path(os.environ.get(PARQUET_DIR_ENV) or DEFAULT_PARQUET_DIR)
    if not path.is_absolute() and project_dir is not None:
        path = project_dir / path
    return path


def signature(directory: Path) -> tuple:
    """Identifies the published files' current versions (to cache a snapshot until they change)."""
    entries = []
    for name in (*REQUIRED_TABLES, *OPTIONAL_TABLES):
        path = Path(directory) / f"{name}.parquet"
        try:
            stat = path.stat()
        except FileNotFoundError:
            entries.append((name, None))
            continue
        entries.append((name, stat.st_ino, stat.st_size, stat.st_mtime_ns))
    return (str(directory), *entries)


def load(directory: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB database holding a copy of each published Parquet file as a table.

    Raises ``DashboardDataError`` naming the missing files when a required mart is absent.
    """
    directory = Path(directory)
    missing = [name for name in REQUIRED_TABLES if not (directory / f"{name}.parquet").is_file()]
    if missing:
        raise DashboardDataError(
            "the published marts are missing "
            + ", ".join(f"{name}.parquet" for name in missing)
            + ". Build and publish the marts: `gpucost build` (publishes after a good build) or "
            "`gpucost publish`, and set GPUCOST_PARQUET_DIR to the folder."
        )
    con = duckdb.connect(":memory:")
    try:
        for name in (*REQUIRED_TABLES, *OPTIONAL_TABLES):
            path = directory / f"{name}.parquet"
            if path.is_file():
                # A file opened here is read whole, so a publish that replaces it meanwhile does
                # not mix versions within one table.
                con.execute(f"create table {name} as select * from read_parquet(?)", [str(path)])
    except duckdb.Error as error:
        con.close()
        raise DashboardDataError(
            "cannot read the published Parquet files: "
            + first_line(error, hide=[str(directory)], hide_quoted=True)
        ) from error
    return con


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    rows = con.execute(
        "select count(*) from information_schema.tables where table_name = ?", [name]
    ).fetchall()
    return rows[0][0] > 0


def _rows(con: duckdb.DuckDBPyConnection, query: str, params: Sequence[Any] = ()) -> list[dict]:
    relation = con.execute(query, list(params))
    names = [column[0] for column in relation.description]
    return [dict(zip(names, row, strict=True)) for row in relation.fetchall()]


def _where(
    filters: Filters,
    *,
    month: str | None = "billing_period_start",
    cluster: str | None = "cluster_id",
    team: str | None = "team_id",
    extra: Sequence[str] = (),
) -> tuple[str, list[Any]]:
    """A where clause (and its parameters) applying the filters to the given columns."""
    clauses, params = list(extra), []
    if filters.month is not None and month:
        clauses.append(f"{month} = ?")
        params.append(filters.month)
    if filters.cluster is not None and cluster:
        if filters.cluster == NO_CLUSTER:
            clauses.append(f"{cluster} is null")
        else:
            clauses.append(f"{cluster} = ?")
            params.append(filters.cluster)
    if filters.team is not None and team:
        clauses.append(f"{team} = ?")
        params.append(filters.team)
    return ("where " + " and ".join(clauses)) if clauses else "", params


# --- the page's numbers -----------------------------------------------------------------------


def filter_options(con: duckdb.DuckDBPyConnection) -> dict[str, list]:
    """Months (newest first), clusters (plus NO_CLUSTER when some lines have none) and teams."""
    months = [
        row[0]
        for row in con.execute(
            """
            select billing_period_start from rpt_reconciliation
            union
            select billing_period_start from fct_cost_allocation
            order by 1 desc
            """
        ).fetchall()
        if row[0] is not None
    ]
    clusters = [
        row[0]
        for row in con.execute(
            "select distinct coalesce(cluster_id, ?) from fct_cost_allocation order by 1",
            [NO_CLUSTER],
        ).fetchall()
    ]
    teams = [
        row[0]
        for row in con.execute(
            """
            select team_id from dim_teams
            union
            select team_id from fct_cost_allocation
            order by 1
            """
        ).fetchall()
    ]
    return {"months": months, "clusters": clusters, "teams": teams}


def reconciliation_by_month(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[dict]:
    """Bill vs allocation per billing month and currency (month filter only: a bill is not split
    by cluster or team). ``is_reconciled`` is true when every row of the month reconciles."""
    where, params = _where(filters, cluster=None, team=None)
    return _rows(
        con,
        f"""
        select
            billing_period_start,
            billing_currency,
            sum(billed_cost) as billed_cost,
            sum(allocated_billed_cost) as allocated_billed_cost,
            sum(quarantined_billed_cost) as quarantined_billed_cost,
            sum(billed_residual) as billed_residual,
            sum(effective_cost) as effective_cost,
            sum(allocated_effective_cost) as allocated_effective_cost,
            sum(effective_residual) as effective_residual,
            sum(idle_billed_cost) as idle_billed_cost,
            sum(unallocated_billed_cost) as unallocated_billed_cost,
            sum(bill_line_count) as bill_line_count,
            sum(quarantined_line_count) as quarantined_line_count,
            bool_and(is_reconciled and billed_residual = 0 and effective_residual = 0)
                as is_reconciled,
        from rpt_reconciliation
        {where}
        group by billing_period_start, billing_currency
        order by billing_period_start desc, billing_currency
        """,
        params,
    )


def cost_by_owner(
    con: duckdb.DuckDBPyConnection, filters: Filters, dimension: str = "team"
) -> list[dict]:
    """Billed and effective cost per team / project / user of the selection, largest first.

    Teams and projects without a cluster filter are the statement's cents
    (``fct_chargeback_monthly``: the same figure as the statement table and the drill-down);
    users, and any owner of one cluster, are the exact allocation (``fct_cost_allocation``).
    ``cost_source`` names which."""
    column = DIMENSIONS[dimension]
    statement = filters.cluster is None and dimension != "user"
    where, params = _where(filters, cluster=None if statement else "cluster_id")
    table = "fct_chargeback_monthly" if statement else "fct_cost_allocation"
    return _rows(
        con,
        f"""
        select
            coalesce({column}, ?) as owner,
            billing_currency,
            sum(billed_cost) as billed_cost,
            sum(effective_cost) as effective_cost,
            '{table}' as cost_source,
        from {table}
        {where}
        group by all
        order by billed_cost desc, owner, billing_currency
        """,
        [NO_USER, *params],
    )


def key_figures(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[dict]:
    """Per currency: the bill (billed, allocated, quarantined, residual, reconciled) for the
    selected month(s), the total cost of the selection and its largest team (system owners
    ``__unallocated__`` / ``__idle__`` excluded).

    Without a cluster filter the selection's cost is the statement's (fct_chargeback_monthly, in
    the cents each team is charged, which add up to the bill); with one it is the exact
    allocation (fct_cost_allocation), which has the cluster. ``cost_source`` names which."""
    bill: dict[str, dict] = {}
    for row in reconciliation_by_month(con, filters):
        figures = bill.setdefault(
            row["billing_currency"],
            {
                "billing_currency": row["billing_currency"],
                "billed_cost": Decimal(0),
                "allocated_billed_cost": Decimal(0),
                "quarantined_billed_cost": Decimal(0),
                "billed_residual": Decimal(0),
                "effective_residual": Decimal(0),
                "is_reconciled": True,
            },
        )
        for key in (
            "billed_cost",
            "allocated_billed_cost",
            "quarantined_billed_cost",
            "billed_residual",
            "effective_residual",
        ):
            figures[key] += row[key]
        figures["is_reconciled"] = figures["is_reconciled"] and bool(row["is_reconciled"])
    if filters.cluster is None:
        source = "fct_chargeback_monthly"
        teams = [{"owner": row["team_id"], **row} for row in _team_statement_totals(con, filters)]
    else:
        source = "fct_cost_allocation"
        teams = cost_by_owner(con, filters, "team")
    for row in teams:
        figures = bill.setdefault(
            row["billing_currency"], {"billing_currency": row["billing_currency"]}
        )
        figures["cost_source"] = source
        figures["total_cost"] = figures.get("total_cost", Decimal(0)) + row["billed_cost"]
        if row["owner"] not in SYSTEM_TEAMS and "largest_team" not in figures:
            figures["largest_team"] = row["owner"]
            figures["largest_team_cost"] = row["billed_cost"]
    return [bill[currency] for currency in sorted(bill)]


def _team_statement_totals(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[dict]:
    where, params = _where(filters, cluster=None)
    return _rows(
        con,
        f"""
        select
            team_id,
            billing_currency,
            sum(billed_cost) as billed_cost,
        from fct_chargeback_monthly
        {where}
        group by all
        order by billed_cost desc, team_id, billing_currency
        """,
        params,
    )


def cost_over_time(
    con: duckdb.DuckDBPyConnection, filters: Filters, dimension: str = "team", top: int = 8
) -> list[dict]:
    """Daily billed cost per owner (day of ``charge_period_start_at``) of the daily charges: bill
    lines whose charge period is at most a day (periodic charges are :func:`periodic_charges`).
    Owners beyond the ``top`` largest of these charges are summed as ``(other)``."""
    column = DIMENSIONS[dimension]
    where, params = _where(filters, extra=[f"not {PERIODIC}"])
    return _rows(
        con,
        f"""
        with

        selected as (

            select
                coalesce({column}, ?) as owner,
                billing_currency,
                cast(charge_period_start_at as date) as cost_date,
                billed_cost,
            from fct_cost_allocation
            {where}

        ),

        ranked as (

            select
                owner,
                billing_currency,
                row_number() over (
                    partition by billing_currency order by sum(billed_cost) desc, owner
                ) as owner_rank,
            from selected
            group by owner, billing_currency

        ),

        final as (

            select
                selected.cost_date,
                case when ranked.owner_rank <= ? then selected.owner else ? end as owner,
                selected.billing_currency,
                sum(selected.billed_cost) as billed_cost,
            from selected
            inner join ranked
                on selected.owner = ranked.owner
                and selected.billing_currency = ranked.billing_currency
            group by all

        )

        select * from final
        order by cost_date, billing_currency, billed_cost desc, owner
        """,
        [NO_USER, *params, top, OTHER],
    )


def gpu_cost_by_team(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[dict]:
    """GPU node cost per team before idle spreading: the cost of the GPU time allocated to the
    team's workloads, the utilised part (busy GPU time) and the wasted part (allocated, not used),
    with the GPU-hours. The ``__idle__`` row is GPU time nobody requested (all of it wasted)."""
    where, params = _where(filters)
    return _rows(
        con,
        f"""
        select
            team_id,
            billing_currency,
            sum(billed_cost) as billed_cost,
            sum(utilised_cost) as utilised_cost,
            sum(wasted_cost) as wasted_cost,
            sum(gpu_hours) as gpu_hours,
            sum(used_gpu_hours) as used_gpu_hours,
        from fct_gpu_usage
        {where}
        group by all
        order by billed_cost desc, team_id
        """,
        params,
    )


def idle_cost_by_team(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[dict]:
    """Who carries the idle capacity of GPU nodes (allocation_kind idle), split by the resource
    left idle (``gpu_cost``, ``cpu_cost``, ``memory_cost``, named by
    :func:`gpucost.commands.labels.resource_part`); ``__idle__`` is idle placed on nobody.

    Without a cluster filter ``billed_cost`` is the statement's idle cents and the parts are
    apportioned to them (largest remainder); with one, all are exact."""
    where, params = _where(filters, extra=["allocation_kind = 'idle'"])
    exact = _rows(
        con,
        f"""
        select
            team_id,
            billing_currency,
            allocation_basis,
            sum(billed_cost) as billed_cost,
        from fct_cost_allocation
        {where}
        group by all
        """,
        params,
    )
    parts: dict[tuple[str, str], dict[str, Decimal]] = {}
    for row in exact:
        part = resource_part(row["allocation_basis"]).lower()
        amounts = parts.setdefault((row["team_id"], row["billing_currency"]), {})
        amounts[part] = amounts.get(part, Decimal(0)) + row["billed_cost"]
    totals = {key: sum(amounts.values(), Decimal(0)) for key, amounts in parts.items()}
    source = "fct_cost_allocation"
    if filters.cluster is None:
        source = "fct_chargeback_monthly"
        where, params = _where(filters, cluster=None)
        totals = {
            (row["team_id"], row["billing_currency"]): row["billed_cost"]
            for row in _rows(
                con,
                f"""
                select team_id, billing_currency, sum(idle_cost) as billed_cost,
                from fct_chargeback_monthly
                {where}
                group by all
                having sum(idle_cost) <> 0
                """,
                params,
            )
        }
    rows = []
    for key, total in totals.items():
        amounts = parts.get(key) or {"gpu": total}
        if source == "fct_chargeback_monthly":
            amounts = apportion(amounts, total)
        rows.append(
            {
                "team_id": key[0],
                "billing_currency": key[1],
                "billed_cost": total,
                **{f"{part}_cost": amounts.get(part, Decimal(0)) for part in IDLE_PARTS},
                "cost_source": source,
            }
        )
    return sorted(rows, key=lambda row: (-row["billed_cost"], row["team_id"]))


def unallocated_by_reason(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[dict]:
    """Money whose project is unknown, per reason in words (:func:`labels.reason_label`; reasons
    with the same words are summed), exact."""
    where, params = _where(filters, extra=["allocation_kind = 'unallocated'"])
    rows = _rows(
        con,
        f"""
        select
            unallocated_reason,
            billing_currency,
            sum(billed_cost) as billed_cost,
            list(distinct workload_id) filter (where workload_id is not null) as workloads,
            count(*) as allocation_row_count,
        from fct_cost_allocation
        {where}
        group by all
        """,
        params,
    )
    merged: dict[tuple[str, str], dict] = {}
    for row in rows:
        reason = reason_label(row["unallocated_reason"])
        item = merged.setdefault(
            (reason, row["billing_currency"]),
            {
                "reason": reason,
                "billing_currency": row["billing_currency"],
                "billed_cost": Decimal(0),
                "workloads": set(),
                "allocation_row_count": 0,
                "codes": [],
            },
        )
        item["billed_cost"] += row["billed_cost"]
        item["workloads"].update(row["workloads"] or ())
        item["allocation_row_count"] += row["allocation_row_count"]
        item["codes"].append(row["unallocated_reason"])
    out = []
    for item in merged.values():
        workloads = item.pop("workloads")
        out.append({**item, "workload_count": len(workloads)})
    return sorted(out, key=lambda row: (-row["billed_cost"], row["reason"]))


def unallocated_by_team(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[dict]:
    """Money whose project is unknown, per team label (``__unallocated__`` when none either):
    the statement's unallocated cents without a cluster filter, the exact allocation with one."""
    where, params = _where(filters, extra=["allocation_kind = 'unallocated'"])
    rows = _rows(
        con,
        f"""
        select
            team_id,
            billing_currency,
            sum(billed_cost) as billed_cost,
            count(distinct workload_id) as workload_count,
        from fct_cost_allocation
        {where}
        group by all
        order by billed_cost desc, team_id
        """,
        params,
    )
    if filters.cluster is not None:
        return rows
    counts = {(row["team_id"], row["billing_currency"]): row["workload_count"] for row in rows}
    where, params = _where(filters, cluster=None)
    statement = _rows(
        con,
        f"""
        select team_id, billing_currency, sum(unallocated_cost) as billed_cost,
        from fct_chargeback_monthly
        {where}
        group by all
        having sum(unallocated_cost) <> 0
        order by billed_cost desc, team_id
        """,
        params,
    )
    for row in statement:
        row["workload_count"] = counts.get((row["team_id"], row["billing_currency"]), 0)
    return statement


def budget_status(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[dict] | None:
    """Budget burn rows (``rpt_budget_status``), or None when that mart was not published.
    Month and team filters apply; budgets are not per cluster."""
    if not has_table(con, "rpt_budget_status"):
        return None
    where, params = _where(filters, cluster=None)
    return _rows(
        con,
        f"""
        select
            team_id,
            project_id,
            billing_period_start,
            billing_currency,
            budget_amount,
            month_to_date_cost,
            forecast_cost,
            burn_ratio,
            forecast_ratio,
            status,
        from rpt_budget_status
        {where}
        order by billing_period_start desc, team_id, project_id nulls first
        """,
        params,
    )


def chargeback_by_team(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[dict]:
    """The statement in cents (fct_chargeback_monthly) per month, currency and team, by kind.
    Month and team filters apply; the statement is not split by cluster."""
    where, params = _where(filters, cluster=None)
    return _rows(
        con,
        f"""
        select
            billing_period_start,
            billing_currency,
            team_id,
            sum(direct_cost) as direct_cost,
            sum(usage_cost) as usage_cost,
            sum(idle_cost) as idle_cost,
            sum(shared_cost) as shared_cost,
            sum(unallocated_cost) as unallocated_cost,
            sum(billed_cost) as billed_cost,
            sum(effective_cost) as effective_cost,
        from fct_chargeback_monthly
        {where}
        group by all
        order by billing_period_start desc, billing_currency, billed_cost desc, team_id
        """,
        params,
    )
