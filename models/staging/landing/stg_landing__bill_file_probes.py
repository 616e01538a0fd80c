"""Bill files that their reader cannot read through, and why (gpucost.landing_probes)."""

from gpucost.landing_probes import probes_table


def model(dbt, session):
    dbt.config(materialized="table")
    return probes_table(dbt.config.get("landing_dir"))
