"""The learned attribution, trained once per build (see gpucost.core.attribution.attribute).

Top-3 calibrated candidates for every workload without a declared owner (scored_set = 'undeclared')
and for the time-based hold-out it was calibrated and measured on (scored_set = 'holdout', with
true_project_id), each with its most probable team and that team's own calibrated confidence; the
people withheld whole (person_holdout) and the tags their own signals contradict
(suspected_mislabel, the tag as true_project_id)."""

from gpucost.core.attribution import attribute, attribution_rows, known_projects, project_teams
from gpucost.engines.arrow_io import ATTRIBUTION_SCHEMA, config_text, rows_of, table_of


def _number(value: object) -> float | None:
    """A config value rendered from a var: a number, or None when the var is unset."""
    text = config_text(value)
    return None if text is None else float(text)


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def model(dbt, session):
    dbt.config(materialized="table")
    # each key read by a plain dbt.config.get call of its own: dbt passes a Python model only the
    # keys it finds that way in this file (nested in float(... or ...), they arrive as None)
    training_days = dbt.config.get("training_days")
    holdout_fraction = dbt.config.get("holdout_fraction")
    seed = dbt.config.get("seed")
    auto_threshold = dbt.config.get("auto_threshold")
    target_accuracy = dbt.config.get("target_accuracy")
    team_target_accuracy = dbt.config.get("team_target_accuracy")
    mislabel_confidence = dbt.config.get("mislabel_confidence")
    records = rows_of(dbt.ref("int_workload_features"))
    mapping = rows_of(dbt.ref("stg_reference__org_mapping"))
    known = known_projects(records, mapping)
    result = attribute(
        records,
        known,
        training_days=_number(training_days) or None,
        holdout_fraction=_or(_number(holdout_fraction), 0.2),
        seed=int(_or(_number(seed), 0)),
        explain_below=_or(_number(auto_threshold), 0.9),
        target_accuracy=_number(target_accuracy),
        teams=project_teams(records, mapping),
        team_target_accuracy=_number(team_target_accuracy),
        mislabel_confidence=_number(mislabel_confidence),
        declared=mapping,
    )
    return table_of(attribution_rows(result), ATTRIBUTION_SCHEMA)
