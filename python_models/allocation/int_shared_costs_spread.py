"""Spread shared bill lines in proportion to each owner's direct cost (see gpucost.core.allocation).

Large inputs run on the lazy core (gpucost.core.lazy_spread.spread_shared) inside DuckDB: relations
in,
a relation out, money and the owners' cost weights as exact whole / frac BIGINT pairs
(gpucost.engines.lazy_io; weights count in micro-units, gpucost.core.allocation.weight_units), each
line's scope
list as a long (charge_id, scope_rank, scope_key) relation; small ones, and a split beyond the lazy
core's exact bound, on the row core (equal results; see gpucost.engines.lazy_io.lazy_or_rows and var
gpucost_lazy_min_rows).
"""

from gpucost.core.allocation import spread_shared
from gpucost.core.lazy_spread import spread_shared as lazy_spread_shared
from gpucost.engines.arrow_io import SHARED_SPREAD_SCHEMA, rows_of, table_of
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
    lines = dbt.ref("int_shared_cost_lines")
    weights = dbt.ref("int_shared_cost_weights")

    def lazy():
        spread = lazy_spread_shared(
            to_lazy(
                lines.project("charge_id, billed_cost, effective_cost"),
                ("billed_cost", "effective_cost"),
            ),
            list_elements(lines, "charge_id", "scope_keys"),
            to_lazy(weights, ("weight",)),
        )
        return from_lazy(spread, SHARED_SPREAD_SCHEMA, order_by=("charge_id", "recipient_id"))

    def rows():
        return table_of(spread_shared(rows_of(lines), rows_of(weights)), SHARED_SPREAD_SCHEMA)

    size = input_rows(lines, weights)
    min_rows = lazy_min_rows(dbt.config.get("lazy_min_rows"))
    return lazy_or_rows(lazy, rows, "int_shared_costs_spread", size, min_rows)
