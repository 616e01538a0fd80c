"""Predict the project of every workload without a declared owner (see gpucost.attribution).

Retrained on every build on the workloads with a known project in the trailing window."""

from gpucost.arrow_io import ATTRIBUTION_SCHEMA, rows_of, table_of
from gpucost.attribution import known_projects, predict_untagged, prediction_rows


def model(dbt, session):
    dbt.config(materialized="table")
    records = rows_of(dbt.ref("int_workload_features"))
    known = known_projects(records, rows_of(dbt.ref("stg_reference__org_mapping")))
    predictions, fitted = predict_untagged(
        records,
        known,
        training_days=float(dbt.config.get("training_days") or 0) or None,
        seed=int(dbt.config.get("seed") or 0),
        explain_below=float(dbt.config.get("auto_threshold") or 1.0),
    )
    return table_of(prediction_rows(predictions, fitted), ATTRIBUTION_SCHEMA)
