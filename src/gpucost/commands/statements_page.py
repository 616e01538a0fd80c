"""The printable HTML page of a team statement: one self-contained file (inline CSS, print CSS).

:func:`render_html` lays out a :class:`gpucost.commands.statements.Statement` (passed in, not
imported: the statement module imports this one): the amount, the lines, the breakdowns by cost
kind (in plain words, :mod:`gpucost.commands.statements_labels`), policy, method and confidence, the
GPU-hours and unit rates, and the workload appendix (:mod:`gpucost.commands.statements_appendix`).
Every value from the warehouse is HTML-escaped.
"""

from __future__ import annotations

import html
from decimal import Decimal
from typing import Any

from gpucost.commands import statements_appendix as appendix
from gpucost.commands.statements_labels import (
    KINDS,
    basis_label,
    kind_description,
    kind_label,
    method_label,
)

MODE_LABELS = {
    "chargeback": "Amount to be charged",
    "showback": "For information - not charged",
}


def money(value: Decimal) -> str:
    """Cents with thousands separators, exactly (Decimal formatting never goes through a float)."""
    return f"{value:,.2f}"


def share(amount: Decimal, total: Decimal) -> str:
    """``amount`` as a percentage of ``total`` to one decimal, for display ("-" without a total)."""
    if not total:
        return "-"
    return f"{(Decimal(amount) * 100 / Decimal(total)).quantize(Decimal('0.1'))}%"


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
    return basis_label(basis)


def render_html(statement: Any) -> str:
    """A :class:`~gpucost.commands.statements.Statement` as a self-contained printable page (inline
    CSS, no external assets)."""
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
                + _cell(kind_label(line.cost_kind))
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
        + _cell(kind_label(kind))
        + _cell(kind_description(kind))
        + _cell(money(statement.kind_totals.get(kind, Decimal(0))), numeric=True)
        + _cell(share(statement.kind_totals.get(kind, Decimal(0)), statement.total_billed), True)
        + "</tr>"
        for kind in KINDS
    )
    policy_rows = "".join(
        "<tr>"
        + _cell(kind_label(kind))
        + f"<td><code>{esc(basis)}</code> - {esc(_policy_text(basis))}</td>"
        + _cell(money(amount), numeric=True)
        + "</tr>"
        for kind, basis, amount in statement.policies
    )
    attribution_rows = "".join(
        "<tr>"
        + f"<td><code>{esc(method)}</code></td>"
        + _cell(method_label(method))
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
    gpu_summary = (
        f"{statement.gpu_hours:,.2f} GPU-hours in the month, per GPU model, with what they cost "
        "per GPU-hour."
    )
    inferred = [line for line in statement.workloads if line.is_inferred]
    inferred_total = sum((line.billed_cost for line in inferred), Decimal("0.00"))
    appendix_summary = (
        f"{len(statement.workloads):,} workloads, each with its cost on this statement (its GPU "
        "time, its nodes' CPU and memory parts, its volumes), how its project was known and how "
        "sure that is. "
        f"{len(inferred):,} were placed by the learned model or a rule "
        f"({money(inferred_total)} {cur}); the signals behind each of those placements are "
        "listed. A method's rows add up to its line under 'Attribution'; 'not tied to one "
        "workload' holds the rest of that line (idle share, tagged lines, shared services)."
    )
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
<table><thead><tr><th>kind</th><th>what it is</th><th class="num">billed</th>
<th class="num">share</th></tr></thead>
<tbody>{kind_rows}</tbody></table>

<h2>GPU-hours and unit rates</h2>
<p>{esc(gpu_summary)}</p>
{appendix.render_gpu_html(statement.gpu_lines, cur)}

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

<h2>Appendix: the workloads behind the charge</h2>
<p>{esc(appendix_summary)}</p>
{appendix.render_appendix_html(statement.workloads, statement.workload_remainders)}
</body>
</html>
"""
