"""Split volume bill lines over the pods that held the volume's claim (see gpucost.core.storage).

Large inputs run on the lazy core (gpucost.core.lazy_allocation) inside DuckDB: relations in, a
relation
out, money as exact whole / frac BIGINT pairs (gpucost.engines.lazy_io); small ones, and a split
beyond the
lazy core's exact bound, on the row core (equal results; see gpucost.engines.lazy_io.lazy_or_rows
and var
gpucost_lazy_min_rows).
"""

from gpucost.core import lazy_allocation, storage
from gpucost.engines.arrow_io import VOLUME_CLAIM_SCHEMA, rows_of, table_of
from gpucost.engines.lazy_io import from_lazy, input_rows, lazy_min_rows, lazy_or_rows, to_lazy


def model(dbt, session):
    dbt.config(materialized="table")
    lines = dbt.ref("int_volume_claim_lines")
    mounts = dbt.ref("int_volume_claim_line_workloads")

    def lazy():
        allocated = lazy_allocation.allocate_volume_lines(
            to_lazy(lines, ("billed_cost", "effective_cost")), to_lazy(mounts, ())
        )
        return from_lazy(allocated, VOLUME_CLAIM_SCHEMA, order_by=("charge_id", "workload_id"))

    def rows():
        return table_of(
            storage.allocate_volume_lines(rows_of(lines), rows_of(mounts)), VOLUME_CLAIM_SCHEMA
        )

    size = input_rows(lines, mounts)
    min_rows = lazy_min_rows(dbt.config.get("lazy_min_rows"))
    return lazy_or_rows(lazy, rows, "int_volume_costs_prorated", size, min_rows)
