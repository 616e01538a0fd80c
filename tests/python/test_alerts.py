"""Budgets and alerts: statuses against the marts, one alert per budget, exit codes (2 on a bad or
empty month), the seed as the documented sizing rule gives it, the webhook (on 127.0.0.1 only)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import ROUND_HALF_UP, Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import duckdb
import pytest

from gpucost.commands import cli
from gpucost.commands.alerts import WebhookError, build_payload, post_webhook, read_alerts

from .conftest import PROJECT_DIR, run_dbt

MONTH = "2026-10"
CENT = Decimal("0.01")


def _sql(warehouse: Path, query: str) -> list[tuple]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.sql(query).fetchall()


def _alerts(warehouse: Path, *args: str) -> int:
    return cli.main(["alerts", "--month", MONTH, "--warehouse", str(warehouse), *args])


# The budgets of each copy are changed in its seed table, then the two budget marts are rebuilt on it
# with `dbt run` (which leaves the modified seed table alone), each with its own target folder.
BUDGET_CHANGES = {
    # vision's whole-team budget far below what it spent: a crossed critical threshold
    "crossed": "update reference.budgets set amount = 100.00 "
    "where team_id = 'vision' and project_id is null",
    # every budget far above spend (and above its run rate): no alert at all; and a budget for a
    # month the warehouse has no cost in yet
    "quiet": "update reference.budgets set amount = 100000000.00, reserved_amount = 0; "
    "insert into reference.budgets values "
    "('nlp', null, date '2026-12-01', 1000.00, 'USD', 0.8, 1.0, 0)",
}


@pytest.fixture(scope="module")
def budget_copies(generated_warehouse) -> dict[str, Path]:
    copies: dict[str, Path] = {}
    for name, update in BUDGET_CHANGES.items():
        copies[name] = generated_warehouse.copy(f"budgets_{name}")
        with duckdb.connect(str(copies[name])) as con:
            con.execute(update)

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

    for name in copies:
        result = rebuild(name)
        assert result.returncode == 0, (name, result.stdout[-4000:] + result.stderr[-2000:])
    return copies


@pytest.fixture(scope="module")
def crossed_warehouse(budget_copies) -> Path:
    return budget_copies["crossed"]


@pytest.fixture(scope="module")
def quiet_warehouse(budget_copies) -> Path:
    return budget_copies["quiet"]


def _expected_status(mtd, forecast, amount, warn, critical) -> str:
    """The status ladder from first principles: the most severe threshold crossed or forecast."""
    if mtd >= amount * critical:
        return "critical"
    if forecast >= amount * critical:
        return "forecast_critical"
    if mtd >= amount * warn:
        return "warning"
    if forecast >= amount * warn:
        return "forecast_warning"
    return "ok"


def test_budget_status_matches_the_chargeback_and_the_run_rate(generated_warehouse):
    rows = generated_warehouse.sql(
        """
        select status.team_id, status.project_id, status.month_to_date_cost, status.forecast_cost,
            status.reserved_amount, status.days_elapsed, status.days_in_month, status.as_of_date,
            status.status, status.budget_amount, status.warn_threshold, status.critical_threshold,
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
    (last_day,) = generated_warehouse.sql(
        "select max(cast(charge_period_start_at as date)) from marts.fct_cost_allocation "
        "where strftime(charge_period_start_at, '%Y-%m') = '2026-10'"
    )[0]
    for row in rows:
        team, project, mtd, forecast, reserved, elapsed, days, as_of, status, amount = row[:10]
        warn, critical, cost = row[10:]
        assert mtd == cost, (team, project)
        assert as_of == last_day and elapsed == last_day.day and days == 31
        run_rate = (mtd * days / elapsed).quantize(CENT, rounding=ROUND_HALF_UP)
        assert forecast == run_rate + reserved, (team, project)
        assert status == _expected_status(mtd, forecast, amount, warn, critical), (team, project)


def test_one_alert_per_budget_at_its_worst_level(generated_warehouse):
    """A budget that is not ok raises exactly one alert, its status; a critical budget no warning."""
    statuses = generated_warehouse.sql(
        "select budget_id, status, warn_threshold, critical_threshold, month_to_date_cost, "
        "forecast_cost from marts.rpt_budget_status"
    )
    alerts = generated_warehouse.sql(
        "select budget_id, alert_type, alert_level, alert_kind, threshold_ratio, observed_cost "
        "from marts.fct_budget_alerts"
    )
    by_budget = {row[0]: row for row in alerts}
    assert len(by_budget) == len(alerts)  # never two rows for one budget
    assert set(by_budget) == {row[0] for row in statuses if row[1] != "ok"}
    assert any(row[1] != "ok" for row in statuses), "the 3-day month should raise some alert"
    for budget, status, warn, critical, mtd, forecast in statuses:
        if status == "ok":
            continue
        _, alert_type, level, kind, ratio, observed = by_budget[budget]
        assert alert_type == status
        assert level == ("critical" if "critical" in status else "warning")
        assert kind == ("forecast" if status.startswith("forecast_") else "actual")
        assert ratio == (critical if level == "critical" else warn)
        assert observed == (forecast if kind == "forecast" else mtd)


def test_the_seed_is_the_documented_sizing():
    """seeds/budgets.csv is the `budget_sizing` block of the docs page, which test_docs checks
    against the demo month: a hand-edited seed, or a demo month that moved, fails one of the two."""
    page = (PROJECT_DIR / "docs" / "statements-and-budgets.md").read_text(encoding="utf-8")
    block = re.search(
        r"<!-- figure-block: budget_sizing -->\n```[a-z]*\n(?P<value>.*?)```\n", page, re.S
    )
    assert block, "docs/statements-and-budgets.md has no budget_sizing block"
    seed = (PROJECT_DIR / "seeds" / "budgets.csv").read_text(encoding="utf-8")
    assert seed == block["value"]


def test_an_unknown_or_malformed_month_exits_2_with_one_line(generated_warehouse, capsys):
    for month, reason in (
        ("2026-11", "no budget for 2026-11"),
        ("2026-13", "must be a month as YYYY-MM"),
        ("oct", "must be a month as YYYY-MM"),
        ("2026-10-01", "must be a month as YYYY-MM"),
    ):
        capsys.readouterr()
        code = cli.main(["alerts", "--month", month, "--warehouse", str(generated_warehouse.path)])
        captured = capsys.readouterr()
        assert code == 2, month
        assert reason in captured.err and captured.err.count("\n") == 1, captured.err
        assert "none" not in captured.out and "Traceback" not in captured.err
    with pytest.raises(ValueError, match="no budget for 2026-11"):
        read_alerts(generated_warehouse.path, "2026-11")


def test_a_budget_month_without_cost_exits_2(quiet_warehouse, capsys):
    code = cli.main(["alerts", "--month", "2026-12", "--warehouse", str(quiet_warehouse)])
    err = capsys.readouterr().err
    assert code == 2
    assert "no cost for 2026-12 in fct_chargeback_monthly" in err and err.count("\n") == 1


def test_a_crossed_budget_alerts_and_exits_1(crossed_warehouse, capsys):
    alerts = read_alerts(crossed_warehouse, MONTH)
    vision = [a for a in alerts if a["team_id"] == "vision" and a["project_id"] is None]
    assert [a["alert_type"] for a in vision] == ["critical"]  # one alert, no warning beside it
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
