"""Spread the idle part of GPU node lines: reserved-but-unused GPU time pays first, the rest goes by
the configured idle policy (gpucost.core.idle.spread_idle_with_reservations).
"""

from gpucost.core.idle import spread_idle_with_reservations
from gpucost.engines.arrow_io import IDLE_SPREAD_SCHEMA
from gpucost.engines.lazy_io import allocate, list_elements, to_lazy

ORDER_BY = (
    "charge_id", "recipient", "reservation_id", "team_id", "project_id", "recipient_group",
    "workload_id",
)  # fmt: skip
IDLE_ROWS = (
    "charge_id, reservation_scope_key, idle_gpu_ms, billed_cost, effective_cost, allocation_ratio"
)


def model(dbt, session):
    dbt.config(materialized="table")
    policy = dbt.config.get("idle_policy") or "proportional"
    pool = dbt.ref("int_gpu_idle_pool")
    return allocate(
        "int_gpu_idle_costs_spread",
        spread_idle_with_reservations,
        IDLE_SPREAD_SCHEMA,
        ORDER_BY,
        to_lazy(pool.project(IDLE_ROWS), ("billed_cost", "effective_cost", "allocation_ratio")),
        to_lazy(dbt.ref("int_gpu_reservation_claims")),
        list_elements(pool, "charge_id", "scope_keys"),
        to_lazy(dbt.ref("int_gpu_idle_weights")),
        policy,
        session=session,
    )
