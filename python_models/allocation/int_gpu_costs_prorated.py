"""Prorate every GPU node bill line across the workloads on that node (see gpucost.allocation)."""

from gpucost.allocation import prorate_node_lines
from gpucost.arrow_io import PRORATED_SCHEMA, rows_of, table_of


def model(dbt, session):
    dbt.config(materialized="table")
    lines = rows_of(dbt.ref("int_gpu_node_lines"))
    usages = rows_of(dbt.ref("int_gpu_node_line_workloads"))
    basis = dbt.config.get("allocation_basis") or "requested"
    return table_of(prorate_node_lines(lines, usages, basis=basis), PRORATED_SCHEMA)
