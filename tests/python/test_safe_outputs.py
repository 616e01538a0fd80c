"""What leaves the warehouse: CSV cells that cannot run as formulas, pseudonymised users, one-line
errors (exit 2, never a traceback) and webhook URLs that are never printed."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from gpucost.commands.alerts import WebhookError, post_webhook
from gpucost.commands.cli import main
from gpucost.commands.safe_output import (
    FORMULA_TRIGGERS,
    Pseudonymiser,
    csv_cell,
    csv_cell_sql,
)

HOSTILE_TEAM_NAME = '=HYPERLINK("http://x","y")'
HOSTILE_TEAM_ID = "@evil"
HOSTILE_PROJECT_NAME = "+cmd|' /C calc'!A0"
HOSTILE_DESCRIPTION = "-2+3+cmd|' /C calc'!A0"
HOSTILE_RESOURCE = "\tHIDDEN"
SECRET = "test-secret-of-32-characters-xx"
NUMBER = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'),
        ("+cmd", "'+cmd"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("-12.50", "-12.50"),
        ("+3", "+3"),
        ("-1e-3", "-1e-3"),
        ("nlp", "nlp"),
        ("a=b", "a=b"),
        ("", ""),
        (None, None),
        (Decimal("-12.50"), Decimal("-12.50")),
    ],
)
def test_csv_cell_neutralises_formulas_and_keeps_numbers(value, expected):
    assert csv_cell(value) == expected
    if isinstance(value, str):
        # the SQL version (DuckDB COPY) decides every value the same way
        with duckdb.connect() as con:
            query = f"select {csv_cell_sql('v')} from (select ?::varchar as v)"
            assert con.execute(query, [value]).fetchall() == [(expected,)]


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# -------------------------------------------------------------------------------------------------
# CSV injection


@pytest.fixture(scope="module")
def hostile_warehouse(generated_warehouse) -> Path:
    """The generated warehouse with a team, project and bill text that spreadsheets would run."""
    path = generated_warehouse.copy("hostile_labels")
    with duckdb.connect(str(path)) as con:
        (team,) = con.sql(
            "select min(team_id) from marts.fct_chargeback_monthly where team_id not like '\\_\\_%'"
            " escape '\\'"
        ).fetchall()[0]
        for table, column in (
            ("dim_teams", "team_id"),
            ("fct_chargeback_monthly", "team_id"),
            ("fct_cost_allocation", "team_id"),
            ("rpt_focus_allocated_charges", "x_TeamId"),
        ):
            con.execute(
                f'update marts.{table} set "{column}" = ? where "{column}" = ?',
                [HOSTILE_TEAM_ID, team],
            )
        con.execute(
            "update marts.dim_teams set team_name = ? where team_id = ?",
            [HOSTILE_TEAM_NAME, HOSTILE_TEAM_ID],
        )
        con.execute("update marts.dim_projects set project_name = ?", [HOSTILE_PROJECT_NAME])
        con.execute(
            'update marts.rpt_focus_allocated_charges set "ChargeDescription" = ?,'
            ' "ResourceName" = ?',
            [HOSTILE_DESCRIPTION, HOSTILE_RESOURCE],
        )
    return path


def _csv_cells(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_every_written_csv_neutralises_formulas_from_data(hostile_warehouse, tmp_path, capsys):
    statements = tmp_path / "statements"
    assert (
        main(["statements", "--warehouse", str(hostile_warehouse), "--out", str(statements)]) == 0
    )
    export = tmp_path / "export" / "allocated.csv"
    assert main(["export-focus", "--warehouse", str(hostile_warehouse), "--out", str(export)]) == 0
    written = [*sorted(statements.glob("*.csv")), export]
    assert len(written) > 2
    seen: set[str] = set()
    negative_numbers = 0
    for path in written:
        for row in _csv_cells(path):
            for column, cell in row.items():
                if cell and cell[0] in FORMULA_TRIGGERS:
                    # only plain numbers may start with a sign: negative money stays a number
                    assert NUMBER.fullmatch(cell), (path.name, column, cell)
                    negative_numbers += cell.startswith("-")
                seen.add(cell)
    assert {
        "'" + HOSTILE_TEAM_NAME,
        "'" + HOSTILE_TEAM_ID,
        "'" + HOSTILE_PROJECT_NAME,
        "'" + HOSTILE_DESCRIPTION,
        "'" + HOSTILE_RESOURCE,
    } <= seen
    assert negative_numbers > 0
    # the statement's numbers still add up: the total row is the sum of the project totals
    (statement,) = [
        path
        for path in statements.glob("*.csv")
        if "_evil_" in path.name and not path.stem.endswith(("_gpu_hours", "_workloads"))
    ]
    rows = _csv_cells(statement)
    total = [Decimal(row["billed_cost"]) for row in rows if row["line_type"] == "total"]
    projects = [Decimal(row["billed_cost"]) for row in rows if row["line_type"] == "project_total"]
    assert total == [sum(projects)]


# -------------------------------------------------------------------------------------------------
# Pseudonymised users


def _user_ids(path: Path, column: str) -> set[str]:
    values = pq.read_table(path, columns=[column]).column(column).to_pylist()
    return {value for value in values if value is not None}


def test_user_ids_are_pseudonymised_alike_in_every_output(
    generated_warehouse, tmp_path, monkeypatch
):
    columns = {
        "fct_cost_allocation": "user_id",
        "fct_gpu_usage": "user_id",
        "rpt_attribution_review": "user_id",
        "rpt_focus_allocated_charges": "x_UserId",
    }
    # the review queue's signals name a user when the model's strongest feature is one
    # (`user=<id> (+w)`); which items that is depends on the model, so a copy plants it on every
    # item with a user
    warehouse = str(generated_warehouse.copy("pseudonymised_signals"))
    with duckdb.connect(warehouse) as con:
        con.execute(
            "update marts.rpt_attribution_review set attribution_signals ="
            " 'user=' || user_id || ' (+0.50); ' || coalesce(attribution_signals, '')"
            " where user_id is not null"
        )
    raw_by_table = {
        table: {
            row[0]
            for row in generated_warehouse.sql(
                f'select distinct "{column}" from marts.{table} where "{column}" is not null',
                warehouse=Path(warehouse),
            )
        }
        for table, column in columns.items()
    }
    raw = set().union(*raw_by_table.values())
    assert all(raw_by_table.values())
    monkeypatch.setenv("GPUCOST_PSEUDONYMISE_USERS", "true")
    monkeypatch.setenv("GPUCOST_PSEUDONYMISE_SECRET", SECRET)
    pseudonym = Pseudonymiser(SECRET.encode())
    parquet = tmp_path / "parquet"
    assert main(["publish", "--warehouse", warehouse, "--out", str(parquet)]) == 0
    export = tmp_path / "allocated.csv"
    assert main(["export-focus", "--warehouse", warehouse, "--out", str(export)]) == 0

    for table, column in columns.items():
        expected = {pseudonym(user) for user in raw_by_table[table]}
        assert all(value.startswith("u_") and len(value) == 26 for value in expected)
        assert _user_ids(parquet / f"{table}.parquet", column) == expected, table
    rows = _csv_cells(export)
    assert {row["x_UserId"] for row in rows if row["x_UserId"]} == {
        pseudonym(user) for user in raw_by_table["rpt_focus_allocated_charges"]
    }
    # the owner tags of the export carry the same pseudonym, never the name: in AllocatedTags, or in
    # the origin's Tags when the bill line names the user (FOCUS: AllocatedTags repeat no origin tag)
    tagged = 0
    for row in rows:
        tags = (row["AllocatedTags"] + row["Tags"]).replace(" ", "")
        if row["x_UserId"] and row["AllocatedResourceId"]:
            assert f'"user_id":"{row["x_UserId"]}"' in tags
            tagged += 1
        assert not any(f'"user_id":"{user}"' in tags for user in raw)
    assert tagged
    signals = pq.read_table(parquet / "rpt_attribution_review.parquet").to_pylist()
    named = [
        row for row in signals if row["user_id"] and "user=" in (row["attribution_signals"] or "")
    ]
    assert named
    for row in named:
        assert f"user={row['user_id']}" in row["attribution_signals"]
        assert not any(f"user={user} " in row["attribution_signals"] for user in raw)


def test_pseudonymisation_without_a_secret_is_a_one_line_error(
    generated_warehouse, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("GPUCOST_PSEUDONYMISE_USERS", "true")
    monkeypatch.delenv("GPUCOST_PSEUDONYMISE_SECRET", raising=False)
    warehouse = str(generated_warehouse.path)
    assert main(["publish", "--warehouse", warehouse, "--out", str(tmp_path / "p")]) == 2
    assert "GPUCOST_PSEUDONYMISE_SECRET" in _one_line(capsys.readouterr().err)
    assert main(["export-focus", "--warehouse", warehouse, "--out", str(tmp_path / "a.csv")]) == 2
    assert "GPUCOST_PSEUDONYMISE_SECRET" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "p").exists() and not (tmp_path / "a.csv").exists()


# -------------------------------------------------------------------------------------------------
# One-line errors


@pytest.fixture
def locked_warehouse(generated_warehouse):
    """A copy of the warehouse that another process holds open for writing (DuckDB's lock)."""
    path = generated_warehouse.copy("locked")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time, duckdb\n"
            "con = duckdb.connect(sys.argv[1])\n"
            "print('ready', flush=True)\n"
            "time.sleep(120)\n",
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        yield path
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize(
    "command",
    [
        ["statements"],
        ["summary"],
        ["export-focus", "--out", "{tmp}/a.csv"],
        ["publish", "--out", "{tmp}/parquet"],
        ["alerts"],
    ],
    ids=lambda command: command[0],
)
def test_a_locked_warehouse_is_a_one_line_error(locked_warehouse, tmp_path, capsys, command):
    args = [part.format(tmp=tmp_path) for part in command]
    assert main([*args, "--warehouse", str(locked_warehouse)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "locked by another process (PID " in line and str(locked_warehouse) in line


def test_paths_that_cannot_be_written_are_one_line_errors(generated_warehouse, tmp_path, capsys):
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder\n", encoding="utf-8")
    warehouse = str(generated_warehouse.path)
    cases = [
        (["statements", "--warehouse", warehouse, "--out", "/sys/gpucost-test"], "permission"),
        (["statements", "--warehouse", warehouse, "--out", f"{a_file}/st"], "not a folder"),
        (["export-focus", "--warehouse", warehouse, "--out", f"{a_file}/a.csv"], "in the way"),
        (["export-focus", "--warehouse", warehouse, "--out", "/sys/gpucost.csv"], "permission"),
        (["publish", "--warehouse", warehouse, "--out", f"{a_file}/parquet"], "not a folder"),
        (
            [
                "build",
                "--landing",
                str(generated_warehouse.landing),
                "--warehouse",
                f"{a_file}/w.duckdb",
            ],
            "in the way",
        ),
    ]
    for args, words in cases:
        assert main(args) == 2, args
        assert words in _one_line(capsys.readouterr().err).lower(), args


@pytest.mark.parametrize("command", ["validate", "gate", "build"])
def test_a_missing_landing_zone_is_a_one_line_error(tmp_path, capsys, command):
    missing = tmp_path / "no-landing"
    assert main([command, "--landing", str(missing)]) == 2
    assert str(missing) in _one_line(capsys.readouterr().err)


def test_webhook_urls_are_never_printed(capsys):
    secret_url = "http://127.0.0.1:9/services/T000/B000/s3cr3tT0ken?sig=abc"
    for url in (secret_url, "ftp://hooks.example/s3cr3tT0ken"):
        with pytest.raises(WebhookError) as refused:
            post_webhook(url, {"alerts": []}, timeout=2)
        assert "s3cr3tT0ken" not in str(refused.value) and "sig=" not in str(refused.value)


def test_the_dbt_var_switches_pseudonymisation_and_the_environment_overrides_it(tmp_path):
    from gpucost.commands.safe_output import PseudonymiseError

    project = tmp_path / "project"
    project.mkdir()
    (project / "dbt_project.yml").write_text(
        "vars:\n  gpucost_pseudonymise_users: true\n", encoding="utf-8"
    )
    on = Pseudonymiser.from_settings(project, {"GPUCOST_PSEUDONYMISE_SECRET": SECRET})
    assert on.enabled and on("alice") == Pseudonymiser(SECRET.encode())("alice") != "alice"
    assert on("alice") != Pseudonymiser(b"another-secret-of-some-length")("alice")
    with pytest.raises(PseudonymiseError, match="GPUCOST_PSEUDONYMISE_SECRET"):
        Pseudonymiser.from_settings(project, {})
    with pytest.raises(PseudonymiseError, match="shorter"):
        Pseudonymiser.from_settings(project, {"GPUCOST_PSEUDONYMISE_SECRET": "short"})
    off = Pseudonymiser.from_settings(project, {"GPUCOST_PSEUDONYMISE_USERS": "false"})
    assert not off.enabled and off("alice") == "alice"
    default = Pseudonymiser.from_settings(Path(__file__).parents[2], {})
    assert not default.enabled  # the project's default: false
