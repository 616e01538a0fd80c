"""Prorate the GPU part of every GPU node bill line across the workloads on that node
(see gpucost.core.allocation; the CPU and memory parts: int_node_compute_costs_prorated).

Large inputs run on the lazy core (gpucost.core.lazy_allocation) inside DuckDB: relations in, a
relation
out; small ones, and a split beyond the lazy core's exact bound, on the row core (equal results; see
gpucost.engines.lazy_io.lazy_or_rows and var gpucost_lazy_min_rows).
"""

from gpucost.core import allocation, lazy_allocation, lazy_node_parts, node_parts
from gpucost.engines.arrow_io import PRORATED_SCHEMA, rows_of, table_of
from gpucost.engines.lazy_io import from_lazy, input_rows, lazy_min_rows, lazy_or_rows, to_lazy

PART_MONEY = ("billed_cost", "effective_cost", "allocation_ratio")
# the task-complexity weight in millionths, rounded half to even as the row core does
USAGE_COLUMNS = (
    "charge_id, workload_id, requested_gpu_ms, used_gpu_ms,"
    " cast(round_even(cast(complexity_weight as decimal(38, 18)) * 1000000, 0) as bigint)"
    " as complexity_units"
)


def model(dbt, session):
    dbt.config(materialized="table")
    basis = dbt.config.get("allocation_basis") or "requested"
    lines = dbt.ref("int_gpu_node_lines")
    parts = dbt.ref("int_gpu_node_line_parts")
    usages = dbt.ref("int_gpu_node_line_workloads")

    def lazy():
        gpu_lines = lazy_node_parts.gpu_part_lines(
            to_lazy(lines, ("billed_cost", "effective_cost")), to_lazy(parts, PART_MONEY)
        )
        prorated = lazy_allocation.prorate_node_lines(
            gpu_lines, to_lazy(usages.project(USAGE_COLUMNS), ()), basis=basis
        )
        return from_lazy(prorated, PRORATED_SCHEMA, order_by=("charge_id", "workload_id"))

    def rows():
        gpu_lines = node_parts.gpu_part_lines(rows_of(lines), rows_of(parts))
        prorated = allocation.prorate_node_lines(gpu_lines, rows_of(usages), basis=basis)
        return table_of(prorated, PRORATED_SCHEMA)

    size = input_rows(lines, usages)
    min_rows = lazy_min_rows(dbt.config.get("lazy_min_rows"))
    return lazy_or_rows(lazy, rows, "int_gpu_costs_prorated", size, min_rows)
