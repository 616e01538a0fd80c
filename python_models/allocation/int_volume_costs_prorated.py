"""Split volume bill lines over the pods that held the volume's claim (see gpucost.storage)."""

from gpucost.arrow_io import VOLUME_CLAIM_SCHEMA, rows_of, table_of
from gpucost.storage import allocate_volume_lines


def model(dbt, session):
    dbt.config(materialized="table")
    lines = rows_of(dbt.ref("int_volume_claim_lines"))
    mounts = rows_of(dbt.ref("int_volume_claim_line_workloads"))
    return table_of(allocate_volume_lines(lines, mounts), VOLUME_CLAIM_SCHEMA)
