"""The learned attribution's quality on its time-based hold-out, money-weighted by each workload's
effective cost: gpucost.core.attribution.quality, the one definition (gpucost benchmark-attribution
scores the untagged pods against the generator's truth with the same function).
The team level (team_holdout): the most probable team against the labelled project's team, at
the build's team threshold. rpt_attribution_quality reads these rows and adds the build's untagged
coverage."""

from decimal import Decimal

import narwhals as nw
import pyarrow as pa

from gpucost.core.attribution.quality import evaluate, quality_rows
from gpucost.engines.arrow_io import MONEY, rows_of, table_of

SCHEMA = pa.schema(
    [
        ("metric_group", pa.string()),
        ("metric_key", pa.string()),
        ("true_project_id", pa.string()),
        ("predicted_project_id", pa.string()),
        ("confidence_bin_low", pa.float64()),
        ("confidence_bin_high", pa.float64()),
        ("workload_count", pa.int64()),
        ("effective_cost", MONEY),
        ("auto_effective_cost", MONEY),
        ("coverage", pa.float64()),
        ("accuracy", pa.float64()),
        ("accuracy_all", pa.float64()),
        ("accuracy_by_count", pa.float64()),
        ("mean_confidence", pa.float64()),
        ("expected_calibration_error", pa.float64()),
    ]
)


def model(dbt, session):
    dbt.config(materialized="table")
    costs = (
        nw.from_native(dbt.ref("int_cost_allocations_owned"))
        .filter(~nw.col("workload_id").is_null())
        .group_by("workload_id")
        .agg(nw.col("effective_cost").sum())
    )
    holdout = nw.from_native(dbt.ref("int_workload_attribution_holdout")).select(
        "workload_id",
        "predicted_project_id",
        "true_project_id",
        "attribution_confidence",
        "auto_threshold",
        "predicted_team_id",
        "true_team_id",
        "team_confidence",
        "team_auto_threshold",
    )
    scored = rows_of(holdout.join(costs, on="workload_id", how="left").to_native())
    thresholds = {r["auto_threshold"] for r in scored}
    if len(thresholds) > 1:
        raise ValueError(f"the hold-out carries several auto thresholds: {sorted(thresholds)}")
    report = evaluate(
        (
            (
                r["predicted_project_id"],
                r["true_project_id"],
                float(r["attribution_confidence"]),
                _cost(r),
            )
            for r in scored
        ),
        threshold=thresholds.pop() if thresholds else None,
    )
    team_thresholds = {r["team_auto_threshold"] for r in scored}
    if len(team_thresholds) > 1:
        raise ValueError(f"the hold-out carries several team thresholds: {sorted(team_thresholds)}")
    team_report = evaluate(
        (
            (r["predicted_team_id"], r["true_team_id"], float(r["team_confidence"] or 0), _cost(r))
            for r in scored
            if r["true_team_id"] is not None
        ),
        threshold=team_thresholds.pop() if team_thresholds else None,
    )
    rows = quality_rows(report)
    rows += quality_rows(team_report, group="team_holdout", key="team", details=False)
    return table_of(rows, SCHEMA)


def _cost(row: dict) -> Decimal:
    return Decimal(0) if row["effective_cost"] is None else row["effective_cost"]
