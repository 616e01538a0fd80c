"""Hand-overs found in the teams a project's own pods declare (gpucost.core.attribution.handovers)."""

from __future__ import annotations

from gpucost.core.attribution.cold_start import Declared
from gpucost.core.attribution.handovers import (
    Handover,
    HandoverRule,
    TeamEvidence,
    declared_team,
    find_handovers,
)

HOUR = 3600
MAPPING = {"summarizer": "nlp", "feed": "recsys"}


def pods(project: str, teams: str, *, every: int = 6 * HOUR, start: int = 0) -> list[TeamEvidence]:
    """One pod per letter, ``every`` seconds apart: ``o`` the mapped team, ``N`` recsys, ``v`` vision."""
    names = {"o": MAPPING.get(project, "nlp"), "N": "recsys", "v": "vision", "p": "platform"}
    return [
        TeamEvidence(project, names[c], start + i * every, f"c/ns/{project}-{i}/u{i}")
        for i, c in enumerate(teams)
    ]


def test_a_run_of_another_team_after_the_mapped_one_is_a_handover_at_its_first_pod():
    (found,) = find_handovers(pods("summarizer", "oooooooooNoNNNNNN"), MAPPING)
    assert found == Handover(
        project_id="summarizer",
        from_team_id="nlp",
        to_team_id="recsys",
        handed_over_epoch=9 * 6 * HOUR,
        pods_before=9,
        pods_before_agreeing=9,
        pods_after=8,
        pods_after_agreeing=7,
        first_workload_id="c/ns/summarizer-9/u9",
    )


def test_the_split_most_labels_agree_with_wins_and_a_stray_label_before_it_does_not_start_it():
    # the stray recsys label at 3 starts a qualifying split too; the later one agrees with more
    (found,) = find_handovers(pods("summarizer", "oooNooooooNNNNNNN"), MAPPING)
    assert found.handed_over_epoch == 10 * 6 * HOUR
    assert (found.pods_before, found.pods_before_agreeing) == (10, 9)


def test_labels_of_other_teams_mixed_all_along_are_not_a_handover():
    # a project many teams' people work on: no single team takes over
    assert find_handovers(pods("summarizer", "oNopoNpoNpoNoNpo"), MAPPING) == []
    # a mapping wrong from the start (no run of the mapped team before): not a hand-over either
    assert find_handovers(pods("summarizer", "NNNNNNNNNNNN"), MAPPING) == []
    assert find_handovers(pods("summarizer", "oNNNNNNNNNNN"), MAPPING) == []


def test_each_threshold_of_the_rule_is_needed():
    rule = HandoverRule()
    # fewer than min_after pods of the new team
    assert find_handovers(pods("summarizer", "oooooo" + "N" * (rule.min_after - 1)), MAPPING) == []
    assert find_handovers(pods("summarizer", "oooooo" + "N" * rule.min_after), MAPPING)
    # fewer than min_before pods before
    early = pods("summarizer", "o" * rule.min_before + "NNNNNNNN", every=12 * HOUR)
    assert find_handovers(early, MAPPING)
    # a later split takes the new team's pods before it, and too few of the mapped team
    stricter = HandoverRule(min_before=rule.min_before + 2)
    assert find_handovers(early, MAPPING, stricter) == []
    # the new team's share after the split: 4 of 5 holds, 3 of 5 does not
    assert find_handovers(pods("summarizer", "ooooooNoNNN"), MAPPING)
    assert find_handovers(pods("summarizer", "ooooooNoNoN"), MAPPING) == []
    # the mapped team's share before: two thirds holds, less does not
    assert find_handovers(pods("summarizer", "oovNNNNNN", every=12 * HOUR), MAPPING)
    assert find_handovers(pods("summarizer", "ovvNNNNNN", every=12 * HOUR), MAPPING) == []


def test_a_change_inside_a_day_is_not_enough_evidence():
    # the same labels an hour apart: neither side spans a day
    assert find_handovers(pods("summarizer", "ooooooNNNNNN", every=HOUR), MAPPING) == []
    assert find_handovers(pods("summarizer", "ooooooNNNNNN", every=5 * HOUR), MAPPING)
    # each side on its own: the mapped team's run within an hour, the new team's over two days
    brief = pods("summarizer", "oooooo", every=600) + pods(
        "summarizer", "NNNNNN", start=HOUR, every=10 * HOUR
    )
    assert find_handovers(brief, MAPPING) == []
    brief = pods("summarizer", "oooooo", every=10 * HOUR) + pods(
        "summarizer", "NNNNNN", start=60 * HOUR, every=600
    )
    assert find_handovers(brief, MAPPING) == []


def test_projects_the_mapping_does_not_name_are_ignored_and_each_project_is_read_alone():
    evidence = pods("unknown", "ooooooNNNNNN") + pods("feed", "oooooooooo")
    evidence += pods("summarizer", "ooooooNNNNNN")
    found = find_handovers(reversed(evidence), MAPPING)
    assert [(h.project_id, h.to_team_id) for h in found] == [("summarizer", "recsys")]


def test_a_pod_declares_its_team_label_else_the_one_team_its_namespace_names():
    declared = Declared.of(
        [
            {"project_id": "summarizer", "project_name": "Summarizer", "team_id": "nlp"},
            {"project_id": "feed", "team_id": "recsys", "team_name": "Recommendations"},
            {"project_id": "detector", "team_id": "vision"},
        ]
    )
    assert declared_team("vision", "team-recsys", declared) == "vision"  # the label first
    assert declared_team(None, "team-recsys", declared) == "recsys"
    assert declared_team(None, "recommendations-batch", declared) == "recsys"  # the team's name
    assert declared_team("", "team-nlp", declared) == "nlp"
    # a namespace named after a project says nothing of who owns it now; two teams name none
    assert declared_team(None, "summarizer", declared) is None
    assert declared_team(None, "nlp-vision-shared", declared) is None
    assert declared_team(None, "batch", declared) is None
    assert declared_team(None, None, declared) is None
