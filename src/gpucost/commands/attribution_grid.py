"""`gpucost benchmark-attribution --grid`: attribution scored over a grid of hard months.

Each month of ``--seeds`` x ``--configurations`` (default 3 x 4 = 12, each 8 nodes x 14 days on 3
clusters) is generated in hard mode with its truth, built (the model trains inside `dbt build`) and
scored against the truth by the single month's code (gpucost.commands.attribution_benchmark:
truth_rows, team_rows, evaluate). The table lists the WORST month first, worst meaning the lowest
accuracy of the placed untagged cost (then the lowest team accuracy), then the worst value of each
figure over the grid; ``grid.csv`` in the work folder holds the same rows. A month that lifts one
figure and sinks another shows in the worst row: judge a change by it, not by one month.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

CONFIGURATIONS: dict[str, dict[str, Any]] = {
    # the hard mode's defaults: one team never tags, people tag by habit, hand-overs, a project born
    # mid-month, 3 % valid-but-wrong tags, generic names, namespaces per team / project / shared,
    # pod specs for two clusters of three
    "hard": {},
    # two teams never tag: more projects with no labelled workload at all (cold start)
    "silent-teams": {"never_tagging_teams": 2},
    # low and patchy compliance: 70 % untagged, wide spread between people, a quarter never tag,
    # more wrong tags and more people moving between projects
    "patchy": {
        "untagged_fraction": 0.7,
        "compliance_spread": 0.45,
        "never_tagging_people": 0.25,
        "wrong_tag_share": 0.05,
        "handover_share": 0.4,
    },
    # pod specs for one cluster of three (a shared-namespace one), no creator webhook, mostly
    # generic names
    "sparse-specs": {
        "pod_spec_share": 0.34,
        "creator_webhook_share": 0.0,
        "generic_name_share": 0.8,
        "namespace_layouts": ("shared", "project", "team"),
    },
}


@dataclass(frozen=True)
class Figure:
    """One column: ``key`` in a month's figures, its header, and whether higher is better."""

    key: str
    header: str
    higher_is_better: bool
    meaning: str


FIGURES: tuple[Figure, ...] = (
    Figure("untagged_cost", "untagged cost", False, "effective cost of the untagged pods (exact)"),
    Figure("project_coverage", "proj cov", True, "share of it placed on a project"),
    Figure("project_accuracy", "proj acc", True, "share of the placed cost on the true project"),
    Figure("team_coverage", "team cov", True, "share of it placed on a team"),
    Figure("team_accuracy", "team acc", True, "share of the team-placed cost on the true team"),
    Figure(
        "label_team_coverage",
        "by label",
        False,
        "the part of team cov that only the pod's team label placed (nobody placed the project"
        " or the team; the marts keep that money on the labelled team)",
    ),
    Figure("label_team_accuracy", "label acc", True, "share of that part on the true team"),
    Figure("ece", "ECE", False, "calibration error of the untagged pods against the truth"),
    Figure("holdout_ece", "hold ECE", False, "the build's time hold-out ECE (its quality mart)"),
    Figure(
        "person_ece",
        "pers ECE",
        False,
        "the ECE of the build's hold-out of whole people and namespaces (person_holdout)",
    ),
    Figure(
        "person_ece_excess",
        "over p90",
        False,
        "pers ECE - the 90th percentile of what a perfectly calibrated model shows on the same"
        " hold-out (ece_if_calibrated_p90): above 0, evidence of miscalibration",
    ),
    Figure(
        "claimed_accuracy",
        "claimed",
        True,
        "what the build claims for the placed untagged cost (its support classes' estimates)",
    ),
    Figure("gap_to_claim", "claim gap", False, "claimed - delivered project accuracy"),
    Figure("gap_to_target", "target gap", False, "target accuracy - delivered project accuracy"),
    Figure("ranking_bound", "bound", True, "coverage the best threshold could reach at target"),
    Figure(
        "team_bound",
        "team bound",
        True,
        "team coverage the best team threshold could reach at the build's team target (0.98), the"
        " placements before the team level as they are",
    ),
    Figure(
        "team_ceiling",
        "team ceil",
        True,
        "the same with a perfect ranking of the model's team predictions: the most they can give",
    ),
    Figure(
        "team_missed_before",
        "pre-team wrong",
        False,
        "share of the untagged cost the placements before the team level (project, own name,"
        " rule, cold start, the pod's team label) put on a wrong team",
    ),
    Figure(
        "team_missed_handover",
        "of it moved",
        False,
        "the part of pre-team wrong whose project had moved to another team (dim_projects names"
        " its old team)",
    ),
)


SIGNED = {"gap_to_claim", "gap_to_target", "person_ece_excess"}  # printed with their sign


def rank_months(months: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The months worst first: lowest accuracy of the placed untagged cost (a month that placed
    nothing, accuracy None, counts as the worst), then lowest team accuracy, then name."""

    def key(m: dict[str, Any]) -> tuple:
        acc, team = m.get("project_accuracy"), m.get("team_accuracy")
        return (acc is not None, acc or 0.0, team is not None, team or 0.0, m["month"])

    return sorted(months, key=key)


def worst_values(months: list[dict[str, Any]]) -> dict[str, Any]:
    """The worst value of each figure over ``months`` (the lowest of a figure where higher is
    better, else the highest; None where no month has the figure)."""
    worst: dict[str, Any] = {"month": "worst"}
    for f in FIGURES:
        values = [m[f.key] for m in months if m.get(f.key) is not None]
        worst[f.key] = (min if f.higher_is_better else max)(values) if values else None
    return worst


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key == "untagged_cost":
        return f"{value:.2f}"
    if key in SIGNED:
        return f"{100 * value:+.2f}%"
    return f"{100 * value:.2f}%"


def format_table(ranked: list[dict[str, Any]], worst: dict[str, Any]) -> str:
    """The ranked months and the worst row as an aligned text table."""
    headers = ["month", *(f.header for f in FIGURES)]
    lines = [[m["month"], *(_cell(f.key, m.get(f.key)) for f in FIGURES)] for m in ranked]
    lines.append([worst["month"], *(_cell(f.key, worst.get(f.key)) for f in FIGURES)])
    widths = [max(len(r[i]) for r in [headers, *lines]) for i in range(len(headers))]

    def row(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                         enumerate(zip(cells, widths, strict=True)))  # fmt: skip

    rule = "-" * len(row(headers))
    return "\n".join([row(headers), rule, *map(row, lines[:-1]), rule, row(lines[-1])])


def write_csv(path: Path, ranked: list[dict[str, Any]], worst: dict[str, Any]) -> None:
    """The table as CSV: one row per month worst first, then the worst row; raw values (shares
    as fractions, cost exact)."""
    from gpucost.commands.safe_output import csv_row

    columns = ["rank", "month", "configuration", "seed", *(f.key for f in FIGURES)]
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(columns)
        for i, m in enumerate([*ranked, worst], start=1):
            values = {**m, "rank": i if m is not worst else ""}
            writer.writerow(csv_row(values.get(c) for c in columns))


def month_figures(
    warehouse: Path, truth_csv: Path, quality: list[dict[str, Any]], target: float
) -> dict[str, Any]:
    """One month's figures (see FIGURES) from its warehouse, its truth and its quality report."""
    from gpucost.commands.attribution_truth import (
        coverage_at_accuracy,
        team_bounds,
        team_figures,
        team_level,
        team_misses,
        training_var,
        truth_rows,
    )
    from gpucost.core.attribution import evaluate

    holdout = next((q for q in quality if q["metric_group"] == "holdout"), {})
    threshold = float(quality[0]["auto_threshold"]) if quality else 0.9
    scored, _ = truth_rows(warehouse, truth_csv)
    report = evaluate(scored, threshold=threshold)
    teams = team_figures(warehouse, truth_csv)
    claimed = claimed_accuracy(quality)
    delivered = report.accuracy_auto
    # the build's own team target (var gpucost_attribution_team_target_accuracy, 0.98)
    team_target = training_var("team_target_accuracy") or 0.98
    level = team_level(warehouse, truth_csv)
    team_bound, team_ceiling = team_bounds(level, team_target)
    missed_before, missed_moved = team_misses(warehouse, truth_csv, level)
    return {
        "threshold": threshold,
        "untagged_cost": teams.cost,
        "project_coverage": report.coverage,
        "project_accuracy": delivered,
        "team_coverage": teams.coverage,
        "team_accuracy": teams.accuracy,
        "label_team_coverage": teams.label_coverage,
        "label_team_accuracy": teams.label_accuracy,
        "ece": report.ece,
        "holdout_ece": _float(holdout.get("expected_calibration_error")),
        **person_ece(quality),
        "claimed_accuracy": _float(claimed),
        "gap_to_claim": None
        if claimed is None or delivered is None
        else float(claimed) - delivered,
        "gap_to_target": None if delivered is None else target - delivered,
        "ranking_bound": coverage_at_accuracy(scored, target),
        "team_bound": team_bound,
        "team_ceiling": team_ceiling,
        "team_missed_before": missed_before,
        "team_missed_handover": missed_moved,
    }


def person_ece(quality: list[dict[str, Any]]) -> dict[str, float | None]:
    """The people hold-out's ECE (``person_ece``) and how far it lies above the 90th percentile of
    a perfectly calibrated model's on the same hold-out (``person_ece_excess``); None for a build
    without that hold-out (too few labelled people to withhold)."""
    person = next((q for q in quality if q["metric_group"] == "person_holdout"), {})
    ece, p90 = (
        _float(person.get("expected_calibration_error")),
        _float(person.get("ece_if_calibrated_p90")),
    )
    return {
        "person_ece": ece,
        "person_ece_excess": None if ece is None or p90 is None else ece - p90,
    }


def claimed_accuracy(quality: list[dict[str, Any]]) -> float | None:
    """What the build claims for the untagged cost it placed: each support class's estimated
    accuracy (its placed workloads' mean calibrated confidence) weighted by the cost it placed;
    the time hold-out's accuracy when the build has no support classes."""
    classes = [
        q for q in quality if q["metric_group"] == "support_class" and q["accuracy"] is not None
    ]
    placed = sum(float(q["auto_effective_cost"]) for q in classes)
    if placed:
        return sum(float(q["accuracy"]) * float(q["auto_effective_cost"]) for q in classes) / placed
    holdout = next((q for q in quality if q["metric_group"] == "holdout"), {})
    return _float(holdout.get("accuracy"))


def _float(value: Decimal | float | None) -> float | None:
    return None if value is None else float(value)


def parse_grid(seeds: str, configurations: str | None) -> tuple[list[int], list[str]]:
    """The seeds and configuration names of the command line; ``ValueError`` with a one-line
    message on a seed that is not an integer or an unknown configuration."""
    try:
        seed_list = [int(s) for s in seeds.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--seeds must be comma-separated integers, not {seeds!r}") from None
    names = list(CONFIGURATIONS) if configurations is None else [
        c.strip() for c in configurations.split(",") if c.strip()
    ]  # fmt: skip
    unknown = [c for c in names if c not in CONFIGURATIONS]
    if unknown:
        raise ValueError(
            f"unknown configuration {unknown[0]!r} (known: {', '.join(CONFIGURATIONS)})"
        )
    if not seed_list or not names:
        raise ValueError("the grid needs at least one seed and one configuration")
    return seed_list, names


def run_grid(args: argparse.Namespace) -> int:
    from gpucost.commands.attribution_truth import TARGETS, build_warehouse, read_quality
    from gpucost.synth import MonthConfig, generate_month

    nodes, days, clusters = args.nodes or 8, args.days or 14, args.clusters or 3
    try:
        seeds, names = parse_grid(args.seeds, args.configurations)
        configs = {
            (name, seed): MonthConfig(
                seed=seed,
                nodes=nodes,
                days=days,
                step_seconds=args.step,
                clusters=clusters,
                hard=True,
                dated_org_mapping=getattr(args, "dated_org_mapping", False),
                **CONFIGURATIONS[name],
            )
            for name in names
            for seed in seeds
        }
    except ValueError as error:
        print(f"gpucost benchmark-attribution: {error}", file=sys.stderr)
        return 2
    target = args.target_accuracy if args.target_accuracy is not None else TARGETS["accuracy"]
    out = Path(args.out or tempfile.mkdtemp(prefix="gpucost-attribution-grid-"))
    out.mkdir(parents=True, exist_ok=True)
    print(
        f"grid: {len(names)} configurations x {len(seeds)} seeds = {len(configs)} months of"
        f" {nodes} nodes x {days} days on {clusters} clusters: {out}",
        flush=True,
    )
    started = time.perf_counter()
    months = []
    for (name, seed), config in configs.items():
        t = time.perf_counter()
        month = out / f"{name}-seed{seed}"
        landing, warehouse = month / "landing", month / "gpucost.duckdb"
        truth_csv = month / "truth" / "workloads.csv"
        summary = generate_month(landing, config, truth_csv=truth_csv)
        result = build_warehouse(
            month,
            landing,
            warehouse,
            threshold=args.threshold,
            target_accuracy=args.target_accuracy,
            target=out / "target",  # one for every month: dbt's partial parse is reused
        )
        if result.returncode != 0:
            print(result.stdout[-4000:], file=sys.stderr)
            print(
                f"gpucost benchmark-attribution: the build of {month.name} failed", file=sys.stderr
            )
            return result.returncode
        figures = month_figures(warehouse, truth_csv, read_quality(warehouse), target)
        months.append({"month": month.name, "configuration": name, "seed": seed, **figures})
        print(
            f"  {month.name}: {summary['pods']} pods, {summary['untagged_pods']} untagged,"
            f" project {_cell('p', figures['project_coverage'])} placed at"
            f" {_cell('p', figures['project_accuracy'])}, team"
            f" {_cell('p', figures['team_coverage'])} at {_cell('p', figures['team_accuracy'])}"
            f" ({time.perf_counter() - t:.0f} s)",
            flush=True,
        )
    ranked = rank_months(months)
    worst = worst_values(months)
    print(
        f"\n{len(months)} months, worst first (worst = lowest accuracy of the placed untagged"
        f" cost); target accuracy {target}; last row: the worst value of each figure:"
    )
    print(format_table(ranked, worst))
    write_csv(out / "grid.csv", ranked, worst)
    print(f"\n{out / 'grid.csv'} written; {time.perf_counter() - started:.0f} s in all")
    return 0
