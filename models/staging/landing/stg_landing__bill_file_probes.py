"""Bill files that their reader cannot read through, and why (gpucost.validation.landing_probes)."""

from gpucost.validation.landing_probes import probes_table


def model(dbt, session):
    dbt.config(materialized="table")
    return probes_table(dbt.config.get("landing_dir"))
