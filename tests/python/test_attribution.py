"""The learned attribution core (gpucost.core.attribution) on small synthetic workloads."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction import DictVectorizer

from gpucost.core.attribution import (
    SharedLessons,
    UserInference,
    attribute,
    calibration_weights,
    creator_user,
    evaluate,
    fit,
    history_features,
    holdout_predictions,
    label_patterns,
    mask_draw,
    predict,
    predict_untagged,
    static_features,
    threshold_for_accuracy,
    tokens,
)
from gpucost.core.attribution.pipeline import _shown_features
from gpucost.core.attribution.quality import calibrated_ece_band

PROJECTS = ["rag-search", "summarizer", "detector-v2"]


def _records(n: int, seed: int = 1, *, p_own: float = 0.8) -> list[dict]:
    """Users with a home project (p_own of their jobs) and another; names carry no project."""
    rng = random.Random(seed)
    users = {f"user{i}": PROJECTS[i % 3] for i in range(9)}
    out = []
    for i in range(n):
        user = rng.choice(sorted(users))
        home = users[user]
        project = home if rng.random() < p_own else rng.choice([p for p in PROJECTS if p != home])
        out.append(
            {
                "workload_id": f"c/ns/job-{i:05d}/uid",
                "namespace": "team-" + home.split("-")[0],
                "pod": f"job-{rng.randrange(16**5):05x}",
                "user_id": user,
                "image_repository": "nvcr.io/nvidia/pytorch",
                "image_tag": "24.05-py3",
                "gpu_count": rng.choice((1, 2, 4)),
                "started_epoch": 1_790_000_000 + i * 600,
                "duration_hours": 1.0,
                "util_mean": 50.0,
                "known_project_id": project,
                "true_project_id": project,
            }
        )
    return out


def test_tokens_drop_random_suffixes_and_keep_bigrams():
    assert tokens("rag-search-ft-8f3a2-x7k2p") == [
        "rag",
        "search",
        "ft",
        "rag-search",
        "search-ft",
    ]
    assert tokens(None, "jupyter-alice-0") == ["jupyter", "alice", "jupyter-alice"]


def test_static_features_read_a_typo_as_a_signal_not_a_label():
    features = static_features({"workload_id": "w", "label_project_id": "rag-serach"}, PROJECTS)
    assert features["label_close_to=rag-search"] == 1.0
    assert not any(k.startswith("label=") for k in features)


_LATER_SIDE = ("user_next=", "ns_next=", "family_next=", "read_by=")


def _side(features: dict[str, float], later: bool) -> dict[str, float]:
    return {k: v for k, v in features.items() if k.startswith(_LATER_SIDE) == later}


def test_history_features_read_neighbours_on_both_sides_never_the_workload_itself():
    records = _records(200)
    labels = {r["workload_id"]: r["known_project_id"] for r in records}
    before = history_features(records, labels)
    # a workload never sees its own label: flipping it changes nothing of its own features
    target = records[100]
    flipped = dict(labels)
    flipped[target["workload_id"]] = (
        "detector-v2" if labels[target["workload_id"]] != "detector-v2" else "rag-search"
    )
    after = history_features(records, flipped)
    assert after[target["workload_id"]] == before[target["workload_id"]]
    # the earlier side of no earlier workload changes, the later side of no later one
    for r in records[:101]:
        assert _side(after[r["workload_id"]], False) == _side(before[r["workload_id"]], False)
    for r in records[100:]:
        assert _side(after[r["workload_id"]], True) == _side(before[r["workload_id"]], True)
    # and each side does read it: a later workload's history, an earlier one's next neighbours
    assert any(after[r["workload_id"]] != before[r["workload_id"]] for r in records[101:])
    assert any(after[r["workload_id"]] != before[r["workload_id"]] for r in records[:100])
    assert all(
        not k.startswith(_LATER_SIDE) for r in records[-1:] for k in before[r["workload_id"]]
    )


def test_the_next_known_job_of_the_user_and_the_later_reader_of_a_checkpoint_are_neighbours():
    train = {
        "workload_id": "t",
        "user_id": "u",
        "namespace": "ns",
        "created_by_name": "exp-3fa2c",
        "started_epoch": 0,
        "duration_hours": 2,
    }
    evaluation = {
        "workload_id": "e",
        "user_id": "v",
        "namespace": "other",
        "created_by_name": "eval-9k2mx",
        "command_line": "python eval.py --model s3://ckpt/exp-3fa2c/final",
        "started_epoch": 86_400,
    }
    later = {"workload_id": "l", "user_id": "u", "namespace": "ns", "started_epoch": 7_200}
    history = history_features([train, evaluation, later], {"e": "rag-search", "l": "summarizer"})
    assert history["t"]["read_by=rag-search"] == 1.0
    assert history["t"]["user_next=summarizer"] == 1.0
    assert history["t"]["ns_next=summarizer"] == 1.0
    assert not any(k.startswith(_LATER_SIDE) for k in history["e"])


def test_history_features_ignore_same_second_neighbours():
    a = {"workload_id": "a", "user_id": "u", "started_epoch": 10}
    b = {"workload_id": "b", "user_id": "u", "started_epoch": 10}
    features = history_features([a, b], {"a": "rag-search", "b": "summarizer"})
    assert features["a"] == {} and features["b"] == {}


def test_fit_is_deterministic_and_gives_sorted_top3():
    records = _records(600)
    labels = {r["workload_id"]: r["known_project_id"] for r in records}
    feats = history_features(records, labels)
    x = [{**static_features(r, PROJECTS), **feats[r["workload_id"]]} for r in records]
    y = [r["known_project_id"] for r in records]
    ids = [r["workload_id"] for r in records]
    first = predict(fit(x[:500], y[:500], seed=3), x[500:], ids[500:])
    second = predict(fit(x[:500], y[:500], seed=3), x[500:], ids[500:])
    assert first == second
    for p in first:
        probs = [c[1] for c in p.candidates]
        assert len(p.candidates) == 3
        assert probs == sorted(probs, reverse=True)
        assert probs[-1] >= 0 and sum(probs) <= 1 + 1e-5  # rounded to 6 places
        assert p.signals  # explained: the features behind the first candidate


def test_shared_lessons_weigh_a_naming_feature_once_for_every_project():
    # the first stage knows nothing (uniform); an evaluation's producer (reads_prev) always names
    # its project, a namespace's previous job (ns_prev) names a random one; detector-v2 never had
    # a producer among the training workloads
    rng = random.Random(4)
    rows, labels = [], []
    for i in range(600):
        label = PROJECTS[i % 2]
        rows.append(
            {
                "owner_kind=Job": 1.0,
                f"reads_prev={label}": 1.0,
                f"ns_prev={rng.choice(PROJECTS)}": 1.0,
            }
        )
        labels.append(PROJECTS.index(label))
    vectorizer = DictVectorizer().fit(
        [*rows, {f"{p}={c}": 1.0 for p in ("reads_prev", "ns_prev") for c in PROJECTS}]
    )
    lessons = SharedLessons.columns(vectorizer.feature_names_, PROJECTS, ["Job"])
    uniform = np.full((len(rows), 3), 1 / 3)
    lessons.fit(uniform, vectorizer.transform(rows), np.array(labels))
    new = vectorizer.transform([{"owner_kind=Job": 1.0, "reads_prev=detector-v2": 1.0}])
    proba = lessons.proba(np.full((1, 3), 1 / 3), new)[0]
    assert proba[PROJECTS.index("detector-v2")] > 0.9  # learnt from the other projects
    noise = vectorizer.transform([{"owner_kind=Job": 1.0, "ns_prev=detector-v2": 1.0}])
    assert lessons.proba(np.full((1, 3), 1 / 3), noise)[0].max() < 0.45  # worth about nothing
    # a workload naming nothing keeps the first stage's probabilities
    first = np.array([[0.6, 0.3, 0.1]])
    plain = vectorizer.transform([{"owner_kind=Job": 1.0}])
    assert lessons.proba(first, plain)[0].argmax() == 0


def test_a_kind_whose_names_say_the_project_lends_it_to_a_project_never_seen_in_that_kind():
    # twelve projects; eleven have a few serving pods, named after their project; the twelfth's
    # first serving pod can only learn from that shared lesson (the regression's mentions=p11
    # weight was never trained on a serving pod); evaluation jobs name the harness they run (p0
    # here), which says nothing of their project; every project has jobs, known by their user
    projects = [f"p{k}" for k in range(12)]
    rng = random.Random(3)
    x, y = [], []
    for i in range(600):
        project = projects[i % 12]
        x.append({"owner_kind=Job": 1.0, f"user=u{i % 12}": 1.0, "ns=ml": 1.0})
        y.append(project)
        if project != "p11" and i < 48:
            x.append({"owner_kind=ReplicaSet": 1.0, f"mentions={project}": 1.0, "ns=serve": 1.0})
            y.append(project)
        if i % 4 == 0:
            harness = {"owner_kind=Job": 1.0, "mentions=p0": 1.0, "ns=ml": 1.0}
            x.append({**harness, f"user=u{i % 12}": 1.0})
            y.append(rng.choice(projects[1:]))  # never the harness it names
    model = fit(x, y, seed=0)
    assert model is not None and model.lessons is not None
    assert model.lessons.kinds == ("Job", "ReplicaSet")
    serving = [{"owner_kind=ReplicaSet": 1.0, "mentions=p11": 1.0, "ns=serve": 1.0}]
    evaluation = [{"owner_kind=Job": 1.0, "mentions=p0": 1.0, "ns=ml": 1.0, "user=u5": 1.0}]
    with_lessons = predict(model, serving + evaluation, ["s", "e"])
    lessons, model.lessons = model.lessons, None
    without = predict(model, serving + evaluation, ["s", "e"])
    model.lessons = lessons
    assert without[0].project_id != "p11"  # the regression alone: the serving projects it knows
    assert with_lessons[0].project_id == "p11"
    assert "mentions=p11" in with_lessons[0].signals
    # in a kind whose names do not say the project, a mention does not pull toward it
    assert with_lessons[1].project_id == without[1].project_id == "p5"


@pytest.mark.parametrize("n", [3000, 10000])  # cross-validated / time-based calibration set
def test_calibrated_probabilities_match_observed_frequencies(n):
    # each user's jobs go to the home project 80 % of the time: the only signal is the user,
    # so a calibrated model says about 0.8 and is right about 80 % of the time
    records = _records(n, seed=5)
    pairs, model = holdout_predictions(records, PROJECTS, test_fraction=0.3)
    assert model is not None and model.calibration == "platt_top_label"
    report = evaluate(
        ((p.project_id, truth, p.confidence, 1.0) for p, truth in pairs), threshold=0.5
    )
    assert 0.7 <= report.accuracy_all <= 0.9
    assert report.ece <= 0.06, report


def test_holdout_is_time_based():
    records = _records(300)
    pairs, _ = holdout_predictions(records, PROJECTS, test_fraction=0.2)
    start = {r["workload_id"]: r["started_epoch"] for r in records}
    tested = {p.workload_id for p, _ in pairs}
    assert len(tested) == 60
    assert min(start[w] for w in tested) > max(start[w] for w in start if w not in tested)


def test_predict_untagged_scores_only_workloads_without_a_known_project():
    records = _records(400)
    for r in records[::2]:
        r["known_project_id"] = None
    predictions, model = predict_untagged(records, PROJECTS, training_days=None)
    assert model is not None and model.training_workloads == 200
    assert {p.workload_id for p in predictions} == {r["workload_id"] for r in records[::2]}


def test_too_few_labels_give_no_model_and_no_owner():
    records = _records(10)
    for r in records:
        r["known_project_id"] = None
    records[0]["known_project_id"] = "rag-search"
    predictions, model = predict_untagged(records, PROJECTS)
    assert model is None
    assert all(p.project_id is None and p.confidence == 0.0 for p in predictions)


def test_one_training_gives_predictions_and_a_time_based_holdout():
    records = _records(1000, seed=7)
    for r in records[::3]:
        r["known_project_id"] = None
    result = attribute(records, PROJECTS, training_days=None, holdout_fraction=0.2, seed=1)
    model = result.model
    assert model is not None and model.calibration == "platt_top_label"
    labelled = [r for r in records if r["known_project_id"]]
    # the hold-out is the latest fifth of the labelled workloads; the regression saw it only
    # after it was measured (training continued on it), so every label is used once
    assert len(result.holdout) == model.holdout_workloads == 134
    assert model.training_workloads == len(labelled)
    # calibrated on the training workloads' out-of-fold predictions and the hold-out
    assert model.calibration_workloads == len(labelled)
    start = {r["workload_id"]: r["started_epoch"] for r in records}
    held = {p.workload_id for p, _ in result.holdout}
    assert min(start[w] for w in held) > max(
        start[r["workload_id"]] for r in labelled if r["workload_id"] not in held
    )
    assert {p.workload_id for p in result.predictions} == {r["workload_id"] for r in records[::3]}
    # the same inputs give the same output
    again = attribute(records, PROJECTS, training_days=None, holdout_fraction=0.2, seed=1)
    assert again.predictions == result.predictions and again.holdout == result.holdout
    # a held-out workload is scored before training continues on it, by a checkpoint fitted on
    # features that read no hold-out label: its own label cannot move its raw prediction (other
    # held-out workloads read it as a neighbour's, as targets do, so the calibration map fitted on
    # them may move a little), whichever held-out workload it is
    assert model.calibration_set is not None
    for pick in (max(held, key=start.__getitem__), min(held, key=start.__getitem__)):
        flipped = [dict(r) for r in records]
        for r in flipped:
            if r["workload_id"] == pick:
                r["known_project_id"] = next(p for p in PROJECTS if p != r["known_project_id"])
        other = attribute(flipped, PROJECTS, training_days=None, holdout_fraction=0.2, seed=1)
        assert other.model is not None and other.model.calibration_set is not None
        order = [p.workload_id for p, _ in result.holdout]
        assert order == [p.workload_id for p, _ in other.holdout]
        i = order.index(pick)
        # nothing fitted before the hold-out is scored reads its labels: the training workloads'
        # out-of-fold predictions and the held-out workload's raw top probability are unchanged
        off = model.calibration_workloads - model.holdout_workloads
        assert (other.model.calibration_set[0][:off] == model.calibration_set[0][:off]).all()
        assert other.model.calibration_set[0][off + i] == model.calibration_set[0][off + i]
        before, after = result.holdout[i][0], other.holdout[i][0]
        assert [c[0] for c in after.candidates] == [c[0] for c in before.candidates]
        assert other.predictions != result.predictions  # the production model did learn it


def test_threshold_for_accuracy_hand_computed():
    confidences = [0.99, 0.95, 0.90, 0.80, 0.60]
    # running means, most confident first: 0.99, 0.97, 0.9467, 0.91, 0.848
    assert threshold_for_accuracy(confidences, [1] * 5, 0.93) == 0.90
    assert threshold_for_accuracy(confidences, [1] * 5, 0.97) == 0.95
    assert threshold_for_accuracy(confidences, [1] * 5, 0.80) == 0.60
    # weights are money: a heavy 0.8 pulls the mean below the target sooner
    assert threshold_for_accuracy(confidences, [1, 1, 1, 1, 1], 0.905) == 0.80
    assert threshold_for_accuracy(confidences, [1, 1, 1, 9, 1], 0.905) == 0.90
    # workloads of one confidence go together: both 0.9s or neither
    assert threshold_for_accuracy([0.99, 0.9, 0.9], [1, 1, 1], 0.94) == 0.99
    # never below the floor, and nothing (1.0) when even the most confident is below the target
    assert threshold_for_accuracy([0.6, 0.4], [1, 1], 0.3) == 0.6
    assert threshold_for_accuracy([0.6, 0.4], [1, 1], 0.3, floor=0.0) == 0.4
    assert threshold_for_accuracy([0.8], [1], 0.9) == 1.0
    assert threshold_for_accuracy([], [], 0.9) == 1.0
    with pytest.raises(ValueError, match="target accuracy"):
        threshold_for_accuracy([0.9], [1], 97)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([i / 20 for i in range(21)]), st.integers(0, 50)),
        max_size=30,
    ),
    st.sampled_from([0.6, 0.8, 0.9, 0.95, 0.97]),
)
def test_threshold_for_accuracy_is_the_lowest_that_keeps_the_target(items, target):
    confidences, weights = [c for c, _ in items], [w for _, w in items]
    t = threshold_for_accuracy(confidences, weights, target)

    def mean_at(cut: float) -> float | None:
        placed = [(c, w) for c, w in items if c >= cut]
        total = sum(w for _, w in placed)
        return sum(c * w for c, w in placed) / total if total else None

    assert t >= 0.5
    if t < 1.0:
        mean = mean_at(t)
        assert mean is None or mean >= target - 1e-12
    # the next lower confidence (at or above the floor) would break the target
    lower = [c for c in confidences if 0.5 <= c < t]
    if lower:
        mean = mean_at(max(lower))
        assert mean is not None and mean < target + 1e-12  # summed in another order


def test_a_target_accuracy_derives_the_threshold_from_the_predictions():
    records = _records(1000, seed=7)
    for r in records[::3]:
        r["known_project_id"] = None
    fixed = attribute(records, PROJECTS, training_days=None, seed=1, explain_below=0.9)
    assert fixed.auto_threshold == 0.9
    target_accuracy = 0.85
    result = attribute(
        records, PROJECTS, training_days=None, seed=1, target_accuracy=target_accuracy
    )
    targets = {r["workload_id"]: r for r in records[::3]}
    weights = [r["gpu_count"] * r["duration_hours"] for r in targets.values()]
    by_id = {p.workload_id: p for p in result.predictions}
    expected = threshold_for_accuracy(
        [by_id[w].confidence for w in targets], weights, target_accuracy
    )
    assert result.auto_threshold == expected
    assert 0.5 <= expected < 0.9  # p_own 0.8: no workload is 90 % sure, most are 80 %
    placed = [p for p in result.predictions if p.confidence >= expected]
    assert placed and len(placed) < len(result.predictions)
    # the same model and candidates as the fixed threshold
    assert [p.candidates for p in result.predictions] == [p.candidates for p in fixed.predictions]
    # placed or not, each prediction is explained (the review queue; the statement's appendix)
    assert all(p.signals for p in result.predictions if p.confidence < 1)
    mean = sum(p.confidence * targets[p.workload_id]["gpu_count"] for p in placed) / sum(
        targets[p.workload_id]["gpu_count"] for p in placed
    )
    assert mean >= target_accuracy


def test_calibration_weights_follow_the_mix_to_score():
    calibration = [
        {"workload_id": "a", "created_by_kind": "Job", "gpu_count": 1, "duration_hours": 2},
        {"workload_id": "b", "created_by_kind": "StatefulSet", "gpu_count": 1, "duration_hours": 2},
    ]
    targets = [
        {
            "workload_id": "t1",
            "created_by_kind": "StatefulSet",
            "gpu_count": 1,
            "duration_hours": 3,
        },
        {"workload_id": "t2", "created_by_kind": "Job", "gpu_count": 1, "duration_hours": 1},
    ]
    # calibration GPU-hours are 50/50 by kind; the targets' are Job 25 %, StatefulSet 75 %
    assert calibration_weights(calibration, targets) == pytest.approx([2 * 0.5, 2 * 1.5])


def test_masking_drops_the_user_as_often_as_the_targets_lack_one():
    targets = [{"user_id": "u" if i % 4 else None, "team_label": "t"} for i in range(400)]
    patterns = label_patterns(targets)
    assert dict(patterns) == {(True, True): 0.75, (False, True): 0.25}
    shown = [mask_draw({"workload_id": f"w{i}"}, patterns, seed=0) for i in range(2000)]
    no_user = [s for s in shown if not s[0]]
    assert 0.2 < len(no_user) / len(shown) < 0.3
    assert all(team for _, team in shown)
    # deterministic per workload
    assert mask_draw({"workload_id": "w7"}, patterns, seed=0) == shown[7]


def test_masked_labelled_workloads_lose_user_features_and_targets_look_the_same():
    # alice's labelled jobs on rag-search; a labelled and an unlabelled job of hers, both shown
    # without a user: neither reads her history, both read the namespace's
    records = [
        {"workload_id": f"a{i}", "user_id": "alice", "namespace": "nlp", "started_epoch": i}
        for i in range(5)
    ]
    labels = {r["workload_id"]: "rag-search" for r in records}
    later = {"workload_id": "l", "user_id": "alice", "namespace": "nlp", "started_epoch": 10}
    target = {"workload_id": "t", "namespace": "nlp", "started_epoch": 11}
    history = history_features([*records, later, target], labels, reader_users={"l": None})
    assert history["l"] == history["t"]
    assert history["l"]["ns_prev=rag-search"] == 1.0
    assert not any(k.startswith(("user_", "pipeline_")) for k in history["l"])


def test_user_inferred_from_the_owner_or_claims_never_from_the_workload_itself():
    def nb(wid, user, claims="ws-alice", ns="team-nlp"):
        return {
            "workload_id": wid,
            "cluster_id": "c",
            "namespace": ns,
            "user_id": user,
            "created_by_name": "jupyter-alice",
            "volume_claims": claims,
        }

    records = [nb("n1", "alice"), nb("n2", None), nb("n3", "alice", "ws-alice docs-crawl-cache")]
    infer = UserInference(records)
    assert infer.user_for(records[1]) == "alice"
    # n1 asked about itself, its own label left out: n3 still says alice
    assert infer.user_for(records[0], own="alice") == "alice"
    # alone, a workload does not name its own user
    alone = UserInference([nb("n1", "alice")])
    assert alone.user_for(nb("n1", "alice"), own="alice") is None
    # the same owner name in another namespace is another owner
    assert infer.user_for(nb("x", None, claims="", ns="team-vision")) is None
    # a claim mounted by two users names nobody; the owner decides first
    shared = UserInference(
        [nb("a", "alice", "cache"), {**nb("b", "bob", "cache"), "created_by_name": "jupyter-bob"}]
    )
    assert shared.user_for({**nb("c", None, "cache"), "created_by_name": "x-job"}) is None
    assert shared.user_for(nb("d", None, "cache")) == "alice"


def test_creator_names_a_person_never_a_service_account():
    assert creator_user({"creator_user_id": "alice"}) == "alice"
    assert creator_user({"creator_user_id": "system:serviceaccount:team-nlp:ci"}) is None
    assert creator_user({"creator_user_id": "system:admin"}) is None
    assert creator_user({"creator_user_id": ""}) is None
    assert creator_user({}) is None


def test_creator_stands_in_for_a_missing_user_label():
    # alice's labelled jobs on rag-search on cluster c; then three jobs without a user label: one
    # created by alice (the webhook's annotation), one by a CI service account, one on a cluster
    # without the webhook. Only the first reads alice's history.
    def job(wid, t, **kw):
        return {"workload_id": wid, "cluster_id": "c", "namespace": "nlp", "started_epoch": t, **kw}

    labelled = [job(f"a{i}", i, user_id="alice", creator_user_id="alice") for i in range(4)]
    labels = {r["workload_id"]: "rag-search" for r in labelled}
    by_alice = job("t1", 10, creator_user_id="alice")
    by_ci = job("t2", 11, creator_user_id="system:serviceaccount:team-nlp:ci")
    unstamped = job("t3", 12)
    targets = [by_alice, by_ci, unstamped]
    shown = _shown_features([*labelled, *targets], labels, PROJECTS, targets, set(labels), seed=0)
    assert shown["t1"]["user=alice"] == 1.0
    assert shown["t1"]["user_prev=rag-search"] == 1.0
    for wid in ("t2", "t3"):
        assert not any(k.startswith(("user=alice", "user_prev", "user_mix")) for k in shown[wid])
    # a labelled workload shown without its user label (as the targets are) keeps its creator:
    # the annotation does not come and go with the labels
    assert all(shown[w]["user=alice"] == 1.0 for w in labels)


def test_user_history_is_kept_per_cluster():
    a = {"workload_id": "a", "cluster_id": "east", "user_id": "u", "started_epoch": 1}
    b = {"workload_id": "b", "cluster_id": "west", "user_id": "u", "started_epoch": 2}
    c = {"workload_id": "c", "cluster_id": "east", "user_id": "u", "started_epoch": 3}
    history = history_features([a, b, c], {"a": "rag-search", "b": "summarizer"})
    assert history["c"]["user_prev=rag-search"] == 1.0
    assert "user_prev=summarizer" not in history["c"]


def test_launch_line_is_a_signal_and_a_read_checkpoint_names_its_producer():
    train = {
        "workload_id": "c/ns/exp-3fa2c-0/u1",
        "created_by_name": "exp-3fa2c",
        "user_id": "alice",
        "started_epoch": 100,
        "duration_hours": 1.0,
        "command_line": "torchrun train.py --data s3://acme-datasets/web-crawl/ --output"
        " s3://acme-checkpoints/nlp/exp-3fa2c/",
        "working_dir": "/workspace/ml-nlp",
    }
    evaluation = {
        "workload_id": "c/ns/eval-9b1d0-x2k4p/u2",
        "created_by_name": "eval-9b1d0",
        "started_epoch": 90_000,
        "command_line": "python -m eval_harness --model s3://acme-checkpoints/nlp/exp-3fa2c/final",
    }
    features = static_features(train, PROJECTS)
    assert {"cmd=web-crawl", "cmd=acme-datasets", "dir=ml-nlp"} <= set(features)
    # whole path segments too, but not a run's own random name
    assert {"seg=web-crawl", "seg=acme-datasets", "seg=ml-nlp"} <= set(features)
    assert "seg=exp-3fa2c" not in features
    history = history_features([train, evaluation], {train["workload_id"]: "rag-search"})
    assert history[evaluation["workload_id"]]["reads_prev=rag-search"] == 1.0
    # a producer's label is read only once it started before the reader
    late = dict(train, started_epoch=100_000)
    history = history_features([late, evaluation], {late["workload_id"]: "rag-search"})
    assert "reads_prev=rag-search" not in history[evaluation["workload_id"]]


def test_a_dataset_a_job_reads_speaks_for_the_notebook_that_mounts_its_cache():
    # jobs of two projects in one namespace read their own datasets; only the jobs are labelled
    def job(i: int, dataset: str) -> dict:
        return {
            "workload_id": f"c/ns/exp-{i:05d}/u",
            "namespace": "team-nlp",
            "created_by_kind": "Job",
            "command_line": f"torchrun train.py --data s3://acme-datasets/{dataset}/",
            "working_dir": "/workspace/ml-nlp",
        }

    data = {"rag-search": "web-crawl", "summarizer": "dialog-pool"}
    jobs = [job(i, data[p]) for i in range(60) for p in [sorted(data)[i % 2]]]
    labels = [sorted(data)[i % 2] for i in range(60)]
    notebook = {
        "workload_id": "c/ns/jupyter-alice-0/u",
        "namespace": "team-nlp",
        "created_by_kind": "StatefulSet",
        "command_line": "start-notebook.py",
        "volume_claims": "ws-alice dialog-pool-cache",
    }
    job_features = static_features(jobs[1], PROJECTS)
    notebook_features = static_features(notebook, PROJECTS)
    # one vocabulary for the launch line, the working directory and the claims
    assert {"word=dialog-pool", "word=ml-nlp"} <= set(job_features)
    assert "word=dialog-pool" in notebook_features and "vol=dialog-pool" in notebook_features
    assert "cmd=dialog-pool" not in notebook_features
    model = fit([static_features(j, PROJECTS) for j in jobs], labels, seed=0)
    assert model is not None
    (placed,) = predict(model, [notebook_features], [notebook["workload_id"]])
    assert placed.project_id == "summarizer" and placed.confidence > 0.8
    assert "word=dialog-pool" in placed.signals
    # without the shared vocabulary the notebook's claim is a word no labelled job carried
    apart = {k: v for k, v in notebook_features.items() if not k.startswith("word=")}
    (unplaced,) = predict(model, [apart], [notebook["workload_id"]])
    assert unplaced.confidence < 0.6


def test_evaluate_hand_computed():
    rows = [
        ("a", "a", 0.95, 10.0),  # auto, right
        ("b", "a", 0.92, 5.0),  # auto, wrong
        ("a", "a", 0.55, 5.0),  # below threshold, right
    ]
    report = evaluate(rows, threshold=0.9)
    assert report.coverage == pytest.approx(15 / 20)
    assert report.accuracy_auto == pytest.approx(10 / 15)
    assert report.accuracy_all == pytest.approx(15 / 20)
    # bins: [0.9, 1.0] weight 15, conf (9.5 + 4.6) / 15 = 0.94, acc 2/3; [0.5, 0.6) weight 5, conf 0.55, acc 1
    expected = 15 / 20 * abs(10 / 15 - 14.1 / 15) + 5 / 20 * abs(1 - 0.55)
    assert report.ece == pytest.approx(expected)
    (confusion,) = report.confusions
    assert (confusion.true_project_id, confusion.predicted_project_id) == ("a", "b")
    assert (confusion.workloads, confusion.cost, confusion.auto_cost) == (1, 5.0, 5.0)


def test_a_calibrated_models_ece_band_is_wide_on_few_costly_workloads_and_narrow_on_many():
    """What a perfectly calibrated model shows (calibrated_ece_band): on 40 workloads of which
    one weighs as much as the rest, a large ECE; on 4,000 of equal weight, a small one. A model
    whose 0.9 confidence is right half the time lies above the band; one that is calibrated (its
    outcomes drawn with the stated probability, another seed) within it."""
    rng = np.random.default_rng(3)
    few = rng.uniform(0.5, 1.0, 40)
    few_weight = np.r_[np.full(39, 1.0), 39.0]
    median, p90 = calibrated_ece_band(few, few_weight)
    assert median > 0.1 and p90 > median
    assert calibrated_ece_band(few, few_weight) == (median, p90)  # seeded: the same every build
    shuffled = rng.permutation(40)  # a build reads its rows in no fixed order
    assert calibrated_ece_band(few[shuffled], few_weight[shuffled]) == (median, p90)
    many = rng.uniform(0.5, 1.0, 4000)
    many_median, many_p90 = calibrated_ece_band(many, np.ones(4000))
    assert many_p90 < 0.03 and many_median < median / 4
    assert calibrated_ece_band([], []) is None and calibrated_ece_band([0.9], [0.0]) is None

    def rows(confidence, right_share, seed):
        draw = np.random.default_rng(seed).random(len(confidence))
        return [
            ("a" if d < right_share(c) else "b", "a", float(c), 1.0)
            for d, c in zip(draw, confidence, strict=True)
        ]

    over = evaluate(rows(np.full(400, 0.9), lambda c: 0.5, 1), threshold=None)
    assert over.ece > over.ece_if_calibrated_p90  # evidence of miscalibration
    honest = evaluate(rows(many[:400], lambda c: c, 2), threshold=None)
    assert honest.ece <= honest.ece_if_calibrated_p90
    assert honest.ece_if_calibrated <= honest.ece_if_calibrated_p90


def test_quality_rows_hand_computed_exact_money():
    from decimal import Decimal

    from gpucost.core.attribution.quality import quality_rows

    rows = [
        ("a", "a", 0.95, Decimal("10.000000000000000001")),  # auto, right
        ("b", "a", 0.92, Decimal("5")),  # auto, wrong
        (None, "c", 0.15, Decimal("0")),  # nothing predicted, weighs nothing
        ("c", "a", 0.55, Decimal("5")),  # below threshold, wrong
    ]
    by_key = {
        (r["metric_group"], r["metric_key"]): r for r in quality_rows(evaluate(rows, threshold=0.9))
    }
    holdout = by_key["holdout", "all"]
    assert holdout["effective_cost"] == Decimal("20.000000000000000001")  # exact
    assert holdout["auto_effective_cost"] == Decimal("15.000000000000000001")
    assert holdout["coverage"] == pytest.approx(15 / 20)
    assert holdout["accuracy"] == pytest.approx(10 / 15)
    assert holdout["accuracy_by_count"] == 0.25
    assert set(by_key) == {
        ("holdout", "all"),
        ("reliability", "bin_1"),
        ("reliability", "bin_5"),
        ("reliability", "bin_9"),
        ("confusion", "rank_1"),
        ("confusion", "rank_2"),
        ("confusion", "rank_3"),
    }
    # a bin that weighs nothing has no accuracy, confidence or calibration error (not 0)
    assert by_key["reliability", "bin_1"]["accuracy"] is None
    assert by_key["reliability", "bin_1"]["expected_calibration_error"] is None
    # costliest first, then more workloads, then by project; nothing predicted is a null
    ranked = [by_key["confusion", f"rank_{k}"] for k in (1, 2, 3)]
    assert [(r["true_project_id"], r["predicted_project_id"]) for r in ranked] == [
        ("a", "b"),
        ("a", "c"),
        ("c", None),
    ]
    assert (
        ranked[0]["auto_effective_cost"] == Decimal("5") and ranked[1]["auto_effective_cost"] == 0
    )
    # no threshold: nothing is placed automatically, and accuracy of the placed part is undefined
    none = evaluate(rows, threshold=None)
    assert (none.coverage, none.accuracy_auto) == (0.0, None)


def test_shared_workload_rows_split_exactly_by_consumer_weight():
    from decimal import Decimal

    from tests.python.reference.allocation import split_shared_workloads

    rows = [
        {
            "charge_id": "c1",
            "workload_id": "w",
            "team_id": "__unallocated__",
            "project_id": "__unallocated__",
            "allocation_kind": "unallocated",
            "unallocated_reason": "gpu_idle_share_of_workload_missing_project_label",
            "attribution_method": "none",
            "billed_cost": Decimal("10.000000000000000001"),
            "effective_cost": Decimal("8.8"),
            "allocation_ratio": Decimal("0.25"),
        },
        {"charge_id": "c2", "workload_id": "other", "billed_cost": Decimal(1)},
    ]
    shares = [
        {
            "workload_id": "w",
            "team_id": "nlp",
            "project_id": "rag-search",
            "weight": Decimal(2),
            "share_id": "s",
        },
        {
            "workload_id": "w",
            "team_id": "nlp",
            "project_id": "summarizer",
            "weight": Decimal(1),
            "share_id": "s",
        },
    ]
    out = split_shared_workloads(rows, shares)
    assert [(r["project_id"], r["allocation_kind"], r["attribution_method"]) for r in out] == [
        ("rag-search", "idle", "shared_workload"),
        ("summarizer", "idle", "shared_workload"),
    ]
    for column in ("billed_cost", "effective_cost", "allocation_ratio"):
        assert sum(r[column] for r in out) == rows[0][column]
    assert out[0]["effective_cost"] == Decimal("5.866666666666666667")
    assert all(r["unallocated_reason"] is None and r["attribution_rule_id"] == "s" for r in out)


def test_hard_generator_month_is_harder_and_writes_the_truth(tmp_path):
    import csv
    import json

    from gpucost.synth import MonthConfig, generate_month
    from gpucost.synth.reference import HANDOFF_PROJECT

    truth_csv = tmp_path / "truth" / "workloads.csv"
    summary = generate_month(
        tmp_path / "landing",
        MonthConfig(seed=3, nodes=4, days=4, step_seconds=600, hard=True),
        truth_csv=truth_csv,
    )
    truth = list(csv.DictReader(truth_csv.open(encoding="utf-8")))
    assert len(truth) == summary["pods"]
    assert sum(r["tag_state"] == "untagged" for r in truth) == summary["untagged_pods"]
    assert not (tmp_path / "landing" / "truth").exists()  # never in the landing zone
    names = {r["pod"] for r in truth}
    assert any(n.startswith(("exp-", "ft-")) for n in names)  # names that do not say the project
    assert any(n.startswith("eval-") for n in names)
    # users on several projects
    projects_of: dict[str, set[str]] = {}
    labels = []
    for path in (tmp_path / "landing" / "metrics" / "kube").rglob("kube_pod_labels.json"):
        labels += [s["metric"] for s in json.loads(path.read_text())["data"]["result"]]
    for metric in labels:
        if "label_user_id" in metric and "label_project_id" in metric:
            projects_of.setdefault(metric["label_user_id"], set()).add(metric["label_project_id"])
    assert max(len(p) for p in projects_of.values()) >= 2
    # the creator annotation (an admission webhook on half the clusters: the first of two) names
    # the person who submitted a job, or a service account; never a project
    stamped: dict[str, dict[str, str]] = {}
    for path in (tmp_path / "landing" / "inventory" / "kube").rglob("pods-*.json"):
        for pod in json.loads(path.read_text())["items"]:
            meta = pod["metadata"]
            creator = meta.get("annotations", {}).get("gpucost.io/created-by")
            stamped[f"{path.parent.name}/{meta['name']}"] = creator
    clusters = sorted({key.split("/")[0] for key in stamped})
    assert all(v is None for k, v in stamped.items() if k.startswith(clusters[1] + "/"))
    first = {k: v for k, v in stamped.items() if k.startswith(clusters[0] + "/")}
    assert first and all(first.values())
    assert summary["creator_stamped_pods"] == sum(r["cluster"] == clusters[0] for r in truth)
    people = {v for v in first.values() if not v.startswith("system:")}
    assert people and all(v.endswith("@acme.example") for v in people)
    assert any(v.startswith("system:serviceaccount:") for v in first.values())
    projects = {r["project_id"] for r in truth}
    assert not any(p in v for v in first.values() for p in projects)
    for r in truth:
        if r["cluster"] == clusters[0] and r["kind"] in ("training", "finetune"):
            user = next(
                (
                    m["label_user_id"]
                    for m in labels
                    if m.get("pod") == r["pod"] and "label_user_id" in m
                ),
                None,
            )
            if user:
                assert first[f"{r['cluster']}/{r['pod']}"] == f"{user}@acme.example"
    # the handed-over project belongs to the new team in the second half (the truth's team_id), and
    # runs in its namespace on the clusters with a namespace per team (hard mode varies the layout)
    handed = [
        r for r in truth if r["project_id"] == HANDOFF_PROJECT[0] and r["kind"] != "inference"
    ]
    new_team = [r for r in handed if r["team_id"] == HANDOFF_PROJECT[1]]
    assert new_team
    per_team = {c for c, layout in summary["namespace_layouts"].items() if layout == "team"}
    for r in new_team:
        if r["cluster"] in per_team:
            assert r["namespace"] == f"team-{HANDOFF_PROJECT[1]}"
