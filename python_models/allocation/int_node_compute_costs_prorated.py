"""Allocate the CPU and memory parts of GPU node lines to the workloads that requested them, each
part with its own idle spread by the idle policy (see gpucost.core.node_parts).

Large inputs run on the lazy core (gpucost.core.lazy_node_parts) inside DuckDB: relations in, a
relation
out; small ones, and a split beyond the lazy core's exact bound, on the row core (equal results; see
gpucost.engines.lazy_io.lazy_or_rows and var gpucost_lazy_min_rows).
"""

from gpucost.core import lazy_node_parts, node_parts
from gpucost.engines.arrow_io import COMPUTE_PRORATED_SCHEMA, rows_of, table_of
from gpucost.engines.lazy_io import from_lazy, input_rows, lazy_min_rows, lazy_or_rows, to_lazy

PART_MONEY = ("billed_cost", "effective_cost", "allocation_ratio")


def model(dbt, session):
    dbt.config(materialized="table")
    policy = dbt.config.get("idle_policy") or "proportional"
    parts = dbt.ref("int_gpu_node_line_parts").filter("resource_part <> 'gpu'")
    usages = dbt.ref("int_node_compute_line_workloads")
    owners = dbt.ref("int_workloads").select("workload_id, owner_key")

    def lazy():
        allocated = lazy_node_parts.prorate_compute_parts(
            to_lazy(parts, PART_MONEY), to_lazy(usages, ()), to_lazy(owners, ()), policy
        )
        return from_lazy(
            allocated,
            COMPUTE_PRORATED_SCHEMA,
            order_by=("charge_id", "resource_part", "allocation_kind", "workload_id"),
        )

    def rows():
        owner_of = {r["workload_id"]: r["owner_key"] for r in rows_of(owners)}
        allocated = node_parts.prorate_compute_parts(
            rows_of(parts), rows_of(usages), owner_of, policy
        )
        return table_of(allocated, COMPUTE_PRORATED_SCHEMA)

    size = input_rows(parts, usages)
    min_rows = lazy_min_rows(dbt.config.get("lazy_min_rows"))
    return lazy_or_rows(lazy, rows, "int_node_compute_costs_prorated", size, min_rows)
