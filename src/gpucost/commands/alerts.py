"""``gpucost alerts``: print the budget alerts of a month; exit 1 when there is any.

    gpucost alerts                                   the latest budget month
    gpucost alerts --month 2026-10 --webhook URL     also POST them as JSON to a webhook
    gpucost alerts --webhook URL --dry-run           print the JSON instead of sending it

Alerts are the rows of ``marts.fct_budget_alerts``: one per budget that is not ok, at its most
severe level (a threshold crossed by month-to-date cost, or forecast to be crossed by the run rate
plus reservations; see docs/statements-and-budgets.md). Exit codes: 0 no alert, 1 at least one
alert (also when it was delivered), 2 the warehouse cannot be read, the webhook failed, or the
month is not a YYYY-MM month, has no budget or has no cost in the warehouse (a typo in ``--month``
must not pass a CI step as "no alerts"). Money in the payload is decimal text (``"48517.89"``),
never a float.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

from gpucost.commands.statements import MONTH_PATTERN

DEFAULT_TIMEOUT = 10.0
USER_AGENT = "gpucost-alerts/0.1"

ALERT_COLUMNS = (
    "alert_id",
    "budget_id",
    "team_id",
    "project_id",
    "billing_currency",
    "alert_type",
    "alert_level",
    "alert_kind",
    "message",
    "budget_amount",
    "threshold_amount",
    "observed_cost",
    "month_to_date_cost",
    "forecast_cost",
    "threshold_ratio",
    "observed_ratio",
    "billing_period_start",
    "as_of_date",
)

ALERTS_SQL = f"""
select {", ".join(ALERT_COLUMNS)}
from marts.fct_budget_alerts
where billing_period_start = ?
order by
    case alert_type
        when 'critical' then 1 when 'forecast_critical' then 2
        when 'warning' then 3 else 4
    end,
    team_id, project_id nulls first, alert_level
"""


class MonthError(ValueError):
    """The month asked for is not a month, or the warehouse has no budget or no cost for it."""


class WebhookError(RuntimeError):
    """The webhook could not be reached or did not answer 2xx."""


Alert = dict[str, Any]
"""One row of fct_budget_alerts, by column name."""


def _json_value(value: Any) -> Any:
    """Decimals as exact text, dates as ISO text; everything else as is."""
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, date):
        return value.isoformat()
    return value


def build_payload(month: str, alerts: Sequence[Alert]) -> dict[str, Any]:
    """The JSON sent to the webhook: a ``text`` line (what chat webhooks such as Slack's display),
    the month, the count and every alert with its money as exact decimal text."""
    count = len(alerts)
    if count:
        worst = alerts[0]["alert_type"]
        text = f"gpucost: {count} budget alert{'s' if count != 1 else ''} for {month} ({worst})"
        text += "\n" + "\n".join(f"- {alert['message']}" for alert in alerts)
    else:
        text = f"gpucost: no budget alerts for {month}"
    return {
        "source": "gpucost",
        "month": month,
        "alert_count": count,
        "text": text,
        "alerts": [{key: _json_value(value) for key, value in alert.items()} for alert in alerts],
    }


WEBHOOK_ENV = "GPUCOST_ALERTS_WEBHOOK"


def redact_url(url: str) -> str:
    """The webhook as it may be printed: scheme and host only (a webhook URL's path and query
    are its secret: Slack, Teams and most others authenticate by the URL alone)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
    except ValueError:
        return "<webhook URL not shown>"
    return f"{parts.scheme}://{host}/<not shown>"


def post_webhook(url: str, payload: dict[str, Any], timeout: float = DEFAULT_TIMEOUT) -> int:
    """POST ``payload`` as JSON to ``url``; returns the HTTP status.

    Raises WebhookError with a clear message when the URL is not http(s), the server cannot be
    reached, does not answer within ``timeout`` seconds or answers anything but 2xx."""
    if not url.lower().startswith(("http://", "https://")):
        raise WebhookError("the webhook URL must start with http:// or https:// (URL not shown)")
    body = json.dumps(payload).encode("utf-8")
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": USER_AGENT},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status = response.status
    except urllib.error.HTTPError as error:
        detail = error.read(200).decode("utf-8", "replace").strip()
        raise WebhookError(
            f"webhook {redact_url(url)} answered HTTP {error.code} {error.reason}"
            + (f": {detail}" if detail else "")
        ) from error
    except urllib.error.URLError as error:
        raise WebhookError(
            f"webhook {redact_url(url)} could not be reached: {error.reason}"
        ) from error
    except TimeoutError as error:
        raise WebhookError(
            f"webhook {redact_url(url)} did not answer within {timeout:g}s"
        ) from error
    except OSError as error:
        raise WebhookError(f"webhook {redact_url(url)} failed: {error}") from error
    if not 200 <= status < 300:
        raise WebhookError(f"webhook {redact_url(url)} answered HTTP {status}")
    return status


def latest_budget_month(warehouse: Path) -> str | None:
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.sql("select max(billing_period_start) from marts.rpt_budget_status").fetchall()
    return rows[0][0].strftime("%Y-%m") if rows and rows[0][0] else None


def check_month(con: Any, month: str) -> date:
    """The first day of ``month`` (YYYY-MM) when the warehouse has budgets and cost for it.

    Raises MonthError, with the months it does have, when ``month`` is not a month, no budget of
    the seed is for it, or ``fct_chargeback_monthly`` has no cost in it: each would otherwise print
    "none" and exit 0, and a typo would pass."""
    if not MONTH_PATTERN.fullmatch(month or ""):
        raise MonthError(f"--month must be a month as YYYY-MM, not {month!r}")
    start = date(int(month[:4]), int(month[5:7]), 1)

    def months(table: str) -> list[str]:
        rows = con.execute(
            f"select distinct strftime(billing_period_start, '%Y-%m') from marts.{table} order by 1"
        ).fetchall()
        return [row[0] for row in rows]

    budget_months = months("rpt_budget_status")
    if month not in budget_months:
        known = ", ".join(budget_months) or "none (the seed budgets is empty)"
        raise MonthError(f"no budget for {month} in rpt_budget_status (budget months: {known})")
    cost_months = months("fct_chargeback_monthly")
    if month not in cost_months:
        known = ", ".join(cost_months) or "none"
        raise MonthError(
            f"no cost for {month} in fct_chargeback_monthly (months with cost: {known}); "
            "its budgets cannot be checked"
        )
    return start


def read_alerts(warehouse: Path, month: str) -> list[Alert]:
    """The alert rows of ``month`` (YYYY-MM), most severe first; MonthError when the month is
    not one the warehouse has budgets and cost for (:func:`check_month`)."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        start = check_month(con, month)
        rows = con.execute(ALERTS_SQL, [start]).fetchall()
    return [dict(zip(ALERT_COLUMNS, row, strict=True)) for row in rows]


def format_alerts(month: str, alerts: Sequence[Alert]) -> str:
    if not alerts:
        return f"Budget alerts {month}: none"
    lines = [f"Budget alerts {month}: {len(alerts)}"]
    lines += [f"  {alert['message']}" for alert in alerts]
    return "\n".join(lines)


def cmd_alerts(args: argparse.Namespace) -> int:
    from gpucost.commands.project import find_project_dir, warehouse_path

    warehouse = warehouse_path(find_project_dir(), args.warehouse)
    if not warehouse.is_file():
        print(f"gpucost: no warehouse at {warehouse}; run `gpucost build` first", file=sys.stderr)
        return 2
    try:
        month = args.month or latest_budget_month(warehouse)
        if month is None:
            print("Budget alerts: no budgets in rpt_budget_status (seed budgets is empty)")
            return 0
        alerts = read_alerts(warehouse, month)
    except MonthError as error:
        print(f"gpucost: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # a missing mart or a locked file: say so, exit 2
        from gpucost.commands.safe_output import first_line, one_line_error

        reason = one_line_error(error) or first_line(error)
        print(f"gpucost: cannot read budget alerts from {warehouse}: {reason}", file=sys.stderr)
        return 2
    print(format_alerts(month, alerts))
    code = 1 if alerts else 0
    if args.dry_run:
        print(json.dumps(build_payload(month, alerts), indent=2))
        return code
    webhook = args.webhook or os.environ.get(WEBHOOK_ENV)
    if webhook:
        if not alerts:
            print("No alerts: nothing sent to the webhook.")
            return code
        try:
            status = post_webhook(webhook, build_payload(month, alerts), args.timeout)
        except WebhookError as error:
            print(f"gpucost: {error}", file=sys.stderr)
            return 2
        print(f"Sent {len(alerts)} alert(s) to the webhook (HTTP {status}).")
    return code


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "alerts",
        help="print budget alerts (exit 1 if any); optionally POST them to a webhook",
        description=__doc__.split("\n\n")[0],
    )
    # checked by the command (check_month), so a bad month is one line and exit 2, as an empty one
    parser.add_argument("--month", help="budget month YYYY-MM (default: latest)")
    parser.add_argument(
        "--webhook",
        help=f"POST the alerts as JSON to this http(s) URL (default ${WEBHOOK_ENV}, which keeps "
        "the URL out of the process list; the URL is never printed)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the JSON payload instead of sending it"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"webhook timeout, seconds (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument("--warehouse", help="DuckDB file (default $GPUCOST_WAREHOUSE)")
    parser.set_defaults(func=cmd_alerts)
