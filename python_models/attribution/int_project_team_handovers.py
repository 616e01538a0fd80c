"""Projects handed to another team, found in the teams their own pods declare
(gpucost.core.attribution.handovers): one row per project whose pods with a declared project
(valid label, Slurm account, override or rule) and a declared team (the team label, else the team
the namespace names: declared_team) name its mapped team, then another team. int_workloads charges
the project's workloads that start at or after the hand-over to the new team. A project the org
mapping dates (valid_from / valid_to: int_org_project_team_periods) is left to its declared history.
Off (no rows) with var gpucost_attribution_detect_handovers false, or without an org mapping."""

import pyarrow as pa

# the package before its submodules (tests/python/test_python_model_config.py: two dbt threads
# importing one package's submodules first deadlock on Python's import locks)
import gpucost.core.attribution  # noqa: F401
from gpucost.core.attribution.cold_start import Declared
from gpucost.core.attribution.handovers import TeamEvidence, declared_team, find_handovers
from gpucost.engines.arrow_io import config_text, rows_of, table_of

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
    org = rows_of(
        dbt.ref("stg_reference__org_mapping").project(
            "project_id, project_name, team_id, team_name"
        )
    )
    # a project the org mapping dates has its declared history (int_org_project_team_periods)
    dated = {
        r["project_id"]
        for r in rows_of(dbt.ref("int_org_project_team_periods").project("project_id"))
    }
    mapping = {
        r["project_id"]: r["team_id"] for r in org if r["team_id"] and r["project_id"] not in dated
    }
    declared = Declared.of(org)
    pods = rows_of(
        dbt.ref("int_workload_features")
        .filter(
            "coalesce(known_project_id, rule_project_id) is not null and started_epoch is not null"
        )
        .project(
            "workload_id, coalesce(known_project_id, rule_project_id) as project_id,"
            " team_label, namespace, cast(started_epoch as bigint) as started_epoch"
        )
    )
    found = []
    if (config_text(detect) or "false").lower() == "true":
        evidence = []
        for r in pods:
            team = declared_team(r["team_label"], r["namespace"], declared)
            if team:
                evidence.append(
                    TeamEvidence(
                        project_id=r["project_id"],
                        team_id=team,
                        started_epoch=int(r["started_epoch"]),
                        workload_id=r["workload_id"],
                    )
                )
        found = find_handovers(evidence, mapping)
    return table_of((h.__dict__ for h in found), SCHEMA)
