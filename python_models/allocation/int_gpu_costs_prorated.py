"""Prorate the GPU part of every GPU node bill line across the workloads on that node by GPU time
(gpucost.core.node_parts.prorate_gpu_parts; CPU and memory: int_node_compute_costs_prorated)."""

from gpucost.core.node_parts import prorate_gpu_parts
from gpucost.engines.arrow_io import PRORATED_SCHEMA
from gpucost.engines.lazy_io import Lines, allocate
from gpucost.engines.reuse import Reuse, previous_table

# the task-complexity weight in millionths, rounded half to even
USAGE_COLUMNS = (
    "charge_id, workload_id, requested_gpu_ms, used_gpu_ms,"
    " cast(round_even(cast(complexity_weight as decimal(38, 18)) * 1000000, 0) as bigint)"
    " as complexity_units"
)
MONEY = ("billed_cost", "effective_cost", "allocation_ratio")


def model(dbt, session):
    basis = dbt.config.get("allocation_basis") or "requested"
    rows_per_part = dbt.config.get("rows_per_part")
    return allocate(
        "int_gpu_costs_prorated",
        prorate_gpu_parts,
        PRORATED_SCHEMA,
        ("charge_id", "workload_id"),
        Lines(dbt.ref("int_gpu_node_lines"), MONEY[:2]),
        Lines(dbt.ref("int_gpu_node_line_parts"), MONEY),
        Lines(dbt.ref("int_gpu_node_line_workloads").project(USAGE_COLUMNS)),
        basis=basis,
        session=session,
        rows_per_part=rows_per_part,
        reuse=Reuse(previous_table(dbt)),
    )
