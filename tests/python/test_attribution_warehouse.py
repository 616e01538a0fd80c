"""Learned attribution inside dbt build: owners, confidence, review queue, quality, overrides."""

from __future__ import annotations

import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from .conftest import PROJECT_DIR, Warehouse, run_dbt

pytestmark = pytest.mark.warehouse

DECLARED = ("bill_tag", "pod_label", "override", "rule", "policy")


def _project_copy(tmp: Path) -> Path:
    """The dbt project without venv, builds or data: a place to add seed rows."""
    copy = tmp / "project"

    def ignore(directory: str, names: list[str]) -> list[str]:
        # landing/, warehouse/ and tests/ only at the root: models/staging/landing is a model folder
        skip = {".venv", ".git", "target", "logs", "node_modules"}
        if Path(directory) == PROJECT_DIR:
            skip |= {"landing", "warehouse", "tests"}
        return [name for name in names if name in skip]

    shutil.copytree(PROJECT_DIR, copy, ignore=ignore)
    shutil.copytree(PROJECT_DIR / "tests" / "generic", copy / "tests" / "generic")
    shutil.copytree(PROJECT_DIR / "tests" / "singular", copy / "tests" / "singular")
    return copy


def _dbt(project: Path, warehouse: Warehouse, target: Path, *args: str):
    from gpucost.commands.cli import dbt_env, dbt_executable

    command = [
        dbt_executable(),
        *args,
        "--project-dir",
        str(project),
        "--profiles-dir",
        str(project),
    ]
    command += ["--target-path", str(target / "target"), "--log-path", str(target / "logs")]
    return subprocess.run(
        command,
        cwd=project,
        env=dbt_env(warehouse.landing, target / "gpucost.duckdb"),
        capture_output=True,
        text=True,
        check=False,
    )


def test_every_allocation_row_says_how_and_how_sure(generated_warehouse):
    # a workload's rows: declared owners are sure (1), nobody is 0
    rows = generated_warehouse.sql(
        "select attribution_method, min(attribution_confidence), max(attribution_confidence), count(*)"
        " from marts.fct_cost_allocation where workload_id is not null or allocation_kind <> 'idle'"
        " group by 1"
    )
    methods = {m: (lo, hi) for m, lo, hi, _ in rows}
    assert None not in methods
    for method in DECLARED:
        if method in methods:
            assert methods[method] == (Decimal(1), Decimal(1)), method
    assert methods["none"] == (Decimal(0), Decimal(0))
    # an owner's share of a node line nobody used (no workload: the cluster-day's owners) takes the
    # method of most of the owner's GPU time and its GPU-time-weighted confidence (docs/allocation.md),
    # so a declared majority (half the time or more at 1) sits at or above 0.5, one of nobody (at 0)
    # at or below it
    owners = generated_warehouse.sql(
        "select attribution_method, min(attribution_confidence), max(attribution_confidence)"
        " from marts.fct_cost_allocation where workload_id is null and allocation_kind = 'idle'"
        " group by 1"
    )
    for method, lo, hi in owners:
        assert method is not None
        if method in DECLARED:
            assert Decimal("0.5") <= lo <= hi <= 1, method
        if method == "none":
            assert 0 <= lo <= hi <= Decimal("0.5"), method
    # the workloads the model scored are exactly those no label, override or rule placed
    ((scored, undecided),) = generated_warehouse.sql(
        "select (select count(*) from intermediate.int_workload_attribution_predictions),"
        " (select count(*) from intermediate.int_workload_owners_declared where not is_attributed)"
    )
    assert scored == undecided > 0


def test_review_lists_what_fell_below_the_threshold_by_cost(generated_warehouse):
    rows = generated_warehouse.sql(
        "select review_rank, effective_cost, candidate_1_probability, candidate_2_probability,"
        " attribution_method from marts.rpt_attribution_review"
        " where review_reason = 'unplaced' order by review_rank"
    )
    assert rows
    threshold = generated_warehouse.sql(
        "select max(auto_threshold) from marts.rpt_attribution_quality"
    )[0][0]
    costs = [r[1] for r in rows]
    assert costs == sorted(costs, reverse=True)
    for _, _, p1, p2, method in rows:
        assert method == "none"
        assert p1 is None or (p1 < threshold and (p2 is None or p2 <= p1))
    # every workload left unattributed is in the queue, and its cost is the unallocated GPU cost
    ((queued, unallocated_gpu),) = generated_warehouse.sql(
        "select (select sum(effective_cost) from marts.rpt_attribution_review"
        "  where review_reason = 'unplaced'),"
        " (select sum(effective_cost) from marts.fct_cost_allocation"
        "  where workload_id is not null and attribution_method = 'none')"
    )
    assert queued == unallocated_gpu


def test_quality_is_measured_on_a_time_based_holdout(generated_warehouse):
    groups = dict(
        generated_warehouse.sql(
            "select metric_group, count(*) from marts.rpt_attribution_quality group by 1"
        )
    )
    assert groups["holdout"] == 1 and groups["untagged"] == 3 and groups["reliability"] >= 1
    # the team level counts what the marts charge to a team: the money a pod's own team label keeps
    # on its team when nobody placed the pod (method none) is team-placed, by the label alone
    untagged = dict(
        generated_warehouse.sql(
            "select metric_key, auto_effective_cost from marts.rpt_attribution_quality"
            " where metric_group = 'untagged'"
        )
    )
    ((kept_by_label,),) = generated_warehouse.sql(
        "select sum(effective_cost) from marts.fct_cost_allocation where workload_id is not null"
        " and attribution_method = 'none' and team_id <> '__unallocated__'"
    )
    assert untagged["team_label"] == kept_by_label > 0
    assert untagged["team"] >= untagged["all"] + untagged["team_label"]
    # the team level, the people withheld whole, one row per support class, the cold-start path
    assert groups["team_holdout"] == 1 and groups["person_holdout"] == 1
    assert groups["support_class"] == 3 and groups["cold_start"] == 3
    ((holdout_n, bins_n, ece),) = generated_warehouse.sql(
        "select workload_count, (select sum(workload_count) from marts.rpt_attribution_quality"
        " where metric_group = 'reliability'), expected_calibration_error"
        " from marts.rpt_attribution_quality where metric_group = 'holdout'"
    )
    assert holdout_n == bins_n > 0
    assert 0 <= ece <= 1
    # every ECE beside the band a perfectly calibrated model shows on the same workloads; the
    # other groups (reliability bins, confusions, untagged coverage, cold start) have none
    bands = generated_warehouse.sql(
        "select metric_group, expected_calibration_error is not null, ece_if_calibrated,"
        " ece_if_calibrated_p90 from marts.rpt_attribution_quality"
        " where metric_group not in ('reliability', 'support_class')"
    )
    for group, measured, median, p90 in bands:
        if group in ("holdout", "team_holdout", "person_holdout") and measured:
            assert 0 <= median <= p90 <= 1, group
        else:
            assert median is None and p90 is None, group
    # held-out workloads all started after every workload the evaluation model trained on
    ((latest_train, earliest_test),) = generated_warehouse.sql(
        "select max(f.started_epoch) filter (where h.workload_id is null),"
        " min(f.started_epoch) filter (where h.workload_id is not null)"
        " from intermediate.int_workload_features as f"
        " left join intermediate.int_workload_attribution_holdout as h"
        " on f.workload_id = h.workload_id and h.scored_set = 'holdout'"
        " where f.known_project_id is not null"
    )
    assert earliest_test > latest_train


def test_an_accepted_suggestion_changes_the_next_build(generated_warehouse, tmp_path, capsys):
    from gpucost.commands import review
    from gpucost.commands.cli import main
    from gpucost.commands.publish import publish_marts

    from .test_review import decide_in_browser

    (rank, workload, candidate), (_, rejected, _) = generated_warehouse.sql(
        "select review_rank, workload_id, candidate_1_project_id from marts.rpt_attribution_review"
        " where candidate_1_project_id is not null order by review_rank limit 2"
    )
    project = _project_copy(tmp_path)
    overrides = project / "seeds" / "attribution_overrides.csv"
    # a person accepts the first item on the dashboard's review page, in headless Chromium
    parquet = tmp_path / "parquet"
    publish_marts(generated_warehouse.path, parquet, log=None)
    page = decide_in_browser(parquet, overrides, rank, tmp_path, by="dana", why="asked the team")
    assert f"Accept candidate 1: {candidate}" in page["decision"], page["decision"]
    assert page["recorded"].startswith("Recorded review-"), page["recorded"]
    assert workload in page["recorded"] and f"project {candidate}" in page["recorded"]
    [accepted] = review.read_overrides(overrides)
    assert (accepted["match_pattern"], accepted["project_id"]) == (
        review.workload_pattern(workload),
        candidate,
    )
    assert (accepted["decided_by"], accepted["reason"]) == ("dana", "asked the team")
    # and rejects the second from a terminal: not the suggested project, owner unknown
    reject = ["review", "reject", rejected, "--warehouse", str(generated_warehouse.path)]
    reject += ["--overrides", str(overrides), "--by", "erin", "--why", "not ours"]
    assert main(reject) == 0, capsys.readouterr().err
    ((rejected_cost, rejected_lines),) = generated_warehouse.sql(
        "select sum(effective_cost), count(distinct charge_id) from marts.fct_cost_allocation"
        f" where workload_id = '{rejected}'"
    )
    # a shared workload (declared weights 3:1) and a producer whose outputs two projects read (lineage 2:1)
    (shared, shared_cost), (producer, _) = generated_warehouse.sql(
        "select workload_id, sum(effective_cost) from marts.fct_cost_allocation"
        " where attribution_method = 'pod_label' group by 1 order by 2 desc, 1 limit 2"
    )
    with (project / "seeds" / "attribution_shared_workloads.csv").open("a", encoding="utf-8") as f:
        f.write(
            f"feature-pipeline,workload_id,^{shared}$,rag-search,3,dana,2026-11-01,shared features\n"
        )
        f.write(
            f"feature-pipeline,workload_id,^{shared}$,summarizer,1,dana,2026-11-01,shared features\n"
        )
    with (project / "seeds" / "attribution_lineage.csv").open("a", encoding="utf-8") as f:
        f.write(f"workload_id,^{producer}$,detector-v2,2,2026-11-01\n")
        f.write(f"workload_id,^{producer}$,seg-anything,1,2026-11-01\n")
    target = tmp_path / "build"
    target.mkdir()
    shutil.copyfile(generated_warehouse.path, target / "gpucost.duckdb")
    # a low threshold as well: model owners allocate money and the guards (reconciliation) still hold
    result = _dbt(
        project,
        generated_warehouse,
        target,
        "build",
        "--select",
        "attribution_overrides+",
        "attribution_shared_workloads+",
        "attribution_lineage+",
        "--vars",
        "{gpucost_attribution_auto_threshold: 0.3, gpucost_attribution_target_accuracy: null}",
    )
    assert result.returncode == 0, result.stdout[-6000:]
    rebuilt = target / "gpucost.duckdb"
    ((method, owner, rule_id, confidence),) = generated_warehouse.sql(
        f"select attribution_method, project_id, attribution_rule_id, attribution_confidence"
        f" from intermediate.int_workloads where workload_id = '{workload}'",
        warehouse=rebuilt,
    )
    assert (method, owner, confidence) == ("override", candidate, 1.0)
    assert rule_id.startswith("review-")
    # the override is now a training label, and the workload left the review queue
    assert generated_warehouse.sql(
        f"select known_project_id from intermediate.int_workload_features where workload_id = '{workload}'",
        warehouse=rebuilt,
    ) == [(candidate,)]
    assert generated_warehouse.sql(
        f"select count(*) from marts.rpt_attribution_review where workload_id = '{workload}'",
        warehouse=rebuilt,
    ) == [(0,)]
    # the money moved: every allocation row of the workload is the accepted project's, by override
    assert generated_warehouse.sql(
        "select distinct project_id, attribution_method from marts.fct_cost_allocation"
        f" where workload_id = '{workload}'",
        warehouse=rebuilt,
    ) == [(candidate, "override")]
    # the rejected workload: declared unattributed, not scored, out of the queue, its money an
    # explicit unallocated row with the reason, none of it lost
    assert generated_warehouse.sql(
        "select attribution_method, project_id, unattributed_reason, attribution_rule_id like"
        f" 'review-%' from intermediate.int_workloads where workload_id = '{rejected}'",
        warehouse=rebuilt,
    ) == [("review_rejected", "__unallocated__", "rejected_in_review", True)]
    assert generated_warehouse.sql(
        "select (select count(*) from intermediate.int_workload_attribution_predictions"
        f" where workload_id = '{rejected}'), (select count(*) from marts.rpt_attribution_review"
        f" where workload_id = '{rejected}')",
        warehouse=rebuilt,
    ) == [(0, 0)]
    rejected_rows = generated_warehouse.sql(
        "select project_id, allocation_kind, unallocated_reason, sum(effective_cost)"
        f" from marts.fct_cost_allocation where workload_id = '{rejected}' group by 1, 2, 3",
        warehouse=rebuilt,
    )
    assert {(p, kind) for p, kind, _, _ in rejected_rows} == {("__unallocated__", "unallocated")}
    assert all(reason.endswith("_of_rejected_in_review") for _, _, reason, _ in rejected_rows)
    # each line is split to the warehouse's last digit (1e-18) by largest remainder among its
    # rows, so when other workloads on a line change owner (the lower threshold above), a
    # workload's share of a line can move by that one unit: at most one per line it is on
    lost = abs(sum(cost for *_, cost in rejected_rows) - rejected_cost)
    assert lost <= rejected_lines * Decimal("1e-18"), (lost, rejected_lines)
    assert generated_warehouse.sql(
        "select bool_and(is_reconciled), sum(abs(billed_residual)) from marts.rpt_reconciliation",
        warehouse=rebuilt,
    ) == [(True, 0)]
    split = generated_warehouse.sql(
        "select workload_id, project_id, attribution_rule_id, sum(effective_cost)"
        " from marts.fct_cost_allocation where attribution_method = 'shared_workload'"
        " group by 1, 2, 3 order by 1, 2",
        warehouse=rebuilt,
    )
    by_project = {(w, p): (rule, cost) for w, p, rule, cost in split}
    assert {p for w, p in by_project if w == shared} == {"rag-search", "summarizer"}
    assert {p for w, p in by_project if w == producer} == {"detector-v2", "seg-anything"}
    assert by_project[(shared, "rag-search")][0] == "feature-pipeline"
    assert by_project[(producer, "detector-v2")][0] == "lineage"
    assert (
        by_project[(shared, "rag-search")][1] + by_project[(shared, "summarizer")][1] == shared_cost
    )
    ratio = by_project[(shared, "rag-search")][1] / shared_cost
    assert abs(ratio - Decimal("0.75")) < Decimal("1e-9")
    model_rows = generated_warehouse.sql(
        "select count(*), min(attribution_confidence) from marts.fct_cost_allocation"
        " where attribution_method = 'model' and allocation_kind in ('usage', 'idle')",
        warehouse=rebuilt,
    )
    assert model_rows[0][0] > 0 and model_rows[0][1] >= Decimal("0.3")
    # the override is a changed training label: the build trained a new model version (the vars
    # changed too), and every model-placed allocation row of a workload names it (idle spread to an
    # owner rather than a workload names none)
    ((versions, newest, reason),) = generated_warehouse.sql(
        "select count(*), arg_max(model_version, version_sequence),"
        " arg_max(retrain_reason, version_sequence) from intermediate.int_attribution_model_versions",
        warehouse=rebuilt,
    )
    assert versions == 2 and reason == "labels, settings"
    assert generated_warehouse.sql(
        "select list(distinct attribution_model_version) from marts.fct_cost_allocation"
        " where attribution_method = 'model' and workload_id is not null",
        warehouse=rebuilt,
    ) == [([newest],)]


def test_benchmark_command_scores_untagged_pods_against_the_truth(tmp_path, capsys):
    import csv
    import re

    from gpucost.commands.cli import main

    out = tmp_path / "bench"
    args = ["--out", str(out), "--nodes", "2", "--days", "2", "--step", "600", "--workloads", "500"]
    # with a target accuracy: the build derives its threshold (var gpucost_attribution_target_accuracy)
    assert main(["benchmark-attribution", *args, "--target-accuracy", "0.85"]) == 0
    printed = capsys.readouterr().out
    assert "holdout:" in printed and "other thresholds" in printed
    assert "ranking bound" in printed and "information ceiling" in printed
    # the hard month's confusions, and the team scored apart from the project
    assert re.search(r"\d+ with a valid but wrong project id", printed)
    assert re.search(r"never tagging: [a-z-]+\)", printed)
    (team_cov, team_acc) = re.findall(
        r"teams: ([\d.]+)% .* placed on a team, ([\d.]+)% of it", printed
    )[0]
    assert 0 <= float(team_cov) <= 100 and 0 <= float(team_acc) <= 100
    (derived,) = re.findall(r"derived from target accuracy 0.85: ([\d.]+)", printed)
    assert re.search(r"training \+ scoring 500 workloads .*: [\d.]+ s wall", printed)
    # every untagged pod that ran is scored: the truth joins the warehouse's workload ids
    (scored,) = re.findall(r"rules \+ model: (\d+) workloads", printed)
    truth = list(csv.DictReader((out / "truth" / "workloads.csv").open(encoding="utf-8")))
    import duckdb

    with duckdb.connect(str(out / "gpucost.duckdb"), read_only=True) as con:
        ran = {
            r[0] for r in con.sql("select workload_id from intermediate.int_workloads").fetchall()
        }
        creators = con.sql(
            "select distinct creator_username, creator_user_id from staging.stg_kube__pod_specs"
        ).fetchall()
        [(with_creator,)] = con.sql(
            "select count(*) from intermediate.int_workload_features where creator_user_id is not null"
        ).fetchall()
    # the webhook's annotation (half the clusters by default) reaches the model's features: a
    # person as the user label's form, a service account as nobody, no webhook as null
    assert with_creator > 0
    assert any(name == f"{user}@acme.example" for name, user in creators if user)
    assert any(name.startswith("system:serviceaccount:") for name, _ in creators if name)
    assert all(user is None for name, user in creators if (name or "system:").startswith("system:"))
    # untagged means without a project id of the org mapping (untagged, or typo'd); a valid but
    # wrong id is a label the build takes
    untagged_ran = [
        r
        for r in truth
        if r["tag_state"] in ("untagged", "typo")
        and f"{r['cluster']}/{r['namespace']}/{r['pod']}/{r['uid']}" in ran
    ]
    assert int(scored) == len(untagged_ran) > 0
    assert {r["tag_state"] for r in truth} >= {"tagged", "untagged", "wrong_tag"}
    _assert_threshold_derived(out / "gpucost.duckdb", 0.85, float(derived))


def _assert_threshold_derived(warehouse: Path, target: float, printed: float) -> None:
    """The build's threshold is the one threshold_for_accuracy gives over its own predictions
    (weighted by GPU-hours), on every score row and in rpt_attribution_quality, and it is what
    decided which workloads the model owns."""
    from gpucost.core.attribution import threshold_for_accuracy
    from gpucost.core.attribution.features import gpu_hours

    with duckdb.connect(str(warehouse), read_only=True) as con:
        thresholds = con.sql(
            "select distinct auto_threshold from intermediate.int_workload_attribution_scores"
        ).fetchall()
        rel = con.sql(
            "select p.workload_id, p.attribution_confidence, f.gpu_count, f.duration_hours,"
            " w.attribution_method, p.declared_match"
            " from intermediate.int_workload_attribution_predictions as p"
            " join intermediate.int_workload_features as f using (workload_id)"
            " join intermediate.int_workloads as w using (workload_id)"
        )
        rows = [dict(zip(rel.columns, r, strict=True)) for r in rel.fetchall()]
        quality = con.sql("select distinct auto_threshold from marts.rpt_attribution_quality")
        (reported,) = quality.fetchall()
    ((threshold,),) = thresholds
    assert threshold == printed == float(reported[0])
    # the threshold is derived from the model's own predictions of the work the own-name path
    # (declared_name) leaves it; the cold-start path (projects and teams nobody tags, placed from
    # the org mapping's names) comes after it, and this month has none
    assert not [r for r in rows if r["declared_match"] in ("project", "team")]
    model_rows = [r for r in rows if r["declared_match"] is None]
    expected = threshold_for_accuracy(
        [r["attribution_confidence"] for r in model_rows],
        [gpu_hours(r) for r in model_rows],
        target,
    )
    assert threshold == expected
    for r in model_rows:
        owned = r["attribution_method"] == "model"
        assert owned == (r["attribution_confidence"] >= threshold), r
    for r in rows:
        if r["declared_match"] == "name":
            assert r["attribution_method"] == "declared_name"


def test_cost_below_the_threshold_goes_to_the_suspense_owner(generated_warehouse):
    """With vars gpucost_attribution_suspense_team_id / _project_id set, what no label, override,
    rule or confident prediction placed is owned by the suspense project instead of nobody, and
    every bill line still reconciles (the build's singular tests) with the same total."""
    ((none_cost, none_workloads, total),) = generated_warehouse.sql(
        "select sum(effective_cost) filter (where workload_id is not null and attribution_method = 'none'),"
        " count(distinct workload_id) filter (where attribution_method = 'none'), sum(effective_cost)"
        " from marts.fct_cost_allocation"
    )
    assert none_cost > 0 and none_workloads > 0
    rebuilt = generated_warehouse.copy("suspense")
    result = run_dbt(
        generated_warehouse.landing,
        rebuilt,
        generated_warehouse.work / "suspense",
        "build",
        "--select",
        "int_workloads+",
        "--vars",
        "{gpucost_attribution_suspense_team_id: finops, gpucost_attribution_suspense_project_id: gpu-suspense}",
    )
    assert result.returncode == 0, result.stdout[-6000:]
    rows = generated_warehouse.sql(
        "select attribution_method, team_id, project_id, count(distinct workload_id),"
        " sum(effective_cost), max(attribution_confidence)"
        " from marts.fct_cost_allocation where workload_id is not null"
        " and attribution_method in ('none', 'suspense') group by 1, 2, 3",
        warehouse=rebuilt,
    )
    ((method, team, project, workloads, suspense_cost, confidence),) = rows
    assert (method, team, project, workloads, confidence) == (
        "suspense",
        "finops",
        "gpu-suspense",
        none_workloads,
        0,
    )
    # the same money: each bill line's largest-remainder split (in 1e-18 units) may hand a unit
    # to another owner now that these rows have one, so per-workload sums agree to 1e-15
    assert abs(suspense_cost - none_cost) < Decimal("1e-15")
    # the review queue still lists them (they are below the threshold), with the cost at stake
    ((queued, queued_cost, methods),) = generated_warehouse.sql(
        "select count(*), sum(effective_cost), list(distinct attribution_method)"
        " from marts.rpt_attribution_review where review_reason = 'unplaced'",
        warehouse=rebuilt,
    )
    assert (queued, queued_cost, methods) == (none_workloads, suspense_cost, ["suspense"])
    ((total_after,),) = generated_warehouse.sql(
        "select sum(effective_cost) from marts.fct_cost_allocation", warehouse=rebuilt
    )
    assert total_after == total
