"""Suspected mislabels (gpucost.core.attribution): a tag its workload's own signals contradict."""

from __future__ import annotations

import random

from gpucost.core.attribution import attribute

PROJECTS = ["rag-search", "summarizer", "detector-v2"]


def _records(n: int, seed: int) -> tuple[list[dict], set[str]]:
    """Each user always works for one project, and names it in the pod name; 2 % of the tags
    name another valid project (a copied manifest)."""
    rng = random.Random(seed)
    users = {f"user{i}": PROJECTS[i % 3] for i in range(9)}
    out, wrong = [], set()
    for i in range(n):
        user = rng.choice(sorted(users))
        project = users[user]
        tag = project
        if i % 3 and rng.random() < 0.02:
            tag = rng.choice([p for p in PROJECTS if p != project])
            wrong.add(f"c/ns/job-{i:05d}/uid")
        out.append(
            {
                "workload_id": f"c/ns/job-{i:05d}/uid",
                "namespace": "ns",
                "pod": f"{project}-train-{rng.randrange(16**5):05x}",
                "user_id": user,
                "image_repository": "nvcr.io/nvidia/pytorch",
                "gpu_count": 1,
                "started_epoch": 1_790_000_000 + i * 600,
                "duration_hours": 1.0,
                "known_project_id": tag if i % 3 else None,
            }
        )
    return out, wrong


def test_a_tag_its_own_signals_contradict_is_suspected_and_still_wins():
    records, wrong = _records(900, seed=2)
    result = attribute(records, PROJECTS, training_days=None, seed=1, mislabel_confidence=0.9)
    suspected = {p.workload_id: (p, tag) for p, tag in result.suspected}
    # most wrong tags are caught, with the project the signals say; few right ones are suspected
    caught = wrong & set(suspected)
    assert len(caught) >= 0.7 * len(wrong) and len(wrong) >= 5
    assert len(set(suspected) - wrong) <= 2
    tags = {r["workload_id"]: r["known_project_id"] for r in records}
    for wid in caught:
        p, tag = suspected[wid]
        assert tag == tags[wid] and p.project_id != tag and p.confidence >= 0.9
    # the tag still wins: a suspected workload is not a workload to score
    assert not set(suspected) & {p.workload_id for p in result.predictions}
    # off unless asked for
    off = attribute(records, PROJECTS, training_days=None, seed=1)
    assert off.suspected == []
