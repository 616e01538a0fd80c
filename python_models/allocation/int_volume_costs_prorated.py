"""Split volume bill lines over the pods that held the volume's claim (see gpucost.storage).

Runs on the lazy core (gpucost.lazy_allocation) inside DuckDB: relations in, a relation out, no rows
in Python; money crosses as exact whole / frac BIGINT pairs (gpucost.lazy_io).
"""

from gpucost.arrow_io import VOLUME_CLAIM_SCHEMA
from gpucost.lazy_allocation import allocate_volume_lines
from gpucost.lazy_io import from_lazy, to_lazy


def model(dbt, session):
    dbt.config(materialized="table")
    lines = to_lazy(dbt.ref("int_volume_claim_lines"), ("billed_cost", "effective_cost"))
    mounts = to_lazy(dbt.ref("int_volume_claim_line_workloads"), ())
    allocated = allocate_volume_lines(lines, mounts)
    return from_lazy(allocated, VOLUME_CLAIM_SCHEMA, order_by=("charge_id", "workload_id"))
