"""Allocate the CPU and memory parts of GPU node lines to the workloads that requested them, each
part with its own idle spread by the idle policy (see gpucost.node_parts)."""

from gpucost.arrow_io import COMPUTE_PRORATED_SCHEMA, rows_of, table_of
from gpucost.node_parts import prorate_compute_parts


def model(dbt, session):
    dbt.config(materialized="table")
    parts = rows_of(dbt.ref("int_gpu_node_line_parts").filter("resource_part <> 'gpu'"))
    usages = rows_of(dbt.ref("int_node_compute_line_workloads"))
    owners = {
        r["workload_id"]: r["owner_key"]
        for r in rows_of(dbt.ref("int_workloads").select("workload_id, owner_key"))
    }
    policy = dbt.config.get("idle_policy") or "proportional"
    return table_of(prorate_compute_parts(parts, usages, owners, policy), COMPUTE_PRORATED_SCHEMA)
