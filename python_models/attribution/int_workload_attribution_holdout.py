"""Time-based hold-out of the attribution model: train on earlier labelled workloads, predict the
later ones (see gpucost.attribution.holdout_predictions); rpt_attribution_quality scores it."""

from gpucost.arrow_io import ATTRIBUTION_SCHEMA, rows_of, table_of
from gpucost.attribution import holdout_predictions, known_projects, prediction_rows


def model(dbt, session):
    dbt.config(materialized="table")
    records = rows_of(dbt.ref("int_workload_features"))
    known = known_projects(records, rows_of(dbt.ref("stg_reference__org_mapping")))
    pairs, fitted = holdout_predictions(
        records,
        known,
        test_fraction=float(dbt.config.get("holdout_fraction") or 0.2),
        seed=int(dbt.config.get("seed") or 0),
    )
    truth = {p.workload_id: t for p, t in pairs}
    return table_of(prediction_rows([p for p, _ in pairs], fitted, truth), ATTRIBUTION_SCHEMA)
