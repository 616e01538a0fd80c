"""Split the allocation rows of shared workloads across their consumers
(gpucost.core.shared.split_shared_workloads)."""

from gpucost.core.shared import split_shared_workloads
from gpucost.engines.arrow_io import PLACED_SCHEMA
from gpucost.engines.lazy_io import allocate, to_lazy


def model(dbt, session):
    dbt.config(materialized="table")
    shares = dbt.ref("int_workload_shares")
    # only the rows of shared workloads are split: the rest pass by in int_cost_allocations
    shared = shares.filter("workload_id is not null").project("workload_id").distinct()
    placed = dbt.ref("int_cost_allocations_placed").join(shared, "workload_id", how="semi")
    return allocate(
        "int_cost_allocations_shared_split",
        split_shared_workloads,
        PLACED_SCHEMA,
        (
            "charge_id",
            "workload_id",
            "allocation_basis",
            "allocation_kind",
            "team_id",
            "project_id",
        ),
        to_lazy(placed, ("allocation_ratio", "billed_cost", "effective_cost")),
        to_lazy(shares, ("weight",)),
        session=session,
    )
