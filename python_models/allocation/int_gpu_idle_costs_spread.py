"""Spread the idle part of GPU node lines by the configured idle policy (see gpucost.allocation)."""

from gpucost.allocation import spread_idle
from gpucost.arrow_io import IDLE_SPREAD_SCHEMA, rows_of, table_of


def model(dbt, session):
    dbt.config(materialized="table")
    idle_rows = rows_of(dbt.ref("int_gpu_idle_pool"))
    weights = rows_of(dbt.ref("int_gpu_idle_weights"))
    policy = dbt.config.get("idle_policy") or "proportional"
    return table_of(spread_idle(idle_rows, weights, policy=policy), IDLE_SPREAD_SCHEMA)
