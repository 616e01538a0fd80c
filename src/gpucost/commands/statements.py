"""``gpucost statements``: one statement per team and month, as CSV and as a printable HTML page.

    gpucost statements --month 2026-10                 every team of the month
    gpucost statements --month 2026-10 --team nlp      one team
    gpucost statements --mode showback                 present every statement as showback

The statement lines are the cents of ``marts.fct_chargeback_monthly`` (by project and cost kind),
so a statement's total is the mart's total to the cent and the month's statements add up to the
bill. The other sections explain those cents: the policy behind each kind (``allocation_basis`` of
``fct_cost_allocation``), the money by attribution method and, once ``fct_cost_allocation`` has an
``attribution_confidence`` column, by confidence band. Those breakdowns are apportioned to the
statement's cents by largest remainder, so they add up to the same total. Whether a team is charged
or only informed comes from the seed ``team_billing_modes`` (default chargeback).
"""

from __future__ import annotations

import argparse
import csv
import html
import io
import re
import sys
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

from gpucost.commands.safe_output import csv_row
from gpucost.core.money import round_to_cents, to_units

KINDS = ("direct", "usage", "idle", "shared", "unallocated")
MODES = ("chargeback", "showback")
DEFAULT_MODE = "chargeback"
MODE_LABELS = {
    "chargeback": "Amount to be charged",
    "showback": "For information - not charged",
}
ATTRIBUTION_METHODS = ("bill_tag", "pod_label", "slurm_account", "policy", "none")
KIND_LABELS = {
    "direct": "Tagged bill lines",
    "usage": "GPU time of the project's workloads (and their volumes)",
    "idle": "Idle GPU time carried under the idle policy",
    "shared": "Share of untagged overheads (storage, network, support, tax, credits)",
    "unallocated": "Money whose project is not known",
}
POLICY_LABELS = {
    "whole_line": "a tagged bill line, charged whole",
    "requested": "GPU time requested (Kubernetes GPU requests x time)",
    "used": "GPU time used (DCGM busy time)",
    "max": "the larger of requested and used GPU time",
    "idle_proportional": "idle GPU time spread in proportion to the workloads' GPU time "
    "(idle policy: proportional)",
    "idle_even": "idle GPU time spread equally per owner (idle policy: even)",
    "idle_platform": "idle GPU time carried by the platform team (idle policy: platform)",
    "idle_visible": "idle GPU time kept visible as __idle__ (idle policy: visible)",
    "shared_by_effective_cost": "spread in proportion to the effective cost already placed on "
    "each owner",
    "volume_claim": "a storage volume, split by the time each workload held its claim",
}
METHOD_LABELS = {
    "bill_tag": "a project tag on the bill line",
    "pod_label": "the workload's project label (Kubernetes)",
    "slurm_account": "the Slurm job's account",
    "override": "a human correction (seed attribution_overrides)",
    "rule": "a declarative attribution rule (seed attribution_rules)",
    "model": "the learned attribution model, at or above the confidence threshold",
    "suspense": "parked with the suspense owner (model below the confidence threshold)",
    "shared_workload": "a shared workload split by its consumers' weights",
    "policy": "an allocation policy (shared overheads)",
    "none": "not attributed (unallocated)",
}
# Bands of a numeric attribution_confidence in [0, 1] (lower bound inclusive).
CONFIDENCE_BANDS = (("high", Decimal("0.9")), ("medium", Decimal("0.5")), ("low", Decimal(0)))
NOT_SCORED = "not scored"
CENT = Decimal("0.01")
MONTH_PATTERN = re.compile(r"\d{4}-(0[1-9]|1[0-2])")

K = TypeVar("K", bound=Hashable)


# -------------------------------------------------------------------------------------------------
# Pure helpers


def _apportion(exact: Mapping[K, Decimal], total: Decimal) -> dict[K, Decimal]:
    """``exact`` rounded to cents adding up to ``total`` (a cent amount), by
    :func:`gpucost.core.money.round_to_cents` (largest remainder)."""
    units = {key: to_units(value) for key, value in exact.items()}
    cents = round_to_cents(units, int((total / CENT).to_integral_value()))
    return {key: (value * CENT).quantize(CENT) for key, value in cents.items()}


def confidence_band(value: Any) -> str:
    """The band of one attribution_confidence value: numbers by CONFIDENCE_BANDS, text as is."""
    if value is None:
        return NOT_SCORED
    if isinstance(value, str):
        return value.strip() or NOT_SCORED
    number = Decimal(str(value))
    for band, lower in CONFIDENCE_BANDS:
        if number >= lower:
            return band
    return CONFIDENCE_BANDS[-1][0]


def money(value: Decimal) -> str:
    """Cents with thousands separators, exactly (Decimal formatting never goes through a float)."""
    return f"{value:,.2f}"


def safe_name(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", value)


# -------------------------------------------------------------------------------------------------
# The statement


@dataclass
class StatementLine:
    project_id: str
    project_name: str
    cost_kind: str
    policy: str
    billed_cost: Decimal


@dataclass
class ProjectTotal:
    project_id: str
    project_name: str
    billed_cost: Decimal
    effective_cost: Decimal


@dataclass
class Statement:
    """One team's statement for one month and currency; every amount in cents."""

    month: date
    team_id: str
    team_name: str
    billing_mode: str
    billing_currency: str
    lines: list[StatementLine]
    projects: list[ProjectTotal]
    kind_totals: dict[str, Decimal]
    total_billed: Decimal
    total_effective: Decimal
    policies: list[tuple[str, str, Decimal]] = field(default_factory=list)
    attribution: list[tuple[str, Decimal]] = field(default_factory=list)
    confidence: list[tuple[str, Decimal]] | None = None
    as_of_date: date | None = None

    @property
    def month_label(self) -> str:
        return self.month.strftime("%Y-%m")

    @property
    def mode_label(self) -> str:
        return MODE_LABELS[self.billing_mode]

    @property
    def file_stem(self) -> str:
        return f"statement_{self.month_label}_{safe_name(self.team_id)}_{self.billing_currency}"


CSV_COLUMNS = (
    "statement_month",
    "team_id",
    "team_name",
    "billing_mode",
    "billing_currency",
    "line_type",
    "project_id",
    "project_name",
    "cost_kind",
    "policy",
    "description",
    "billed_cost",
    "effective_cost",
)


def render_csv(statement: Statement) -> str:
    """The statement as CSV: a ``line`` per project and non-zero cost kind, a ``project_total`` per
    project and one ``total`` row (its description says whether the amount is charged). Text from
    data that a spreadsheet would run as a formula is neutralised (:func:`csv_cell`)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)

    def write(row: list[str]) -> None:
        writer.writerow(csv_row(row))

    head = [
        statement.month_label,
        statement.team_id,
        statement.team_name,
        statement.billing_mode,
        statement.billing_currency,
    ]
    for project in statement.projects:
        for line in statement.lines:
            if line.project_id != project.project_id:
                continue
            write(
                [
                    *head,
                    "line",
                    line.project_id,
                    line.project_name,
                    line.cost_kind,
                    line.policy,
                    KIND_LABELS.get(line.cost_kind, line.cost_kind),
                    f"{line.billed_cost:.2f}",
                    "",
                ]
            )
        write(
            [
                *head,
                "project_total",
                project.project_id,
                project.project_name,
                "",
                "",
                "Project total",
                f"{project.billed_cost:.2f}",
                f"{project.effective_cost:.2f}",
            ]
        )
    write(
        [
            *head,
            "total",
            "",
            "",
            "",
            "",
            statement.mode_label,
            f"{statement.total_billed:.2f}",
            f"{statement.total_effective:.2f}",
        ]
    )
    return buffer.getvalue()


HTML_STYLE = """
  :root { --ink: #1d2430; --muted: #5b6575; --rule: #d5dae1; --accent: #2454a6; --show: #8a5a00; }
  * { box-sizing: border-box; }
  body { font: 10.5pt/1.45 "Helvetica Neue", Arial, sans-serif; color: var(--ink);
         margin: 2.2em auto; max-width: 52em; padding: 0 1.5em; }
  h1 { font-size: 17pt; margin: 0 0 0.1em; }
  h2 { font-size: 11.5pt; margin: 1.8em 0 0.5em; border-bottom: 1px solid var(--rule);
       padding-bottom: 0.2em; }
  .meta { color: var(--muted); margin: 0 0 1.2em; }
  .amount { border: 2px solid var(--accent); border-radius: 4px; padding: 0.7em 1em; margin: 1em 0;
            display: flex; justify-content: space-between; align-items: baseline; }
  .amount.showback { border-color: var(--show); border-style: dashed; }
  .amount .label { font-weight: 600; }
  .amount .value { font-size: 16pt; font-weight: 700; font-variant-numeric: tabular-nums; }
  table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
  th, td { text-align: left; padding: 0.28em 0.5em; border-bottom: 1px solid var(--rule);
           vertical-align: top; }
  th { font-size: 9pt; text-transform: uppercase; letter-spacing: 0.03em; color: var(--muted); }
  td.num, th.num { text-align: right; white-space: nowrap; }
  tr.subtotal td { font-weight: 600; border-bottom: 1.5px solid var(--ink); }
  tr.total td { font-weight: 700; font-size: 11.5pt; border-top: 2px solid var(--ink);
                border-bottom: none; }
  .note { color: var(--muted); font-size: 9pt; }
  code { font-size: 9pt; }
  @page { size: A4; margin: 16mm 14mm; }
  @media print {
    body { margin: 0; max-width: none; padding: 0; font-size: 9.5pt; }
    h2 { break-after: avoid; }
    tr, .amount { break-inside: avoid; }
    .amount { border-width: 1.5pt; }
  }
"""


def _cell(value: str, numeric: bool = False) -> str:
    css = ' class="num"' if numeric else ""
    return f"<td{css}>{html.escape(value)}</td>"


def _policy_text(basis: str) -> str:
    return POLICY_LABELS.get(basis, basis)


def render_html(statement: Statement) -> str:
    """A self-contained printable page (inline CSS, no external assets)."""
    esc = html.escape
    cur = statement.billing_currency
    mode_class = "showback" if statement.billing_mode == "showback" else "chargeback"
    rows: list[str] = []
    for project in statement.projects:
        lines = [line for line in statement.lines if line.project_id == project.project_id]
        for index, line in enumerate(lines):
            name = f"{project.project_name} ({project.project_id})" if index == 0 else ""
            rows.append(
                "<tr>"
                + _cell(name)
                + _cell(line.cost_kind)
                + _cell(" + ".join(_policy_text(b) for b in line.policy.split("+") if b))
                + _cell(money(line.billed_cost), numeric=True)
                + "</tr>"
            )
        rows.append(
            '<tr class="subtotal">'
            + _cell(f"Total {project.project_name}" if lines else project.project_name)
            + _cell("")
            + _cell(f"effective (amortised) {money(project.effective_cost)}")
            + _cell(money(project.billed_cost), numeric=True)
            + "</tr>"
        )
    rows.append(
        '<tr class="total">'
        + _cell(statement.mode_label)
        + _cell("")
        + _cell(f"effective (amortised) {money(statement.total_effective)}")
        + _cell(f"{money(statement.total_billed)} {cur}", numeric=True)
        + "</tr>"
    )

    kind_rows = "".join(
        "<tr>"
        + _cell(kind)
        + _cell(KIND_LABELS[kind])
        + _cell(money(statement.kind_totals.get(kind, Decimal(0))), numeric=True)
        + "</tr>"
        for kind in KINDS
    )
    policy_rows = "".join(
        "<tr>"
        + _cell(kind)
        + f"<td><code>{esc(basis)}</code> - {esc(_policy_text(basis))}</td>"
        + _cell(money(amount), numeric=True)
        + "</tr>"
        for kind, basis, amount in statement.policies
    )
    attribution_rows = "".join(
        "<tr>"
        + f"<td><code>{esc(method)}</code></td>"
        + _cell(METHOD_LABELS.get(method, method))
        + _cell(money(amount), numeric=True)
        + "</tr>"
        for method, amount in statement.attribution
    )
    if statement.confidence is None:
        confidence = (
            "<p>ML attribution is not enabled yet: <code>fct_cost_allocation</code> has no "
            "<code>attribution_confidence</code> column. Every amount on this statement was placed "
            "by a bill tag, a pod label or an allocation policy, or is shown as unallocated.</p>"
        )
    else:
        bands = "".join(
            "<tr>" + _cell(band) + _cell(money(amount), numeric=True) + "</tr>"
            for band, amount in statement.confidence
        )
        confidence = (
            "<p>Money by the confidence of its attribution (<code>attribution_confidence</code>; "
            "numeric scores: high &ge; 0.9, medium &ge; 0.5, low below).</p>"
            '<table><thead><tr><th>band</th><th class="num">amount</th></tr></thead>'
            f"<tbody>{bands}</tbody></table>"
        )
    as_of = f", costs through {statement.as_of_date.isoformat()}" if statement.as_of_date else ""
    title = f"GPU cost statement {statement.month_label} - {statement.team_name}"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{esc(title)}</title>
<style>{HTML_STYLE}</style>
</head>
<body>
<h1>{esc(title)}</h1>
<p class="meta">Team <code>{esc(statement.team_id)}</code> &middot; billing month \
{esc(statement.month_label)}{esc(as_of)} &middot; currency {esc(cur)} &middot; \
{esc(statement.billing_mode)}</p>
<div class="amount {mode_class}"><span class="label">{esc(statement.mode_label)}</span>
<span class="value">{esc(money(statement.total_billed))} {esc(cur)}</span></div>

<h2>Statement lines</h2>
<table>
<thead><tr><th>project</th><th>kind</th><th>how it was sized</th><th class="num">billed</th></tr>
</thead>
<tbody>
{"".join(rows)}
</tbody>
</table>

<h2>By cost kind</h2>
<table><thead><tr><th>kind</th><th>what it is</th><th class="num">billed</th></tr></thead>
<tbody>{kind_rows}</tbody></table>

<h2>Policies behind each kind (idle and shared shares included)</h2>
<table><thead><tr><th>kind</th><th>policy (allocation basis)</th><th class="num">billed</th></tr>
</thead><tbody>{policy_rows}</tbody></table>
<p class="note">Read from <code>fct_cost_allocation.allocation_basis</code>, as configured by the
dbt vars <code>gpucost_allocation_basis</code> and <code>gpucost_idle_policy</code> when the
warehouse was built.</p>

<h2>Attribution: how the owner was known</h2>
<table><thead><tr><th>method</th><th>meaning</th><th class="num">billed</th></tr></thead>
<tbody>{attribution_rows}</tbody></table>

<h2>Attribution confidence</h2>
{confidence}

<p class="note">Amounts are billed cost in {esc(cur)}, rounded to cents by largest remainder so that
the month's statements add up exactly to the bill. The statement lines are
<code>fct_chargeback_monthly</code>; the breakdowns by policy, method and confidence are the exact
amounts of <code>fct_cost_allocation</code> apportioned to the same cents.</p>
</body>
</html>
"""


# -------------------------------------------------------------------------------------------------
# Reading the warehouse


def _month_start(month: str) -> date:
    if not MONTH_PATTERN.fullmatch(month):
        raise ValueError(f"month must be YYYY-MM, not {month!r}")
    return date(int(month[:4]), int(month[5:7]), 1)


def read_billing_modes(con: Any, project_dir: Path | None) -> dict[str, str]:
    """team_id -> billing mode from the seed table reference.team_billing_modes, else from
    seeds/team_billing_modes.csv in the project (for a warehouse built before the seed existed)."""
    found = con.sql(
        "select count(*) from information_schema.tables "
        "where table_schema = 'reference' and table_name = 'team_billing_modes'"
    ).fetchall()[0][0]
    rows: Iterable[tuple[Any, Any]]
    if found:
        rows = con.sql("select team_id, billing_mode from reference.team_billing_modes").fetchall()
    elif project_dir and (project_dir / "seeds" / "team_billing_modes.csv").is_file():
        with (project_dir / "seeds" / "team_billing_modes.csv").open(newline="") as handle:
            rows = [(row["team_id"], row["billing_mode"]) for row in csv.DictReader(handle)]
    else:
        rows = []
    modes: dict[str, str] = {}
    for team_id, mode in rows:
        mode = (mode or "").strip().lower()
        if mode not in MODES:
            raise ValueError(
                f"team_billing_modes: {team_id!r} has mode {mode!r}, not one of {MODES}"
            )
        modes[str(team_id).strip().lower()] = mode
    return modes


def _has_column(con: Any, table: str, column: str) -> str | None:
    """The column's data type when marts.<table> has it, else None."""
    rows = con.execute(
        "select data_type from information_schema.columns "
        "where table_schema = 'marts' and table_name = ? and column_name = ?",
        [table, column],
    ).fetchall()
    return rows[0][0] if rows else None


def latest_month(warehouse: Path) -> str | None:
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.sql(
            "select max(billing_period_start) from marts.fct_chargeback_monthly"
        ).fetchall()
    return rows[0][0].strftime("%Y-%m") if rows and rows[0][0] else None


def read_statements(
    warehouse: Path,
    month: str,
    team: str | None = None,
    mode: str | None = None,
    project_dir: Path | None = None,
) -> list[Statement]:
    """Build the statements of ``month`` (YYYY-MM) from the warehouse (opened read-only, then
    closed): one per team and currency, or only ``team``'s. ``mode`` overrides the seed's modes."""
    import duckdb

    start = _month_start(month)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        modes = read_billing_modes(con, project_dir)
        chargeback = con.execute(
            """
            select
                chargeback.team_id,
                coalesce(teams.team_name, chargeback.team_id),
                chargeback.billing_currency,
                chargeback.project_id,
                coalesce(projects.project_name, chargeback.project_id),
                chargeback.direct_cost, chargeback.usage_cost, chargeback.idle_cost,
                chargeback.shared_cost, chargeback.unallocated_cost,
                chargeback.billed_cost, chargeback.effective_cost
            from marts.fct_chargeback_monthly as chargeback
            left join marts.dim_teams as teams on chargeback.team_id = teams.team_id
            left join marts.dim_projects as projects on chargeback.project_id = projects.project_id
            where chargeback.billing_period_start = ?
                and (? is null or chargeback.team_id = ?)
            order by 1, 3, 4
            """,
            [start, team, team],
        ).fetchall()
        bases = con.execute(
            """
            select team_id, billing_currency, project_id, allocation_kind, allocation_basis,
                sum(billed_cost)
            from marts.fct_cost_allocation
            where billing_period_start = ? and (? is null or team_id = ?)
            group by all
            order by all
            """,
            [start, team, team],
        ).fetchall()
        methods = con.execute(
            """
            select team_id, billing_currency, attribution_method, sum(billed_cost)
            from marts.fct_cost_allocation
            where billing_period_start = ? and (? is null or team_id = ?)
            group by all
            order by all
            """,
            [start, team, team],
        ).fetchall()
        confidence_rows: list[tuple[Any, ...]] | None = None
        if _has_column(con, "fct_cost_allocation", "attribution_confidence"):
            confidence_rows = con.execute(
                """
                select team_id, billing_currency, attribution_confidence, sum(billed_cost)
                from marts.fct_cost_allocation
                where billing_period_start = ? and (? is null or team_id = ?)
                group by all
                """,
                [start, team, team],
            ).fetchall()
        as_of_rows = con.execute(
            """
            select max(cast(charge_period_start_at as date))
            from marts.fct_cost_allocation
            where billing_period_start = ?
                and cast(charge_period_start_at as date) between ? and last_day(?)
            """,
            [start, start, start],
        ).fetchall()
    as_of = as_of_rows[0][0] if as_of_rows else None
    return build_statements(
        start, chargeback, bases, methods, confidence_rows, modes, mode, as_of_date=as_of
    )


def build_statements(
    month: date,
    chargeback: list[tuple[Any, ...]],
    bases: list[tuple[Any, ...]],
    methods: list[tuple[Any, ...]],
    confidence_rows: list[tuple[Any, ...]] | None,
    modes: Mapping[str, str],
    mode_override: str | None = None,
    as_of_date: date | None = None,
) -> list[Statement]:
    """Assemble statements from the rows read by :func:`read_statements` (pure; no database).

    Lines and totals are the chargeback cents unchanged, so ``total_billed`` is exactly the sum of
    the team's fct_chargeback_monthly rows; the breakdowns are apportioned to those cents.
    """
    grouped: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for row in chargeback:
        grouped.setdefault((row[0], row[2]), []).append(row)
    basis_index: dict[tuple[str, str], dict[tuple[str, str], dict[str, Decimal]]] = {}
    for team_id, currency, project_id, kind, basis, amount in bases:
        per_kind = basis_index.setdefault((team_id, currency), {})
        per_kind.setdefault((project_id, kind), {})[basis] = Decimal(amount)
    method_index: dict[tuple[str, str], dict[str, Decimal]] = {}
    for team_id, currency, method, amount in methods:
        method_index.setdefault((team_id, currency), {})[method] = Decimal(amount)
    confidence_index: dict[tuple[str, str], dict[str, Decimal]] = {}
    for team_id, currency, value, amount in confidence_rows or []:
        bands = confidence_index.setdefault((team_id, currency), {})
        band = confidence_band(value)
        bands[band] = bands.get(band, Decimal(0)) + Decimal(amount)

    statements: list[Statement] = []
    for (team_id, currency), rows in grouped.items():
        team_bases = basis_index.get((team_id, currency), {})
        lines: list[StatementLine] = []
        projects: list[ProjectTotal] = []
        kind_totals = dict.fromkeys(KINDS, Decimal("0.00"))
        for row in rows:
            project_id, project_name = row[3], row[4]
            for kind, amount in zip(KINDS, row[5:10], strict=True):
                amount = Decimal(amount or 0)
                kind_totals[kind] += amount
                if amount:
                    policy = "+".join(sorted(team_bases.get((project_id, kind), {})))
                    lines.append(StatementLine(project_id, project_name, kind, policy, amount))
            projects.append(
                ProjectTotal(project_id, project_name, Decimal(row[10]), Decimal(row[11]))
            )
        total_billed = sum((project.billed_cost for project in projects), Decimal("0.00"))
        total_effective = sum((project.effective_cost for project in projects), Decimal("0.00"))

        # Policies: per kind, the exact amounts of each basis apportioned to the kind's cents.
        policies: list[tuple[str, str, Decimal]] = []
        for kind in KINDS:
            exact: dict[str, Decimal] = {}
            for (_, row_kind), by_basis in team_bases.items():
                if row_kind == kind:
                    for basis, amount in by_basis.items():
                        exact[basis] = exact.get(basis, Decimal(0)) + amount
            if exact or kind_totals[kind]:
                for basis, cents in _apportion(exact, kind_totals[kind]).items():
                    policies.append((kind, basis, cents))

        attribution_exact = method_index.get((team_id, currency), {})
        attribution_cents = _apportion(attribution_exact, total_billed)
        ordered_methods = sorted(
            attribution_cents,
            key=lambda m: ATTRIBUTION_METHODS.index(m) if m in ATTRIBUTION_METHODS else 99,
        )
        confidence = None
        if confidence_rows is not None:
            band_cents = _apportion(confidence_index.get((team_id, currency), {}), total_billed)
            band_order = [band for band, _ in CONFIDENCE_BANDS] + [NOT_SCORED]
            confidence = sorted(
                band_cents.items(),
                key=lambda item: (
                    band_order.index(item[0]) if item[0] in band_order else -1,
                    item[0],
                ),
            )
        mode = mode_override or modes.get(team_id, DEFAULT_MODE)
        statements.append(
            Statement(
                month=month,
                team_id=team_id,
                team_name=rows[0][1],
                billing_mode=mode,
                billing_currency=currency,
                lines=lines,
                projects=projects,
                kind_totals=kind_totals,
                total_billed=total_billed,
                total_effective=total_effective,
                policies=policies,
                attribution=[(method, attribution_cents[method]) for method in ordered_methods],
                confidence=confidence,
                as_of_date=as_of_date,
            )
        )
    return statements


def write_statements(statements: Iterable[Statement], out_dir: Path) -> list[Path]:
    """Write ``<stem>.csv`` and ``<stem>.html`` for each statement into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for statement in statements:
        for suffix, text in ((".csv", render_csv(statement)), (".html", render_html(statement))):
            path = out_dir / f"{statement.file_stem}{suffix}"
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


# -------------------------------------------------------------------------------------------------
# CLI


def cmd_statements(args: argparse.Namespace) -> int:
    from gpucost.commands.cli import find_project_dir, warehouse_path

    project_dir = find_project_dir()
    warehouse = warehouse_path(project_dir, args.warehouse)
    if not warehouse.is_file():
        print(f"gpucost: no warehouse at {warehouse}; run `gpucost build` first", file=sys.stderr)
        return 2
    month = args.month or latest_month(warehouse)
    if month is None:
        print("gpucost: fct_chargeback_monthly is empty; nothing to state", file=sys.stderr)
        return 2
    team = args.team.strip().lower() if args.team else None
    try:
        statements = read_statements(warehouse, month, team, args.mode, project_dir)
    except ValueError as error:
        print(f"gpucost: {error}", file=sys.stderr)
        return 2
    if not statements:
        who = f"team {team!r}" if team else "any team"
        print(f"gpucost: no chargeback rows for {who} in {month}", file=sys.stderr)
        return 2
    out_dir = Path(args.out) if args.out else warehouse.parent / "statements" / month
    write_statements(statements, out_dir)
    print(f"Statements {month} -> {out_dir}")
    print(f"  {'team':<18}{'mode':<12}{'currency':<10}{'total':>16}")
    grand: dict[str, Decimal] = {}
    for statement in statements:
        grand[statement.billing_currency] = (
            grand.get(statement.billing_currency, Decimal(0)) + statement.total_billed
        )
        print(
            f"  {statement.team_id:<18}{statement.billing_mode:<12}"
            f"{statement.billing_currency:<10}{money(statement.total_billed):>16}"
        )
    for currency, total in sorted(grand.items()):
        print(f"  {'all statements':<30}{currency:<10}{money(total):>16}")
    return 0


def month_arg(value: str) -> str:
    """argparse type for a YYYY-MM month (shared by `gpucost statements` and `gpucost alerts`)."""
    if not MONTH_PATTERN.fullmatch(value):
        raise argparse.ArgumentTypeError(f"expected YYYY-MM, got {value!r}")
    return value


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "statements",
        help="write each team's monthly statement (CSV + printable HTML)",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("--month", type=month_arg, help="billing month YYYY-MM (default: latest)")
    parser.add_argument("--team", help="only this team (default: every team of the month)")
    parser.add_argument(
        "--mode", choices=MODES, help="present every statement this way (default: per team, seed)"
    )
    parser.add_argument(
        "--out", help="folder to write to (default: <warehouse folder>/statements/<month>)"
    )
    parser.add_argument("--warehouse", help="DuckDB file (default $GPUCOST_WAREHOUSE)")
    parser.set_defaults(func=cmd_statements)
