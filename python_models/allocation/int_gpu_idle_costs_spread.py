"""Spread the idle part of GPU node lines: reserved-but-unused GPU time pays first, the rest goes by
the configured idle policy (see gpucost.allocation)."""

from gpucost.allocation import claim_reserved_idle, spread_idle
from gpucost.arrow_io import IDLE_SPREAD_SCHEMA, rows_of, table_of


def model(dbt, session):
    dbt.config(materialized="table")
    idle_rows = rows_of(dbt.ref("int_gpu_idle_pool"))
    claims = rows_of(dbt.ref("int_gpu_reservation_claims"))
    weights = rows_of(dbt.ref("int_gpu_idle_weights"))
    policy = dbt.config.get("idle_policy") or "proportional"
    reserved, remaining = claim_reserved_idle(idle_rows, claims)
    spread = spread_idle(remaining, weights, policy=policy)
    return table_of(reserved + spread, IDLE_SPREAD_SCHEMA)
