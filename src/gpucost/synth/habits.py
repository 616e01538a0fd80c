"""Hard mode: the organisation's habits that confuse attribution. Tagging compliance is a habit of
people and teams (one team never tags), people move from one project to another mid-month, a project
is born mid-month, and a few tagged pods carry a valid but wrong project id."""

from __future__ import annotations

import random
from dataclasses import dataclass

from gpucost.synth.reference import BORN_CANDIDATES, UNTAG_WEIGHT
from gpucost.synth.scheduling import Pod

# a person's tagging propensity is kept within these bounds unless they never tag (0)
_MIN_COMPLIANCE, _MAX_COMPLIANCE = 0.02, 0.98


@dataclass(frozen=True, slots=True)
class Habits:
    """What the organisation does this month (hard mode), the same in every cluster.

    ``compliance``: each person's tagging propensity (0: never tags); ``team_compliance``: each
    team's base rate, the propensity of its service accounts (0 for ``never_tagging_teams``);
    ``born``: project -> the first second its workloads may start; ``moves``: person -> (when,
    the project they move onto or None for one of their team's, a draw in [0, 1) to pick it)."""

    compliance: dict[str, float]
    team_compliance: dict[str, float]
    never_tagging_teams: tuple[str, ...]
    born: dict[str, int]
    moves: dict[str, tuple[int, str | None, float]]

    def propensity(self, pod: Pod) -> float:
        """The tagging propensity of whoever launched ``pod`` (a pipeline: its team's rate)."""
        return self.compliance.get(pod.user, self.team_compliance[pod.user_team])


def build_habits(
    rng: random.Random,
    user_team: dict[str, str],
    t0: int,
    window_end: int,
    *,
    never_tagging_teams: int,
    never_tagging_people: float,
    compliance_spread: float,
    handover_share: float,
    born_projects: int,
    project_team: dict[str, str],
) -> Habits:
    """Draw the month's habits from ``rng`` (same arguments -> same habits)."""
    teams = sorted(set(user_team.values()))
    never = tuple(sorted(rng.sample(teams, never_tagging_teams)))
    team_rate = {t: 0.0 if t in never else rng.uniform(0.35, 0.95) for t in teams}
    others = sorted(u for u, t in user_team.items() if t not in never)
    silent = set(rng.sample(others, round(never_tagging_people * len(others))))
    compliance: dict[str, float] = {}
    for user in sorted(user_team):
        base = team_rate[user_team[user]]
        jitter = rng.uniform(-compliance_spread, compliance_spread)
        if base == 0.0 or user in silent:
            compliance[user] = 0.0
        else:
            compliance[user] = min(_MAX_COMPLIANCE, max(_MIN_COMPLIANCE, base + jitter))
    window = window_end - t0
    born: dict[str, int] = {}
    moves: dict[str, tuple[int, str | None, float]] = {}
    for user in sorted(user_team):
        if rng.random() < handover_share:
            at = t0 + round(rng.uniform(0.25, 0.75) * window / 3600) * 3600
            moves[user] = (at, None, rng.random())
    for project in sorted(rng.sample(BORN_CANDIDATES, born_projects)):
        born[project] = t0 + round(rng.uniform(1 / 3, 2 / 3) * window / 3600) * 3600
        people = sorted(u for u, t in user_team.items() if t == project_team[project])
        for user in rng.sample(people, max(1, len(people) // 2)):
            moves[user] = (born[project], project, 0.0)  # its team's people move onto it
    return Habits(compliance, team_rate, never, born, moves)


def assign_habit_tags(
    pods: list[Pod],
    rng: random.Random,
    fraction: float,
    typo: dict[str, str],
    habits: Habits,
    project_team: dict[str, str],
    wrong_share: float,
) -> tuple[int, int, int]:
    """Decide which workloads lose their project label by the habits of who launched them, which
    carry a misspelled id and which a valid but wrong one; returns (untagged, typo, wrong) pods.

    Every workload of a person (or team) who never tags is untagged; the rest of the
    ``round(fraction * pods)`` untagged pods are drawn by weighted sampling without replacement,
    weighted by the kind (notebooks first) and the person's odds of not tagging ((1 - p) / p), so
    the share stays ``fraction`` unless those who never tag alone run more. About 2 % of the pods
    (single-pod workloads) carry a misspelled id; ``wrong_share`` of the tagged pods another
    project of the org mapping: a sibling of the project's team, now and then any other project,
    never one not yet born."""
    templates: dict[str, list[Pod]] = {}
    for p in pods:
        templates.setdefault(p.template, []).append(p)
    target = round(fraction * len(pods))
    untagged = 0
    keyed = []
    for i, (name, members) in enumerate(templates.items()):
        c = habits.propensity(members[0])
        if c == 0.0:
            untagged += len(members)
            for p in members:
                p.tag_state = "untagged"
            continue
        weight = UNTAG_WEIGHT[members[0].kind] * (1.0 - c) / c
        keyed.append((rng.random() ** (1.0 / weight), -i, name))
    keyed.sort(reverse=True)
    tagged_singles: list[str] = []
    for _, _, name in keyed:
        members = templates[name]
        if untagged + len(members) <= target:
            untagged += len(members)
            for p in members:
                p.tag_state = "untagged"
        elif len(members) == 1:
            tagged_singles.append(name)
    tagged_singles.sort()
    n_typo = min(len(tagged_singles), round(0.02 * len(pods)))
    typo_names = rng.sample(tagged_singles, n_typo)
    for name in typo_names:
        templates[name][0].tag_state = "typo"
    rest = sorted(set(tagged_singles) - set(typo_names))
    n_wrong = min(len(rest), round(wrong_share * (len(pods) - untagged)))
    wrong: dict[str, str] = {}
    for name in rng.sample(rest, n_wrong):
        p = templates[name][0]
        valid = sorted(
            q for q in project_team if q != p.project and habits.born.get(q, 0) <= p.start
        )
        siblings = [q for q in valid if project_team[q] == project_team[p.project]]
        wrong[p.uid] = rng.choice(siblings if siblings and rng.random() < 0.7 else valid)
        p.tag_state = "wrong_tag"
    for members in templates.values():
        r = rng.random()
        for p in members:
            labels: dict[str, str] = {}
            if p.tag_state == "untagged":
                # 35 % team + user, 20 % team only, 20 % user only, 25 % nothing at all
                if r < 0.55:
                    labels["label_team_id"] = p.user_team
                if (r < 0.35 or 0.55 <= r < 0.75) and not p.user.startswith("system:"):
                    labels["label_user_id"] = p.user
            else:
                proj = {"typo": typo[p.project], "wrong_tag": wrong.get(p.uid, "")}.get(
                    p.tag_state, p.project
                )
                labels = {"label_project_id": proj, "label_team_id": p.user_team}
                if not p.user.startswith("system:"):
                    labels["label_user_id"] = p.user
            p.labels = labels
    return untagged, n_typo, n_wrong
