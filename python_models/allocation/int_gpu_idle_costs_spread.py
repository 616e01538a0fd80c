"""Spread the idle part of GPU node lines: reserved-but-unused GPU time pays first, the rest goes by
the configured idle policy (see gpucost.allocation).

Runs on the lazy cores (gpucost.lazy_spread.claim_reserved_idle, then
gpucost.lazy_allocation.spread_idle) inside DuckDB: relations in, a relation out, no rows in Python;
money crosses as exact whole / frac BIGINT pairs (gpucost.lazy_io), the idle rows' scope lists as a
long (charge_id, scope_rank, scope_key) relation.
"""

from gpucost.arrow_io import IDLE_SPREAD_SCHEMA
from gpucost.lazy_allocation import MONEY
from gpucost.lazy_io import from_lazy, list_elements, to_lazy
from gpucost.lazy_spread import spread_idle_with_reservations


def model(dbt, session):
    dbt.config(materialized="table")
    pool = dbt.ref("int_gpu_idle_pool")
    idle_rows = to_lazy(
        pool.project(
            "charge_id, reservation_scope_key, idle_gpu_ms,"
            " billed_cost, effective_cost, allocation_ratio"
        ),
        MONEY,
    )
    scopes = list_elements(pool, "charge_id", "scope_keys")
    claims = to_lazy(dbt.ref("int_gpu_reservation_claims"), ())
    weights = to_lazy(dbt.ref("int_gpu_idle_weights"), ())
    policy = dbt.config.get("idle_policy") or "proportional"
    spread = spread_idle_with_reservations(idle_rows, claims, scopes, weights, policy)
    return from_lazy(
        spread,
        IDLE_SPREAD_SCHEMA,
        order_by=(
            "charge_id",
            "recipient",
            "reservation_id",
            "team_id",
            "project_id",
            "recipient_group",
            "workload_id",
        ),
    )
