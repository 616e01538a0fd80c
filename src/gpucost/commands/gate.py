"""The CI reconciliation gate: validate the landing zone, build, and prove the bill reconciles.

    gpucost gate [--landing DIR] [--warehouse FILE] [--max-quarantined-lines N]
                 [--max-quarantined-amount X] [--allow-duplicates] [--skip-validation]

Runs, in order: the Great Expectations checkpoint on the landing zone (``gpucost validate``),
``dbt build``, then prints the reconciliation report (per provider, billing account, invoice and
month: billed, allocated, quarantined, residual) and exits non-zero, printing the offending
lines, when any residual is not exactly zero, when bill rows were landed twice (duplicated money,
unless ``--allow-duplicates`` or GPUCOST_GATE_ALLOW_DUPLICATES=1), or when quarantined bill
lines or files exceed the tolerance (default none). A restated delivery's replaced lines and a FOCUS
dataset other than cost and usage are reported, never failures.

Exit codes: 0 reconciled; 1 a residual or the quarantine is over tolerance; 2 the landing zone
failed validation or is missing; otherwise dbt's own exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

RECONCILIATION_SQL = """
select
    provider_name, billing_account_id, invoice_id, cast(billing_period_start as varchar),
    billing_currency, billed_cost, allocated_billed_cost, quarantined_billed_cost, billed_residual,
    effective_residual, quarantined_line_count, superseded_line_count
from marts.rpt_reconciliation
order by 4, 1, 2, 3, 5
"""

QUARANTINE_SQL = """
select source_kind, quarantine_reason, sum(record_count), count(distinct source_file),
    coalesce(sum(billed_cost), 0), min(source_file)
from marts.rpt_quarantine
group by 1, 2
order by 3 desc, 1, 2
"""


@dataclass
class GateResult:
    """What the gate found; ``failures`` empty means the bill reconciles within tolerance."""

    report: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


#: rpt_quarantine reasons reported but never failing the gate: a delivery replaced by a later one (a
#: restatement is how bills are corrected), a line another line of the same bill already represents
#: (Azure's actual and amortised exports of one charge) and a FOCUS dataset other than cost
#: and usage.
NOTE_REASONS = (
    "superseded_by_redelivery:",
    "represented_by_actual_export:",
    "represented_by_amortized_export:",
    "not cost and usage:",
)
#: the copies of rows another landed file already holds (counted once in the bill).
DUPLICATE_REASON = "duplicate_of:"


def evaluate(
    reconciliation: list[tuple[Any, ...]],
    quarantine: list[tuple[Any, ...]],
    max_quarantined_lines: int = 0,
    max_quarantined_amount: Decimal = Decimal(0),
    allow_duplicates: bool = False,
) -> GateResult:
    """Judge reconciliation and quarantine rows (pure: rows in, report and failures out).

    Quarantine rows are (source_kind, reason, records, files, billed money, example file). Bill rows
    (source_kind ``billing/...``) fall in three buckets: notes (NOTE_REASONS), duplicates
    (DUPLICATE_REASON: fail unless ``allow_duplicates``) and quarantined lines or files (fail beyond
    the tolerance).
    """
    result = GateResult()
    header = (
        f"{'provider':<10} {'account':<16} {'invoice':<18} {'month':<10} {'ccy':<4}"
        f" {'billed':>18} {'allocated':>18} {'quarantined':>14} {'residual':>10}"
    )
    result.report += ["Reconciliation", header]
    for row in reconciliation:
        provider, account, invoice, month, ccy, billed, allocated, quarantined, residual = row[:9]
        effective_residual = row[9]
        result.report.append(
            f"{provider[:10]:<10} {account[:16]:<16} {(invoice or '-')[:18]:<18} {month[:10]:<10}"
            f" {ccy:<4} {billed:>18,.2f} {allocated:>18,.2f} {quarantined:>14,.2f}"
            f" {'0' if residual == 0 else f'{residual:f}':>10}"
        )
        if residual != 0 or effective_residual != 0:
            result.failures.append(
                f"residual on {provider} account {account} invoice {invoice or '-'} {month[:7]}"
                f" {ccy}: billed {billed:f} - allocated {allocated:f} - quarantined"
                f" {quarantined:f} = {residual:f} (effective residual {effective_residual:f})"
            )
    bills = [row for row in quarantine if str(row[0]).startswith("billing/")]
    notes = [row for row in bills if str(row[1]).startswith(NOTE_REASONS)]
    duplicates = [row for row in bills if str(row[1]).startswith(DUPLICATE_REASON)]
    held = [row for row in bills if row not in notes and row not in duplicates]
    lines = sum(int(row[2]) for row in held)
    amount = sum((Decimal(row[4]) for row in held), Decimal(0))
    duplicated_lines = sum(int(row[2]) for row in duplicates)
    duplicated = sum((Decimal(row[4]) for row in duplicates), Decimal(0))
    result.report.append("")
    records = sum(int(row[2]) for row in quarantine)
    result.report.append(
        f"Quarantine: {records} records, {lines} bill lines or files,"
        f" {amount:,.2f} of bill money (tolerance: {max_quarantined_lines} lines,"
        f" {max_quarantined_amount:,.2f}); {duplicated_lines} duplicate bill lines holding"
        f" {duplicated:,.2f}"
        f" ({'allowed' if allow_duplicates else 'not allowed'})"
    )
    for kind, reason, records, files, billed, example_file in quarantine:
        result.report.append(
            f"  {kind:<14} {records:>8} records in {files} file(s), {Decimal(billed):,.2f}:"
            f" {reason}  (e.g. {example_file})"
        )
    if lines > max_quarantined_lines:
        result.failures.append(
            f"{lines} quarantined bill lines exceed the tolerance of {max_quarantined_lines}"
        )
    if abs(amount) > max_quarantined_amount:
        result.failures.append(
            f"{amount:f} of quarantined bill money exceeds the tolerance of"
            f" {max_quarantined_amount:f}"
        )
    if duplicated_lines and not allow_duplicates:
        result.failures.append(
            f"{duplicated_lines} bill lines holding {duplicated:f} were landed more than once"
            " (counted once; see rpt_quarantine duplicate_of); --allow-duplicates accepts them"
        )
    if not reconciliation:
        result.failures.append("no bill lines reconciled: is the billing folder empty?")
    return result


# -- Telemetry checks (issue 19 item 2, issue 24 item 4): telemetry lost without moving a cent of
# the bill's total still moves money between teams, so the gate fails on it by default.
TELEMETRY_FILES_SQL = """
select source_kind, source_file, quarantine_reason
from marts.rpt_quarantine
where source_kind in ('metrics/dcgm', 'metrics/kube', 'scheduler/slurm') and metric_name = '(file)'
order by 1, 2
"""

TELEMETRY_GAPS_SQL = """
select cluster_id, node_name, cast(gap_date as varchar), uncounted_seconds
from marts.rpt_telemetry_gaps
where gap_reason = 'billed_node_day_without_telemetry'
order by 3, 1, 2
"""


def evaluate_telemetry(
    quarantined_files: list[tuple[Any, ...]],
    billed_days_without_telemetry: list[tuple[Any, ...]],
    allow_telemetry_loss: bool = False,
) -> GateResult:
    """Judge lost telemetry (pure): landed telemetry / Slurm files that yielded nothing (rows
    of TELEMETRY_FILES_SQL) and node-days billed without any telemetry (rows of
    TELEMETRY_GAPS_SQL). Each is a failure unless ``allow_telemetry_loss``, when they are only
    reported."""
    result = GateResult()
    result.report.append("")
    result.report.append(
        f"Telemetry: {len(quarantined_files)} landed file(s) yielded nothing,"
        f" {len(billed_days_without_telemetry)} billed node-day(s) without telemetry"
        + (" (allowed)" if allow_telemetry_loss else "")
    )
    for kind, source_file, reason in quarantined_files[:20]:
        result.report.append(f"  {kind:<15} {source_file}: {reason}")
    for cluster, node, day, seconds in billed_days_without_telemetry[:20]:
        result.report.append(f"  {day} {cluster}/{node}: billed {seconds} s, no telemetry")
    if allow_telemetry_loss:
        return result
    if quarantined_files:
        result.failures.append(
            f"{len(quarantined_files)} landed telemetry file(s) yielded no samples (see"
            " marts.rpt_quarantine; --allow-telemetry-loss or var"
            " gpucost_gate_allow_telemetry_loss: true to accept)"
        )
    if billed_days_without_telemetry:
        result.failures.append(
            f"{len(billed_days_without_telemetry)} billed node-day(s) have no telemetry: their GPU"
            " cost reaches no workload (see marts.rpt_telemetry_gaps; --allow-telemetry-loss or var"
            " gpucost_gate_allow_telemetry_loss: true to accept)"
        )
    return result


def telemetry_gate(warehouse: Path, project_dir: Path, allow_flag: bool) -> GateResult:
    """The telemetry checks on a built warehouse: allowed by the flag or by the project's var
    gpucost_gate_allow_telemetry_loss (dbt_project.yml)."""
    import duckdb
    import yaml

    project = yaml.safe_load((project_dir / "dbt_project.yml").read_text(encoding="utf-8")) or {}
    project_vars = project.get("vars") or {}
    allowed = allow_flag or bool(project_vars.get("gpucost_gate_allow_telemetry_loss"))
    with duckdb.connect(str(warehouse), read_only=True) as con:
        files = con.sql(TELEMETRY_FILES_SQL).fetchall()
        gaps = con.sql(TELEMETRY_GAPS_SQL).fetchall()
    return evaluate_telemetry(files, gaps, allow_telemetry_loss=allowed)


def read_rows(warehouse: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.sql(RECONCILIATION_SQL).fetchall(), con.sql(QUARANTINE_SQL).fetchall()


def cmd_gate(args: argparse.Namespace) -> int:
    from gpucost.commands.project import find_project_dir, landing_dir, run_dbt, warehouse_path

    project_dir = find_project_dir()
    landing = landing_dir(project_dir, args.landing)
    warehouse = warehouse_path(project_dir, args.warehouse)
    if not landing.is_dir():
        print(f"gpucost gate: landing zone {landing} does not exist", file=sys.stderr)
        return 2
    if not args.skip_validation:
        print("== 1/3 validating the landing zone (Great Expectations)", flush=True)
        try:
            from gpucost.validation.validate import validate_landing
        except ImportError:
            print("  gpucost.validation.validate is not available; skipped", flush=True)
        else:
            docs_dir = warehouse.parent / "data_docs"
            report = validate_landing(landing, docs_dir)
            if not report.success:
                print(report.summary(), flush=True)
                print(
                    f"gpucost gate: the landing zone failed validation (Data Docs: {docs_dir})",
                    file=sys.stderr,
                )
                return 2
            print(f"  landing zone valid ({len(report.suites)} suites; Data Docs: {docs_dir})")
    if args.no_build:
        if not warehouse.is_file():
            message = f"gpucost gate: warehouse {warehouse} does not exist (--no-build)"
            print(message, file=sys.stderr)
            return 2
        print(f"== 2/3 dbt build skipped (--no-build): checking {warehouse.name}", flush=True)
    else:
        print("== 2/3 dbt build", flush=True)
        code = run_dbt(project_dir, landing, warehouse, ["build"])
        if code:
            print(f"gpucost gate: dbt build failed (exit {code})", file=sys.stderr)
            return code
    print("== 3/3 reconciliation", flush=True)
    result = evaluate(
        *read_rows(warehouse),
        max_quarantined_lines=args.max_quarantined_lines,
        max_quarantined_amount=Decimal(args.max_quarantined_amount),
        allow_duplicates=args.allow_duplicates,
    )
    telemetry = telemetry_gate(warehouse, project_dir, args.allow_telemetry_loss)
    result.report += telemetry.report
    result.failures += telemetry.failures
    print("\n".join(result.report))
    if result.failures:
        print("\nGATE FAILED:", file=sys.stderr)
        for failure in result.failures:
            print(f"  - {failure}", file=sys.stderr)
        return 1
    print("\nGATE PASSED: every bill line reconciles to the cent")
    return 0


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "gate", help="CI gate: validate, dbt build, fail unless the bill reconciles to the cent"
    )
    parser.add_argument("--landing", help="landing zone (default $GPUCOST_LANDING_DIR or landing)")
    parser.add_argument("--warehouse", help="DuckDB file (default $GPUCOST_WAREHOUSE)")
    parser.add_argument(
        "--max-quarantined-lines",
        type=int,
        default=0,
        help="bill lines allowed in quarantine before the gate fails (default 0)",
    )
    parser.add_argument(
        "--max-quarantined-amount",
        default="0",
        help="absolute bill money allowed in quarantine, billing currency (default 0)",
    )
    parser.add_argument(
        "--allow-duplicates",
        action="store_true",
        default=_env_flag("GPUCOST_GATE_ALLOW_DUPLICATES"),
        help="pass although bill rows were landed more than once (they are counted once either way;"
        " default: fail; env GPUCOST_GATE_ALLOW_DUPLICATES=1)",
    )
    parser.add_argument(
        "--skip-validation", action="store_true", help="skip the Great Expectations checkpoint"
    )
    parser.add_argument(
        "--no-build",
        action="store_true",
        help="check the warehouse as it is, without running dbt build first (a pipeline that built"
        " it in an earlier step)",
    )
    parser.add_argument(
        "--allow-telemetry-loss",
        action="store_true",
        help="report, but do not fail on, telemetry files that yielded nothing and billed node-days"
        " without telemetry (also var gpucost_gate_allow_telemetry_loss)",
    )
    parser.set_defaults(func=cmd_gate)
