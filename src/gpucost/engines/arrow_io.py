"""Arrow in and out for the dbt Python models: rows in, typed Arrow tables out.

Money leaves as ``decimal128(38, 18)`` so DuckDB reads it back as ``DECIMAL(38, 18)``:
no float ever appears between the allocation core and the marts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

MONEY = pa.decimal128(38, 18)

PRORATED_SCHEMA = pa.schema(
    [
        ("charge_id", pa.string()),
        ("workload_id", pa.string()),
        ("allocation_kind", pa.string()),
        ("unallocated_reason", pa.string()),
        ("allocation_basis", pa.string()),
        ("basis_gpu_ms", pa.int64()),
        ("used_gpu_ms", pa.int64()),
        ("billed_cost", MONEY),
        ("effective_cost", MONEY),
        ("allocation_ratio", MONEY),
        ("utilised_cost", MONEY),
    ]
)

# The GPU / CPU / memory parts of GPU node lines (gpucost.core.node_parts.split_line_parts).
LINE_PARTS_SCHEMA = pa.schema(
    [
        ("charge_id", pa.string()),
        ("resource_part", pa.string()),
        ("part_weight", pa.int64()),
        ("capacity_units", pa.int64()),
        ("billed_cost", MONEY),
        ("effective_cost", MONEY),
        ("allocation_ratio", MONEY),
    ]
)

# The CPU and memory parts allocated (gpucost.core.node_parts.prorate_compute_parts).
COMPUTE_PRORATED_SCHEMA = pa.schema(
    [
        ("charge_id", pa.string()),
        ("resource_part", pa.string()),
        ("workload_id", pa.string()),
        ("allocation_kind", pa.string()),
        ("recipient", pa.string()),
        ("allocation_basis", pa.string()),
        ("basis_units", pa.int64()),
        ("unallocated_reason", pa.string()),
        ("billed_cost", MONEY),
        ("effective_cost", MONEY),
        ("allocation_ratio", MONEY),
    ]
)

IDLE_SPREAD_SCHEMA = pa.schema(
    [
        ("charge_id", pa.string()),
        ("workload_id", pa.string()),
        ("recipient_group", pa.string()),
        ("recipient", pa.string()),
        ("reservation_id", pa.string()),
        ("team_id", pa.string()),
        ("project_id", pa.string()),
        ("scope_key", pa.string()),
        ("idle_policy", pa.string()),
        ("idle_reason", pa.string()),
        ("billed_cost", MONEY),
        ("effective_cost", MONEY),
        ("allocation_ratio", MONEY),
    ]
)

SHARED_SPREAD_SCHEMA = pa.schema(
    [
        ("charge_id", pa.string()),
        ("recipient_id", pa.string()),
        ("scope_key", pa.string()),
        ("unallocated_reason", pa.string()),
        ("billed_cost", MONEY),
        ("effective_cost", MONEY),
        ("allocation_ratio", MONEY),
    ]
)

# Storage lines split over the pods that held the volume's claim
# (gpucost.core.storage.allocate_volume_lines).
VOLUME_CLAIM_SCHEMA = pa.schema(
    [
        ("charge_id", pa.string()),
        ("workload_id", pa.string()),
        ("allocation_kind", pa.string()),
        ("unallocated_reason", pa.string()),
        ("allocation_basis", pa.string()),
        ("mounted_ms", pa.int64()),
        ("billed_cost", MONEY),
        ("effective_cost", MONEY),
        ("allocation_ratio", MONEY),
    ]
)

# One row per workload the learned attribution model scored (int_workload_attribution_scores: the
# undeclared workloads and the hold-out, scored_set). Probabilities are not money: doubles, rounded
# to 6 decimals by gpucost.core.attribution.
ATTRIBUTION_SCHEMA = pa.schema(
    [
        ("scored_set", pa.string()),
        ("workload_id", pa.string()),
        ("predicted_project_id", pa.string()),
        ("attribution_confidence", pa.float64()),
        ("candidate_1_project_id", pa.string()),
        ("candidate_1_probability", pa.float64()),
        ("candidate_2_project_id", pa.string()),
        ("candidate_2_probability", pa.float64()),
        ("candidate_3_project_id", pa.string()),
        ("candidate_3_probability", pa.float64()),
        ("attribution_signals", pa.string()),
        ("true_project_id", pa.string()),
        ("model_training_workloads", pa.int64()),
        ("model_calibration_workloads", pa.int64()),
        ("model_calibration", pa.string()),
        ("auto_threshold", pa.float64()),
        ("predicted_team_id", pa.string()),
        ("team_confidence", pa.float64()),
        ("true_team_id", pa.string()),
        ("team_auto_threshold", pa.float64()),
        ("support_class", pa.string()),
        ("declared_match", pa.string()),
        ("declared_project_precision", pa.float64()),
        ("declared_project_matched", pa.int64()),
        ("declared_team_precision", pa.float64()),
        ("declared_team_matched", pa.int64()),
        ("declared_name_precision", pa.float64()),
        ("declared_name_matched", pa.int64()),
        # the model version that scored the row and, for a workload to attribute, the fingerprint
        # of what its score depends on (gpucost.core.attribution.versions.feature_fingerprint)
        ("attribution_model_version", pa.string()),
        ("feature_fingerprint", pa.string()),
    ]
)

# int_attribution_model_versions (gpucost.core.attribution.versions.version_row).
VERSIONS_SCHEMA = pa.schema(
    [
        ("model_version", pa.string()),
        ("version_sequence", pa.int64()),
        ("retrain_reason", pa.string()),
        ("label_fingerprint", pa.string()),
        ("settings_fingerprint", pa.string()),
        ("state_fingerprint", pa.string()),
        ("generation", pa.int64()),
        ("data_last_start_epoch", pa.float64()),
        ("data_last_start_at", pa.timestamp("us")),
        ("training_first_start_at", pa.timestamp("us")),
        ("training_last_start_at", pa.timestamp("us")),
        ("labelled_workloads", pa.int64()),
        ("training_workloads", pa.int64()),
        ("holdout_workloads", pa.int64()),
        ("scored_workloads", pa.int64()),
        ("model_calibration", pa.string()),
        ("auto_threshold", pa.float64()),
        ("team_auto_threshold", pa.float64()),
        ("holdout_coverage", pa.float64()),
        ("holdout_accuracy", pa.float64()),
        ("holdout_accuracy_all", pa.float64()),
        ("holdout_expected_calibration_error", pa.float64()),
        ("model_state", pa.string()),
        ("evaluation_rows", pa.string()),
        ("read_workload_ids", pa.string()),
    ]
)

# Allocation rows of int_cost_allocations_placed, as int_cost_allocations_shared_split returns them.
PLACED_SCHEMA = pa.schema(
    [
        ("charge_id", pa.string()),
        ("workload_id", pa.string()),
        ("team_id", pa.string()),
        ("project_id", pa.string()),
        ("user_id", pa.string()),
        ("allocation_kind", pa.string()),
        ("allocation_basis", pa.string()),
        ("attribution_method", pa.string()),
        ("attribution_rule_id", pa.string()),
        ("attribution_confidence", pa.float64()),
        ("unallocated_reason", pa.string()),
        ("allocation_ratio", MONEY),
        ("billed_cost", MONEY),
        ("effective_cost", MONEY),
    ]
)


def config_text(value: Any) -> str | None:
    """A dbt Python model's config value as rendered from a var: its text, or None when the var
    is unset (null renders as ``None``, an empty default as ``''``)."""
    text = str(value if value is not None else "").strip()
    return None if text in ("", "None", "none", "null") else text


def config_number(value: Any, default: float | None = None) -> float | None:
    """A dbt Python model's config value rendered from a var, as a number: ``default`` when the
    var is unset (:func:`config_text`)."""
    text = config_text(value)
    return default if text is None else float(text)


def stored_columns(dbt: Any, session: Any) -> frozenset[str]:
    """The columns of an incremental Python model's table as stored before this build (none on a
    first build or a full refresh): a column added to the model since is read only where it is."""
    if not dbt.is_incremental:
        return frozenset()
    return frozenset(session.sql(f"from {dbt.this} limit 0").columns)


def rows_of(relation_or_table: Any) -> list[dict[str, Any]]:
    """Rows of an Arrow table, or of anything with ``.arrow()`` / ``.to_arrow_table()`` /
    ``.toArrow()``.

    A DuckDB relation (or a PySpark DataFrame, collected to the driver: ``toArrow``, PySpark 4) is
    read through Arrow, so DECIMAL columns arrive as ``Decimal``.
    """
    table = relation_or_table
    if not isinstance(table, pa.Table):
        if hasattr(table, "to_arrow_table"):
            table = table.to_arrow_table()
        elif hasattr(table, "toArrow"):
            table = table.toArrow()
        elif hasattr(table, "arrow"):
            table = table.arrow()
        if isinstance(table, pa.RecordBatchReader):
            table = table.read_all()
    return table.to_pylist()


def table_of(rows: Iterable[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """An Arrow table with exactly ``schema``'s columns and types, from rows."""
    rows = list(rows)
    return pa.table(
        {
            field.name: pa.array([row.get(field.name) for row in rows], field.type)
            for field in schema
        },
        schema=schema,
    )
