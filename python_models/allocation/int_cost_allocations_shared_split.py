"""Split the allocation rows of shared workloads across their consumers (gpucost.allocation).

Runs on the lazy core (gpucost.lazy_spread.split_shared_workloads) inside DuckDB: relations in, a
relation out, no rows in Python; money and the share weights cross as exact whole / frac BIGINT
pairs (gpucost.lazy_io; weights count in micro-units, gpucost.allocation.weight_units).
"""

from gpucost.arrow_io import PLACED_SCHEMA
from gpucost.lazy_io import from_lazy, to_lazy
from gpucost.lazy_spread import split_shared_workloads


def model(dbt, session):
    dbt.config(materialized="table")
    shares = to_lazy(dbt.ref("int_workload_shares"), ("weight",))
    placed = to_lazy(
        dbt.ref("int_cost_allocations_placed"),
        ("allocation_ratio", "billed_cost", "effective_cost"),
    )
    split = split_shared_workloads(placed, shares)
    return from_lazy(
        split,
        PLACED_SCHEMA,
        order_by=(
            "charge_id",
            "workload_id",
            "allocation_basis",
            "allocation_kind",
            "team_id",
            "project_id",
        ),
    )
