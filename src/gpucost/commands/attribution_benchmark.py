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
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpucost.core.attribution import (
    Prediction,
    attribute,
    evaluate,
    known_projects,
    predict_untagged,
)

TARGETS = {"coverage": 0.95, "accuracy": 0.97, "ece": 0.03}


def _rows(con: Any, query: str) -> list[dict[str, Any]]:
    rel = con.sql(query)
    names = rel.columns
    return [dict(zip(names, row, strict=True)) for row in rel.fetchall()]


Row = tuple[str | None, str, float, float]  # (predicted, true project, confidence, weight)


def coverage_at_accuracy(rows: list[Row], accuracy: float) -> float:
    """The largest share of the weight a single threshold on these confidences could place with
    at least ``accuracy`` of the placed weight right (most confident first, ties together): the
    best any threshold could do with this ranking, known only with the truth."""
    total = sum(w for *_, w in rows)
    groups: dict[float, list[float]] = {}
    for p, t, c, w in rows:
        g = groups.setdefault(c, [0.0, 0.0])
        g[0] += w
        g[1] += w if p == t else 0.0
    placed = right = best = 0.0
    for c in sorted(groups, reverse=True):
        placed, right = placed + groups[c][0], right + groups[c][1]
        if placed and right / placed >= accuracy:
            best = placed
    return best / total if total else 0.0


def _truth(truth_csv: Path) -> dict[str, tuple[str, str]]:
    truth: dict[str, tuple[str, str]] = {}
    with truth_csv.open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            wid = f"{r['cluster']}/{r['namespace']}/{r['pod']}/{r['uid']}"
            truth[wid] = (r["project_id"], r["tag_state"])
    return truth


def truth_rows(
    warehouse: Path, truth_csv: Path, predictions: Mapping[str, Prediction] | None = None
) -> tuple[list[Row], list[Row]]:
    """(rules + model, model alone) rows of the untagged pods (per the generator), against their
    true project, weighted by effective cost. ``predictions`` replace the build's model for every
    workload no rule or override placed (:func:`oracle_rows`); the model-alone rows stay the
    build's."""
    import duckdb

    truth = _truth(truth_csv)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = _rows(
            con,
            """
            select w.workload_id, w.project_id, w.attribution_method, w.attribution_confidence,
                p.candidate_1_project_id, p.attribution_confidence as model_confidence,
                cast(coalesce(c.effective_cost, 0) as double) as weight
            from intermediate.int_workloads as w
            left join intermediate.int_workload_attribution_predictions as p using (workload_id)
            left join (
                select workload_id, sum(effective_cost) as effective_cost
                from marts.fct_cost_allocation where workload_id is not null group by 1
            ) as c using (workload_id)
            """,
        )
    scored, model_only = [], []
    for r in rows:
        true_project, state = truth.get(r["workload_id"], (None, None))
        if state is None or state == "tagged":
            continue
        if predictions is not None and r["attribution_method"] not in ("rule", "override"):
            p = predictions.get(r["workload_id"])
            pred, conf = (p.project_id, p.confidence) if p and p.candidates else (None, 0.0)
        elif r["attribution_method"] in ("rule", "model", "override"):
            pred, conf = r["project_id"], float(r["attribution_confidence"])
        else:
            pred, conf = r["candidate_1_project_id"], float(r["model_confidence"] or 0.0)
        scored.append((pred, true_project, conf, r["weight"]))
        if r["model_confidence"] is not None:
            conf = float(r["model_confidence"])
            model_only.append((r["candidate_1_project_id"], true_project, conf, r["weight"]))
    return scored, model_only


def oracle_rows(warehouse: Path, truth_csv: Path, seed: int) -> list[Row]:
    """Rules + model rows as :func:`truth_rows`, from a model retrained (same code, same seed) on
    features whose history knows the true project of every workload but the one scored: every
    neighbour, labelled or not, read as if a rule had placed it. Not a training label; an
    information ceiling for what better history could add."""
    import duckdb

    truth = _truth(truth_csv)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        records = _rows(con, "select * from intermediate.int_workload_features")
        mapping = _rows(con, "select project_id from staging.stg_reference__org_mapping")
    told = [
        {**r, "rule_project_id": truth[r["workload_id"]][0]}
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
    repeated over later months), the workloads trained on and scored."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        base = _rows(con, "select * from intermediate.int_workload_features order by workload_id")
        mapping = con.sql("select project_id from staging.stg_reference__org_mapping")
        known = [r[0] for r in mapping.fetchall()]
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
    predictions, model = predict_untagged(records, sorted(known), training_days=None, seed=seed)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    return elapsed, cpu, model.training_workloads if model else 0, len(predictions)


def _pct(x: float | None) -> str:
    """A share as a percentage; an undefined one (nothing to measure) reads 0."""
    return f"{100 * (x or 0.0):6.2f}%"


def run(args: argparse.Namespace) -> int:
    from gpucost.commands.project import dbt_env, dbt_executable, find_project_dir
    from gpucost.synth import MonthConfig, generate_month

    out = Path(args.out or tempfile.mkdtemp(prefix="gpucost-attribution-"))
    landing, warehouse = out / "landing", out / "gpucost.duckdb"
    truth_csv = out / "truth" / "workloads.csv"
    t = time.perf_counter()
    config = MonthConfig(
        seed=args.seed,
        nodes=args.nodes,
        days=args.days,
        step_seconds=args.step,
        untagged_fraction=0.5,
        hard=True,
        creator_webhook_share=args.creator_webhook,
    )
    summary = generate_month(landing, config, truth_csv=truth_csv)
    print(
        f"generated {summary['pods']} pods ({summary['untagged_pods']} untagged,"
        f" {summary['typo_pods']} typo'd, {summary['creator_stamped_pods']} with the creator"
        f" annotation) on {args.nodes} nodes x {args.days} days"
        f" in {time.perf_counter() - t:.1f} s: {out}"
    )
    project = find_project_dir()
    t = time.perf_counter()
    command = [dbt_executable(), "build", "--project-dir", str(project)]
    if args.threshold is not None:  # a fixed threshold: no target accuracy
        command += ["--vars"]
        command += [
            f"{{gpucost_attribution_auto_threshold: {args.threshold},"
            " gpucost_attribution_target_accuracy: null}"
        ]
    elif args.target_accuracy is not None:
        command += ["--vars", f"{{gpucost_attribution_target_accuracy: {args.target_accuracy}}}"]
    command += ["--profiles-dir", str(project), "--target-path", str(out / "target")]
    command += ["--log-path", str(out / "logs")]
    result = subprocess.run(
        command, cwd=project, env=dbt_env(landing, warehouse), capture_output=True, text=True
    )
    if result.returncode != 0:
        print(result.stdout[-4000:], file=sys.stderr)
        return result.returncode
    print(f"dbt build (model trained inside) in {time.perf_counter() - t:.1f} s")

    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        quality = _rows(
            con,
            "select * from marts.rpt_attribution_quality order by case metric_group"
            " when 'holdout' then 0 when 'reliability' then 1 when 'confusion' then 2 else 3 end,"
            " confidence_bin_low, effective_cost desc, metric_key",
        )
    print("\nrpt_attribution_quality (time-based hold-out of labelled workloads, money-weighted):")
    for q in quality:
        if q["metric_group"] == "holdout":
            print(
                f"  holdout: {q['workload_count']} workloads, coverage {_pct(q['coverage'] or 0)},"
                f" accuracy of auto {_pct(q['accuracy'] or 0)},"
                f" accuracy of all {_pct(q['accuracy_all'] or 0)},"
                f" ECE {_pct(q['expected_calibration_error'] or 0)}"
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
        else:
            print(
                f"  untagged in this build: {q['workload_count']} workloads,"
                f" placed by rule or model"
                f" {_pct(q['coverage'] or 0)} of their cost"
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
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--step", type=int, default=300, help="telemetry step seconds")
    parser.add_argument("--seed", type=int, default=42)
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
        help="share of the clusters whose admission webhook stamps gpucost.io/created-by (0 to 1)",
    )
    parser.add_argument(
        "--workloads", type=int, default=100_000, help="workloads for the timing (0 to skip)"
    )
    parser.set_defaults(func=run)
