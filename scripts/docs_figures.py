"""The figures the docs quote, each computed from a built demo-month warehouse.

A docs page marks every figure it takes from the demo month, inline or as a whole block:

    the bill is <!-- figure: bill_total -->986,025.18<!-- /figure --> USD

    <!-- figure-block: demo_summary -->
    ```
    ...what `gpucost demo` prints...
    ```
    <!-- /figure-block -->

Each name is a function below: an inline figure is one SQL query on the marts, formatted the way
the page prints it; a block is what a `gpucost` command prints on that warehouse, run in this
process. The demo month is the one `gpucost demo` generates with its own defaults
(:func:`demo_arguments` reads them from the command's parser, so the figures follow the demo if its
defaults change).

    scripts/docs_figures.py --warehouse warehouse/gpucost.duckdb          # stale figures: exit 1
    scripts/docs_figures.py --warehouse warehouse/gpucost.duckdb --write  # refresh them in place

`tests/python/test_docs.py` builds the demo month and fails on any stale or unknown figure.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[1]
PAGES = (PROJECT_DIR / "README.md", *sorted((PROJECT_DIR / "docs").glob("*.md")))
# How a page shows the warehouse folder in a command's output (the real path is the reader's own).
SHOWN_WAREHOUSE = "/path/to/repo/warehouse/gpucost.duckdb"

INLINE = re.compile(r"<!-- figure: (?P<name>[a-z0-9_]+) -->(?P<value>.*?)<!-- /figure -->", re.S)
BLOCK = re.compile(
    r"<!-- figure-block: (?P<name>[a-z0-9_]+) -->\n```[a-z]*\n(?P<value>.*?)```\n"
    r"<!-- /figure-block -->",
    re.S,
)


def demo_arguments() -> list[str]:
    """The generator arguments `gpucost demo` uses by default, as command-line flags."""
    from gpucost.commands.cli import build_parser

    args = build_parser().parse_args(["demo"])
    return [
        f"--seed={args.seed}",
        f"--nodes={args.nodes}",
        f"--days={args.days}",
        f"--step={args.step}",
        f"--start={args.start}",
        f"--clusters={args.clusters}",
        f"--slurm-nodes={args.slurm_nodes}",
    ]


def demo_month() -> str:
    """The demo's month, YYYY-MM (its first day's month)."""
    from gpucost.commands.cli import build_parser

    return build_parser().parse_args(["demo"]).start[:7]


# --------------------------------------------------------------------------------------------------
# inline figures: name -> (SQL returning one value, format)


def cents(value: Decimal) -> str:
    return f"{Decimal(value).quantize(Decimal('0.01'), rounding='ROUND_HALF_UP'):,.2f}"


def exact(value: Decimal) -> str:
    whole, _, fraction = f"{Decimal(value):f}".partition(".")
    return f"{int(whole):,}.{fraction}"


def count(value: int) -> str:
    return f"{value:,}"


def plain(value: Decimal) -> str:
    return f"{Decimal(value):f}"


def per_million(value: str) -> str:
    """``'<exact cost>/<count>'`` as the cost of a million, to the cent (Decimal, not a float)."""
    cost, _, units = value.partition("/")
    return cents(Decimal(cost) * 1_000_000 / Decimal(units))


INLINE_FIGURES: dict[str, tuple[str, Callable]] = {
    # the month's bill, rounded to the cent, and exactly
    "bill_total": ("select sum(billed_cost) from marts.rpt_reconciliation", cents),
    "bill_exact": ("select sum(billed_cost) from marts.rpt_reconciliation", exact),
    "bill_lines": ("select sum(bill_line_count) from marts.rpt_reconciliation", count),
    "allocation_rows": ("select count(*) from marts.fct_cost_allocation", count),
    "focus_export_rows": ("select count(*) from marts.rpt_focus_allocated_charges", count),
    "focus_export_billed_exact": (
        'select sum("BilledCost") from marts.rpt_focus_allocated_charges',
        exact,
    ),
    "teams_billed": (
        "select count(distinct team_id) from marts.fct_chargeback_monthly"
        " where team_id not like '\\_\\_%' escape '\\'",
        count,
    ),
    "unallocated_total": (
        "select sum(billed_cost) from marts.fct_chargeback_monthly"
        " where team_id = '__unallocated__'",
        cents,
    ),
    "idle_total": (
        "select sum(billed_cost) from marts.fct_chargeback_monthly where team_id = '__idle__'",
        cents,
    ),
    # the semantic layer's gpu_cost of team `nlp`, summed as the SQL of `mf query --explain` does
    "semantic_nlp_gpu_cost_exact": (
        "select sum(billed_cost) from marts.fct_cost_allocation"
        " where line_class = 'gpu_node' and team_id = 'nlp'",
        plain,
    ),
    "gpu_cost_total": (
        "select sum(billed_cost) from marts.fct_cost_allocation where line_class = 'gpu_node'",
        cents,
    ),
    "idle_cost_total": (
        "select sum(billed_cost) from marts.fct_cost_allocation where allocation_kind = 'idle'",
        cents,
    ),
    "unallocated_cost_total": (
        "select sum(billed_cost) from marts.fct_cost_allocation"
        " where allocation_kind = 'unallocated'",
        cents,
    ),
    "budgets": ("select count(*) from marts.rpt_budget_status", count),
    "budget_alerts": ("select count(*) from marts.fct_budget_alerts", count),
    "review_workloads": ("select count(*) from marts.rpt_attribution_review", count),
    # the unit cost of inference (docs/inference-unit-cost.md)
    "inference_cost_total": (
        "select sum(effective_cost) from marts.fct_inference_unit_cost",
        cents,
    ),
    "inference_tokens_total": (
        "select sum(total_tokens) from marts.fct_inference_unit_cost",
        count,
    ),
    "inference_requests_total": (
        "select sum(request_count) from marts.fct_inference_unit_cost",
        count,
    ),
    "inference_counter_resets": (
        "select sum(counter_reset_count) from marts.fct_inference_unit_cost",
        count,
    ),
    "inference_pod_days": ("select sum(pod_count) from marts.fct_inference_unit_cost", count),
    "inference_vllm_per_million_tokens": (
        "select cast(sum(effective_cost) as varchar) || '/' || cast(sum(total_tokens) as varchar)"
        " from marts.fct_inference_unit_cost where engine = 'vllm'",
        per_million,
    ),
    "inference_tgi_per_million_tokens": (
        "select cast(sum(effective_cost) as varchar) || '/' || cast(sum(total_tokens) as varchar)"
        " from marts.fct_inference_unit_cost where engine = 'tgi'",
        per_million,
    ),
    "inference_triton_per_thousand_requests": (
        "select cast(sum(effective_cost) as varchar) || '/' || cast(sum(request_count) * 1000 as"
        " varchar) from marts.fct_inference_unit_cost where engine = 'triton'",
        per_million,
    ),
}


def demo_setting(name: str) -> Callable[[], str]:
    """A figure that is one of `gpucost demo`'s own defaults (nodes, days, seconds per sample)."""

    def value() -> str:
        from gpucost.commands.cli import build_parser

        return str(getattr(build_parser().parse_args(["demo"]), name))

    return value


# figures that describe the demo month itself: the command's defaults, no warehouse needed
SETTING_FIGURES: dict[str, Callable[[], str]] = {
    "demo_nodes": demo_setting("nodes"),
    "demo_days": demo_setting("days"),
    "demo_step_seconds": demo_setting("step"),
    "demo_seed": demo_setting("seed"),
}


# --------------------------------------------------------------------------------------------------
# blocks: what a command prints on the warehouse


def run_command(argv: list[str]) -> str:
    """Run one `gpucost` command in this process; returns what it printed on stdout."""
    from gpucost.commands.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(argv)
    return out.getvalue()


def block_demo_summary(warehouse: Path) -> str:
    """What `gpucost demo` prints last: `gpucost summary` on the demo warehouse."""
    text = run_command(["summary", "--warehouse", str(warehouse)])
    return re.sub(r"^Warehouse: .*$", f"Warehouse: {SHOWN_WAREHOUSE}", text, flags=re.M)


def block_statements(warehouse: Path) -> str:
    """`gpucost statements --month <demo month>`: the table of the month's statements."""
    with tempfile.TemporaryDirectory(prefix="gpucost-docs-statements-") as out:
        text = run_command(
            ["statements", "--month", demo_month(), "--warehouse", str(warehouse), "--out", out]
        )
        return text.replace(out, f"warehouse/statements/{demo_month()}")


def block_statement_csv(warehouse: Path) -> str:
    """The first chargeback team's statement CSV: its header, the lines of its first project with
    several kinds of cost, and its total line."""
    with tempfile.TemporaryDirectory(prefix="gpucost-docs-statements-") as out:
        run_command(
            ["statements", "--month", demo_month(), "--warehouse", str(warehouse), "--out", out]
        )
        first = next(
            path
            for path in sorted(Path(out).glob("*.csv"))
            if ",chargeback," in path.read_text(encoding="utf-8").splitlines()[1]
        )
        lines = first.read_text(encoding="utf-8").splitlines()
    header, rows = lines[0], lines[1:]
    projects: dict[str, list[str]] = {}
    for row in rows:
        if ",line," in row or ",project_total," in row:
            projects.setdefault(row.split(",")[6], []).append(row)
    kept = next(group for group in projects.values() if len(group) > 2)
    total = [row for row in rows if ",total," in row]
    return "\n".join([header, *kept, "...", *total]) + "\n"


def block_alerts(warehouse: Path) -> str:
    """`gpucost alerts --month <demo month>`: the budget alerts of the demo month."""
    return run_command(["alerts", "--month", demo_month(), "--warehouse", str(warehouse)])


def block_alerts_payload(warehouse: Path) -> str:
    """The webhook payload of the demo month's alerts (`--dry-run` prints it), first alert only."""
    import json

    from gpucost.commands.alerts import build_payload, read_alerts

    payload = build_payload(demo_month(), read_alerts(warehouse, demo_month()))
    payload["alerts"] = payload["alerts"][:1]
    return json.dumps(payload, indent=2) + "\n"


BUDGET_SQL = """
select
    team_id || coalesce(' / ' || nullif(project_id, ''), '') as budget,
    budget_amount, reserved_amount, month_to_date_cost, forecast_cost, status
from marts.rpt_budget_status
where strftime(billing_period_start, '%Y-%m') = ?
order by status = 'ok', team_id, project_id nulls first
"""


def block_budget_status(warehouse: Path) -> str:
    """`marts.rpt_budget_status` of the demo month, one line per budget."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute(BUDGET_SQL, [demo_month()]).fetchall()
    lines = [
        f"{'budget':<28}{'amount':>14}{'reserved':>12}{'month to date':>16}{'forecast':>14}  status"
    ]
    for budget, amount, reserved, to_date, forecast, status in rows:
        lines.append(
            f"{budget:<28}{cents(amount):>14}{cents(reserved or 0):>12}{cents(to_date):>16}"
            f"{cents(forecast):>14}  {status}"
        )
    return "\n".join(lines) + "\n"


FOCUS_EXAMPLE_SQL = """
with shared_three_ways as (
    select "x_OriginChargeId" as charge_id
    from marts.rpt_focus_allocated_charges
    group by 1
    having
        count(*) = 3
        and bool_and("x_AllocationKind" = 'usage')
        and count(distinct "x_ProjectId") = 2
    order by 1
    limit 1
)
select
    "ResourceName", "ChargePeriodStart", "AllocatedResourceName", "x_ProjectId",
    "x_AllocationBasis", "x_GpuHours", "x_AllocatedRatio", "BilledCost", "EffectiveCost"
from marts.rpt_focus_allocated_charges
where "x_OriginChargeId" = (select charge_id from shared_three_ways)
order by "AllocatedResourceName", "x_AllocationId"
"""


def block_focus_example(warehouse: Path) -> str:
    """The export's rows of one bill line: the first (by origin charge id) that three usage rows
    of two projects share, with each row's GPU-hours, ratio and money and their sums."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.sql(FOCUS_EXAMPLE_SQL).fetchall()
    node, start = rows[0][0], rows[0][1]
    lines = [f"ResourceName {node}, ChargePeriodStart {start:%Y-%m-%dT%H:%M:%SZ}"]
    lines.append(
        f"{'AllocatedResourceName':<24}{'x_ProjectId':<16}{'x_AllocationBasis':<20}"
        f"{'x_GpuHours':>12}{'AllocatedRatio':>22}{'BilledCost':>24}{'EffectiveCost':>24}"
    )
    for _, _, name, project, basis, hours, ratio, billed, effective in rows:
        lines.append(
            f"{name:<24}{project:<16}{basis:<20}{plain(hours):>12}{plain(ratio):>22}"
            f"{plain(billed):>24}{plain(effective):>24}"
        )
    total = [sum(row[index] for row in rows) for index in (5, 6, 7, 8)]
    lines.append(
        f"{'sum':<60}{plain(total[0]):>12}{plain(total[1]):>22}{plain(total[2]):>24}"
        f"{plain(total[3]):>24}"
    )
    return "\n".join(lines) + "\n"


BLOCKS: dict[str, Callable[[Path], str]] = {
    "focus_example": block_focus_example,
    "alerts_payload": block_alerts_payload,
    "budget_status": block_budget_status,
    "demo_summary": block_demo_summary,
    "statements": block_statements,
    "statement_csv": block_statement_csv,
    "alerts": block_alerts,
}


# --------------------------------------------------------------------------------------------------
# issue 21: the budgets seed sized from the demo month, the statements' GPU-hours and appendix
#
# seeds/budgets.csv is the `budget_sizing` block: tests/python/test_alerts.py checks the seed equals
# the block on docs/statements-and-budgets.md, test_docs checks the block against the demo month.
# Each budget is sized from what does not depend on its amount, the owner's month-to-date cost and
# the run-rate forecast plus reservations (rpt_budget_status), in Decimal, to whole thousands:
#   ok (all but the two below):  amount = forecast / 0.70, rounded up -> forecast at most 70 %
#   warning (ml-research):       amount = month to date / 0.85, nearest -> about 85 % spent
#   critical (nlp/translate-v3): amount = month to date / 1.10, rounded down -> 110 % or more spent

BUDGET_TARGETS = {("ml-research", None): "warning", ("nlp", "translate-v3"): "critical"}
BUDGET_SIZING_SQL = """
select team_id, project_id, billing_period_start, billing_currency, month_to_date_cost,
    forecast_cost, reserved_amount, warn_threshold, critical_threshold
from marts.rpt_budget_status
where strftime(billing_period_start, '%Y-%m') = ?
order by team_id, project_id nulls first
"""


def sized_budget(target: str, month_to_date: Decimal, forecast: Decimal) -> Decimal:
    """A budget amount, whole thousands, that puts the owner at ``target`` (ok, warning, critical)
    on the demo month: see the rule above. Decimal throughout; no float touches the money."""
    from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP

    thousand = Decimal(1000)
    if target == "critical":
        scaled, rounding = month_to_date / Decimal("1.10"), ROUND_FLOOR
    elif target == "warning":
        scaled, rounding = month_to_date / Decimal("0.85"), ROUND_HALF_UP
    else:
        scaled, rounding = forecast / Decimal("0.70"), ROUND_CEILING
    return ((scaled / thousand).to_integral_value(rounding=rounding) * thousand).quantize(
        Decimal("0.01")
    )


def _fraction(value: Decimal) -> str:
    text = format(Decimal(value).normalize(), "f")
    return text if "." in text else f"{text}.0"


def block_budget_sizing(warehouse: Path) -> str:
    """seeds/budgets.csv as the sizing rule gives it on the demo month (one row per budget)."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute(BUDGET_SIZING_SQL, [demo_month()]).fetchall()
    lines = [
        "team_id,project_id,month,amount,currency,warn_threshold,critical_threshold,reserved_amount"
    ]
    for team, project, month, currency, to_date, forecast, reserved, warn, critical in rows:
        amount = sized_budget(BUDGET_TARGETS.get((team, project), "ok"), to_date, forecast)
        lines.append(
            f"{team},{project or ''},{month.isoformat()},{amount},{currency},"
            f"{_fraction(warn)},{_fraction(critical)},{Decimal(reserved):.2f}"
        )
    return "\n".join(lines) + "\n"


def _statement_files(warehouse: Path, out: str) -> None:
    run_command(
        ["statements", "--month", demo_month(), "--warehouse", str(warehouse), "--out", out]
    )


def block_statement_gpu_hours(warehouse: Path) -> str:
    """nlp's GPU-hours and unit rates per GPU model on the demo month (its `_gpu_hours.csv`)."""
    with tempfile.TemporaryDirectory(prefix="gpucost-docs-statements-") as out:
        _statement_files(warehouse, out)
        return (Path(out) / f"statement_{demo_month()}_nlp_USD_gpu_hours.csv").read_text("utf-8")


def block_statement_appendix(warehouse: Path) -> str:
    """nlp's workload appendix on the demo month: the header, its costliest model placement, its
    costliest rule placement, and the rows of money tied to no workload."""
    with tempfile.TemporaryDirectory(prefix="gpucost-docs-statements-") as out:
        _statement_files(warehouse, out)
        path = Path(out) / f"statement_{demo_month()}_nlp_USD_workloads.csv"
        lines = path.read_text("utf-8").splitlines()
    header, rows = lines[0], lines[1:]
    kept = [next(row for row in rows if f",{method}," in row) for method in ("model", "rule")]
    other = [row for row in rows if row.startswith(f"{demo_month()},nlp,USD,,")]
    return "\n".join([header, *kept, "...", *other]) + "\n"


BLOCKS["budget_sizing"] = block_budget_sizing
BLOCKS["statement_gpu_hours"] = block_statement_gpu_hours
BLOCKS["statement_appendix"] = block_statement_appendix
INLINE_FIGURES["model_placed_total"] = (
    "select sum(billed_cost) from marts.fct_cost_allocation where attribution_method = 'model'",
    cents,
)
INLINE_FIGURES["statement_workload_rows"] = (
    "select count(*) from marts.rpt_statement_workloads",
    count,
)


# --------------------------------------------------------------------------------------------------
# reading, checking and writing the pages


@dataclass(frozen=True)
class Quote:
    """One marked figure on a page: which page, which figure, the text the page shows."""

    page: Path
    name: str
    kind: str  # "figure" or "block"
    shown: str


def quotes(page: Path, text: str | None = None) -> list[Quote]:
    text = page.read_text(encoding="utf-8") if text is None else text
    found = [Quote(page, m["name"], "figure", m["value"]) for m in INLINE.finditer(text)]
    found += [Quote(page, m["name"], "block", m["value"]) for m in BLOCK.finditer(text)]
    return found


def compute(warehouse: Path, names: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The value of each (kind, name) asked for, from the warehouse; unknown names are left out."""
    import duckdb

    values: dict[tuple[str, str], str] = {}
    wanted = set(names)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        for kind, name in sorted(wanted):
            if kind == "figure" and name in INLINE_FIGURES:
                sql, fmt = INLINE_FIGURES[name]
                values[(kind, name)] = fmt(con.sql(sql).fetchall()[0][0])
    for kind, name in sorted(wanted):
        if kind == "figure" and name in SETTING_FIGURES:
            values[(kind, name)] = SETTING_FIGURES[name]()
        if kind == "block" and name in BLOCKS:
            values[(kind, name)] = BLOCKS[name](warehouse)
    return values


def problems(
    found: list[Quote], values: dict[tuple[str, str], str], root: Path = PROJECT_DIR
) -> list[str]:
    """One line per quoted figure that is unknown or differs from the warehouse."""
    out = []
    for quote in found:
        where = quote.page.relative_to(root) if quote.page.is_relative_to(root) else quote.page
        key = (quote.kind, quote.name)
        if key not in values:
            out.append(f"{where}: unknown {quote.kind} '{quote.name}'")
        elif values[key] != quote.shown:
            shown, wanted = quote.shown, values[key]
            if quote.kind == "block":
                shown, wanted = _first_difference(shown, wanted)
            out.append(
                f"{where}: {quote.kind} '{quote.name}' shows {shown!r}, the demo gives {wanted!r}"
            )
    return out


def _first_difference(shown: str, wanted: str) -> tuple[str, str]:
    for a, b in zip([*shown.splitlines(), ""], [*wanted.splitlines(), ""], strict=False):
        if a != b:
            return a, b
    return shown[-80:], wanted[-80:]


def rewrite(text: str, values: dict[tuple[str, str], str]) -> str:
    """The page with every known marked figure replaced by its value."""

    def inline(match: re.Match) -> str:
        value = values.get(("figure", match["name"]), match["value"])
        return f"<!-- figure: {match['name']} -->{value}<!-- /figure -->"

    def block(match: re.Match) -> str:
        value = values.get(("block", match["name"]), match["value"])
        fence = match.group(0).split("\n", 2)[1]
        return (
            f"<!-- figure-block: {match['name']} -->\n{fence}\n{value}```\n<!-- /figure-block -->"
        )

    return BLOCK.sub(block, INLINE.sub(inline, text))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--warehouse", type=Path, required=True, help="a built demo-month warehouse"
    )
    parser.add_argument("--write", action="store_true", help="refresh every marked figure in place")
    args = parser.parse_args(argv)
    found = [quote for page in PAGES for quote in quotes(page)]
    values = compute(args.warehouse, {(quote.kind, quote.name) for quote in found})
    if args.write:
        for page in PAGES:
            text = page.read_text(encoding="utf-8")
            new = rewrite(text, values)
            if new != text:
                page.write_text(new, encoding="utf-8")
                print(f"rewrote {page.relative_to(PROJECT_DIR)}")
    remaining = problems([q for page in PAGES for q in quotes(page)], values)
    for line in remaining:
        print(line, file=sys.stderr)
    print(f"{len(found)} marked figures on {len(PAGES)} pages; {len(remaining)} stale or unknown")
    return 1 if remaining else 0


if __name__ == "__main__":
    raise SystemExit(main())
