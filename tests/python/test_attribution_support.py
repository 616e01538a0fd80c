"""Validation shaped like untagged work (gpucost.core.attribution.support): support classes, the
hold-out of whole people and namespaces, and a calibration map per class."""

from __future__ import annotations

import random

import numpy as np

from gpucost.core.attribution import attribute
from gpucost.core.attribution.support import (
    ClassCalibration,
    Evaluated,
    cross_fitted,
    support_classes,
    withheld_groups,
)

PROJECTS = ["rag-search", "summarizer", "detector-v2", "seg-anything"]


def test_support_class_counts_other_workloads_never_the_workload_itself():
    records = [
        {"workload_id": "a1", "cluster_id": "c", "namespace": "ns1"},
        {"workload_id": "a2", "cluster_id": "c", "namespace": "ns1"},
        {"workload_id": "b1", "cluster_id": "c", "namespace": "ns1"},
        {"workload_id": "b2", "cluster_id": "d", "namespace": "ns1"},  # another cluster
        {"workload_id": "c1", "cluster_id": "c", "namespace": "ns2"},
    ]
    readers = {"a1": "alice", "a2": "alice", "b1": "bob", "b2": "alice", "c1": None}
    filed = dict(readers)
    known = {"a1": "rag-search", "b1": "summarizer"}
    assert support_classes(records, readers, filed, known) == {
        "a1": "namespace_history",  # alice's only label is its own; b1 is in its namespace
        "a2": "user_history",
        "b1": "namespace_history",
        "b2": "launch_signals",  # alice's history is on cluster c
        "c1": "launch_signals",
    }


def test_withheld_groups_take_whole_people_and_namespaces_the_same_every_time():
    records = [
        {"workload_id": f"w{i}", "cluster_id": "c", "namespace": f"ns{i % 7}"} for i in range(400)
    ]
    filed = {f"w{i}": f"user{i % 23}" for i in range(400)}
    out = withheld_groups(records, filed, seed=3)
    assert out == withheld_groups(records, filed, seed=3)
    assert out != withheld_groups(records, filed, seed=4)
    # whole groups: every withheld workload's person, or its namespace, is withheld entirely
    by_user: dict[str, set[str]] = {}
    by_space: dict[str, set[str]] = {}
    for r in records:
        by_user.setdefault(filed[r["workload_id"]], set()).add(r["workload_id"])
        by_space.setdefault(r["namespace"], set()).add(r["workload_id"])
    people = {u for u, ws in by_user.items() if ws <= out}
    spaces = {n for n, ws in by_space.items() if ws <= out}
    assert people and spaces
    assert all(
        filed[r["workload_id"]] in people or r["namespace"] in spaces
        for r in records
        if r["workload_id"] in out
    )
    assert 0 < len(out) < len(records)


def _month(n: int, seed: int) -> list[dict]:
    """Users with a home project (90 % of their work); a third of them never tag. Namespaces are
    shared by every user, so a never-tagging person's work reads no history of its own."""
    rng = random.Random(seed)
    users = {f"user{i}": PROJECTS[i % 4] for i in range(24)}
    never = {u for i, u in enumerate(sorted(users)) if i % 3 == 0}
    out = []
    for i in range(n):
        user = rng.choice(sorted(users))
        project = users[user] if rng.random() < 0.9 else rng.choice(PROJECTS)
        tagged = user not in never and rng.random() < 0.7
        out.append(
            {
                "workload_id": f"c/shared/job-{i:05d}/uid",
                "cluster_id": "c",
                "namespace": "shared",
                "pod": f"job-{rng.randrange(16**5):05x}",
                "user_id": user,
                "image_repository": "nvcr.io/nvidia/pytorch",
                "image_tag": "24.05-py3",
                "gpu_count": rng.choice((1, 2)),
                "started_epoch": 1_790_000_000 + i * 600,
                "duration_hours": 1.0,
                "util_mean": 50.0,
                "known_project_id": project if tagged else None,
                "true_project_id": project,
                "never_tags": user in never,
            }
        )
    return out


def test_never_tagging_people_are_scored_by_their_class_not_by_the_tagged_hold_out():
    records = _month(1500, seed=5)
    result = attribute(records, PROJECTS, training_days=None, seed=1, target_accuracy=0.9)
    by_id = {r["workload_id"]: r for r in records}
    never = [p for p in result.predictions if by_id[p.workload_id]["never_tags"]]
    others = [p for p in result.predictions if not by_id[p.workload_id]["never_tags"]]
    # what the model knows of them: no user history (the namespace is everybody's)
    assert {result.support[p.workload_id] for p in never} == {"namespace_history"}
    assert {result.support[p.workload_id] for p in others} == {"user_history"}
    # the hold-out of whole people scored some of them like that
    assert result.person_holdout
    assert any(
        result.support[p.workload_id] == "namespace_history" for p, _ in result.person_holdout
    )

    def claim_and_truth(preds):
        claim = sum(p.confidence for p in preds) / len(preds)
        right = sum(p.project_id == by_id[p.workload_id]["true_project_id"] for p in preds)
        return claim, right / len(preds)

    # the never-taggers' claimed confidence follows what they really get, far below the others'
    claim, truth = claim_and_truth(never)
    assert abs(claim - truth) < 0.1, (claim, truth)
    other_claim, other_truth = claim_and_truth(others)
    assert other_truth > truth + 0.3
    assert abs(other_claim - other_truth) < 0.1


def test_a_class_without_user_history_gets_its_own_map():
    """Raw probabilities of 0.95 are right 95 % of the time with user history and half of the time
    without: each class's map says so; user_history keeps the model's own map (None)."""
    rng = np.random.default_rng(0)
    n = 400
    classes = tuple(("user_history", "namespace_history")[i % 2] for i in range(n))
    right = np.array(
        [rng.random() < (0.95 if c == "user_history" else 0.5) for c in classes], dtype=bool
    )
    evaluated = Evaluated(np.full(n, 0.95), right, np.ones(n), classes)
    maps = ClassCalibration(evaluated)
    assert maps.maps["user_history"] is None
    own = maps.maps["namespace_history"]
    assert own is not None and 0.45 < own.predict(np.array([0.95]))[0] < 0.65
    # launch_signals has no rows of its own: the classes without user history pooled
    pooled = maps.maps["launch_signals"]
    assert pooled is not None and 0.45 < pooled.predict(np.array([0.95]))[0] < 0.65
    # the reported confidences are cross-fitted: each from maps fitted without its fold
    reported = cross_fitted(evaluated, default=None)
    no_history = np.array([c == "namespace_history" for c in classes])
    assert abs(reported[no_history].mean() - right[no_history].mean()) < 0.1
    assert (reported[~no_history] == 0.95).all()  # no default map: their raw probability
