"""Spread shared bill lines in proportion to each owner's direct cost (see gpucost.allocation)."""

from gpucost.allocation import spread_shared
from gpucost.arrow_io import SHARED_SPREAD_SCHEMA, rows_of, table_of


def model(dbt, session):
    dbt.config(materialized="table")
    lines = rows_of(dbt.ref("int_shared_cost_lines"))
    weights = rows_of(dbt.ref("int_shared_cost_weights"))
    return table_of(spread_shared(lines, weights), SHARED_SPREAD_SCHEMA)
