"""Spread the idle part of GPU node lines: reserved-but-unused GPU time pays first, the rest goes by
the configured idle policy (see gpucost.core.allocation).

Large inputs run on the lazy cores (gpucost.core.lazy_spread.claim_reserved_idle, then
gpucost.core.lazy_allocation.spread_idle) inside DuckDB: relations in, a relation out, money as
exact
whole / frac BIGINT pairs (gpucost.engines.lazy_io), the idle rows' scope lists as a long
(charge_id,
scope_rank, scope_key) relation; small ones, and a split beyond the lazy cores' exact bounds, on the
row cores (equal results; see gpucost.engines.lazy_io.lazy_or_rows and var gpucost_lazy_min_rows).
"""

from gpucost.core.allocation import claim_reserved_idle, spread_idle
from gpucost.core.lazy_allocation import MONEY
from gpucost.core.lazy_spread import spread_idle_with_reservations
from gpucost.engines.arrow_io import IDLE_SPREAD_SCHEMA, rows_of, table_of
from gpucost.engines.lazy_io import (
    from_lazy,
    input_rows,
    lazy_min_rows,
    lazy_or_rows,
    list_elements,
    to_lazy,
)


def model(dbt, session):
    dbt.config(materialized="table")
    pool = dbt.ref("int_gpu_idle_pool")
    claims = dbt.ref("int_gpu_reservation_claims")
    weights = dbt.ref("int_gpu_idle_weights")
    policy = dbt.config.get("idle_policy") or "proportional"

    def lazy():
        idle_rows = pool.project(
            "charge_id, reservation_scope_key, idle_gpu_ms,"
            " billed_cost, effective_cost, allocation_ratio"
        )
        spread = spread_idle_with_reservations(
            to_lazy(idle_rows, MONEY),
            to_lazy(claims, ()),
            list_elements(pool, "charge_id", "scope_keys"),
            to_lazy(weights, ()),
            policy,
        )
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

    def rows():
        reserved, remaining = claim_reserved_idle(rows_of(pool), rows_of(claims))
        spread = spread_idle(remaining, rows_of(weights), policy=policy)
        return table_of(reserved + spread, IDLE_SPREAD_SCHEMA)

    size = input_rows(pool, claims, weights)
    min_rows = lazy_min_rows(dbt.config.get("lazy_min_rows"))
    return lazy_or_rows(lazy, rows, "int_gpu_idle_costs_spread", size, min_rows)
