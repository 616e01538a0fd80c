"""Projects handed to another team, found in the team labels of their own pods
(gpucost.core.attribution.handovers): one row per project whose pods with a declared project
(valid label, Slurm account, override or rule) and a team label name its mapped team, then another
team. int_workloads charges the project's workloads that start at or after the hand-over to the
new team. Off (no rows) with var gpucost_attribution_detect_handovers false, or without an org
mapping."""

import pyarrow as pa

from gpucost.core.attribution.handovers import TeamEvidence, find_handovers
from gpucost.engines.arrow_io import rows_of, table_of

SCHEMA = pa.schema(
    [
        ("project_id", pa.string()),
        ("from_team_id", pa.string()),
        ("to_team_id", pa.string()),
        ("handed_over_epoch", pa.int64()),
        ("pods_before", pa.int64()),
        ("pods_before_agreeing", pa.int64()),
        ("pods_after", pa.int64()),
        ("pods_after_agreeing", pa.int64()),
        ("first_workload_id", pa.string()),
    ]
)


def model(dbt, session):
    dbt.config(materialized="table")
    detect = dbt.config.get("detect_handovers")
    mapping = {
        r["project_id"]: r["team_id"]
        for r in rows_of(dbt.ref("stg_reference__org_mapping").project("project_id, team_id"))
        if r["team_id"]
    }
    evidence = rows_of(
        dbt.ref("int_workload_features")
        .filter(
            "coalesce(known_project_id, rule_project_id) is not null"
            " and team_label is not null and started_epoch is not null"
        )
        .project(
            "workload_id, coalesce(known_project_id, rule_project_id) as project_id,"
            " team_label, cast(started_epoch as bigint) as started_epoch"
        )
    )
    found = []
    if str(detect).strip().lower() not in ("false", "0", "none", ""):
        found = find_handovers(
            (
                TeamEvidence(
                    project_id=r["project_id"],
                    team_id=r["team_label"],
                    started_epoch=int(r["started_epoch"]),
                    workload_id=r["workload_id"],
                )
                for r in evidence
            ),
            mapping,
        )
    return table_of((h.__dict__ for h in found), SCHEMA)
