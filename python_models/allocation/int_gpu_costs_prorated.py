"""Prorate the GPU part of every GPU node bill line across the workloads on that node
(see gpucost.allocation; the CPU and memory parts: int_node_compute_costs_prorated)."""

from gpucost.allocation import prorate_node_lines
from gpucost.arrow_io import PRORATED_SCHEMA, rows_of, table_of
from gpucost.node_parts import gpu_part_lines


def model(dbt, session):
    dbt.config(materialized="table")
    lines = gpu_part_lines(
        rows_of(dbt.ref("int_gpu_node_lines")), rows_of(dbt.ref("int_gpu_node_line_parts"))
    )
    usages = rows_of(dbt.ref("int_gpu_node_line_workloads"))
    basis = dbt.config.get("allocation_basis") or "requested"
    return table_of(prorate_node_lines(lines, usages, basis=basis), PRORATED_SCHEMA)
