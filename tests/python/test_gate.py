"""The CI reconciliation gate: its judgement (pure) and the command end to end."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from gpucost.commands.gate import evaluate
from tests.python.landing_zones import (
    PROJECT_DIR,
    copy_landing,
    native_landing,
    small_month_landing,
)

D = Decimal
GOOD = (
    "AWS",
    "1234",
    "INV-1",
    "2026-10-01",
    "USD",
    D("100.10"),
    D("100.10"),
    D("0"),
    D("0"),
    D("0"),
    0,
    0,
)


def test_a_reconciled_bill_passes():
    result = evaluate([GOOD], [])
    assert result.ok, result.failures
    assert any("100.10" in line for line in result.report)


def test_one_cent_of_residual_fails_and_names_the_line():
    off = (*GOOD[:6], D("100.09"), D("0"), D("0.01"), D("0.01"), 0, 0)
    result = evaluate([off], [])
    assert result.failures == [
        "residual on AWS account 1234 invoice INV-1 2026-10 USD: billed 100.10 - allocated 100.09"
        " - quarantined 0 = 0.01 (effective residual 0.01)"
    ]


def test_quarantine_over_tolerance_fails_under_tolerance_passes():
    quarantine = [("billing/focus", "unparseable BilledCost: abc", 2, 1, D("5.00"), "x.csv")]
    strict = evaluate([GOOD], quarantine)
    assert "2 quarantined bill lines exceed the tolerance of 0" in strict.failures
    assert "5.00 of quarantined bill money exceeds the tolerance of 0" in strict.failures
    assert evaluate([GOOD], quarantine, max_quarantined_lines=2, max_quarantined_amount=D("5")).ok


def test_duplicated_money_fails_by_default_and_passes_when_allowed():
    duplicates = [("billing/focus", "duplicate_of: a.csv row 1", 3, 1, D("9.00"), "a.parquet")]
    strict = evaluate([GOOD], duplicates)
    assert strict.failures == [
        "3 bill lines holding 9.00 were landed more than once (counted once; see rpt_quarantine"
        " duplicate_of); --allow-duplicates accepts them"
    ]
    assert evaluate([GOOD], duplicates, allow_duplicates=True).ok


def test_a_restatement_and_another_focus_dataset_are_notes_not_failures():
    notes = [
        ("billing/focus", "superseded_by_redelivery: /l/billing/focus/b", 2, 1, D("5.00"), "a.csv"),
        (
            "billing/focus",
            "not cost and usage: FOCUS Contract Commitment dataset, skipped",
            1,
            1,
            D(0),
            "c",
        ),
    ]
    assert evaluate([GOOD], notes).ok


@pytest.mark.warehouse
def test_a_landing_zone_of_native_bills_only_passes_the_gate(tmp_path):
    """The real native samples (CUR, Azure EA actual + amortised, OCI, a GCP line) and no FOCUS
    file: validated, built and reconciled. Azure's amortised lines that the actual export already
    holds are notes, not quarantined money."""
    passed = gate(native_landing(tmp_path), tmp_path / "native.duckdb", validate=True)
    assert passed.returncode == 0, passed.stdout[-3000:] + passed.stderr[-2000:]
    assert "GATE PASSED" in passed.stdout
    assert "represented_by_actual_export" in passed.stdout


def test_a_quarantined_native_bill_file_fails_like_a_focus_line():
    rejected = [("billing/aws_cur", "missing required column(s) x", 1, 1, D(0), "cur.csv")]
    assert evaluate([GOOD], rejected).failures == [
        "1 quarantined bill lines exceed the tolerance of 0"
    ]


def test_an_empty_bill_fails():
    assert evaluate([], []).failures == ["no bill lines reconciled: is the billing folder empty?"]


def gate(
    landing: Path, warehouse: Path, *extra: str, validate: bool = False
) -> subprocess.CompletedProcess:
    env = os.environ | {
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "GPUCOST_PROJECT_DIR": str(PROJECT_DIR),
        # dbt's own variable for --exclude-resource-type: the unit tests do not depend on the
        # landing zone, and the session's generated warehouse runs them (landing_zones.NO_UNIT_TESTS)
        "DBT_EXCLUDE_RESOURCE_TYPES": "unit_test",
    }
    command = [sys.executable, "-m", "gpucost.commands.cli", "gate", "--landing", str(landing)]
    command += ["--warehouse", str(warehouse), *extra]
    command += [] if validate else ["--skip-validation"]
    return subprocess.run(
        command, env=env, capture_output=True, text=True, check=False, cwd=PROJECT_DIR
    )


@pytest.mark.warehouse
def test_gate_end_to_end(generated_warehouse, tmp_path, tmp_path_factory):
    # the clean month, built by the session (its landing zone, this project, default vars): checked
    # as a pipeline that ran dbt build in an earlier step would (--no-build)
    landing = generated_warehouse.landing
    passed = gate(landing, generated_warehouse.path, "--no-build")
    assert passed.returncode == 0, passed.stdout[-3000:] + passed.stderr[-2000:]
    assert "GATE PASSED" in passed.stdout
    assert "dbt build skipped (--no-build)" in passed.stdout

    # one bill cell broken: the gate builds the warehouse itself, and fails (the session's small
    # month, clean as landed: a smaller build than the generated month's)
    broken = copy_landing(small_month_landing(tmp_path_factory), tmp_path / "landing")
    bill = sorted((broken / "billing" / "focus").rglob("*.csv"))[0]
    with bill.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    rows[1][rows[0].index("BilledCost")] = "12.3.4"
    with bill.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    failed = gate(broken, tmp_path / "broken.duckdb")
    assert "== 2/3 dbt build\n" in failed.stdout
    assert failed.returncode == 1
    assert "1 quarantined bill lines exceed the tolerance of 0" in failed.stderr
    assert "unparseable BilledCost: 12.3.4" in failed.stdout
    tolerated = gate(
        broken, tmp_path / "broken.duckdb", "--max-quarantined-lines", "1", "--no-build"
    )
    assert tolerated.returncode == 0, tolerated.stdout[-2000:] + tolerated.stderr[-2000:]
    missing = gate(broken, tmp_path / "never_built.duckdb", "--no-build")
    assert missing.returncode == 2
    assert missing.stderr.strip().startswith("gpucost gate: warehouse ")
    assert "does not exist (--no-build)" in missing.stderr
