"""Split every GPU node bill line into its GPU, CPU and memory parts (see gpucost.node_parts)."""

from gpucost.arrow_io import LINE_PARTS_SCHEMA, rows_of, table_of
from gpucost.node_parts import split_line_parts


def model(dbt, session):
    dbt.config(materialized="table")
    lines = rows_of(dbt.ref("int_gpu_node_lines"))
    weights = rows_of(dbt.ref("int_gpu_node_line_part_weights"))
    return table_of(split_line_parts(lines, weights), LINE_PARTS_SCHEMA)
