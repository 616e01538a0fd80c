"""Spread shared bill lines in proportion to each owner's direct cost (see gpucost.allocation).

Runs on the lazy core (gpucost.lazy_spread.spread_shared) inside DuckDB: relations in, a relation
out, no rows in Python; money and the owners' cost weights cross as exact whole / frac BIGINT pairs
(gpucost.lazy_io; weights count in micro-units, gpucost.allocation.weight_units), each line's scope
list as a long (charge_id, scope_rank, scope_key) relation.
"""

from gpucost.arrow_io import SHARED_SPREAD_SCHEMA
from gpucost.lazy_io import from_lazy, list_elements, to_lazy
from gpucost.lazy_spread import spread_shared


def model(dbt, session):
    dbt.config(materialized="table")
    lines = dbt.ref("int_shared_cost_lines")
    spread = spread_shared(
        to_lazy(
            lines.project("charge_id, billed_cost, effective_cost"),
            ("billed_cost", "effective_cost"),
        ),
        list_elements(lines, "charge_id", "scope_keys"),
        to_lazy(dbt.ref("int_shared_cost_weights"), ("weight",)),
    )
    return from_lazy(spread, SHARED_SPREAD_SCHEMA, order_by=("charge_id", "recipient_id"))
