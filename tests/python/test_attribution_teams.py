"""Team before project (gpucost.core.attribution): a workload whose project is unsure but whose team
is sure goes to the team, with a team confidence calibrated on its own."""

from __future__ import annotations

import random

from gpucost.core.attribution import attribute, evaluate, project_teams, threshold_for_accuracy

TEAMS = {
    "rag-search": "nlp",
    "summarizer": "nlp",
    "detector-v2": "vision",
    "seg-anything": "vision",
}


def _records(n: int, seed: int = 1) -> list[dict]:
    """Each user works for one team, half on each of its two projects: the team is plain from the
    user and the namespace, the project is a coin toss."""
    rng = random.Random(seed)
    users = {f"user{i}": ("nlp", "vision")[i % 2] for i in range(8)}
    projects = {t: sorted(p for p, team in TEAMS.items() if team == t) for t in ("nlp", "vision")}
    out = []
    for i in range(n):
        user = rng.choice(sorted(users))
        team = users[user]
        project = rng.choice(projects[team])
        out.append(
            {
                "workload_id": f"c/{team}/job-{i:05d}/uid",
                "namespace": team,
                "pod": f"job-{rng.randrange(16**5):05x}",
                "user_id": user,
                "image_repository": "nvcr.io/nvidia/pytorch",
                "image_tag": "24.05-py3",
                "gpu_count": rng.choice((1, 2, 4)),
                "started_epoch": 1_790_000_000 + i * 600,
                "duration_hours": 1.0,
                "util_mean": 50.0,
                "known_project_id": None if i % 3 == 0 else project,
            }
        )
    return out


def test_a_sure_team_is_placed_when_its_project_is_not():
    records = _records(600)
    result = attribute(
        records,
        sorted(TEAMS),
        training_days=None,
        seed=1,
        target_accuracy=0.9,
        teams=TEAMS,
        team_target_accuracy=0.95,
    )
    assert result.team_threshold is not None
    truth_team = {r["workload_id"]: r["namespace"] for r in records}
    # no project is placed (a coin toss between the team's two), every team is
    placed_projects = [p for p in result.predictions if p.confidence >= result.auto_threshold]
    placed_teams = [p for p in result.predictions if p.team_confidence >= result.team_threshold]
    assert len(placed_projects) < len(result.predictions) / 10
    assert len(placed_teams) == len(result.predictions)
    assert all(p.team_id == truth_team[p.workload_id] for p in placed_teams)
    # the team's confidence is its own calibration, not the project's: sure of the team
    assert min(p.team_confidence for p in result.predictions) > 0.8
    assert max(p.confidence for p in result.predictions) < 0.9
    # the derived threshold is threshold_for_accuracy over the team confidences (GPU-hours) of
    # the workloads the project threshold leaves: team-only placements reach the target alone
    by_id = {p.workload_id: p for p in result.predictions}
    left = [
        r
        for r in records
        if r["known_project_id"] is None
        and by_id[r["workload_id"]].confidence < result.auto_threshold
    ]
    assert result.team_threshold == threshold_for_accuracy(
        [by_id[r["workload_id"]].team_confidence for r in left],
        [r["gpu_count"] * r["duration_hours"] for r in left],
        0.95,
    )
    # measured on the hold-out at the team level: calibrated (cross-fitted confidences)
    team_rows = [(p.team_id, TEAMS[truth], p.team_confidence, 1.0) for p, truth in result.holdout]
    report = evaluate(team_rows, threshold=result.team_threshold)
    assert report.accuracy_all == 1.0 and report.ece is not None and report.ece < 0.05


def test_without_teams_no_team_is_predicted_or_placed():
    records = _records(300)
    result = attribute(records, sorted(TEAMS), training_days=None, seed=1, target_accuracy=0.9)
    assert result.team_threshold is None
    assert all(p.team is None for p in result.predictions)
    with_teams_off = attribute(
        records, sorted(TEAMS), training_days=None, seed=1, target_accuracy=0.9, teams=TEAMS
    )
    # teams known but no team target: teams are predicted, none placed
    assert with_teams_off.team_threshold is None
    assert all(p.team_id for p in with_teams_off.predictions)
    # the project predictions do not depend on the teams
    assert [p.candidates for p in with_teams_off.predictions] == [
        p.candidates for p in result.predictions
    ]


def test_project_teams_from_the_mapping_else_the_labels_most_common_team():
    mapping = [{"project_id": "rag-search", "team_id": "nlp"}, {"project_id": "x", "team_id": None}]
    records = [
        {"known_project_id": "rag-search", "team_label": "vision"},  # the mapping wins
        {"known_project_id": "summarizer", "team_label": "nlp"},
        {"known_project_id": "summarizer", "team_label": "nlp"},
        {"known_project_id": "summarizer", "team_label": "search"},
        {"known_project_id": "detector-v2", "team_label": "b"},
        {"known_project_id": "detector-v2", "team_label": "a"},  # a tie: the first in order
        {"known_project_id": "orphan", "team_label": None},
        {"known_project_id": None, "team_label": "nlp"},
    ]
    assert project_teams(records, mapping) == {
        "rag-search": "nlp",
        "summarizer": "nlp",
        "detector-v2": "a",
    }
