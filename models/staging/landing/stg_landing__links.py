"""The landing zone's symlinks and whether its target is outside it (gpucost.validation.landing_links)."""

from gpucost.validation.landing_links import links_table


def model(dbt, session):
    dbt.config(materialized="table")
    return links_table(dbt.config.get("landing_dir"))
