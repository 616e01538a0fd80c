"""Allocate the CPU and memory parts of GPU node lines to the workloads that requested them, each
part with its own idle spread by the idle policy (gpucost.core.node_parts.prorate_compute_parts).
"""

from gpucost.core.node_parts import prorate_compute_parts
from gpucost.engines.arrow_io import COMPUTE_PRORATED_SCHEMA
from gpucost.engines.lazy_io import Lines, allocate, to_lazy


def model(dbt, session):
    dbt.config(materialized="table")
    policy = dbt.config.get("idle_policy") or "proportional"
    rows_per_part = dbt.config.get("rows_per_part")
    parts = dbt.ref("int_gpu_node_line_parts").filter("resource_part <> 'gpu'")
    return allocate(
        "int_node_compute_costs_prorated",
        prorate_compute_parts,
        COMPUTE_PRORATED_SCHEMA,
        ("charge_id", "resource_part", "allocation_kind", "workload_id"),
        Lines(parts, ("billed_cost", "effective_cost", "allocation_ratio")),
        Lines(dbt.ref("int_node_compute_line_workloads")),
        to_lazy(dbt.ref("int_workloads").select("workload_id, owner_key")),
        policy,
        session=session,
        rows_per_part=rows_per_part,
    )
