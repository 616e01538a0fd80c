"""What backs a statement in a dispute: GPU-hours and unit rates per GPU model, and the workloads.

Two sections of each team's statement (:mod:`gpucost.commands.statements`), read from the marts:

- **GPU-hours and unit rates** (``fct_gpu_usage``, and ``fct_cost_allocation``'s idle rows on the
  same GPU node lines): per GPU model, the team's GPU-hours, the cost of that GPU time, the idle
  capacity it carried, and the effective rates (cost per GPU-hour) with and without the idle share.
  Amounts are the exact DECIMAL sums rounded to cents by largest remainder
  (:func:`gpucost.core.money.round_to_cents`); rates divide the exact amounts, never the cents.
- **The workload appendix** (``rpt_statement_workloads``): every workload whose cost is on the
  statement, with its project, user, GPU-hours, cost, attribution method, confidence and, for a
  placement by the model or a rule, the signals behind it. The cents are nested in the statement's
  attribution breakdown: each method's cents (already adding up to the statement total) are split
  over that method's workloads, plus one "not tied to one workload" remainder when the method also
  placed money on no workload (the idle share, spread per owner; tagged lines; shared services).
  So the appendix rows of a method add up exactly to that method's line of the breakdown, and the
  model-placed rows to the model-placed part of the charge.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any, TypeVar

from gpucost.commands.safe_output import Pseudonymiser, csv_row
from gpucost.commands.statements_labels import (
    INFERRED_METHODS,
    method_label,
    method_order,
)
from gpucost.core.money import round_to_cents, to_units

CENT = Decimal("0.01")
RATE_QUANTUM = Decimal("0.0001")
HOURS_QUANTUM = Decimal("0.000001")
OTHER_LINES = "__lines_without_workload__"
"""The appendix key of a method's money on bill lines that name no workload (tags, shares)."""

K = TypeVar("K", bound=Hashable)


def apportion(exact: Mapping[K, Decimal], total_cents: Decimal | None = None) -> dict[K, Decimal]:
    """``exact`` rounded to cents adding up to ``total_cents`` (default: the exact total rounded
    half away from zero), by :func:`gpucost.core.money.round_to_cents`, the one largest-remainder
    rule."""
    units = {key: to_units(value) for key, value in exact.items()}
    target = None if total_cents is None else int((total_cents / CENT).to_integral_value())
    cents = round_to_cents(units, target)
    return {key: (value * CENT).quantize(CENT) for key, value in cents.items()}


def rate(amount: Decimal, hours: Decimal) -> Decimal | None:
    """Cost per GPU-hour, to 1/100 of a cent; None without hours (no rate, not a zero one)."""
    if not hours:
        return None
    return (Decimal(amount) / Decimal(hours)).quantize(RATE_QUANTUM)


# -------------------------------------------------------------------------------------------------
# GPU-hours and unit rates per GPU model


GPU_SQL = """
with

usage as (
    select * from marts.fct_gpu_usage
    where billing_period_start = $month and ($team is null or team_id = $team)
),

line_models as (
    select distinct charge_id, gpu_model from marts.fct_gpu_usage
    where billing_period_start = $month
),

hours as (
    select team_id, billing_currency, gpu_model, usage_kind,
        sum(gpu_hours) as gpu_hours, sum(billed_cost) as gpu_time_cost
    from usage
    group by all
),

-- the idle GPU time each team carries under the idle policy, by the GPU model of the line
idle as (
    select allocations.team_id, allocations.billing_currency, line_models.gpu_model,
        'usage' as usage_kind, sum(allocations.billed_cost) as idle_cost
    from marts.fct_cost_allocation as allocations
    inner join line_models on allocations.charge_id = line_models.charge_id
    where allocations.billing_period_start = $month
        and ($team is null or allocations.team_id = $team)
        and allocations.allocation_kind = 'idle'
        and allocations.allocation_basis not like '%:%'
    group by all
)

select
    coalesce(hours.team_id, idle.team_id),
    coalesce(hours.billing_currency, idle.billing_currency),
    coalesce(hours.gpu_model, idle.gpu_model),
    coalesce(hours.usage_kind, idle.usage_kind),
    coalesce(hours.gpu_hours, 0),
    coalesce(hours.gpu_time_cost, 0),
    coalesce(idle.idle_cost, 0)
from hours
full outer join idle
    on hours.team_id = idle.team_id and hours.billing_currency = idle.billing_currency
    and hours.gpu_model = idle.gpu_model and hours.usage_kind = idle.usage_kind
order by 1, 2, 4 desc, 3
"""


@dataclass
class GpuModelLine:
    """One GPU model on a statement: hours and cents, rates from the exact amounts."""

    gpu_model: str
    usage_kind: str
    gpu_hours: Decimal
    gpu_time_cost: Decimal
    idle_cost: Decimal
    gpu_time_rate: Decimal | None
    effective_rate: Decimal | None

    @property
    def label(self) -> str:
        if self.usage_kind == "idle":
            return f"{self.gpu_model} (idle: no workload took it; the idle policy places its cost)"
        return self.gpu_model


def build_gpu_lines(rows: Iterable[tuple[Any, ...]]) -> dict[tuple[str, str], list[GpuModelLine]]:
    """(team, currency) -> its GPU model lines, from :data:`GPU_SQL`'s rows (pure)."""
    grouped: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for row in rows:
        grouped.setdefault((row[0], row[1]), []).append(row)
    out: dict[tuple[str, str], list[GpuModelLine]] = {}
    for key, team_rows in grouped.items():
        exact_time = {(r[2], r[3]): Decimal(r[5]) for r in team_rows}
        exact_idle = {(r[2], r[3]): Decimal(r[6]) for r in team_rows}
        time_cents = apportion(exact_time)
        idle_cents = apportion(exact_idle)
        lines = []
        for _, _, model, kind, hours, time_cost, idle_cost in team_rows:
            hours = Decimal(hours)
            lines.append(
                GpuModelLine(
                    gpu_model=model,
                    usage_kind=kind,
                    gpu_hours=hours.quantize(HOURS_QUANTUM),
                    gpu_time_cost=time_cents[(model, kind)],
                    idle_cost=idle_cents[(model, kind)],
                    gpu_time_rate=rate(Decimal(time_cost), hours),
                    effective_rate=rate(Decimal(time_cost) + Decimal(idle_cost), hours),
                )
            )
        out[key] = lines
    return out


# -------------------------------------------------------------------------------------------------
# The workload appendix


APPENDIX_SQL = """
select team_id, billing_currency, workload_id, project_id, user_id, attribution_method,
    attribution_rule_id, attribution_confidence, attribution_signals, gpu_hours, billed_cost
from marts.rpt_statement_workloads
where billing_period_start = $month and ($team is null or team_id = $team)
order by 1, 2, 3, 4, 6, 7
"""


@dataclass
class WorkloadLine:
    """One workload of a statement's appendix (its cost in cents, nested in its method's cents)."""

    workload_id: str
    project_id: str
    user_id: str | None
    attribution_method: str
    attribution_rule_id: str | None
    attribution_confidence: Decimal | None
    attribution_signals: str | None
    gpu_hours: Decimal
    billed_cost: Decimal

    @property
    def is_inferred(self) -> bool:
        return self.attribution_method in INFERRED_METHODS


def build_appendix(
    rows: Iterable[tuple[Any, ...]],
    method_exact: Mapping[str, Decimal],
    method_cents: Mapping[str, Decimal],
) -> tuple[list[WorkloadLine], dict[str, Decimal]]:
    """One statement's appendix (pure): its workload lines, and per method the cents of bill lines
    without a workload. ``rows`` are the statement's rows of :data:`APPENDIX_SQL` (from the team
    and currency on); ``method_exact`` / ``method_cents`` its attribution breakdown, exact and in
    cents. Each method's cents are split over its workloads and the remainder, so the lines of a
    method plus its remainder add up to ``method_cents[method]`` exactly."""
    by_method: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        by_method.setdefault(row[3], []).append(row)
    lines: list[WorkloadLine] = []
    remainders: dict[str, Decimal] = {}
    for method in sorted(set(by_method) | set(method_cents), key=method_order):
        method_rows = by_method.get(method, [])
        exact: dict[Any, Decimal] = {
            index: Decimal(row[8]) for index, row in enumerate(method_rows)
        }
        other = Decimal(method_exact.get(method, 0)) - sum(exact.values(), Decimal(0))
        if other:
            exact[OTHER_LINES] = other
        if not exact:
            continue
        cents = apportion(exact, method_cents.get(method, Decimal("0.00")))
        if OTHER_LINES in cents:
            remainders[method] = cents[OTHER_LINES]
        for index, row in enumerate(method_rows):
            workload, project, user, _, rule_id, confidence, signals, hours, _ = row
            lines.append(
                WorkloadLine(
                    workload_id=workload,
                    project_id=project,
                    user_id=user,
                    attribution_method=method,
                    attribution_rule_id=rule_id,
                    attribution_confidence=confidence,
                    attribution_signals=signals,
                    gpu_hours=Decimal(hours),
                    billed_cost=cents[index],
                )
            )
    lines.sort(key=lambda line: (method_order(line.attribution_method), -line.billed_cost))
    return lines, remainders


def read_sections(
    con: Any, month: date, team: str | None, pseudonymiser: Pseudonymiser | None = None
) -> tuple[list, list]:
    """The GPU rows and the appendix rows of ``month`` (one team's, or all) from the marts. User
    ids, and the ``user=<id>`` tokens of the signals, are pseudonymised when the settings say so
    (:class:`gpucost.commands.safe_output.Pseudonymiser`: the same pseudonym as in the Parquet
    marts and the FOCUS export)."""
    if pseudonymiser is None:
        pseudonymiser = Pseudonymiser.from_settings()
    params = {"month": month, "team": team}
    gpu_rows = con.execute(GPU_SQL, params).fetchall()
    appendix_rows = [
        (*row[:4], pseudonymiser(row[4]), *row[5:8], pseudonymiser.signals(row[8]), *row[9:])
        for row in con.execute(APPENDIX_SQL, params).fetchall()
    ]
    return gpu_rows, appendix_rows


# -------------------------------------------------------------------------------------------------
# Rendering


GPU_CSV_COLUMNS = (
    "statement_month",
    "team_id",
    "billing_currency",
    "gpu_model",
    "usage_kind",
    "gpu_hours",
    "gpu_time_cost",
    "idle_cost",
    "gpu_time_rate_per_gpu_hour",
    "effective_rate_per_gpu_hour",
)

WORKLOAD_CSV_COLUMNS = (
    "statement_month",
    "team_id",
    "billing_currency",
    "workload_id",
    "project_id",
    "user_id",
    "gpu_hours",
    "billed_cost",
    "attribution_method",
    "method_meaning",
    "attribution_rule_id",
    "attribution_confidence",
    "attribution_signals",
)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def render_gpu_csv(head: list[str], lines: Iterable[GpuModelLine]) -> str:
    """GPU model lines as CSV (cells neutralised by :func:`safe_output.csv_row`)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(GPU_CSV_COLUMNS)
    for line in lines:
        writer.writerow(
            csv_row(
                [
                    *head,
                    line.gpu_model,
                    line.usage_kind,
                    _text(line.gpu_hours),
                    f"{line.gpu_time_cost:.2f}",
                    f"{line.idle_cost:.2f}",
                    _text(line.gpu_time_rate),
                    _text(line.effective_rate),
                ]
            )
        )
    return buffer.getvalue()


def render_workloads_csv(
    head: list[str], lines: Iterable[WorkloadLine], remainders: Mapping[str, Decimal]
) -> str:
    """The appendix as CSV: a row per workload, then a row per method's bill lines without a
    workload (workload_id empty), so the rows add up to the statement total."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(WORKLOAD_CSV_COLUMNS)
    for line in lines:
        writer.writerow(
            csv_row(
                [
                    *head,
                    line.workload_id,
                    line.project_id,
                    _text(line.user_id),
                    _text(line.gpu_hours),
                    f"{line.billed_cost:.2f}",
                    line.attribution_method,
                    method_label(line.attribution_method),
                    _text(line.attribution_rule_id),
                    _text(line.attribution_confidence),
                    _text(line.attribution_signals),
                ]
            )
        )
    for method, amount in sorted(remainders.items(), key=lambda item: method_order(item[0])):
        writer.writerow(
            csv_row(
                [*head, "", "", "", "", f"{amount:.2f}", method, method_label(method), "", "", ""]
            )
        )
    return buffer.getvalue()


def _td(value: str, numeric: bool = False) -> str:
    css = ' class="num"' if numeric else ""
    return f"<td{css}>{html.escape(value)}</td>"


def _money(value: Decimal) -> str:
    return f"{value:,.2f}"


def _rate(value: Decimal | None) -> str:
    return "-" if value is None else f"{value:,.4f}"


def render_gpu_html(lines: list[GpuModelLine], currency: str) -> str:
    if not lines:
        return "<p>No GPU time on this statement.</p>"
    rows = "".join(
        "<tr>"
        + _td(line.label)
        + _td(f"{line.gpu_hours:,.2f}", numeric=True)
        + _td(_money(line.gpu_time_cost), numeric=True)
        + _td(_money(line.idle_cost), numeric=True)
        + _td(_rate(line.gpu_time_rate), numeric=True)
        + _td(_rate(line.effective_rate), numeric=True)
        + "</tr>"
        for line in lines
    )
    cur = html.escape(currency)
    return (
        '<table><thead><tr><th>GPU model</th><th class="num">GPU-hours</th>'
        '<th class="num">GPU time</th><th class="num">idle carried</th>'
        f'<th class="num">{cur} / GPU-hour</th><th class="num">with idle</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
        '<p class="note">GPU-hours on the allocation basis (<code>fct_gpu_usage</code>); GPU '
        "time is their share of the GPU node lines, idle carried the idle GPU time placed on the "
        "team under the idle policy. Rates divide the exact amounts by the hours. The GPU node "
        "lines' CPU and memory parts, volumes and shared services are on the statement lines, "
        "not here.</p>"
    )


def render_appendix_html(lines: list[WorkloadLine], remainders: Mapping[str, Decimal]) -> str:
    if not lines and not remainders:
        return "<p>No workload is behind this statement: every amount is a bill line.</p>"
    rows = []
    for line in lines:
        evidence = line.attribution_signals or ""
        if line.attribution_rule_id and not evidence:
            evidence = line.attribution_rule_id
        confidence = "" if line.attribution_confidence is None else f"{line.attribution_confidence}"
        css = ' class="inferred"' if line.is_inferred else ""
        rows.append(
            f"<tr{css}>"
            + _td(line.workload_id)
            + _td(line.project_id)
            + _td(line.user_id or "")
            + _td(f"{line.gpu_hours:,.2f}", numeric=True)
            + _td(_money(line.billed_cost), numeric=True)
            + _td(line.attribution_method)
            + _td(confidence, numeric=True)
            + _td(evidence)
            + "</tr>"
        )
    for method, amount in sorted(remainders.items(), key=lambda item: method_order(item[0])):
        rows.append(
            "<tr>"
            + _td("not tied to one workload")
            + _td("")
            + _td("")
            + _td("")
            + _td(_money(amount), numeric=True)
            + _td(method)
            + _td("")
            + _td(method_label(method))
            + "</tr>"
        )
    return (
        "<table><thead><tr><th>workload</th><th>project</th><th>user</th>"
        '<th class="num">GPU-hours</th><th class="num">billed</th><th>method</th>'
        '<th class="num">confidence</th><th>signals behind the placement</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
