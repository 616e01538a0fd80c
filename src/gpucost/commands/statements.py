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

What backs a statement in a dispute, GPU-hours and unit rates per GPU model and the appendix of the
workloads behind the charge (method, confidence, the signals of each model or rule placement), is
:mod:`gpucost.commands.statements_appendix`; the codes in words, :mod:`.statements_labels`; the
HTML page, :mod:`.statements_page`. Files per statement: ``<stem>.csv``, ``<stem>.html``,
``<stem>_gpu_hours.csv``, ``<stem>_workloads.csv``.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

from gpucost.commands import statements_appendix as appendix
from gpucost.commands.safe_output import PseudonymiseError, csv_row
from gpucost.commands.statements_labels import (
    KINDS,
    kind_description,
    kind_label,
    method_order,
)
from gpucost.commands.statements_page import MODE_LABELS, money, render_html

MODES = ("chargeback", "showback")
DEFAULT_MODE = "chargeback"
# Bands of a numeric attribution_confidence in [0, 1] (lower bound inclusive).
CONFIDENCE_BANDS = (("high", Decimal("0.9")), ("medium", Decimal("0.5")), ("low", Decimal(0)))
NOT_SCORED = "not scored"
CENT = Decimal("0.01")
MONTH_PATTERN = re.compile(r"\d{4}-(0[1-9]|1[0-2])")

# -------------------------------------------------------------------------------------------------
# Pure helpers


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
    gpu_lines: list[appendix.GpuModelLine] = field(default_factory=list)
    workloads: list[appendix.WorkloadLine] = field(default_factory=list)
    # per attribution method, the cents of its bill lines that name no workload
    workload_remainders: dict[str, Decimal] = field(default_factory=dict)

    @property
    def gpu_hours(self) -> Decimal:
        return sum((line.gpu_hours for line in self.gpu_lines), Decimal(0))

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
    project, a ``kind_total`` per non-zero cost kind (in plain words) and one ``total`` row (its
    description says whether the amount is charged). Text from
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
                    f"{kind_label(line.cost_kind)}: {kind_description(line.cost_kind)}",
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
    for kind in KINDS:
        amount = statement.kind_totals.get(kind, Decimal(0))
        if amount:
            write(
                [
                    *head,
                    "kind_total",
                    "",
                    "",
                    kind,
                    "",
                    f"{kind_label(kind)}: {kind_description(kind)}",
                    f"{amount:.2f}",
                    "",
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
        gpu_rows, appendix_rows = appendix.read_sections(con, start, team)
    as_of = as_of_rows[0][0] if as_of_rows else None
    return build_statements(
        start,
        chargeback,
        bases,
        methods,
        confidence_rows,
        modes,
        mode,
        as_of_date=as_of,
        gpu_rows=gpu_rows,
        appendix_rows=appendix_rows,
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
    gpu_rows: Iterable[tuple[Any, ...]] = (),
    appendix_rows: Iterable[tuple[Any, ...]] = (),
) -> list[Statement]:
    """Assemble statements from the rows read by :func:`read_statements` (pure; no database).

    Lines and totals are the chargeback cents unchanged, so ``total_billed`` is exactly the sum of
    the team's fct_chargeback_monthly rows; the breakdowns are apportioned to those cents, and the
    workload appendix to the breakdown by method (:func:`statements_appendix.build_appendix`).
    """
    gpu_index = appendix.build_gpu_lines(gpu_rows)
    appendix_index: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for row in appendix_rows:
        appendix_index.setdefault((row[0], row[1]), []).append(row[2:])
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
                for basis, cents in appendix.apportion(exact, kind_totals[kind]).items():
                    policies.append((kind, basis, cents))

        attribution_exact = method_index.get((team_id, currency), {})
        attribution_cents = appendix.apportion(attribution_exact, total_billed)
        ordered_methods = sorted(
            attribution_cents,
            key=method_order,
        )
        confidence = None
        if confidence_rows is not None:
            band_cents = appendix.apportion(
                confidence_index.get((team_id, currency), {}), total_billed
            )
            band_order = [band for band, _ in CONFIDENCE_BANDS] + [NOT_SCORED]
            confidence = sorted(
                band_cents.items(),
                key=lambda item: (
                    band_order.index(item[0]) if item[0] in band_order else -1,
                    item[0],
                ),
            )
        mode = mode_override or modes.get(team_id, DEFAULT_MODE)
        workloads, remainders = appendix.build_appendix(
            appendix_index.get((team_id, currency), []), attribution_exact, attribution_cents
        )
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
                gpu_lines=gpu_index.get((team_id, currency), []),
                workloads=workloads,
                workload_remainders=remainders,
            )
        )
    return statements


def write_statements(statements: Iterable[Statement], out_dir: Path) -> list[Path]:
    """Write ``<stem>.csv``, ``<stem>.html``, ``<stem>_gpu_hours.csv`` (GPU-hours and rates per GPU
    model) and ``<stem>_workloads.csv`` (the appendix) for each statement into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for statement in statements:
        head = [statement.month_label, statement.team_id, statement.billing_currency]
        files = (
            (".csv", render_csv(statement)),
            (".html", render_html(statement)),
            ("_gpu_hours.csv", appendix.render_gpu_csv(head, statement.gpu_lines)),
            (
                "_workloads.csv",
                appendix.render_workloads_csv(
                    head, statement.workloads, statement.workload_remainders
                ),
            ),
        )
        for suffix, text in files:
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
    except (ValueError, PseudonymiseError) as error:
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
