"""The learned attribution's quality on its time-based hold-out, money-weighted by each workload's
effective cost: gpucost.core.attribution.quality, the one definition (gpucost benchmark-attribution
scores the untagged pods against the generator's truth with the same function).
The team level (team_holdout): the most probable team against the labelled project's team, at
the build's team threshold. person_holdout: the hold-out of whole people and namespaces (a model
that read none of their labels). support_class: per class of the workloads to score (user history /
namespace history / launch signals only), their cost, coverage and estimated accuracy, and what
both hold-outs measure in that class. cold_start: the declared-names path on its own (its precision
on the labelled workloads, the untagged cost it placed). Every ECE comes with the band a perfectly
calibrated model would show on the same rows (ece_if_calibrated, its median; _p90).
rpt_attribution_quality reads these rows and adds the build's untagged coverage."""

from decimal import Decimal

import narwhals as nw
import pyarrow as pa

# the package before its submodules (tests/python/test_python_model_config.py)
import gpucost.core.attribution  # noqa: F401
from gpucost.core.attribution.cold_start import LEVELS
from gpucost.core.attribution.quality import (
    cold_start_rows,
    evaluate,
    quality_rows,
    support_class_rows,
)
from gpucost.core.attribution.support import SUPPORT_CLASSES
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
        ("ece_if_calibrated", pa.float64()),
        ("ece_if_calibrated_p90", pa.float64()),
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
    scored = rows_of(
        nw.from_native(dbt.ref("int_workload_attribution_holdout"))
        .join(costs, on="workload_id", how="left")
        .to_native()
    )
    targets = rows_of(
        nw.from_native(dbt.ref("int_workload_attribution_predictions"))
        .join(costs, on="workload_id", how="left")
        .to_native()
    )
    threshold = _one(scored + targets, "auto_threshold")
    team_threshold = _one(scored + targets, "team_auto_threshold")
    time_rows = [r for r in scored if r["scored_set"] == "holdout"]
    person_rows = [r for r in scored if r["scored_set"] == "person_holdout"]
    rows = quality_rows(evaluate(_project(time_rows), threshold=threshold))
    team_report = evaluate(
        (
            (r["predicted_team_id"], r["true_team_id"], float(r["team_confidence"] or 0), _cost(r))
            for r in time_rows
            if r["true_team_id"] is not None
        ),
        threshold=team_threshold,
    )
    rows += quality_rows(team_report, group="team_holdout", key="team", details=False)
    person_report = evaluate(_project(person_rows), threshold=threshold)
    rows += quality_rows(person_report, group="person_holdout", key="person", details=False)
    rows += support_class_rows(
        (
            (r["support_class"], float(r["attribution_confidence"] or 0), _cost(r))
            for r in targets
            if r["support_class"] is not None
        ),
        (
            (r["support_class"], r["predicted_project_id"], r["true_project_id"], c, w)
            for r in scored
            if r["support_class"] is not None
            for _, _, c, w in _project([r])
        ),
        threshold=threshold,
        classes=SUPPORT_CLASSES,
    )
    first = (targets + scored)[:1]
    rows += cold_start_rows(
        {
            level: (r[f"declared_{level}_precision"], r[f"declared_{level}_matched"])
            for r in first
            for level in LEVELS
        },
        ((r["declared_match"], _cost(r)) for r in targets if r["declared_match"] is not None),
    )
    return table_of(rows, SCHEMA)


def _one(rows: list[dict], column: str) -> float | None:
    """The build's one value of a threshold column (None when no row carries one)."""
    values = {r[column] for r in rows if r[column] is not None}
    if len(values) > 1:
        raise ValueError(f"the attribution carries several values of {column}: {sorted(values)}")
    return values.pop() if values else None


def _project(rows: list[dict]) -> list[tuple]:
    return [
        (
            r["predicted_project_id"],
            r["true_project_id"],
            float(r["attribution_confidence"] or 0),
            _cost(r),
        )
        for r in rows
    ]


def _cost(row: dict) -> Decimal:
    return Decimal(0) if row["effective_cost"] is None else row["effective_cost"]
