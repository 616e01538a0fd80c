"""The learned attribution's versions: one row per training, added only when this build retrains
(gpucost.core.attribution.versions.retrain_reason: the first build, a changed label or override,
changed training vars / org mapping / code, the schedule in workload time, or var
gpucost_attribution_retrain). Each row holds the fitted state that scores (plain JSON, never a
pickle) and the training's own rows (hold-outs, suspected mislabels) that
int_workload_attribution_scores reads."""

import json

from gpucost.core.attribution import attribute, attribution_rows, known_projects, project_teams
from gpucost.core.attribution.versions import (
    decode_workload_ids,
    digest,
    encode_state,
    label_fingerprint,
    latest_start,
    retrain_reason,
    settings_fingerprint,
    version_row,
)
from gpucost.engines.arrow_io import (
    VERSIONS_SCHEMA,
    config_number,
    config_text,
    rows_of,
    stored_columns,
    table_of,
)


def model(dbt, session):
    dbt.config(materialized="incremental")
    # each key read by a plain dbt.config.get call of its own: dbt passes a Python model only the
    # keys it finds that way in this file (nested in float(... or ...), they arrive as None)
    training_days = dbt.config.get("training_days")
    holdout_fraction = dbt.config.get("holdout_fraction")
    seed = dbt.config.get("seed")
    auto_threshold = dbt.config.get("auto_threshold")
    target_accuracy = dbt.config.get("target_accuracy")
    team_target_accuracy = dbt.config.get("team_target_accuracy")
    mislabel_confidence = dbt.config.get("mislabel_confidence")
    retrain = dbt.config.get("retrain")
    retrain_days = dbt.config.get("retrain_days")
    settings = {
        "training_days": config_number(training_days) or None,
        "holdout_fraction": config_number(holdout_fraction, 0.2),
        "seed": int(config_number(seed, 0)),
        "explain_below": config_number(auto_threshold, 0.9),
        "target_accuracy": config_number(target_accuracy),
        "team_target_accuracy": config_number(team_target_accuracy),
        "mislabel_confidence": config_number(mislabel_confidence),
    }
    records = rows_of(dbt.ref("int_workload_features"))
    mapping = rows_of(dbt.ref("stg_reference__org_mapping"))
    previous = []
    if dbt.is_incremental:
        # the workloads the latest version read (a table from before they were kept: none)
        kept = "read_workload_ids" in stored_columns(dbt, session)
        read = "read_workload_ids" if kept else "null"
        previous = rows_of(
            session.sql(
                "select model_version, version_sequence, label_fingerprint, settings_fingerprint,"
                " state_fingerprint, data_last_start_epoch, case when version_sequence ="
                f" max(version_sequence) over () then {read} end as read_workload_ids"
                f" from {dbt.this} order by version_sequence"
            )
        )
    current = previous[-1] if previous else None
    horizon = latest_start(records)
    settings_fp = settings_fingerprint(settings, mapping)
    reason = retrain_reason(
        current,
        # over the workloads the current version read: a workload new to this build is new data,
        # not a changed label, even when it started before the version's horizon (its telemetry
        # landed late: measured on a one-day landing, 418 of 12,688 such labelled workloads)
        labels=label_fingerprint(
            records, decode_workload_ids(current["read_workload_ids"]) if current else None
        ),
        settings=settings_fp,
        horizon=horizon,
        retrain_days=config_number(retrain_days),
        forced=(config_text(retrain) or "false").lower() == "true",
    )
    if reason is None:
        return table_of([], VERSIONS_SCHEMA)
    known = known_projects(records, mapping)
    result = attribute(
        records, known, teams=project_teams(records, mapping), declared=mapping, **settings
    )
    evaluation = [r for r in attribution_rows(result) if r["scored_set"] != "undeclared"]
    state = encode_state(result.scorer)
    evaluation_rows = json.dumps(evaluation, sort_keys=True, separators=(",", ":"))
    row = version_row(
        result,
        records,
        previous,
        reason=reason,
        labels=label_fingerprint(records),
        settings=settings_fp,
        training_days=settings["training_days"],
        state=digest([state, evaluation_rows]),
    )
    row["model_state"], row["evaluation_rows"] = state, evaluation_rows
    return table_of([row], VERSIONS_SCHEMA)
