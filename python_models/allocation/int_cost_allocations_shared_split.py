"""Split the allocation rows of shared workloads across their consumers (gpucost.allocation)."""

from gpucost.allocation import split_shared_workloads
from gpucost.arrow_io import PLACED_SCHEMA, rows_of, table_of


def model(dbt, session):
    dbt.config(materialized="table")
    shares = rows_of(dbt.ref("int_workload_shares"))
    placed = dbt.ref("int_cost_allocations_placed")
    ids = sorted({s["workload_id"] for s in shares})
    if not ids:
        return table_of([], PLACED_SCHEMA)
    quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in ids)
    rows = rows_of(placed.filter(f"workload_id in ({quoted})"))
    return table_of(split_shared_workloads(rows, shares), PLACED_SCHEMA)
