"""The learned attribution, trained once per build (see gpucost.attribution.attribute).

Top-3 calibrated candidates for every workload without a declared owner (scored_set = 'undeclared')
and for the time-based hold-out it was calibrated and measured on (scored_set = 'holdout', with
true_project_id)."""

from gpucost.arrow_io import ATTRIBUTION_SCHEMA, rows_of, table_of
from gpucost.attribution import attribute, attribution_rows, known_projects


def model(dbt, session):
    dbt.config(materialized="table")
    records = rows_of(dbt.ref("int_workload_features"))
    known = known_projects(records, rows_of(dbt.ref("stg_reference__org_mapping")))
    result = attribute(
        records,
        known,
        training_days=float(dbt.config.get("training_days") or 0) or None,
        holdout_fraction=float(dbt.config.get("holdout_fraction") or 0.2),
        seed=int(dbt.config.get("seed") or 0),
        explain_below=float(dbt.config.get("auto_threshold") or 1.0),
    )
    return table_of(attribution_rows(result), ATTRIBUTION_SCHEMA)
