"""The chargeback summary printed after a build: per month and team, and the reconciliation line."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

KINDS = ("direct", "usage", "idle", "shared", "unallocated")

TEAM_SQL = """
select
    cast(billing_period_start as varchar) as month,
    billing_currency,
    team_id,
    sum(direct_cost), sum(usage_cost), sum(idle_cost), sum(shared_cost), sum(unallocated_cost),
    sum(billed_cost)
from marts.fct_chargeback_monthly
group by all
order by month, billing_currency, sum(billed_cost) desc, team_id
"""

TOTAL_SQL = """
select
    cast(billing_period_start as varchar) as month,
    billing_currency,
    sum(billed_cost) as bill_exact,
    sum(allocated_billed_cost) as allocated_exact,
    sum(billed_residual) as residual,
    sum(quarantined_line_count) as quarantined_lines,
    bool_and(is_reconciled) as reconciled
from marts.rpt_reconciliation
group by all
order by month, billing_currency
"""


def read_summary_rows(warehouse: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Read the rows the summary needs from the warehouse (opened read-only, then closed)."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        return {
            "teams": con.sql(TEAM_SQL).fetchall(),
            "totals": con.sql(TOTAL_SQL).fetchall(),
        }


def _money(value: Decimal) -> str:
    return f"{value:,.2f}"


def chargeback_summary(
    rows: dict[str, Sequence[tuple[Any, ...]]], warehouse: Path
) -> tuple[str, bool]:
    """Format the summary; returns the text and whether every month reconciles to the cent."""
    lines: list[str] = []
    all_reconciled = True
    teams_by_month: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for row in rows["teams"]:
        teams_by_month.setdefault((row[0], row[1]), []).append(row)
    for month, currency, bill_exact, allocated_exact, residual, quarantined, reconciled in rows[
        "totals"
    ]:
        team_rows = teams_by_month.get((month, currency), [])
        statement_total = sum((row[8] for row in team_rows), Decimal(0))
        bill_cents = Decimal(bill_exact).quantize(Decimal("0.01"), rounding="ROUND_HALF_UP")
        month_ok = bool(reconciled) and statement_total == bill_cents
        all_reconciled &= month_ok
        lines.append(f"Chargeback {month[:7]} ({currency})")
        header = f"  {'team':<18}" + "".join(f"{kind:>13}" for kind in KINDS) + f"{'total':>14}"
        lines.append(header)
        for row in team_rows:
            cells = "".join(f"{_money(value):>13}" for value in row[3:8])
            lines.append(f"  {row[2]:<18}{cells}{_money(row[8]):>14}")
        lines.append(f"  {'statement total':<83}{_money(statement_total):>14}")
        lines.append(f"  {'bill total':<83}{_money(bill_cents):>14}")
        lines.append(
            f"  exact bill {bill_exact:f} = allocated {allocated_exact:f}, residual {residual:f}; "
            f"quarantined lines {quarantined}: "
            + ("RECONCILED to the cent" if month_ok else "NOT RECONCILED")
        )
        lines.append("")
    if not rows["totals"]:
        lines.append("No bill lines in the warehouse: is the landing zone empty?")
    lines.append(f"Warehouse: {warehouse}")
    return "\n".join(lines), all_reconciled and bool(rows["totals"])
