"""The learned attribution's scores, from the current model version (int_attribution_model_versions;
it trains only when that model says so, see gpucost.core.attribution.versions).

Top-3 calibrated candidates for every workload without a declared owner (scored_set = 'undeclared'),
each with its most probable team and that team's own calibrated confidence; and the version's own
rows: the time-based hold-out it was calibrated and measured on (holdout, with true_project_id),
the people withheld whole (person_holdout) and the tags their own signals contradict
(suspected_mislabel, the tag as true_project_id). An incremental build scores only the workloads
that are new, whose features changed (feature_fingerprint) or that an earlier version scored, and
keeps the others' rows; a full refresh scores every workload."""

import json

from gpucost.core.attribution import known_projects, prediction_rows
from gpucost.core.attribution.pipeline import prepare
from gpucost.core.attribution.versions import decode_state, feature_fingerprint, to_score
from gpucost.engines.arrow_io import (
    ATTRIBUTION_SCHEMA,
    config_number,
    rows_of,
    stored_columns,
    table_of,
)


def model(dbt, session):
    # incremental (merge on scored_set, workload_id; the rows this returns are the whole table:
    # merge_clauses in the YAML delete the rows it no longer returns)
    dbt.config(materialized="incremental")
    # each key read by a plain dbt.config.get call of its own (see int_attribution_model_versions)
    training_days = dbt.config.get("training_days")
    seed = dbt.config.get("seed")
    versions = dbt.ref("int_attribution_model_versions")
    (version,) = rows_of(
        versions.order("version_sequence desc")
        .limit(1)
        .project("model_version, model_state, evaluation_rows")
    )
    scorer = decode_state(version["model_state"])
    name = version["model_version"]
    records = rows_of(dbt.ref("int_workload_features"))
    mapping = rows_of(dbt.ref("stg_reference__org_mapping"))
    prepared = prepare(
        records,
        known_projects(records, mapping),
        training_days=config_number(training_days) or None,
        seed=int(config_number(seed, 0)),
    )
    shown, support = prepared.shown(), prepared.support()
    by_id = {str(r["workload_id"]): r for r in prepared.targets}
    fingerprints = {w: feature_fingerprint(shown[w], support.get(w), r) for w, r in by_id.items()}
    # the rows earlier builds scored (none on a full refresh, or from before versions existed)
    kept = {}
    if "feature_fingerprint" in stored_columns(dbt, session):
        undeclared = session.sql(f"from {dbt.this} where scored_set = 'undeclared'")
        kept = {r["workload_id"]: r for r in rows_of(undeclared)}
    previous = {
        w: (r["attribution_model_version"], r["feature_fingerprint"]) for w, r in kept.items()
    }
    ids = to_score(previous, fingerprints, name)
    preds = scorer.score(
        [shown[w] for w in ids], [by_id[w] for w in ids], [support[w] for w in ids], mapping
    )
    rows = prediction_rows(
        preds,
        scorer.model,
        auto_threshold=scorer.auto_threshold,
        team_threshold=scorer.team_threshold,
        teams=scorer.teams,
        support=support,
        cold_start=scorer.cold,
    )
    for row in rows:
        row["attribution_model_version"] = name
        row["feature_fingerprint"] = fingerprints[row["workload_id"]]
    scored = set(ids)
    rows += [kept[w] for w in fingerprints if w not in scored]
    for row in json.loads(version["evaluation_rows"]):
        rows.append({**row, "attribution_model_version": name})
    return table_of(rows, ATTRIBUTION_SCHEMA)
