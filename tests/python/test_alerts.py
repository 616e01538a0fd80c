"""Budgets and alerts: statuses against the marts, exit codes, the webhook (on 127.0.0.1 only)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from decimal import ROUND_HALF_UP, Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import duckdb
import pytest

from gpucost.commands import cli
from gpucost.commands.alerts import WebhookError, build_payload, post_webhook, read_alerts

from .conftest import run_dbt

MONTH = "2026-10"
CENT = Decimal("0.01")


def _sql(warehouse: Path, query: str) -> list[tuple]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.sql(query).fetchall()


def _alerts(warehouse: Path, *args: str) -> int:
    return cli.main(["alerts", "--month", MONTH, "--warehouse", str(warehouse), *args])


# The budgets of each copy are changed in its seed table, then the two budget marts are rebuilt on it
# with `dbt run` (which leaves the modified seed table alone). Both copies are rebuilt at once, each
# with its own target folder: a copy's warehouse path changes the profile, so dbt parses in full anyway.
BUDGET_CHANGES = {
    # vision's whole-team budget far below what it spent: a crossed critical threshold
    "crossed": "update reference.budgets set amount = 100.00 "
    "where team_id = 'vision' and project_id is null",
    # every budget far above spend (and above its run rate): no alert at all
    "quiet": "update reference.budgets set amount = 100000000.00, reserved_amount = 0",
}


@pytest.fixture(scope="module")
def budget_copies(generated_warehouse) -> dict[str, Path]:
    copies: dict[str, Path] = {}
    for name, update in BUDGET_CHANGES.items():
        copies[name] = generated_warehouse.copy(f"budgets_{name}")
        with duckdb.connect(str(copies[name])) as con:
            con.sql(update)

    def rebuild(name: str):
        work = generated_warehouse.work / f"budgets_{name}"
        work.mkdir(exist_ok=True)
        return run_dbt(
            generated_warehouse.landing,
            copies[name],
            work,
            "run",
            "--select",
            "rpt_budget_status",
            "fct_budget_alerts",
        )

    with ThreadPoolExecutor(max_workers=len(copies)) as pool:
        results = dict(zip(copies, pool.map(rebuild, copies), strict=True))
    for name, result in results.items():
        assert result.returncode == 0, (name, result.stdout[-4000:])
    return copies


@pytest.fixture(scope="module")
def crossed_warehouse(budget_copies) -> Path:
    return budget_copies["crossed"]


@pytest.fixture(scope="module")
def quiet_warehouse(budget_copies) -> Path:
    return budget_copies["quiet"]


def test_budget_status_matches_the_chargeback_and_the_run_rate(generated_warehouse):
    rows = generated_warehouse.sql(
        """
        select status.team_id, status.project_id, status.month_to_date_cost, status.forecast_cost,
            status.reserved_amount, status.days_elapsed, status.days_in_month, status.as_of_date,
            status.status, status.budget_amount,
            (
                select sum(billed_cost) from marts.fct_chargeback_monthly as chargeback
                where chargeback.team_id = status.team_id
                    and (status.project_id is null or chargeback.project_id = status.project_id)
                    and chargeback.billing_period_start = status.billing_period_start
            ) as chargeback_cost
        from marts.rpt_budget_status as status
        """
    )
    seeded = generated_warehouse.sql("select count(*) from reference.budgets")[0][0]
    assert len(rows) == seeded >= 5
    for team, project, mtd, forecast, reserved, elapsed, days, as_of, status, amount, cost in rows:
        assert mtd == cost, (team, project)
        assert str(as_of) == "2026-10-03" and elapsed == 3 and days == 31  # 3 generated days
        run_rate = (mtd * days / elapsed).quantize(CENT, rounding=ROUND_HALF_UP)
        assert forecast == run_rate + reserved, (team, project)
        if mtd >= amount:
            assert status == "critical"
        elif forecast >= amount:
            assert status == "forecast_critical"
    by_owner = {(r[0], r[1]): r for r in rows}
    # the seed sizes nlp/translate-v3 for the full default month; 3 days of this sample project past it
    assert by_owner[("nlp", "translate-v3")][8] == "forecast_critical"
    assert by_owner[("recsys", None)][8] == "ok"


def test_a_crossed_budget_alerts_and_exits_1(crossed_warehouse, capsys):
    alerts = read_alerts(crossed_warehouse, MONTH)
    vision = [a for a in alerts if a["team_id"] == "vision" and a["project_id"] is None]
    assert {a["alert_type"] for a in vision} == {"critical", "warning"}
    (spent,) = _sql(
        crossed_warehouse,
        "select sum(billed_cost) from marts.fct_chargeback_monthly where team_id = 'vision'",
    )[0]
    critical = next(a for a in vision if a["alert_type"] == "critical")
    assert critical["observed_cost"] == spent > Decimal("100.00")
    assert critical["threshold_amount"] == Decimal("100.00")
    assert critical["alert_kind"] == "actual"
    assert f"has spent {spent} USD of its 100.00 USD budget" in critical["message"]
    assert alerts[0]["alert_type"] == "critical"  # most severe first
    capsys.readouterr()
    assert _alerts(crossed_warehouse) == 1
    out = capsys.readouterr().out
    assert f"CRITICAL: vision has spent {spent} USD" in out


def test_budgets_far_above_spend_give_no_alert_and_exit_0(quiet_warehouse, capsys):
    assert read_alerts(quiet_warehouse, MONTH) == []
    statuses = _sql(quiet_warehouse, "select distinct status from marts.rpt_budget_status")
    assert statuses == [("ok",)]
    assert _alerts(quiet_warehouse) == 0
    assert "none" in capsys.readouterr().out


class _Recorder(BaseHTTPRequestHandler):
    status = 204
    received: ClassVar[list[dict]] = []

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        self.received.append(
            {
                "path": self.path,
                "content_type": self.headers.get("Content-Type"),
                "body": self.rfile.read(length),
            }
        )
        self.send_response(self.status)
        self.end_headers()
        if self.status >= 400:
            self.wfile.write(b"boom")

    def log_message(self, *args):
        pass


@contextmanager
def _server(status: int = 204) -> Iterator[tuple[str, list[dict]]]:
    """A tiny HTTP server on 127.0.0.1 (a free port), recording the requests it receives."""
    received: ClassVar[list[dict]] = []
    handler = type("Handler", (_Recorder,), {"status": status, "received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hooks/budget", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_webhook_receives_the_alerts_as_json(crossed_warehouse, capsys):
    expected = read_alerts(crossed_warehouse, MONTH)
    with _server() as (url, received):
        assert _alerts(crossed_warehouse, "--webhook", url) == 1
    assert len(received) == 1
    request = received[0]
    assert request["path"] == "/hooks/budget"
    assert request["content_type"] == "application/json"
    payload = json.loads(request["body"], parse_float=Decimal)
    assert payload["alert_count"] == len(expected) == len(payload["alerts"])
    assert payload["month"] == MONTH
    for sent, row in zip(payload["alerts"], expected, strict=True):
        assert sent["alert_id"] == row["alert_id"]
        # money travels as exact decimal text
        assert isinstance(sent["observed_cost"], str)
        assert Decimal(sent["observed_cost"]) == row["observed_cost"]
        assert Decimal(sent["budget_amount"]) == row["budget_amount"]
    assert expected[0]["message"] in payload["text"]
    assert "Sent" in capsys.readouterr().out


def test_dry_run_prints_the_payload_and_sends_nothing(crossed_warehouse, capsys):
    with _server() as (url, received):
        capsys.readouterr()
        assert _alerts(crossed_warehouse, "--webhook", url, "--dry-run") == 1
    assert received == []
    out = capsys.readouterr().out
    payload = json.loads(out[out.index("{") :], parse_float=Decimal)
    assert payload["alert_count"] == len(read_alerts(crossed_warehouse, MONTH))


def test_webhook_failure_is_a_clear_error(crossed_warehouse, capsys):
    with _server(status=500) as (url, received):
        assert _alerts(crossed_warehouse, "--webhook", url) == 2
    assert len(received) == 1
    err = capsys.readouterr().err
    assert "HTTP 500" in err and url not in err and "/hooks/budget" not in err  # never printed
    with pytest.raises(WebhookError, match="http:// or https://"):
        post_webhook("file:///etc/passwd", {})


def test_no_alert_sends_nothing(quiet_warehouse):
    with _server() as (url, received):
        assert _alerts(quiet_warehouse, "--webhook", url) == 0
    assert received == []


def test_payload_shape_without_alerts():
    payload = build_payload(MONTH, [])
    assert payload == {
        "source": "gpucost",
        "month": MONTH,
        "alert_count": 0,
        "text": f"gpucost: no budget alerts for {MONTH}",
        "alerts": [],
    }
