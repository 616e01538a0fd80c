"""Split every GPU node bill line into its GPU, CPU and memory parts (gpucost.core.node_parts)."""

from gpucost.core.node_parts import split_line_parts
from gpucost.engines.arrow_io import LINE_PARTS_SCHEMA
from gpucost.engines.lazy_io import allocate, to_lazy


def model(dbt, session):
    dbt.config(materialized="table")
    return allocate(
        "int_gpu_node_line_parts",
        split_line_parts,
        LINE_PARTS_SCHEMA,
        ("charge_id", "resource_part"),
        to_lazy(dbt.ref("int_gpu_node_lines"), ("billed_cost", "effective_cost")),
        to_lazy(dbt.ref("int_gpu_node_line_part_weights")),
        session=session,
    )
