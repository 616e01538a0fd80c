"""`gpucost benchmark-attribution`: how well the learned attribution does on a hard generated month.

1. generates a month in hard mode (users on two or three projects, shared images, vague names,
   pipelines, service accounts, a project handed over mid-month) with half the pods untagged, and
   the generator's truth for every pod, kept outside the landing zone;
2. builds the warehouse (the model trains inside `dbt build`) and prints `rpt_attribution_quality`;
3. scores the untagged pods against the truth, money-weighted: coverage (share of untagged GPU cost
   placed automatically), accuracy of what was placed, expected calibration error;
4. says where the gap to the targets lies: the most this build's confidences could place at the
   target accuracy with the best threshold (the ranking bound), and the same for a model that knows
   the true project of every other workload (an information ceiling: history as good as it gets);
5. times training plus scoring of ``--workloads`` (default 100k) workloads made by repeating the
   month's feature rows over later months.

``--grid`` runs many such months instead (seeds x configurations of the hard mode's confusions)
and ranks them worst first: gpucost.commands.attribution_grid.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from gpucost.commands.attribution_truth import (
    TARGETS,
    Row,
    _rows,
    _truth,
    build_warehouse,
    coverage_at_accuracy,
    read_quality,
    team_figures,
    training_var,
    truth_rows,
)


def oracle_rows(warehouse: Path, truth_csv: Path, seed: int) -> list[Row]:
    """Rules + model rows as :func:`truth_rows`, from a model retrained (same code, same seed) on
    features whose history knows the true project of every workload but the one scored: every
    neighbour, labelled or not, read as if a rule had placed it. Not a training label; an
    information ceiling for what better history could add."""
    import duckdb

    from gpucost.core.attribution import attribute, known_projects  # scikit-learn: on call

    truth = _truth(truth_csv)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        records = _rows(con, "select * from intermediate.int_workload_features")
        mapping = _rows(con, "select project_id from staging.stg_reference__org_mapping")
    told = [
        {**r, "rule_project_id": truth[r["workload_id"]].project_id}
        if r["workload_id"] in truth
        and not r.get("known_project_id")
        and not r.get("rule_project_id")
        else r
        for r in records
    ]
    result = attribute(told, known_projects(records, mapping), seed=seed)
    return truth_rows(warehouse, truth_csv, {p.workload_id: p for p in result.predictions})[0]


def time_training(warehouse: Path, workloads: int, seed: int) -> tuple[float, float, int, int]:
    """Wall and CPU seconds to train and score ``workloads`` workloads (the month's features,
    repeated over later months), the workloads trained on and scored: the build's whole training
    (teams, the hold-out of whole people, suspected mislabels, cold start) at the project's
    default targets."""
    import duckdb

    from gpucost.core.attribution import attribute, project_teams

    with duckdb.connect(str(warehouse), read_only=True) as con:
        base = _rows(con, "select * from intermediate.int_workload_features order by workload_id")
        mapping = _rows(con, "select * from staging.stg_reference__org_mapping")
        known = [r["project_id"] for r in mapping]
    span = max(r["started_epoch"] or 0 for r in base) - min(r["started_epoch"] or 0 for r in base)
    records = []
    for k in range(-(-workloads // len(base))):
        for r in base:
            if len(records) == workloads:
                break
            copy = dict(r)
            copy["workload_id"] = f"{r['workload_id']}#{k}"
            copy["started_epoch"] = (r["started_epoch"] or 0) + k * (span + 3600)
            records.append(copy)
    started, cpu = time.perf_counter(), time.process_time()
    result = attribute(
        records,
        sorted(known),
        training_days=None,
        seed=seed,
        target_accuracy=training_var("target_accuracy"),
        teams=project_teams(records, mapping),
        team_target_accuracy=training_var("team_target_accuracy"),
        mislabel_confidence=training_var("mislabel_confidence"),
        declared=mapping,
    )
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    model = result.model
    return elapsed, cpu, model.training_workloads if model else 0, len(result.predictions)


def _pct(x: float | None) -> str:
    """A share as a percentage; an undefined one (nothing to measure) reads 0."""
    return f"{100 * (x or 0.0):6.2f}%"


def run(args: argparse.Namespace) -> int:
    if args.grid:
        from gpucost.commands.attribution_grid import run_grid

        return run_grid(args)
    from gpucost.core.attribution import evaluate
    from gpucost.synth import MonthConfig, generate_month

    out = Path(args.out or tempfile.mkdtemp(prefix="gpucost-attribution-"))
    landing, warehouse = out / "landing", out / "gpucost.duckdb"
    truth_csv = out / "truth" / "workloads.csv"
    t = time.perf_counter()
    nodes, days = args.nodes or 16, args.days or 30
    try:
        config = MonthConfig(
            seed=args.seed,
            nodes=nodes,
            days=days,
            step_seconds=args.step,
            clusters=args.clusters or 2,
            untagged_fraction=0.5,
            hard=True,
            creator_webhook_share=args.creator_webhook,
        )
    except ValueError as error:
        print(f"gpucost benchmark-attribution: {error}", file=sys.stderr)
        return 2
    summary = generate_month(landing, config, truth_csv=truth_csv)
    print(
        f"generated {summary['pods']} pods ({summary['untagged_pods']} untagged,"
        f" {summary['typo_pods']} typo'd, {summary['wrong_tag_pods']} with a valid but wrong"
        f" project id, {summary['creator_stamped_pods']} with the creator annotation;"
        f" never tagging: {', '.join(summary['never_tagging_teams']) or 'no team'})"
        f" on {nodes} nodes x {days} days in {time.perf_counter() - t:.1f} s: {out}"
    )
    t = time.perf_counter()
    result = build_warehouse(
        out, landing, warehouse, threshold=args.threshold, target_accuracy=args.target_accuracy
    )
    if result.returncode != 0:
        print(result.stdout[-4000:], file=sys.stderr)
        return result.returncode
    print(f"dbt build (model trained inside) in {time.perf_counter() - t:.1f} s")
    quality = read_quality(warehouse)
    print("\nrpt_attribution_quality (time-based hold-out of labelled workloads, money-weighted):")
    for q in quality:
        if q["metric_group"] in ("holdout", "team_holdout", "person_holdout"):
            print(
                f"  {q['metric_group']}: {q['workload_count']} workloads,"
                f" coverage {_pct(q['coverage'] or 0)},"
                f" accuracy of auto {_pct(q['accuracy'] or 0)},"
                f" accuracy of all {_pct(q['accuracy_all'] or 0)},"
                f" ECE {_pct(q['expected_calibration_error'] or 0)}"
            )
        elif q["metric_group"] == "support_class":
            print(
                f"  support class {q['metric_key']}: {q['workload_count']} untagged workloads,"
                f" cost {q['effective_cost']:.2f}, coverage {_pct(q['coverage'])},"
                f" estimated accuracy {_pct(q['accuracy'])};"
                f" hold-outs: accuracy {_pct(q['accuracy_all'])},"
                f" ECE {_pct(q['expected_calibration_error'])}"
            )
        elif q["metric_group"] == "cold_start":
            print(
                f"  cold start {q['metric_key']}: precision on labelled work"
                f" {_pct(q['accuracy'])} over {q['workload_count']} matched,"
                f" placed {q['auto_effective_cost']:.2f} of untagged cost"
            )
        elif q["metric_group"] == "reliability":
            print(
                f"  confidence [{q['confidence_bin_low']:.1f}, {q['confidence_bin_high']:.1f}):"
                f" {q['workload_count']:5d} workloads,"
                f" mean confidence {_pct(q['mean_confidence'] or 0)},"
                f" accuracy {_pct(q['accuracy'] or 0)}"
            )
        elif q["metric_group"] == "confusion":
            print(
                f"  confused: {q['true_project_id']} -> {q['predicted_project_id']}"
                f" ({q['workload_count']} workloads, {q['effective_cost']:.2f})"
            )
        elif q["metric_group"] == "untagged":
            level = "on a project" if q["metric_key"] == "all" else "at least on a team"
            print(
                f"  untagged in this build: {q['workload_count']} workloads,"
                f" placed {level} {_pct(q['coverage'] or 0)} of their cost"
            )

    threshold = float(quality[0]["auto_threshold"]) if quality else (args.threshold or 0.9)
    if args.threshold is not None:
        print(f"  auto threshold (fixed): {threshold}")
    elif args.target_accuracy is not None:
        print(f"  auto threshold derived from target accuracy {args.target_accuracy}: {threshold}")
    else:
        print(
            "  auto threshold derived from the project's target accuracy"
            f" (var gpucost_attribution_target_accuracy): {threshold}"
        )
    scored, model_only = truth_rows(warehouse, truth_csv)
    reports = {
        "all": evaluate(scored, threshold=threshold),
        "model": evaluate(model_only, threshold=threshold),
    }
    print(f"\nuntagged pods against the generator's truth (threshold {threshold}):")
    for name, rep in reports.items():
        label = "rules + model" if name == "all" else "model alone"
        print(
            f"  {label:13s}: {rep.workloads} workloads, coverage {_pct(rep.coverage)}"
            f" (target {_pct(TARGETS['coverage'])}), accuracy of auto {_pct(rep.accuracy_auto)}"
            f" (target {_pct(TARGETS['accuracy'])}), accuracy of all {_pct(rep.accuracy_all)},"
            f" ECE {_pct(rep.ece)} (target <= {_pct(TARGETS['ece'])})"
        )
    rep = reports["all"]
    print("  reliability (rules + model, untagged pods against the truth, money-weighted):")
    for b in rep.reliability:
        print(
            f"    confidence [{b.low:.1f}, {b.high:.1f}): {b.workloads:5d} workloads,"
            f" mean confidence {_pct(b.mean_confidence)}, accuracy {_pct(b.accuracy)}"
        )
    for c in rep.confusions:
        print(
            f"    confused: {c.true_project_id} -> {c.predicted_project_id}"
            f" ({c.workloads} workloads, {c.cost:.2f})"
        )
    sweep = ", ".join(
        f"{t:.1f}: {_pct(r.coverage).strip()} at {_pct(r.accuracy_auto).strip()}"
        for t in (0.5, 0.6, 0.7, 0.8, 0.9)
        for r in [evaluate(scored, threshold=t)]
    )
    print(f"  other thresholds (coverage at accuracy): {sweep}")
    rep = reports["all"]
    placed_right = _pct((rep.coverage or 0.0) * (rep.accuracy_auto or 0.0))
    print(f"  coverage x accuracy = {placed_right} of untagged cost placed right")
    teams = team_figures(warehouse, truth_csv)
    print(
        f"  teams: {_pct(teams.coverage).strip()} of the untagged cost ({teams.cost:.2f}) placed on"
        f" a team, {_pct(teams.accuracy).strip()} of it on the true team at the pod's time; of it"
        f" {_pct(teams.label_coverage).strip()} by the pod's team label alone, at"
        f" {_pct(teams.label_accuracy).strip()}"
    )
    target = TARGETS["accuracy"]
    print(
        f"  where the gap lies: the best single threshold on these confidences would place"
        f" {_pct(coverage_at_accuracy(scored, target)).strip()} at {_pct(target).strip()} right"
        " (ranking bound, needs the truth);"
    )
    oracle = oracle_rows(warehouse, truth_csv, seed=0)
    told = evaluate(oracle, threshold=threshold)
    print(
        f"  knowing every other workload's true project (information ceiling of the history):"
        f" coverage {_pct(told.coverage).strip()} at {_pct(told.accuracy_auto).strip()},"
        f" accuracy of all {_pct(told.accuracy_all).strip()}, ranking bound"
        f" {_pct(coverage_at_accuracy(oracle, target)).strip()}"
    )

    if args.workloads:
        seconds, cpu, trained, scored = time_training(warehouse, args.workloads, args.seed)
        print(
            f"\ntraining + scoring {args.workloads} workloads"
            f" ({trained} trained on, {scored} scored):"
            f" {seconds:.1f} s wall, {cpu:.1f} s CPU (target < 60 s; load average"
            f" {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
        )
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "benchmark-attribution",
        help="hard generated month: attribution coverage, accuracy, calibration, timing",
    )
    parser.add_argument("--out", help="work folder (default: a new temporary folder)")
    parser.add_argument("--nodes", type=int, default=None, help="GPU nodes (16; grid: 8)")
    parser.add_argument("--days", type=int, default=None, help="days (30; grid: 14)")
    parser.add_argument("--clusters", type=int, default=None, help="clusters (2; grid: 3)")
    parser.add_argument("--step", type=int, default=300, help="telemetry step seconds")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--grid",
        action="store_true",
        help="run months of --seeds x --configurations instead and rank them worst first",
    )
    parser.add_argument(
        "--seeds", default="1,2,3", help="grid: comma-separated seeds (default 1,2,3)"
    )
    parser.add_argument(
        "--configurations",
        default=None,
        help="grid: comma-separated configurations (default: all of hard, silent-teams,"
        " patchy, sparse-specs)",
    )
    how = parser.add_mutually_exclusive_group()
    how.add_argument(
        "--target-accuracy",
        type=float,
        default=None,
        help="derive the threshold from this target accuracy (default: the project's var"
        " gpucost_attribution_target_accuracy, 0.97)",
    )
    how.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="a fixed auto-attribution threshold instead (var gpucost_attribution_auto_threshold)",
    )
    parser.add_argument(
        "--creator-webhook",
        type=float,
        default=0.5,
        help="share of the clusters whose admission webhook stamps gpucost.io/created-by (0 to 1;"
        " single month: the grid's configurations set their own)",
    )
    parser.add_argument(
        "--dated-org-mapping",
        action="store_true",
        help="grid: the org mapping dates the project handed to another team (valid_from /"
        " valid_to), as an organisation that records it would",
    )
    parser.add_argument(
        "--workloads", type=int, default=100_000, help="workloads for the timing (0 to skip)"
    )
    parser.set_defaults(func=run)
