"""Cold start: place work from what the organisation declares, with no labelled workload at all.

A team that never tags has projects with no labelled workload, so the model cannot name them. The
org mapping still lists them: project ids and names, team ids and names. A workload whose own
names (namespace, pod, owner, app: where it runs and what it is called) single out **one** declared
project is that project's; one whose names single out one team (by the team's id or name, or every
project they name being that team's) is that team's. Only for a project or team the model cannot
name (gpucost.core.attribution.pipeline._cold_start): a known one is the model's, sure or not.

A workload's **own name** (its pod's and the controller's that made it, as its owner called it) is
a stronger word than where it runs: one declared project named there is that project's, known to
the model or not (level ``name``: a declared owner, before the model). The namespace is left out
(work drifts into another project's namespace), and so is the app label, which often names the
software that runs (an evaluation harness named like the platform project that builds it).

The path measures itself before it places anything (:func:`validate`): it is applied to the
labelled workloads, and its money-weighted precision there, per level, is what it claims. It places
a level only when that precision reaches the level's target accuracy (the project's for ``name``)
over at least ``CAL_MIN`` matched workloads.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpucost.core.attribution.calibration import CAL_MIN
from gpucost.core.attribution.features import gpu_hours, is_noise, name_parts

# where the workload runs and what it is called, not the software it runs: an image, a launch line
# or a dataset that names a project is a dependency (an evaluation harness run for another
# project), not an owner
_NAMED = ("namespace", "pod", "created_by_name", "label_app")
# what its owner called it: the pod and the controller (Job, ReplicaSet, ...) that made it
_OWN_NAME = ("pod", "created_by_name")
_SLUG = re.compile(r"[^a-z0-9]+")
_MIN_TERM = 3  # shorter ids (``ai``, ``ml``) match too much to say anything
LEVELS = ("project", "team", "name")
"""What the path places: a project its names single out (unknown to the model), a team (likewise),
a project the workload's own name singles out (known or not)."""


def _slug(text: Any) -> str | None:
    """A declared id or name as a term (its parts joined by hyphens); None when it is too short or
    only random-looking parts (a number names nothing)."""
    slug = _SLUG.sub("-", str(text or "").lower()).strip("-")
    if len(slug) < _MIN_TERM or all(is_noise(p) for p in slug.split("-")):
        return None
    return slug


def _grams(texts: Sequence[Any], longest: int) -> set[str]:
    """Every run of up to ``longest`` consecutive parts of each text, joined by hyphens: a term of
    any length matches where its parts appear in a row (``search-ranking-v2`` in
    ``search-ranking-v2-infer-7f9c2``)."""
    out: set[str] = set()
    for text in texts:
        parts = name_parts(str(text or ""))
        for n in range(1, longest + 1):
            out.update("-".join(parts[i : i + n]) for i in range(len(parts) - n + 1))
    return out


@dataclass(frozen=True)
class Declared:
    """The terms that name each declared project and team: ids and names, as hyphen-joined parts."""

    projects: Mapping[str, str]  # term -> project
    teams: Mapping[str, str]  # term -> team
    team_of: Mapping[str, str]  # project -> team
    longest: int = 1  # the most parts a term has

    @classmethod
    def of(cls, mapping: Sequence[Mapping[str, Any]]) -> Declared:
        projects: dict[str, set[str]] = {}
        teams: dict[str, set[str]] = {}
        team_of = {}
        for row in mapping:
            project, team = row.get("project_id"), row.get("team_id")
            if project and team:
                team_of[str(project)] = str(team)
            for term in (_slug(project), _slug(row.get("project_name"))):
                if term and project:
                    projects.setdefault(term, set()).add(str(project))
            for term in (_slug(team), _slug(row.get("team_name"))):
                if term and team:
                    teams.setdefault(term, set()).add(str(team))
        # a term that names two projects (or teams) names none
        return cls(
            {t: next(iter(p)) for t, p in projects.items() if len(p) == 1},
            {t: next(iter(p)) for t, p in teams.items() if len(p) == 1},
            team_of,
            max((t.count("-") + 1 for t in (*projects, *teams)), default=1),
        )

    def match(self, record: Mapping[str, Any]) -> tuple[str | None, str | None, str]:
        """(the one project, the one team the workload's names single out, the terms that did)."""
        words = _grams([record.get(k) for k in _NAMED], self.longest)
        project_terms = sorted(t for t in self.projects if t in words)
        team_terms = sorted(t for t in self.teams if t in words)
        projects = {self.projects[t] for t in project_terms}
        project = next(iter(projects)) if len(projects) == 1 else None
        teams = {self.teams[t] for t in team_terms} | {
            self.team_of[p] for p in projects if p in self.team_of
        }
        team = next(iter(teams)) if len(teams) == 1 else None
        if project is not None and self.team_of.get(project) not in (None, team):
            project = None
        return project, team, ", ".join(project_terms + team_terms)

    def team_named(self, text: Any) -> str | None:
        """The one team whose own id or name appears in ``text`` (a namespace: ``team-recsys``), not
        through a project's (a namespace named after a project says nothing of who owns it now)."""
        words = _grams([text], self.longest)
        teams = {team for term, team in self.teams.items() if term in words}
        return next(iter(teams)) if len(teams) == 1 else None

    def named(self, record: Mapping[str, Any]) -> tuple[str | None, str]:
        """(the one project the workload's own name singles out, the terms that did)."""
        words = _grams([record.get(k) for k in _OWN_NAME], self.longest)
        terms = sorted(t for t in self.projects if t in words)
        projects = {self.projects[t] for t in terms}
        return (next(iter(projects)) if len(projects) == 1 else None), ", ".join(terms)


@dataclass(frozen=True)
class Precision:
    """What the path measured on the labelled workloads, per level: money-weighted precision and
    the workloads it matched (None: nothing matched)."""

    project: float | None
    project_matched: int
    team: float | None
    team_matched: int
    # the project the workload's own name singles out (a version stored before it has none)
    named: float | None = None
    named_matched: int = 0

    def measured(self, level: str) -> tuple[float | None, int]:
        """(precision, matched) of a level: project, team or name."""
        return {
            "project": (self.project, self.project_matched),
            "team": (self.team, self.team_matched),
            "name": (self.named, self.named_matched),
        }[level]

    def places(self, level: str, target: float | None) -> bool:
        precision, matched = self.measured(level)
        return (
            target is not None
            and precision is not None
            and matched >= CAL_MIN
            and precision >= target
        )


def validate(
    declared: Declared, labelled: Sequence[Mapping[str, Any]], labels: Mapping[str, str]
) -> Precision:
    """The path applied to labelled workloads: the share of the GPU-hours it matched that it
    matched right, per level (team: against the labelled project's team)."""
    sums = {level: [0.0, 0.0, 0] for level in LEVELS}
    for r in labelled:
        label = labels[str(r["workload_id"])]
        project, team, _ = declared.match(r)
        named, _ = declared.named(r)
        weight = gpu_hours(r)
        for level, got, truth in (
            ("project", project, label),
            ("team", team, declared.team_of.get(label)),
            ("name", named, label),
        ):
            if got is not None and truth is not None:
                acc = sums[level]
                acc[0] += weight
                acc[1] += weight if got == truth else 0.0
                acc[2] += 1

    def ratio(level: str) -> float | None:
        total, right, _ = sums[level]
        return right / total if total else None

    return Precision(
        ratio("project"),
        int(sums["project"][2]),
        ratio("team"),
        int(sums["team"][2]),
        ratio("name"),
        int(sums["name"][2]),
    )


def placed_by_name(
    named: tuple[str | None, str], cold: Precision | None, target: float | None
) -> str | None:
    """The project a workload's own name places (``named``: :meth:`Declared.named`), when the
    name level's measured precision reaches ``target`` (the project's); else None."""
    project = named[0]
    return project if project is not None and cold and cold.places("name", target) else None


def round_claim(value: float | None) -> float:
    """A measured precision as a confidence: never 1 (a finite sample never makes it certain)."""
    return 0.0 if value is None or math.isnan(value) else round(min(value, 0.999999), 6)
