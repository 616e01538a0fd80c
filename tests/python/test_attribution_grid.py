"""`gpucost benchmark-attribution --grid`: the ranking and the worst row as pure functions, the
truth's team scoring, and one tiny month through the whole command (one dbt build)."""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

import pytest

from gpucost.commands.attribution_grid import (
    CONFIGURATIONS,
    FIGURES,
    format_table,
    parse_grid,
    rank_months,
    worst_values,
    write_csv,
)
from gpucost.commands.attribution_truth import TeamRow, team_figures, team_rows, team_scores


def _month(name: str, **figures: float | None) -> dict:
    base = {f.key: 0.5 for f in FIGURES} | {"untagged_cost": Decimal("10.0000000001")}
    return base | {"month": name} | figures


def test_months_rank_worst_first_by_accuracy_of_placed_cost() -> None:
    months = [
        _month("b-seed1", project_accuracy=0.97, team_accuracy=0.99),
        _month("a-seed1", project_accuracy=0.91, team_accuracy=0.999),
        _month("c-seed1", project_accuracy=None, team_accuracy=0.5),  # placed nothing: worst
        _month("d-seed1", project_accuracy=0.91, team_accuracy=0.95),  # tie: lower team first
    ]
    ranked = [m["month"] for m in rank_months(months)]
    assert ranked == ["c-seed1", "d-seed1", "a-seed1", "b-seed1"]


def test_worst_row_takes_each_figure_in_its_own_direction() -> None:
    months = [
        _month("x", project_coverage=0.4, ece=0.01, gap_to_claim=0.05, team_accuracy=None),
        _month("y", project_coverage=0.6, ece=0.08, gap_to_claim=-0.02, team_accuracy=None),
    ]
    worst = worst_values(months)
    assert worst["project_coverage"] == 0.4  # higher is better: the lowest
    assert worst["ece"] == 0.08  # lower is better: the highest
    assert worst["gap_to_claim"] == 0.05  # a claim above delivery is the worse gap
    assert worst["team_accuracy"] is None  # no month has it
    table = format_table(rank_months(months), worst).splitlines()
    assert table[0].split()[0] == "month" and table[-1].split()[0] == "worst"
    assert "-" in table[-1].split()  # the missing figure prints as '-'


def test_grid_csv_has_every_figure_and_exact_cost(tmp_path: Path) -> None:
    months = [_month("=cmd|' /C calc'!A0", untagged_cost=Decimal("1.0000000001")), _month("z")]
    for m, seed in zip(months, (1, 2), strict=True):
        m |= {"configuration": "hard", "seed": seed}
    ranked, worst = rank_months(months), worst_values(months)
    write_csv(tmp_path / "grid.csv", ranked, worst)
    rows = list(csv.DictReader((tmp_path / "grid.csv").open(encoding="utf-8")))
    assert list(rows[0]) == ["rank", "month", "configuration", "seed", *(f.key for f in FIGURES)]
    assert [r["rank"] for r in rows] == ["1", "2", ""] and rows[-1]["month"] == "worst"
    assert {r["untagged_cost"] for r in rows} >= {"1.0000000001", "10.0000000001"}
    assert any(r["month"].startswith("'=") for r in rows)  # a formula stays text


def test_team_scores_count_a_team_only_placement_as_placed() -> None:
    rows = [
        TeamRow("nlp", "nlp", Decimal("3"), False),  # model or model_team: on the true team
        TeamRow("vision", "nlp", Decimal("1"), False),  # on another team
        TeamRow("vision", "vision", Decimal("2"), True),  # only its pod's team label: right
        TeamRow("nlp", "vision", Decimal("2"), True),  # only its pod's team label: another team
        TeamRow(None, "nlp", Decimal("4"), False),  # nobody
    ]
    cost, coverage, accuracy = team_scores(rows)
    assert cost == Decimal(12)
    assert coverage == 8 / 12 and accuracy == 5 / 8
    assert team_scores(rows, by_label=True) == (Decimal(12), 4 / 12, 0.5)
    assert team_scores(rows, by_label=False) == (Decimal(12), 4 / 12, 0.75)
    assert team_scores([]) == (Decimal(0), None, None)


def test_team_rows_count_the_money_a_team_label_keeps_on_its_team(tmp_path: Path) -> None:
    """What the marts charge to a team is team-placed, whatever put it there: a pod nobody placed
    keeps its money on its team label's team (method none), and that part is flagged; nobody's
    money (unallocated), the suspense owner's and a tagged pod's are not counted as placed."""
    import duckdb

    truth = tmp_path / "workloads.csv"
    with truth.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["cluster", "namespace", "pod", "uid", "project_id", "team_id", "tag_state"])
        for pod, state in [("a", "untagged"), ("b", "untagged"), ("c", "typo"), ("d", "untagged")]:
            w.writerow(["k", "ns", pod, "1", "rag", "nlp", state])
        w.writerow(["k", "ns", "e", "1", "rag", "nlp", "tagged"])
    warehouse = tmp_path / "w.duckdb"
    with duckdb.connect(str(warehouse)) as con:
        con.execute("create schema marts")
        con.execute(
            "create table marts.fct_cost_allocation as select * from (values"
            " ('k/ns/a/1', 'nlp', 'model_team', 3.0::decimal(38, 18)),"
            " ('k/ns/b/1', 'vision', 'none', 2.0),"
            " ('k/ns/c/1', '__unallocated__', 'none', 4.0),"
            " ('k/ns/d/1', 'finance', 'suspense', 1.0),"
            " ('k/ns/e/1', 'nlp', 'pod_label', 9.0)"
            ") as t(workload_id, team_id, attribution_method, effective_cost)"
        )
    rows = sorted(team_rows(warehouse, truth), key=lambda r: r[2])
    assert rows == [
        (None, "nlp", Decimal("1.000000000000000000"), False),
        ("vision", "nlp", Decimal("2.000000000000000000"), True),
        ("nlp", "nlp", Decimal("3.000000000000000000"), False),
        (None, "nlp", Decimal("4.000000000000000000"), False),
    ]
    # the grid's and the benchmark's figures: all placements, then the team label's alone
    assert team_figures(warehouse, truth) == (Decimal(10), 5 / 10, 3 / 5, 2 / 10, 0.0)


@pytest.mark.parametrize(
    ("seeds", "configurations", "message"),
    [("1,x", None, "comma-separated integers"), ("1", "hard,nope", "unknown configuration")],
)
def test_grid_arguments_fail_in_one_line(seeds: str, configurations: str | None, message: str):
    with pytest.raises(ValueError, match=message):
        parse_grid(seeds, configurations)
    assert parse_grid("1,2,3", None) == ([1, 2, 3], list(CONFIGURATIONS))
    assert len(CONFIGURATIONS) * 3 >= 12  # the default grid: at least 12 months


@pytest.mark.warehouse
def test_grid_command_scores_a_month_against_the_truth(tmp_path, capsys) -> None:
    """One tiny month through the whole grid command: its CSV row equals what the truth and the
    warehouse say, computed here in SQL (team) and by the single month's code (project)."""
    import duckdb

    from gpucost.commands.cli import main

    out = tmp_path / "grid"
    args = ["--grid", "--out", str(out), "--nodes", "3", "--days", "2", "--step", "600"]
    assert main(["benchmark-attribution", *args, "--seeds", "4", "--configurations", "patchy"]) == 0
    printed = capsys.readouterr().out
    assert "worst first (worst = lowest accuracy of the placed untagged cost)" in printed
    ((row, worst),) = [list(csv.DictReader((out / "grid.csv").open(encoding="utf-8")))]
    assert (row["month"], row["configuration"], row["seed"]) == ("patchy-seed4", "patchy", "4")
    assert worst["month"] == "worst"
    month = out / "patchy-seed4"
    truth_csv = str(month / "truth" / "workloads.csv").replace("'", "''")
    with duckdb.connect(str(month / "gpucost.duckdb"), read_only=True) as con:
        # on a team: whatever the marts charge to one (a pod nobody placed keeps its money on its
        # team label's team, method none: the part by label)
        ((cost, placed, right, by_label, label_right),) = con.execute(
            f"with truth as (select * from read_csv('{truth_csv}', all_varchar = true)"
            " where tag_state in ('untagged', 'typo')),"
            " money as (select a.team_id, a.attribution_method, a.effective_cost, t.team_id as true_team,"
            " a.attribution_method <> 'suspense'"
            " and a.team_id not in ('__unallocated__', '__unattributed__', '__idle__') as on_team"
            " from marts.fct_cost_allocation as a join truth as t"
            " on a.workload_id = t.cluster || '/' || t.namespace || '/' || t.pod || '/' || t.uid)"
            " select sum(effective_cost),"
            " sum(effective_cost) filter (where on_team),"
            " sum(effective_cost) filter (where on_team and team_id = true_team),"
            " sum(effective_cost) filter (where on_team and attribution_method = 'none'),"
            " sum(effective_cost) filter (where on_team and attribution_method = 'none'"
            "  and team_id = true_team)"
            " from money"
        ).fetchall()
    assert cost > 0 and Decimal(row["untagged_cost"]) == cost
    assert float(row["team_coverage"]) == pytest.approx(float(placed / cost), abs=1e-12)
    if placed:
        assert float(row["team_accuracy"]) == pytest.approx(float(right / placed), abs=1e-12)
    assert float(row["label_team_coverage"]) == pytest.approx(
        float((by_label or 0) / cost), abs=1e-12
    )
    if by_label:
        assert float(row["label_team_accuracy"]) == pytest.approx(
            float(label_right / by_label), abs=1e-12
        )
    with duckdb.connect(str(month / "gpucost.duckdb"), read_only=True) as con:
        ((ece, p90),) = con.sql(
            "select expected_calibration_error, ece_if_calibrated_p90"
            " from marts.rpt_attribution_quality where metric_group = 'person_holdout'"
        ).fetchall()
    # a month this small has too few labelled people to withhold: no figure, not a zero
    assert ece is None and p90 is None
    assert row["person_ece"] == row["person_ece_excess"] == ""
    for f in FIGURES:
        assert row[f.key] == worst[f.key]  # one month: it is the worst of every figure
    # the patchy month's compliance reached the truth: 70 % of the pods untagged
    truth = list(csv.DictReader((month / "truth" / "workloads.csv").open(encoding="utf-8")))
    share = sum(r["tag_state"] == "untagged" for r in truth) / len(truth)
    assert share == pytest.approx(0.7, abs=0.02)


def test_the_claim_is_the_support_classes_estimates_weighted_by_the_cost_they_placed():
    from gpucost.commands.attribution_grid import claimed_accuracy

    quality = [
        {"metric_group": "holdout", "accuracy": 0.99, "auto_effective_cost": 10},
        {"metric_group": "support_class", "accuracy": 0.98, "auto_effective_cost": 300},
        {"metric_group": "support_class", "accuracy": 0.90, "auto_effective_cost": 100},
        {"metric_group": "support_class", "accuracy": None, "auto_effective_cost": 0},
    ]
    assert abs(claimed_accuracy(quality) - (0.98 * 300 + 0.90 * 100) / 400) < 1e-12
    assert claimed_accuracy(quality[:1]) == 0.99  # no support classes: the time hold-out's


def test_the_people_hold_outs_ece_is_read_against_a_calibrated_models_p90():
    from gpucost.commands.attribution_grid import person_ece

    quality = [
        {"metric_group": "holdout", "expected_calibration_error": 0.5},
        {
            "metric_group": "person_holdout",
            "expected_calibration_error": Decimal("0.254858"),
            "ece_if_calibrated_p90": Decimal("0.190102"),
        },
    ]
    figures = person_ece(quality)
    assert figures["person_ece"] == 0.254858
    assert figures["person_ece_excess"] == pytest.approx(0.064756, abs=1e-12)
    assert person_ece(quality[:1]) == {"person_ece": None, "person_ece_excess": None}


def test_team_bounds_sweep_one_threshold_and_a_perfect_ranking() -> None:
    """The team bound adds the team level's candidates most confident first (ties together) to the
    placements before it, and keeps the largest coverage at the accuracy; the ceiling ranks them
    perfectly (every right one first)."""
    from gpucost.commands.attribution_truth import TeamCandidate, TeamLevel, team_bounds

    def bounds(fixed, candidates, accuracy):
        return team_bounds(TeamLevel([("w", r) for r in fixed], candidates), accuracy)

    fixed = [TeamRow("nlp", "nlp", Decimal(6), False)]
    candidates = [
        TeamCandidate("nlp", "nlp", 0.9, Decimal(2)),
        TeamCandidate("vision", "nlp", 0.8, Decimal(1)),  # wrong, and surer than the next
        TeamCandidate("recsys", "recsys", 0.5, Decimal(1)),
    ]
    # at 0.9: fixed 6/6, +2 8/8, +1 8/9 (below), +1 9/10 = 0.9: all of it
    assert bounds(fixed, candidates, 0.9) == (1.0, 1.0)
    # at 0.95 the wrong one stops the sweep at 8/10; a perfect ranking places both right ones
    assert bounds(fixed, candidates, 0.95) == (0.8, 0.9)
    # ties go together: a right and a wrong candidate at one confidence cannot be split
    tied = [
        TeamCandidate("nlp", "nlp", 0.7, Decimal(1)),
        TeamCandidate("x", "nlp", 0.7, Decimal(1)),
    ]
    assert bounds(fixed, tied, 0.95)[0] == 0.75  # fixed 6 of 8 only
    # placements before the team level below the accuracy, and nothing lifts them: 0
    wrong = [TeamRow("nlp", "vision", Decimal(1), True), TeamRow(None, "nlp", Decimal(3), False)]
    assert bounds(wrong, [], 0.98) == (0.0, 0.0)
    # enough right candidates lift a wrong placement above the accuracy
    many = [TeamCandidate("nlp", "nlp", 0.6, Decimal(99))]
    assert bounds(wrong, many, 0.98) == (100 / 103, 100 / 103)
    assert bounds([], [], 0.98) == (0.0, 0.0)


def test_team_level_splits_what_the_team_level_decides(tmp_path: Path) -> None:
    """A team-only placement and an unplaced pod without a team label are the team level's
    candidates (its prediction, the pod's money over all its rows); a pod kept on its team label, a
    project placement and a pod without a prediction are fixed."""
    import duckdb

    from gpucost.commands.attribution_truth import TeamCandidate, team_level

    truth = tmp_path / "workloads.csv"
    with truth.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["cluster", "namespace", "pod", "uid", "project_id", "team_id", "tag_state"])
        for pod in "abcde":
            w.writerow(["k", "ns", pod, "1", "rag", "nlp", "untagged"])
    warehouse = tmp_path / "w.duckdb"
    with duckdb.connect(str(warehouse)) as con:
        con.execute("create schema marts")
        con.execute("create schema intermediate")
        con.execute(
            "create table marts.fct_cost_allocation as select * from (values"
            " ('k/ns/a/1', 'nlp', 'model_team', 3.0::decimal(38, 18)),"
            " ('k/ns/a/1', 'nlp', 'model_team', 1.0),"
            " ('k/ns/b/1', '__unallocated__', 'none', 2.0),"
            " ('k/ns/c/1', 'vision', 'none', 4.0),"
            " ('k/ns/d/1', 'nlp', 'model', 5.0),"
            " ('k/ns/e/1', '__unallocated__', 'none', 6.0)"
            ") as t(workload_id, team_id, attribution_method, effective_cost)"
        )
        con.execute(
            "create table intermediate.int_workloads as select * from (values"
            " ('k/ns/a/1', 'model_team', null), ('k/ns/b/1', 'none', null),"
            " ('k/ns/c/1', 'none', 'vision'), ('k/ns/d/1', 'model', null),"
            " ('k/ns/e/1', 'none', null)"
            ") as t(workload_id, attribution_method, label_team_id)"
        )
        con.execute(
            "create table intermediate.int_workload_attribution_predictions as select * from"
            " (values ('k/ns/a/1', 'nlp', 0.99), ('k/ns/b/1', 'vision', 0.4),"
            " ('k/ns/c/1', 'nlp', 0.9), ('k/ns/d/1', 'nlp', 0.97), ('k/ns/e/1', null, null)"
            ") as t(workload_id, predicted_team_id, team_confidence)"
        )
    level = team_level(warehouse, truth)
    fixed, candidates = [r for _, r in level.fixed], level.candidates
    assert candidates == [
        TeamCandidate("nlp", "nlp", 0.99, Decimal("4.000000000000000000")),
        TeamCandidate("vision", "nlp", 0.4, Decimal("2.000000000000000000")),
    ]
    assert sorted(r.cost for r in fixed) == [Decimal(4), Decimal(5), Decimal(6)]
    # the money before the team level on a wrong team (c: its team label's), and none of it moved
    from gpucost.commands.attribution_truth import team_misses

    with duckdb.connect(str(warehouse)) as con:
        con.execute(
            "create table marts.dim_projects as select 'rag' as project_id, 'nlp' as team_id"
        )
    assert team_misses(warehouse, truth, level) == (4 / 21, 0.0)
    with duckdb.connect(str(warehouse)) as con:  # the org mapping names the project's old team
        con.execute("update marts.dim_projects set team_id = 'vision'")
    assert team_misses(warehouse, truth, level) == (4 / 21, 4 / 21)
