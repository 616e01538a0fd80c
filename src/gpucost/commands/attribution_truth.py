"""The attribution benchmark's scoring against the generator's truth (kept outside the landing
zone): the untagged pods' placed money by project (:func:`truth_rows`) and by team
(:func:`team_rows`), the ranking bound, and the build these read (:func:`build_warehouse`). One
month (gpucost.commands.attribution_benchmark) and the grid (gpucost.commands.attribution_grid)
share them."""

from __future__ import annotations

import csv
import subprocess
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # scikit-learn is imported where a command trains, not for every command line
    from gpucost.core.attribution import Prediction

TARGETS = {"coverage": 0.95, "accuracy": 0.97, "ece": 0.03}

UNTAGGED_STATES = ("untagged", "typo")
"""The truth's tag states the warehouse sees as untagged (a misspelled id names no project); a
``wrong_tag`` pod carries a valid project id, so the build takes its label: it is tagged work."""

NO_TEAM = ("__unallocated__", "__unattributed__", "__idle__")
"""Owner ids that place money on no team."""


def _rows(con: Any, query: str) -> list[dict[str, Any]]:
    rel = con.sql(query)
    names = rel.columns
    return [dict(zip(names, row, strict=True)) for row in rel.fetchall()]


Row = tuple[str | None, str, float, float]  # (predicted, true project, confidence, weight)


def coverage_at_accuracy(rows: list[Row], accuracy: float) -> float:
    """The largest share of the weight a single threshold on these confidences could place with
    at least ``accuracy`` of the placed weight right (most confident first, ties together): the
    best any threshold could do with this ranking, known only with the truth."""
    total = sum(w for *_, w in rows)
    groups: dict[float, list[float]] = {}
    for p, t, c, w in rows:
        g = groups.setdefault(c, [0.0, 0.0])
        g[0] += w
        g[1] += w if p == t else 0.0
    placed = right = best = 0.0
    for c in sorted(groups, reverse=True):
        placed, right = placed + groups[c][0], right + groups[c][1]
        if placed and right / placed >= accuracy:
            best = placed
    return best / total if total else 0.0


class Truth(NamedTuple):
    """A pod's truth: its project, the team owning the project at the pod's time, its tag state."""

    project_id: str
    team_id: str
    tag_state: str


def _truth(truth_csv: Path) -> dict[str, Truth]:
    truth: dict[str, Truth] = {}
    with truth_csv.open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            wid = f"{r['cluster']}/{r['namespace']}/{r['pod']}/{r['uid']}"
            truth[wid] = Truth(r["project_id"], r.get("team_id") or "", r["tag_state"])
    return truth


def truth_rows(
    warehouse: Path, truth_csv: Path, predictions: Mapping[str, Prediction] | None = None
) -> tuple[list[Row], list[Row]]:
    """(rules + model, model alone) rows of the untagged pods (per the generator), against their
    true project, weighted by effective cost, in workload order (the float sums over them, such as
    the ranking bound, come out the same on every run). ``predictions`` replace the build's model
    for every workload no rule or override placed (:func:`oracle_rows`); the model-alone rows stay
    the build's."""
    import duckdb

    truth = _truth(truth_csv)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = _rows(
            con,
            """
            select w.workload_id, w.project_id, w.attribution_method, w.attribution_confidence,
                p.candidate_1_project_id, p.attribution_confidence as model_confidence,
                cast(coalesce(c.effective_cost, 0) as double) as weight
            from intermediate.int_workloads as w
            left join intermediate.int_workload_attribution_predictions as p using (workload_id)
            left join (
                select workload_id, sum(effective_cost) as effective_cost
                from marts.fct_cost_allocation where workload_id is not null group by 1
            ) as c using (workload_id)
            order by w.workload_id
            """,
        )
    scored, model_only = [], []
    for r in rows:
        known = truth.get(r["workload_id"])
        if known is None or known.tag_state not in UNTAGGED_STATES:
            continue
        true_project = known.project_id
        if predictions is not None and r["attribution_method"] not in ("rule", "override"):
            p = predictions.get(r["workload_id"])
            pred, conf = (p.project_id, p.confidence) if p and p.candidates else (None, 0.0)
        elif r["attribution_method"] in ("rule", "model", "override"):
            pred, conf = r["project_id"], float(r["attribution_confidence"])
        else:
            pred, conf = r["candidate_1_project_id"], float(r["model_confidence"] or 0.0)
        scored.append((pred, true_project, conf, r["weight"]))
        if r["model_confidence"] is not None:
            conf = float(r["model_confidence"])
            model_only.append((r["candidate_1_project_id"], true_project, conf, r["weight"]))
    return scored, model_only


class TeamRow(NamedTuple):
    """An untagged pod's allocated money on one team (or on none)."""

    team: str | None  # the team the money went to; None: no team (nobody, the suspense owner)
    true_team: str  # the team owning the pod's true project at the pod's time
    cost: Decimal
    by_label: bool  # placed by the pod's team label alone


class TeamFigures(NamedTuple):
    """The team level of one month: the untagged cost, the share of it on a team and the share of
    that on the true team, all placements and the pod's team label's alone."""

    cost: Decimal
    coverage: float | None
    accuracy: float | None
    label_coverage: float | None
    label_accuracy: float | None


def _team_rows(warehouse: Path, truth_csv: Path) -> list[tuple[str, TeamRow]]:
    """The untagged pods' allocated money (exact effective cost), by the team it went to (None: no
    team, i.e. nobody or the suspense owner), against the team owning the pod's true project at
    the pod's time. A team-only placement (project unattributed) is placed on its team; so is the
    money of a pod nobody placed whose own team label keeps it on that team (int_workloads: method
    ``none``, project unallocated), flagged ``by_label``: the marts charge it to that team."""
    import duckdb

    truth = _truth(truth_csv)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = _rows(
            con,
            "select workload_id, team_id, attribution_method, sum(effective_cost) as cost"
            " from marts.fct_cost_allocation where workload_id is not null group by 1, 2, 3"
            " order by 1, 2, 3",
        )
    out: list[tuple[str, TeamRow]] = []
    for r in rows:
        known = truth.get(r["workload_id"])
        if known is None or known.tag_state not in UNTAGGED_STATES:
            continue
        placed = r["attribution_method"] != "suspense" and r["team_id"] not in NO_TEAM
        by_label = placed and r["attribution_method"] == "none"
        row = TeamRow(r["team_id"] if placed else None, known.team_id, r["cost"], by_label)
        out.append((str(r["workload_id"]), row))
    return out


def team_rows(warehouse: Path, truth_csv: Path) -> list[TeamRow]:
    """:func:`_team_rows` without the workload ids."""
    return [row for _, row in _team_rows(warehouse, truth_csv)]


def team_figures(warehouse: Path, truth_csv: Path) -> TeamFigures:
    """:func:`team_scores` of :func:`team_rows`, over all placements and the team label's alone."""
    rows = team_rows(warehouse, truth_csv)
    cost, coverage, accuracy = team_scores(rows)
    _, label_coverage, label_accuracy = team_scores(rows, by_label=True)
    return TeamFigures(cost, coverage, accuracy, label_coverage, label_accuracy)


def team_scores(
    rows: list[TeamRow], *, by_label: bool | None = None
) -> tuple[Decimal, float | None, float | None]:
    """(total cost, share of it placed on a team, share of the placed cost on the true team);
    a share is None when there is nothing to divide. ``by_label`` True (False) counts as placed
    only the money the pod's team label alone (anything else) put on a team; the total stays all
    the untagged cost."""
    total = sum((r.cost for r in rows), Decimal(0))
    counted = [
        r for r in rows if r.team is not None and (by_label is None or r.by_label == by_label)
    ]
    placed = sum((r.cost for r in counted), Decimal(0))
    right = sum((r.cost for r in counted if r.team == r.true_team), Decimal(0))
    return (
        total,
        float(placed / total) if total else None,
        float(right / placed) if placed else None,
    )


class TeamCandidate(NamedTuple):
    """An untagged pod the team level decides (method ``model_team``, or nobody placed it and it has
    no team label of its own): the model's most probable team, its team confidence, the true team
    and the pod's money."""

    team: str
    true_team: str
    confidence: float
    cost: Decimal


class TeamLevel(NamedTuple):
    """A month's untagged pods as the team level sees them (:func:`team_level`): the money it does
    not decide (``fixed``: workload id and :class:`TeamRow`, placed or not) and its candidates."""

    fixed: list[tuple[str, TeamRow]]
    candidates: list[TeamCandidate]

    @property
    def total(self) -> Decimal:
        """All the untagged cost."""
        return sum((r.cost for _, r in self.fixed), Decimal(0)) + sum(
            (c.cost for c in self.candidates), Decimal(0)
        )


def team_bounds(level: TeamLevel, accuracy: float) -> tuple[float, float]:
    """(bound, ceiling) of the team coverage at ``accuracy``, given the placements before the team
    level (``level.fixed``: every untagged pod's money the team level does not decide).

    bound: the most of the untagged cost on a team, with at least ``accuracy`` of it on the true
    team, that any single threshold on the candidates' team confidences could reach (most confident
    first, ties together); ceiling: the same with a perfect ranking (every candidate on its true
    team first): the most the model's team predictions can give, whatever the threshold or the
    calibration. Both need the truth, and both are 0 where no threshold reaches ``accuracy`` (the
    placements before the team level are below it, and the candidates cannot lift them). Shares of
    the total cost (floats: a report, not money)."""
    total = level.total
    if not total:
        return 0.0, 0.0
    fixed = [r for _, r in level.fixed if r.team is not None]
    placed = sum((r.cost for r in fixed), Decimal(0))
    right = sum((r.cost for r in fixed if r.team == r.true_team), Decimal(0))
    share = Decimal(str(accuracy))

    def best(groups: list[list[TeamCandidate]]) -> float:
        p, k = placed, right
        most = p if p and k >= share * p else Decimal(0)
        for group in groups:
            p += sum((c.cost for c in group), Decimal(0))
            k += sum((c.cost for c in group if c.team == c.true_team), Decimal(0))
            if p and k >= share * p:
                most = p
        return float(most / total)

    by_confidence: dict[float, list[TeamCandidate]] = {}
    for c in level.candidates:
        by_confidence.setdefault(c.confidence, []).append(c)
    ranked = [by_confidence[k] for k in sorted(by_confidence, reverse=True)]
    oracle = sorted(level.candidates, key=lambda c: (c.team != c.true_team, -c.confidence))
    return best(ranked), best([[c] for c in oracle])


def team_misses(warehouse: Path, truth_csv: Path, level: TeamLevel) -> tuple[float, float]:
    """(wrong, hand-over) shares of the untagged cost: the money the placements before the team
    level (project placements, the own name, rules, cold start, a pod's team label) put on another
    team than the true one, and the part of it whose true project's team at the pod's time is not
    the one ``dim_projects`` names (a project handed to another team: one org mapping for the whole
    month says its old team)."""
    import duckdb

    truth = _truth(truth_csv)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        teams = {
            r["project_id"]: r["team_id"]
            for r in _rows(con, "select project_id, team_id from marts.dim_projects")
        }
    total = level.total
    missed = [(w, r) for w, r in level.fixed if r.team is not None and r.team != r.true_team]
    wrong = sum((r.cost for _, r in missed), Decimal(0))
    moved = sum(
        (r.cost for w, r in missed if teams.get(truth[w].project_id) != truth[w].team_id),
        Decimal(0),
    )
    return (float(wrong / total), float(moved / total)) if total else (0.0, 0.0)


def team_level(warehouse: Path, truth_csv: Path) -> TeamLevel:
    """The untagged pods' :func:`_team_rows` the team level does not decide, and its candidates
    (method ``model_team``, or nobody placed the pod and it has no team label: its most probable
    team and confidence, its money over all its rows)."""
    import duckdb

    truth = _truth(truth_csv)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        decided = {
            r["workload_id"]: r
            for r in _rows(
                con,
                """
                select w.workload_id, p.predicted_team_id, p.team_confidence
                from intermediate.int_workloads as w
                inner join intermediate.int_workload_attribution_predictions as p
                    using (workload_id)
                where p.predicted_team_id is not null and (
                    w.attribution_method = 'model_team'
                    or (w.attribution_method in ('none', 'suspense') and w.label_team_id is null)
                )
                """,
            )
        }
    costs: dict[str, Decimal] = {}
    fixed: list[tuple[str, TeamRow]] = []
    for workload_id, row in _team_rows(warehouse, truth_csv):
        if workload_id in decided:
            costs[workload_id] = costs.get(workload_id, Decimal(0)) + row.cost
        else:
            fixed.append((workload_id, row))
    candidates = [
        TeamCandidate(
            str(decided[w]["predicted_team_id"]),
            truth[w].team_id,
            float(decided[w]["team_confidence"] or 0.0),
            cost,
        )
        for w, cost in sorted(costs.items())
    ]
    return TeamLevel(fixed, candidates)


def training_var(name: str) -> float | None:
    """A build's training setting: the project's var ``gpucost_attribution_<name>``."""
    from gpucost.commands.safe_output import default_project_dir, project_var

    value = project_var(default_project_dir(), f"gpucost_attribution_{name}")
    return None if value is None else float(value)


def read_quality(warehouse: Path) -> list[dict[str, Any]]:
    """rpt_attribution_quality's rows, the hold-out first."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        return _rows(
            con,
            "select * from marts.rpt_attribution_quality order by case metric_group"
            " when 'holdout' then 0 when 'reliability' then 1 when 'confusion' then 2 else 3 end,"
            " confidence_bin_low, effective_cost desc, metric_key",
        )


def build_warehouse(
    out: Path,
    landing: Path,
    warehouse: Path,
    *,
    threshold: float | None = None,
    target_accuracy: float | None = None,
    target: Path | None = None,
) -> subprocess.CompletedProcess:
    """`dbt build` of ``landing`` into ``warehouse`` (the model trains inside): a fixed
    ``threshold`` (no target accuracy), a ``target_accuracy`` or the project's default.

    dbt's target folder is ``target`` (default ``out/target``): builds that share one (the grid's
    months) reuse dbt's partial parse, as dbt runs in the warehouse's folder and the profile names
    the warehouse by its file name only, so the profile is the same for every month (a full parse is
    about 8-10 s of CPU). The unit tests are left out: they run a model on given rows, whatever the
    month (CI and every ``gpucost build`` run them)."""
    from gpucost.commands.project import dbt_env, dbt_executable, find_project_dir

    project = find_project_dir()
    command = [dbt_executable(), "build", "--project-dir", str(project)]
    if threshold is not None:  # a fixed threshold: no target accuracy
        command += ["--vars"]
        command += [
            f"{{gpucost_attribution_auto_threshold: {threshold},"
            " gpucost_attribution_target_accuracy: null}"
        ]
    elif target_accuracy is not None:
        command += ["--vars", f"{{gpucost_attribution_target_accuracy: {target_accuracy}}}"]
    command += ["--exclude-resource-type", "unit_test"]
    command += ["--profiles-dir", str(project), "--target-path", str(target or out / "target")]
    command += ["--log-path", str(out / "logs")]
    warehouse = warehouse.resolve()
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    env = dbt_env(landing.resolve(), Path(warehouse.name))
    return subprocess.run(
        command, cwd=warehouse.parent, env=env, capture_output=True, text=True, check=False
    )
