"""Spread shared bill lines in proportion to each owner's direct cost
(gpucost.core.shared.spread_shared)."""

from gpucost.core.shared import spread_shared
from gpucost.engines.arrow_io import SHARED_SPREAD_SCHEMA
from gpucost.engines.lazy_io import allocate, list_elements, to_lazy


def model(dbt, session):
    dbt.config(materialized="table")
    lines = dbt.ref("int_shared_cost_lines")
    return allocate(
        "int_shared_costs_spread",
        spread_shared,
        SHARED_SPREAD_SCHEMA,
        ("charge_id", "recipient_id"),
        to_lazy(
            lines.project("charge_id, billed_cost, effective_cost"),
            ("billed_cost", "effective_cost"),
        ),
        list_elements(lines, "charge_id", "scope_keys"),
        to_lazy(dbt.ref("int_shared_cost_weights"), ("weight",)),
        session=session,
    )
