"""The showback dashboard: its numbers (gpucost.commands.dashboard_data) against the marts, and the page
itself in Debian's headless chromium (tests/browser, playwright-core) against the marts, to the cent.

The browser test needs /usr/bin/chromium and tests/browser/node_modules: `bash scripts/install_browser.sh`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from gpucost.commands import dashboard_data as data
from gpucost.commands.publish import publish_marts

PROJECT_DIR = Path(__file__).resolve().parents[2]
BROWSER_DIR = PROJECT_DIR / "tests" / "browser"
CHROMIUM = Path("/usr/bin/chromium")
INSTALL_HINT = "run `bash scripts/install_browser.sh` (Debian chromium + npm ci in tests/browser)"


@pytest.fixture(scope="module")
def published(generated_warehouse, tmp_path_factory) -> Path:
    out_dir = tmp_path_factory.mktemp("dashboard") / "parquet"
    publish_marts(generated_warehouse.path, out_dir, log=None)
    return out_dir


@pytest.fixture(scope="module")
def con(published):
    connection = data.load(published)
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def month(generated_warehouse) -> date:
    return generated_warehouse.sql(
        "select max(billing_period_start) from marts.rpt_reconciliation"
    )[0][0]


def _cents(value: Decimal) -> Decimal:
    return data.cents(value)


# --- the numbers ------------------------------------------------------------------------------


def test_money_is_formatted_from_decimal_without_float():
    assert data.fmt_money(Decimal("1234.565")) == "1,234.57"  # half away from zero
    assert data.fmt_money(Decimal("-1234.565"), "USD") == "-1,234.57 USD"
    assert data.fmt_money(Decimal("0.005")) == "0.01"
    assert data.fmt_money(None) == "0.00"
    # 23 significant digits: a float would print 12,345,678,901,234,567,168.00
    assert data.fmt_money(Decimal("12345678901234567890.125")) == "12,345,678,901,234,567,890.13"
    assert data.fmt_ratio(Decimal("1"), Decimal("3")) == "33.3%"
    assert data.fmt_ratio(Decimal("1"), Decimal("0")) == "-"


def test_key_figures_equal_the_marts(generated_warehouse, con, month):
    [figures] = data.key_figures(con, data.Filters(month=month))
    [(billed, allocated, quarantined, residual)] = generated_warehouse.sql(
        "select sum(billed_cost), sum(allocated_billed_cost), sum(quarantined_billed_cost), "
        f"sum(billed_residual) from marts.rpt_reconciliation where billing_period_start = '{month}'"
    )
    assert figures["billing_currency"] == "USD"
    assert figures["billed_cost"] == billed
    assert figures["allocated_billed_cost"] == allocated
    assert figures["quarantined_billed_cost"] == quarantined
    assert figures["billed_residual"] == residual == 0
    assert figures["is_reconciled"] is True
    # no cluster filter: the statement's cents, which add up to the bill rounded to cents
    assert figures["cost_source"] == "fct_chargeback_monthly"
    assert figures["total_cost"] == _cents(allocated)
    [(team, cost)] = generated_warehouse.sql(
        "select team_id, sum(billed_cost) from marts.fct_chargeback_monthly "
        f"where billing_period_start = '{month}' and team_id not like '\\_\\_%' escape '\\' "
        "group by 1 order by 2 desc limit 1"
    )
    assert (figures["largest_team"], figures["largest_team_cost"]) == (team, cost)
    # the statement rounds each project x kind cell to cents (each moves by less than a cent), so the
    # team's statement is within that many cents of its exact allocation
    [(exact, cells)] = generated_warehouse.sql(
        "select sum(billed_cost), count(distinct project_id || '|' || allocation_kind)"
        " from marts.fct_cost_allocation "
        f"where billing_period_start = '{month}' and team_id = '{team}'"
    )
    assert abs(exact - cost) < Decimal("0.01") * cells
    [figures] = data.key_figures(con, data.Filters(team=team))
    assert figures["total_cost"] == cost


def test_filters_select_the_same_rows_as_sql(generated_warehouse, con, month):
    [cluster] = generated_warehouse.sql(
        "select cluster_id from marts.fct_cost_allocation where cluster_id is not null "
        "group by 1 order by sum(billed_cost) desc limit 1"
    )[0]
    [(team, expected)] = generated_warehouse.sql(
        "select team_id, sum(billed_cost) from marts.fct_cost_allocation "
        f"where cluster_id = '{cluster}' and team_id not like '\\_\\_%' escape '\\' "
        "group by 1 order by 2 desc limit 1"
    )
    [figures] = data.key_figures(con, data.Filters(month=month, cluster=cluster, team=team))
    assert figures["cost_source"] == "fct_cost_allocation"
    assert figures["total_cost"] == expected
    assert figures["largest_team"] == team
    # the bill is not split by cluster or team
    assert figures["billed_cost"] == data.key_figures(con, data.Filters())[0]["billed_cost"]
    # lines without a cluster
    [(no_cluster,)] = generated_warehouse.sql(
        "select sum(billed_cost) from marts.fct_cost_allocation where cluster_id is null"
    )
    [figures] = data.key_figures(con, data.Filters(cluster=data.NO_CLUSTER))
    assert figures["total_cost"] == no_cluster > 0
    options = data.filter_options(con)
    assert options["months"] == [month]
    assert cluster in options["clusters"] and data.NO_CLUSTER in options["clusters"]
    assert {"__idle__", "__unallocated__", team} <= set(options["teams"])


@pytest.mark.parametrize("dimension", ["team", "project", "user"])
def test_cost_over_time_adds_up(generated_warehouse, con, dimension):
    rows = data.cost_over_time(con, data.Filters(), dimension, top=3)
    [(total, days)] = generated_warehouse.sql(
        "select sum(billed_cost), count(distinct cast(charge_period_start_at as date)) "
        "from marts.fct_cost_allocation"
    )
    assert sum((row["billed_cost"] for row in rows), Decimal(0)) == total
    assert len({row["cost_date"] for row in rows}) == days >= 3
    owners = {row["owner"] for row in rows}
    assert len(owners) <= 4 and data.OTHER in owners
    by_owner = {
        row["owner"]: row["billed_cost"]
        for row in data.cost_by_owner(con, data.Filters(), dimension)
    }
    top = sorted(by_owner, key=lambda owner: (-by_owner[owner], owner))[:3]
    assert owners - {data.OTHER} == set(top)


def test_gpu_idle_and_unallocated_views_equal_the_marts(generated_warehouse, con):
    gpu = data.gpu_cost_by_team(con, data.Filters())
    for row in gpu:
        assert row["utilised_cost"] + row["wasted_cost"] == row["billed_cost"], row["team_id"]
    expected = generated_warehouse.sql(
        "select team_id, sum(billed_cost), sum(utilised_cost), sum(wasted_cost) "
        "from marts.fct_gpu_usage group by 1 order by 1"
    )
    got = sorted(
        (row["team_id"], row["billed_cost"], row["utilised_cost"], row["wasted_cost"])
        for row in gpu
    )
    assert got == expected
    assert any(row["team_id"] == "__idle__" and row["utilised_cost"] == 0 for row in gpu)

    idle = data.idle_cost_by_team(con, data.Filters())
    [(idle_total, unallocated_total)] = generated_warehouse.sql(
        "select sum(idle_billed_cost), sum(unallocated_billed_cost) from marts.rpt_reconciliation"
    )
    assert sum((row["billed_cost"] for row in idle), Decimal(0)) == idle_total > 0

    reasons = data.unallocated_by_reason(con, data.Filters())
    teams = data.unallocated_by_team(con, data.Filters())
    assert sum((row["billed_cost"] for row in reasons), Decimal(0)) == unallocated_total > 0
    assert sum((row["billed_cost"] for row in teams), Decimal(0)) == unallocated_total
    assert all(row["unallocated_reason"] != "(no reason)" for row in reasons)
    assert "__unallocated__" in {row["team_id"] for row in teams}


def test_statement_cents_add_up_to_the_bill(generated_warehouse, con):
    rows = data.chargeback_by_team(con, data.Filters())
    [(bill,)] = generated_warehouse.sql("select sum(billed_cost) from marts.rpt_reconciliation")
    assert sum((row["billed_cost"] for row in rows), Decimal(0)) == _cents(bill)
    for row in rows:
        kinds = ("direct_cost", "usage_cost", "idle_cost", "shared_cost", "unallocated_cost")
        assert sum(row[kind] for kind in kinds) == row["billed_cost"], row["team_id"]


def test_budgets_shown_when_published_and_noted_when_not(generated_warehouse, published, tmp_path):
    has_budgets = (published / "rpt_budget_status.parquet").is_file()
    with data.load(published) as connection:
        rows = data.budget_status(connection, data.Filters())
    if has_budgets:
        expected = generated_warehouse.sql(
            "select count(*), sum(month_to_date_cost) from marts.rpt_budget_status"
        )
        assert [
            (len(rows), sum((row["month_to_date_cost"] for row in rows), Decimal(0)))
        ] == expected
    without = tmp_path / "without_budgets"
    shutil.copytree(published, without)
    (without / "rpt_budget_status.parquet").unlink(missing_ok=True)
    with data.load(without) as connection:
        assert data.budget_status(connection, data.Filters()) is None


def test_missing_parquet_is_a_clear_error(published, tmp_path):
    partial = tmp_path / "partial"
    shutil.copytree(published, partial)
    (partial / "rpt_reconciliation.parquet").unlink()
    with pytest.raises(
        data.DashboardDataError, match=r"rpt_reconciliation\.parquet.*gpucost publish"
    ):
        data.load(partial)


# --- the page's filters, in process (streamlit.testing) ----------------------------------------


def _app(monkeypatch, parquet_dir: Path):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("GPUCOST_PARQUET_DIR", str(parquet_dir))
    return AppTest.from_file(str(PROJECT_DIR / "dashboard" / "app.py"), default_timeout=60)


def test_page_filters_by_cluster_and_team(generated_warehouse, published, monkeypatch):
    app = _app(monkeypatch, published).run()
    assert not app.exception
    [(cluster, team, expected)] = generated_warehouse.sql(
        "select cluster_id, team_id, round(sum(billed_cost), 2) from marts.fct_cost_allocation "
        "where cluster_id is not null and team_id not like '\\_\\_%' escape '\\' "
        "group by 1, 2 order by 3 desc limit 1"
    )
    month, cluster_box, team_box = app.sidebar.selectbox
    assert [month.label, cluster_box.label, team_box.label] == ["Month", "Cluster", "Team"]
    cluster_box.select(cluster)
    team_box.select(team)
    app.radio[0].set_value("user")
    app.run()
    assert not app.exception
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Total cost"] == f"{expected:,.2f} USD"
    assert metrics[f"Largest team ({team})"] == f"{expected:,.2f} USD"
    bill = generated_warehouse.sql(
        "select round(sum(billed_cost), 2) from marts.rpt_reconciliation"
    )
    assert metrics["Billed"] == f"{bill[0][0]:,.2f} USD"  # the bill ignores cluster and team


def test_page_without_published_marts_says_how_to_publish(tmp_path, monkeypatch):
    app = _app(monkeypatch, tmp_path / "empty").run()
    assert not app.exception
    assert "gpucost publish" in app.error[0].value


def test_page_turns_red_when_a_month_does_not_reconcile(generated_warehouse, tmp_path, monkeypatch):
    tampered = generated_warehouse.copy("dashboard_unreconciled")
    with duckdb.connect(str(tampered)) as connection:
        connection.execute(
            "update marts.rpt_reconciliation set is_reconciled = false, "
            "billed_residual = billed_residual + 0.000000000000000001"
        )
    out_dir = tmp_path / "parquet"
    publish_marts(tampered, out_dir, log=None)
    app = _app(monkeypatch, out_dir).run()
    assert not app.exception
    assert "NOT RECONCILED" in app.error[0].value
    assert not [alert for alert in app.success if "RECONCILED to the cent" in alert.value]
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Residual"] == "0.000000000000000001 USD"  # not rounded away to 0.00


# --- the page in a browser --------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until_healthy(url: str, server: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"streamlit exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"streamlit did not answer on {url} within {timeout}s:\n{log.read_text()[-3000:]}")


def _metric(metrics: list[dict], label: str) -> tuple[str, Decimal, str]:
    """(label, amount, currency) of the first metric whose label starts with ``label``."""
    for metric in metrics:
        if metric["label"].startswith(label):
            amount, currency = metric["value"].rsplit(" ", 1)
            return metric["label"], Decimal(amount.replace(",", "")), currency
    raise AssertionError(f"no metric {label!r} on the page: {metrics}")


def test_dashboard_in_headless_chromium_shows_the_marts_to_the_cent(
    generated_warehouse, published, month, tmp_path
):
    missing = []
    if not CHROMIUM.exists():
        missing.append(str(CHROMIUM))
    if not (BROWSER_DIR / "node_modules" / "playwright-core").is_dir():
        missing.append(str(BROWSER_DIR / "node_modules" / "playwright-core"))
    node = shutil.which("node")
    if node is None:
        missing.append("node")
    if missing:
        pytest.fail(f"browser test prerequisites missing: {', '.join(missing)}; {INSTALL_HINT}")

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "streamlit.log"
    screenshot = tmp_path / "target" / "screenshots" / "dashboard.png"
    env = os.environ | {"GPUCOST_PARQUET_DIR": str(published)}
    command = [sys.executable, "-m", "streamlit", "run", "dashboard/app.py"]
    command += ["--server.headless", "true", "--server.port", str(port)]
    command += ["--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    command += ["--server.fileWatcherType", "none"]
    with log.open("w") as log_file:
        server = subprocess.Popen(
            command,
            cwd=PROJECT_DIR,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_until_healthy(url, server, log)
        result = subprocess.run(
            [node, "dashboard.mjs", "--url", url, "--screenshot", str(screenshot)],
            cwd=BROWSER_DIR,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    assert result.returncode == 0, f"{result.stderr[-4000:]}\n{log.read_text()[-2000:]}"
    page = json.loads(result.stdout.strip().splitlines()[-1])

    assert page["exceptions"] == [] and page["page_errors"] == []
    assert page["charts"] >= 5 and page["tables"] >= 5
    assert screenshot.is_file() and screenshot.stat().st_size > 50_000

    [(billed, allocated, quarantined, residual)] = generated_warehouse.sql(
        "select round(sum(billed_cost), 2), round(sum(allocated_billed_cost), 2), "
        "round(sum(quarantined_billed_cost), 2), round(sum(billed_residual), 2) "
        f"from marts.rpt_reconciliation where billing_period_start = '{month}'"
    )
    [(team, team_cost)] = generated_warehouse.sql(
        "select team_id, sum(billed_cost) from marts.fct_chargeback_monthly "
        f"where billing_period_start = '{month}' and team_id not like '\\_\\_%' escape '\\' "
        "group by 1 order by 2 desc limit 1"
    )
    metrics = page["metrics"]
    assert _metric(metrics, "Billed")[1:] == (billed, "USD")
    assert _metric(metrics, "Allocated")[1:] == (allocated, "USD")
    assert _metric(metrics, "Quarantined")[1:] == (quarantined, "USD")
    assert _metric(metrics, "Residual")[1:] == (residual, "USD") == (Decimal("0.00"), "USD")
    assert _metric(metrics, "Total cost")[1:] == (allocated, "USD")
    assert _metric(metrics, "Largest team") == (f"Largest team ({team})", team_cost, "USD")
    assert billed > 1000 and team_cost > 100

    [(gpu_billed, gpu_wasted)] = generated_warehouse.sql(
        "select round(sum(billed_cost), 2), round(sum(wasted_cost), 2) "
        f"from marts.fct_gpu_usage where billing_period_start = '{month}'"
    )
    assert _metric(metrics, "GPU cost")[1] == gpu_billed
    assert _metric(metrics, "Wasted")[1] == gpu_wasted

    alerts = "\n".join(page["alerts"])
    assert f"{month:%Y-%m} USD: RECONCILED to the cent" in alerts
    assert "review queue" in alerts and "does not exist yet" in alerts
    for header in ("Reconciliation", "Cost by owner over time", "Budget burn", "Unallocated money"):
        assert any(h.startswith(header) for h in page["headers"]), header
