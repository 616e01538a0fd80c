"""Split volume bill lines over the pods that held the volume's claim
(gpucost.core.storage.allocate_volume_lines)."""

from gpucost.core.storage import allocate_volume_lines
from gpucost.engines.arrow_io import VOLUME_CLAIM_SCHEMA
from gpucost.engines.lazy_io import allocate, to_lazy


def model(dbt, session):
    dbt.config(materialized="table")
    return allocate(
        "int_volume_costs_prorated",
        allocate_volume_lines,
        VOLUME_CLAIM_SCHEMA,
        ("charge_id", "workload_id"),
        to_lazy(dbt.ref("int_volume_claim_lines"), ("billed_cost", "effective_cost")),
        to_lazy(dbt.ref("int_volume_claim_line_workloads")),
        session=session,
    )
