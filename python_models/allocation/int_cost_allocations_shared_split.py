"""Split the allocation rows of shared workloads across their consumers (gpucost.core.allocation).

Large inputs run on the lazy core (gpucost.core.lazy_spread.split_shared_workloads) inside DuckDB:
relations in, a relation out, money and the share weights as exact whole / frac BIGINT pairs
(gpucost.engines.lazy_io; weights count in micro-units, gpucost.core.allocation.weight_units);
small ones, and a
split beyond the lazy core's exact bound, on the row core (equal results; see
gpucost.engines.lazy_io.lazy_or_rows and var gpucost_lazy_min_rows).
"""

from gpucost.core.allocation import split_shared_workloads
from gpucost.core.lazy_spread import split_shared_workloads as lazy_split_shared_workloads
from gpucost.engines.arrow_io import PLACED_SCHEMA, rows_of, table_of
from gpucost.engines.lazy_io import from_lazy, input_rows, lazy_min_rows, lazy_or_rows, to_lazy


def model(dbt, session):
    dbt.config(materialized="table")
    shares = dbt.ref("int_workload_shares")
    # only the rows of shared workloads are split: the rest pass by in int_cost_allocations
    shared = shares.filter("workload_id is not null").project("workload_id").distinct()
    placed = dbt.ref("int_cost_allocations_placed").join(shared, "workload_id", how="semi")

    def lazy():
        split = lazy_split_shared_workloads(
            to_lazy(placed, ("allocation_ratio", "billed_cost", "effective_cost")),
            to_lazy(shares, ("weight",)),
        )
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

    def rows():
        return table_of(split_shared_workloads(rows_of(placed), rows_of(shares)), PLACED_SCHEMA)

    size = input_rows(placed, shares)
    min_rows = lazy_min_rows(dbt.config.get("lazy_min_rows"))
    return lazy_or_rows(lazy, rows, "int_cost_allocations_shared_split", size, min_rows)
