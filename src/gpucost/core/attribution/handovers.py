"""Hand-overs: a project that moved to another team, found in the team labels of its own pods.

The org mapping (``reference/*.csv``) names one team per project. Organisations move projects
between teams, and the mapping is updated late or never: until then every one of the project's
workloads, tagged or placed, is charged to the old team. The project's own pods say so first. The
pods with a declared project (a valid project label, a Slurm account, an override or a rule) often
carry a team label as well, their people's, or run in a namespace named after their team
(``team-recsys``: :func:`declared_team`). For a project that changed hands these teams show a
change point: the mapping's team for a while, then another team.

:func:`find_handovers` looks for that change point and nothing weaker. A project is handed over
from its mapped team ``A`` to team ``B`` at the first pod of the split ``i`` when

- before it, at least ``min_before`` labelled pods spanning at least ``min_span_seconds``, at least
  ``before_share`` of them labelled ``A`` (the mapping held: a project the mapping has wrong all
  along, or one worked on mostly by other teams' people, is not a hand-over);
- from it on, at least ``min_after`` labelled pods spanning at least ``min_span_seconds``, at least
  ``after_share`` of them labelled ``B``, the first of them too (a person helping from another team
  is one label among many, not a run of them).

Among the splits that qualify the one the most labels agree with (``A`` before, ``B`` after) wins,
the earliest on a tie; one hand-over per project and window. Workloads of the project that start at
or after the hand-over are ``B``'s (int_workloads), the earlier ones stay ``A``'s. A hand-over is a
finding to act on as well: the org mapping should be corrected (int_project_team_handovers lists
each with its evidence).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gpucost.core.attribution.cold_start import Declared


@dataclass(frozen=True)
class TeamEvidence:
    """One pod with a declared project and a team label."""

    project_id: str
    team_id: str
    started_epoch: int
    workload_id: str


@dataclass(frozen=True)
class HandoverRule:
    """What a change point must show to count as a hand-over."""

    min_before: int = 3
    min_after: int = 5
    before_share: Fraction = Fraction(2, 3)
    after_share: Fraction = Fraction(4, 5)
    min_span_seconds: int = 86_400


@dataclass(frozen=True)
class Handover:
    """A project whose pods' team labels moved from its mapped team to another one."""

    project_id: str
    from_team_id: str
    to_team_id: str
    handed_over_epoch: int
    pods_before: int
    pods_before_agreeing: int
    pods_after: int
    pods_after_agreeing: int
    first_workload_id: str


def declared_team(team_label: str | None, namespace: Any, declared: Declared) -> str | None:
    """The team a pod declares: its team label, else the one team of the org mapping its namespace
    names by the team's own id or name (``team-recsys``); None when neither says."""
    if team_label:
        return team_label
    return declared.team_named(namespace)


def _ordered(evidence: Iterable[TeamEvidence]) -> dict[str, list[TeamEvidence]]:
    by_project: dict[str, list[TeamEvidence]] = defaultdict(list)
    for e in evidence:
        by_project[e.project_id].append(e)
    return {
        p: sorted(rows, key=lambda e: (e.started_epoch, e.workload_id))
        for p, rows in by_project.items()
    }


def _split(rows: list[TeamEvidence], mapped: str, rule: HandoverRule) -> Handover | None:
    n = len(rows)
    best: tuple[int, Handover] | None = None
    # each team's pods from the split on: every pod at first, one fewer per split passed
    after_counts = Counter(e.team_id for e in rows)
    mapped_before = 0
    for i in range(n):
        if i >= rule.min_before and n - i >= rule.min_after:
            before_span = rows[i - 1].started_epoch - rows[0].started_epoch
            after_span = rows[-1].started_epoch - rows[i].started_epoch
            new_team = rows[i].team_id
            agreeing = after_counts[new_team]
            if (
                new_team != mapped
                and mapped_before >= rule.before_share * i
                and agreeing >= rule.after_share * (n - i)
                and before_span >= rule.min_span_seconds
                and after_span >= rule.min_span_seconds
            ):
                found = Handover(
                    project_id=rows[i].project_id,
                    from_team_id=mapped,
                    to_team_id=new_team,
                    handed_over_epoch=rows[i].started_epoch,
                    pods_before=i,
                    pods_before_agreeing=mapped_before,
                    pods_after=n - i,
                    pods_after_agreeing=agreeing,
                    first_workload_id=rows[i].workload_id,
                )
                score = mapped_before + agreeing
                if best is None or score > best[0]:
                    best = (score, found)
        mapped_before += rows[i].team_id == mapped
        after_counts[rows[i].team_id] -= 1
    return best[1] if best else None


def find_handovers(
    evidence: Iterable[TeamEvidence],
    mapping: Mapping[str, str],
    rule: HandoverRule | None = None,
) -> list[Handover]:
    """The projects of ``mapping`` (project -> team) whose pods' declared teams show a hand-over.

    Evidence for a project the mapping does not list, or whose team it does not name, is ignored."""
    rule = rule or HandoverRule()
    found = []
    for project, rows in sorted(_ordered(evidence).items()):
        mapped = mapping.get(project)
        if not mapped:
            continue
        handover = _split(rows, mapped, rule)
        if handover is not None:
            found.append(handover)
    return found
