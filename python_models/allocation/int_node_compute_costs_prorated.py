"""Allocate the CPU and memory parts of GPU node lines to the workloads that requested them, each
part with its own idle spread by the idle policy (gpucost.core.node_parts.prorate_compute_parts).
"""

from gpucost.core.node_parts import prorate_compute_parts
from gpucost.engines.arrow_io import COMPUTE_PRORATED_SCHEMA
from gpucost.engines.lazy_io import Lines, allocate, to_lazy
from gpucost.engines.reuse import Reuse, previous_table


def _owners(native):
    """The owners of a part's workloads (one row each) for the core's ``even`` policy."""
    return to_lazy(native.project("workload_id, owner_key").distinct())


def model(dbt, session):
    policy = dbt.config.get("idle_policy") or "proportional"
    rows_per_part = dbt.config.get("rows_per_part")
    parts = dbt.ref("int_gpu_node_line_parts").filter("resource_part <> 'gpu'")
    usages = dbt.ref("int_node_compute_line_workloads")
    owners = dbt.ref("int_workloads").select("workload_id, owner_key")
    return allocate(
        "int_node_compute_costs_prorated",
        prorate_compute_parts,
        COMPUTE_PRORATED_SCHEMA,
        ("charge_id", "resource_part", "allocation_kind", "workload_id"),
        Lines(parts, ("billed_cost", "effective_cost", "allocation_ratio")),
        Lines(usages),
        # each line's workloads' owners, by line: a changed owner recomputes the lines it holds
        Lines(
            usages.set_alias("usages")
            .join(owners.set_alias("owners"), "usages.workload_id = owners.workload_id", "left")
            .project("usages.charge_id, usages.workload_id, owners.owner_key"),
            read=_owners,
        ),
        policy,
        session=session,
        rows_per_part=rows_per_part,
        reuse=Reuse(previous_table(dbt)),
    )
