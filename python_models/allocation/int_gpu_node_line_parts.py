"""Split every GPU node bill line into its GPU, CPU and memory parts (see gpucost.core.node_parts).

Large inputs run on the lazy core (gpucost.core.lazy_node_parts) inside DuckDB: relations in, a
relation
out; small ones, and a split beyond the lazy core's exact bound, on the row core (equal results; see
gpucost.engines.lazy_io.lazy_or_rows and var gpucost_lazy_min_rows).
"""

from gpucost.core import lazy_node_parts, node_parts
from gpucost.engines.arrow_io import LINE_PARTS_SCHEMA, rows_of, table_of
from gpucost.engines.lazy_io import from_lazy, input_rows, lazy_min_rows, lazy_or_rows, to_lazy


def model(dbt, session):
    dbt.config(materialized="table")
    lines = dbt.ref("int_gpu_node_lines")
    weights = dbt.ref("int_gpu_node_line_part_weights")

    def lazy():
        parts = lazy_node_parts.split_line_parts(
            to_lazy(lines, ("billed_cost", "effective_cost")), to_lazy(weights, ())
        )
        return from_lazy(parts, LINE_PARTS_SCHEMA, order_by=("charge_id", "resource_part"))

    def rows():
        parts = node_parts.split_line_parts(rows_of(lines), rows_of(weights))
        return table_of(parts, LINE_PARTS_SCHEMA)

    size = input_rows(lines, weights)
    min_rows = lazy_min_rows(dbt.config.get("lazy_min_rows"))
    return lazy_or_rows(lazy, rows, "int_gpu_node_line_parts", size, min_rows)
