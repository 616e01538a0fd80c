"""Model versions (gpucost.core.attribution.versions): the fitted state a version stores scores as
the training did, when a build retrains, and which workloads a build that does not retrain scores."""

from __future__ import annotations

import json
import pickle

import pytest

from gpucost.core.attribution import attribute
from gpucost.core.attribution.pipeline import prepare
from gpucost.core.attribution.versions import (
    decode_state,
    decode_workload_ids,
    encode_state,
    encode_workload_ids,
    feature_fingerprint,
    label_fingerprint,
    retrain_reason,
    settings_fingerprint,
    to_score,
    version_id,
)
from tests.python.test_attribution_cold_start import MAPPING
from tests.python.test_attribution_cold_start import _records as _cold_records


def _trained():
    records = _cold_records(600, seed=4)
    projects = [r["project_id"] for r in MAPPING]
    teams = {r["project_id"]: r["team_id"] for r in MAPPING}
    # a few of the labelled team's workloads untagged: the model scores them, not the names
    for r in records[1::40]:
        r["known_project_id"] = None
    settings = dict(training_days=None, seed=1, target_accuracy=0.9, teams=teams)
    result = attribute(records, projects, team_target_accuracy=0.9, declared=MAPPING, **settings)
    return records, projects, result


def test_a_decoded_state_scores_every_workload_exactly_as_the_training_did():
    records, projects, result = _trained()
    assert result.model is not None and result.scorer is not None
    text = encode_state(result.scorer)
    json.loads(text)  # plain JSON: decoding it runs no code
    scorer = decode_state(text)
    assert encode_state(scorer) == text
    prepared = prepare(records, projects, training_days=None, seed=1)
    shown, support = prepared.shown(), prepared.support()
    ids = [str(r["workload_id"]) for r in prepared.targets]
    scored = scorer.score(
        [shown[w] for w in ids], prepared.targets, [support[w] for w in ids], MAPPING
    )
    # the same candidates, confidences, teams, signals and cold-start placements, to the bit
    assert scored == result.predictions
    assert any(p.declared for p in scored) and any(p.team for p in scored)
    assert scorer.auto_threshold == result.auto_threshold
    assert scorer.team_threshold == result.team_threshold


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        json.dumps({"format": 99}),
        json.dumps({"format": 1, "model": {"vocabulary": []}}),
        pickle.dumps({"format": 1}).hex(),
    ],
)
def test_a_state_that_is_not_one_is_refused_in_one_line(text):
    with pytest.raises(ValueError, match=r"^not an attribution model state: [^\n]*$"):
        decode_state(text)


def test_label_fingerprint_counts_the_labels_of_the_workloads_the_version_read_only():
    records = _cold_records(40, seed=4)
    read = decode_workload_ids(encode_workload_ids(records))
    assert read == {r["workload_id"] for r in records}
    base = label_fingerprint(records)
    assert label_fingerprint(records, read) == base
    # a workload the version never read, labelled or not, is new data and no label change, even
    # when it started before the version's horizon (its telemetry landed late)
    horizon = max(r["started_epoch"] for r in records)
    for start in (horizon + 60, horizon - 86_400):
        late = {**records[0], "workload_id": "c/nlp/new/uid", "started_epoch": start}
        assert label_fingerprint([*records, late], read) == base
        assert label_fingerprint([*records, late]) != base  # over every workload, it would be
    # an override on a workload it read, a label corrected or removed, is; so is a labelled one gone
    labelled = next(r for r in records if r["known_project_id"])
    for value in ("summarizer" if labelled["known_project_id"] != "summarizer" else "rag", None):
        changed = [{**r, "known_project_id": value} if r is labelled else r for r in records]
        assert label_fingerprint(changed, read) != base
    unlabelled = next(r for r in records if not r["known_project_id"])
    overridden = [{**r, "known_project_id": "rag"} if r is unlabelled else r for r in records]
    assert label_fingerprint(overridden, read) != base
    assert label_fingerprint([r for r in records if r is not labelled], read) != base
    assert label_fingerprint([r for r in records if r is not unlabelled], read) == base


def test_the_workloads_read_are_stored_compactly_and_a_missing_set_is_none():
    ids = [
        {"workload_id": f"k8s/cluster-a/ns-{i % 7}/pod-{i:05d}/uid-{i * 7919:08x}"}
        for i in range(5000)
    ]
    text = encode_workload_ids(ids)
    assert text.isascii() and len(text) < 12 * len(ids)
    assert decode_workload_ids(text) == {r["workload_id"] for r in ids}
    assert decode_workload_ids(encode_workload_ids([])) == frozenset()
    assert decode_workload_ids(None) is None


CURRENT = {"label_fingerprint": "L", "settings_fingerprint": "S", "data_last_start_epoch": 1000.0}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, None),
        ({"horizon": 1000.0 + 6 * 86_400}, None),
        ({"horizon": 1000.0 + 7 * 86_400}, "schedule"),
        ({"retrain_days": None, "horizon": 1e9}, None),
        ({"retrain_days": 0, "horizon": 1001.0}, "schedule"),
        ({"retrain_days": 0}, None),
        ({"labels": "L2"}, "labels"),
        ({"settings": "S2"}, "settings"),
        ({"forced": True}, "forced"),
        ({"forced": True, "labels": "L2"}, "forced, labels"),
    ],
)
def test_retrain_when_labels_settings_or_schedule_say_so_or_on_demand(change, expected):
    args = dict(labels="L", settings="S", horizon=1000.0, retrain_days=7, forced=False)
    assert retrain_reason(CURRENT, **{**args, **change}) == expected
    assert retrain_reason(None, **args) == "first"


def test_version_ids_name_what_was_fitted_and_a_forced_retrain_is_new():
    first = version_id("state", 0)
    assert first == version_id("state", 0)
    assert len({first, version_id("state", 1), version_id("other", 0)}) == 3


def test_only_new_changed_or_other_version_workloads_are_scored():
    previous = {"a": ("v1", "fa"), "b": ("v1", "fb"), "c": ("v0", "fc"), "gone": ("v1", "x")}
    current = {"a": "fa", "b": "fb2", "c": "fc", "d": "fd"}
    assert to_score(previous, current, "v1") == ["b", "c", "d"]
    assert to_score({w: ("v1", f) for w, f in current.items()}, current, "v1") == []


def test_a_feature_fingerprint_moves_with_a_feature_or_the_support_class():
    record = {"workload_id": "w", "pod": "job-1"}
    base = feature_fingerprint({"user=alice": 1.0}, "user_history", record)
    assert base == feature_fingerprint({"user=alice": 1.0}, "user_history", dict(record))
    assert base != feature_fingerprint(
        {"user=alice": 1.0, "ns_prev=a": 1.0}, "user_history", record
    )
    assert base != feature_fingerprint({"user=alice": 1.0}, "namespace_history", record)
    assert base != feature_fingerprint({"user=alice": 1.0}, "user_history", {**record, "pod": "x"})


def test_build_retrain_sets_the_var_merged_into_the_vars_given():
    from gpucost.commands.project import with_retrain

    assert with_retrain([]) == ["build", "--vars", '{"gpucost_attribution_retrain": true}']
    merged = with_retrain(["build", "--select", "x+", "--vars", "{gpucost_lookback_hours: 6}"])
    assert merged[:3] == ["build", "--select", "x+"] and merged[3] == "--vars"
    assert json.loads(merged[4]) == {
        "gpucost_lookback_hours": 6,
        "gpucost_attribution_retrain": True,
    }
    assert json.loads(with_retrain(["run", "--vars={a: 1}"])[2]) == {
        "a": 1,
        "gpucost_attribution_retrain": True,
    }
    with pytest.raises(ValueError, match="must be a mapping"):
        with_retrain(["build", "--vars", "[1, 2]"])


# --- in the warehouse -------------------------------------------------------------------------------

ATTRIBUTION = ("int_attribution_model_versions", "int_workload_attribution_scores")


def _scores(warehouse, path) -> list[tuple]:
    return warehouse.sql(
        "select * exclude (attribution_model_version) from intermediate.int_workload_attribution_scores"
        " order by scored_set, workload_id",
        warehouse=path,
    )


@pytest.mark.warehouse
def test_a_rebuild_scores_nothing_until_retrain_is_asked_then_names_the_new_version(
    generated_warehouse, monkeypatch
):
    """On an identical landing zone the same labels keep the version and score no workload; var
    gpucost_attribution_retrain trains a new one (the same fit: training is deterministic) and
    every row, and every model-placed allocation row, names it."""
    import os

    from gpucost.core.attribution.pipeline import Scorer

    if os.environ.get("GPUCOST_TEST_DBT") == "subprocess":
        pytest.skip("counts the workloads scored inside this process's dbt run")
    scored: list[int] = []
    score = Scorer.score

    def counted(self, features, records, classes, declared):
        scored.append(len(records))
        return score(self, features, records, classes, declared)

    monkeypatch.setattr(Scorer, "score", counted)
    path = generated_warehouse.copy("versions")
    # the predictions, and every model from the workloads' owners to the allocation mart
    downstream = ("int_workload_attribution_predictions", "int_workloads+,+fct_cost_allocation")
    # the session month's model places nothing at the default 0.97 target (its most confident
    # prediction is about 0.94) and it has no project nobody tags: at a 0.9 target it places some
    # money, whose allocation rows must name the version (a settings change: a second version)
    target = "gpucost_attribution_target_accuracy: 0.9"
    settle = generated_warehouse.dbt(
        "run", "--select", *ATTRIBUTION, *downstream, "--vars", f"{{{target}}}", warehouse=path
    )
    assert settle.returncode == 0, settle.stdout[-4000:]
    ((before, targets),) = generated_warehouse.sql(
        "select (select list(model_version) from intermediate.int_attribution_model_versions),"
        " (select count(*) from intermediate.int_workload_attribution_scores"
        "  where scored_set = 'undeclared')",
        warehouse=path,
    )
    assert len(before) == 2 and targets > 0
    original = _scores(generated_warehouse, path)
    scored.clear()

    rerun = generated_warehouse.dbt(
        "run", "--select", *ATTRIBUTION, "--vars", f"{{{target}}}", warehouse=path
    )
    assert rerun.returncode == 0, rerun.stdout[-4000:]
    assert scored == [0]
    assert generated_warehouse.sql(
        "select list(model_version) from intermediate.int_attribution_model_versions",
        warehouse=path,
    ) == [(before,)]
    assert _scores(generated_warehouse, path) == original

    forced = generated_warehouse.dbt(
        "run",
        "--select",
        *ATTRIBUTION,
        *downstream,
        "--vars",
        f"{{gpucost_attribution_retrain: true, {target}}}",
        warehouse=path,
    )
    assert forced.returncode == 0, forced.stdout[-4000:]
    assert scored == [0, targets]
    ((versions, newest, reason),) = generated_warehouse.sql(
        "select count(*), arg_max(model_version, version_sequence),"
        " arg_max(retrain_reason, version_sequence) from intermediate.int_attribution_model_versions",
        warehouse=path,
    )
    assert (versions, reason) == (3, "forced") and newest not in before
    assert generated_warehouse.sql(
        "select distinct attribution_model_version from intermediate.int_workload_attribution_scores",
        warehouse=path,
    ) == [(newest,)]
    assert _scores(generated_warehouse, path) == original
    methods = generated_warehouse.sql(
        "select attribution_method, list(distinct attribution_model_version)"
        " from marts.fct_cost_allocation where workload_id is not null group by 1 order by 1",
        warehouse=path,
    )
    learned = {"model", "model_team", "cold_start", "cold_start_team", "declared_name"}
    assert any(m in learned for m, _ in methods)
    for method, named in methods:
        assert named == ([newest] if method in learned else [None]), method


def test_settings_fingerprint_reads_the_mapping_not_where_it_was_landed():
    row = {"project_id": "p", "team_id": "t", "project_name": "P", "team_name": "T"}
    base = settings_fingerprint({"seed": 0}, [{**row, "source_file": "/a/org_mapping.csv"}])
    assert base == settings_fingerprint({"seed": 0}, [{**row, "source_file": "/b/org.csv"}])
    assert base != settings_fingerprint({"seed": 1}, [row])
    assert base != settings_fingerprint({"seed": 0}, [{**row, "team_id": "u"}])
