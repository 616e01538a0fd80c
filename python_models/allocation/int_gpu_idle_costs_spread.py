"""Spread the idle part of GPU node lines: reserved-but-unused GPU time pays first, the rest goes by
the configured idle policy (gpucost.core.idle.spread_idle_with_reservations).
"""

from gpucost.core.idle import spread_idle_with_reservations
from gpucost.engines.arrow_io import IDLE_SPREAD_SCHEMA
from gpucost.engines.lazy_io import Lines, allocate, list_elements
from gpucost.engines.reuse import Reuse, previous_table

ORDER_BY = (
    "charge_id", "recipient", "reservation_id", "team_id", "project_id", "recipient_group",
    "workload_id",
)  # fmt: skip
IDLE_ROWS = (
    "charge_id, reservation_scope_key, idle_gpu_ms, billed_cost, effective_cost, allocation_ratio,"
    " cluster_day_key"
)
MONEY = ("billed_cost", "effective_cost", "allocation_ratio")
DAY = "cluster_day_key"  # every scope a line's idle can go to lies within its cluster-day


def _scopes(pool):
    """The pool's scope lists as the core's long frame (one row per line and scope)."""
    return list_elements(pool, "charge_id", "scope_keys")


def model(dbt, session):
    policy = dbt.config.get("idle_policy") or "proportional"
    rows_per_part = dbt.config.get("rows_per_part")
    pool = dbt.ref("int_gpu_idle_pool")
    return allocate(
        "int_gpu_idle_costs_spread",
        spread_idle_with_reservations,
        IDLE_SPREAD_SCHEMA,
        ORDER_BY,
        Lines(pool.project(IDLE_ROWS), MONEY, line_key=DAY),
        Lines(dbt.ref("int_gpu_reservation_claims"), line_key=DAY),
        Lines(pool, line_key=DAY, read=_scopes),
        Lines(dbt.ref("int_gpu_idle_weights"), line_key=DAY),
        policy,
        session=session,
        rows_per_part=rows_per_part,
        reuse=Reuse(
            previous_table(dbt),
            key_of=pool.project(f"charge_id, {DAY}"),
        ),
    )
