"""One training (:func:`attribute`, when a model version is due): trailing window, time-based
hold-out, calibration, continued training, predictions for the undeclared workloads, the
:class:`Scorer` a version stores to score later builds' workloads, and the rows of the dbt
models."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from gpucost.core.attribution.calibration import (
    CAL_MIN,
    calibration_weights,
    threshold_for_accuracy,
)
from gpucost.core.attribution.cold_start import (
    Declared,
    Precision,
    placed_by_name,
    round_claim,
    validate,
)
from gpucost.core.attribution.features import (
    UserInference,
    creator_user,
    earlier_features,
    gpu_hours,
    history_features,
    label_patterns,
    later_features,
    mask_draw,
    start_epoch,
    start_order,
    static_features,
    trailing_labelled,
)
from gpucost.core.attribution.model import (
    AttributionModel,
    Prediction,
    continue_training,
    contradicted_labels,
    cross_fitted_confidences,
    fit,
    predict,
    raw_tops,
)
from gpucost.core.attribution.support import (
    ClassCalibration,
    Evaluated,
    cross_fitted,
    support_classes,
    withheld_groups,
)


@dataclass
class Attribution:
    """One build's model: predictions for the undeclared workloads and the hold-out it was
    calibrated and measured on (prediction, true project), from a single training."""

    predictions: list[Prediction]
    holdout: list[tuple[Prediction, str]]
    model: AttributionModel | None
    auto_threshold: float  # the confidence from which a prediction places the money
    # the team confidence from which the team alone is placed (project below auto_threshold);
    # None: team-level placement is off (no team target, or no project -> team mapping)
    team_threshold: float | None = None
    teams: Mapping[str, str] | None = None  # project -> team the team predictions read
    # the hold-out of whole people and namespaces (prediction, true project), by a model that read
    # none of their labels; and every scored workload's support class
    person_holdout: list[tuple[Prediction, str]] = field(default_factory=list)
    support: dict[str, str] = field(default_factory=dict)
    # labelled workloads whose label-blind prediction contradicts their tag: (prediction, tag)
    suspected: list[tuple[Prediction, str]] = field(default_factory=list)
    # what the cold-start path measured on the labelled workloads (None: no org mapping given)
    cold_start: Precision | None = None
    # what scoring a workload needs (the fitted state a model version stores)
    scorer: Scorer | None = None


def attribute(
    records: Sequence[Mapping[str, Any]],
    known_projects: Sequence[str],
    *,
    training_days: float | None = 60,
    holdout_fraction: float = 0.2,
    seed: int = 0,
    explain_below: float = 1.0,
    target_accuracy: float | None = None,
    teams: Mapping[str, str] | None = None,
    team_target_accuracy: float | None = None,
    mislabel_confidence: float | None = None,
    declared: Sequence[Mapping[str, Any]] | None = None,
) -> Attribution:
    """Train once, calibrate, measure and predict.

    The labelled workloads (``record["known_project_id"]``) started within ``training_days`` of
    the latest workload are split by start time: the latest ``holdout_fraction`` (every workload
    starting at or after the cut, so each started after all training workloads) is hidden from
    the regression; it calibrates the confidence (weighted to the mix of workloads to score, see
    :func:`calibration_weights`) and, with confidences cross-fitted over folds so no workload
    calibrates its own, is the measured hold-out. Every workload without a known project that no
    rule placed (``declared_attribution_method`` absent or ``none``) gets top-3 candidates.

    ``explain_below`` is the auto threshold. With ``target_accuracy`` the threshold is derived
    instead (:func:`threshold_for_accuracy` over the predictions, weighted by GPU-hours) and
    returned as ``auto_threshold``. Every prediction says which features drove it: those below the
    threshold for the review queue, those that place money for the statement that charges it.

    With ``teams`` (project -> team) every prediction also names its most probable team (its
    projects' probabilities summed) with a confidence calibrated on its own; with
    ``team_target_accuracy`` the team threshold is derived the same way (``team_threshold``) over
    the workloads whose project is below its threshold (the team-only placements reach the target by
    themselves): such a workload whose team is sure goes to the team.

    With ``mislabel_confidence``, a labelled workload whose label-blind prediction (out of fold
    for the training workloads, the checkpoint's for the hold-out) names another project at least
    that sure is a suspected mislabel (``suspected``): listed for review, its tag still wins.

    With ``declared`` (the org mapping's rows: project and team ids and names), a workload whose
    own names single out one declared project (or team) that the model cannot name (no labelled
    workload) goes to it, when that path's precision measured on the labelled workloads reaches the
    level's target (:mod:`.cold_start`; ``cold_start``: what it measured).

    History features read neighbours on both sides (:func:`history_features`). No feature the
    measured checkpoint is fitted on reads a hold-out label (a training workload's later side reads
    the training labels only), so a hold-out workload's own label cannot move its raw prediction;
    the hold-out reads what the targets read: every other workload's label, on both sides.
    """
    prepared = prepare(records, known_projects, training_days=training_days, seed=seed)
    records, labels, rules, targets = (
        prepared.records,
        prepared.labels,
        prepared.rules,
        prepared.targets,
    )
    labelled, views, order, earlier = (
        prepared.labelled,
        prepared.views,
        prepared.order,
        prepared.earlier,
    )
    n_test = math.ceil(len(labelled) * holdout_fraction)
    if 0 < n_test < len(labelled):
        cutoff = start_epoch(labelled[-n_test])
        train = [r for r in labelled if start_epoch(r) < cutoff]
        test = [r for r in labelled if start_epoch(r) >= cutoff]
    else:
        train, test = labelled, []
    target_ids = [str(r["workload_id"]) for r in targets]
    train_ids = [str(r["workload_id"]) for r in train]
    test_ids = [str(r["workload_id"]) for r in test]
    # what the checkpoint is fitted on reads no hold-out label: the training workloads' later side
    # reads the training labels only (their earlier side cannot reach the hold-out)
    fitted_later = later_features(
        order, {**rules, **{w: labels[w] for w in train_ids}}, views.readers
    )
    shown = prepared.shown()
    measured = {
        **shown,
        **{w: {**views.static[w], **earlier[w], **fitted_later[w]} for w in train_ids},
    }
    # the own name places a workload before the model (cold_start.placed_by_name): the model is
    # calibrated on the labelled work it would be left to place, since the named work is the easy
    # part and would make it look surer than it is on the rest
    names = Declared.of(declared) if declared else None
    cold = validate(names, labelled, labels) if names is not None else None
    named = {
        str(r["workload_id"])
        for r in [*labelled, *targets]
        if names is not None and placed_by_name(names.named(r), cold, target_accuracy) is not None
    }
    residual = [r for r in targets if str(r["workload_id"]) not in named]
    shifted = calibration_weights(train + test, residual or test)
    weights = [
        0.0 if str(r["workload_id"]) in named else w
        for r, w in zip(train + test, shifted, strict=True)
    ]
    model = fit(
        [measured[w] for w in train_ids],
        [labels[w] for w in train_ids],
        weights=weights[: len(train)],
        calibration=(
            [measured[w] for w in test_ids],
            [labels[w] for w in test_ids],
            weights[len(train) :],
        ),
        seed=seed,
        teams=teams,
    )
    if model is None:
        empty = Scorer(None, None, None, explain_below, None, teams, None, (None, None))
        preds = [Prediction(w, ()) for w in target_ids]
        return Attribution(preds, [], None, explain_below, scorer=empty)
    filed = prepared.filed
    support = prepared.support()
    # whole people and namespaces withheld (validation shaped like untagged work): each support
    # class without user history gets its own calibration map, from both hold-outs
    withheld = _withheld_holdout(
        train, labels, rules, views, order, filed, records, seed=seed, teams=teams, named=named
    )
    support.update(withheld.support)
    time_n = model.holdout_workloads
    time_classes = tuple(support[w] for w in test_ids)
    maps: dict[bool, ClassCalibration | None] = {}
    reported: dict[bool, np.ndarray | None] = {}
    for team in (False, True):
        cal_set = model.team_calibration_set if team else model.calibration_set
        if cal_set is None or not time_n:
            maps[team] = reported[team] = None
            continue
        top, right, weight = (a[len(a) - time_n :] for a in cal_set)
        evaluated = Evaluated(
            np.concatenate([top, withheld.evaluated[team].top]),
            np.concatenate([right, withheld.evaluated[team].correct]),
            np.concatenate([weight, withheld.evaluated[team].weight]),
            time_classes + withheld.evaluated[team].classes,
        )
        maps[team] = ClassCalibration(evaluated)
        default = model.team_calibrator if team else model.calibrator
        reported[team] = cross_fitted(evaluated, default)
    # measured on the checkpoint (the regression has not seen the hold-out), then trained on;
    # a held-out workload without user history reports its class map's cross-fitted confidence
    held = predict(
        model,
        [measured[w] for w in test_ids],
        test_ids,
        explain_below=0.0,
        confidences=_by_class(
            cross_fitted_confidences(model), reported[False], time_classes, time_n
        ),
        team_confidences=_by_class(
            cross_fitted_confidences(model, team=True), reported[True], time_classes, time_n
        ),
    )
    holdout = [(p, labels[p.workload_id]) for p in held]
    person_holdout = withheld.predictions(reported, time_n)
    suspected: list[tuple[Prediction, str]] = []
    if mislabel_confidence is not None:
        suspected = contradicted_labels(
            model, train_ids, [labels[w] for w in train_ids], mislabel_confidence
        ) + [
            (p, tag)
            for p, tag in holdout
            if p.project_id not in (None, tag) and p.confidence >= mislabel_confidence
        ]
    labelled_order = train_ids + test_ids
    continue_training(
        model, [shown[w] for w in labelled_order], [labels[w] for w in labelled_order]
    )
    scorer = Scorer(
        model,
        maps[False],
        maps[True],
        explain_below,
        None,
        teams,
        None,
        (target_accuracy, team_target_accuracy),
    )
    preds = scorer.model_predictions(
        [shown[w] for w in target_ids], target_ids, [support[w] for w in target_ids]
    )
    # the thresholds are derived over the workloads the model is left to place: those the own
    # name places (before the model) are the easy ones, and counting them would let the model
    # place harder work below the target
    left = [
        (p, gpu_hours(r))
        for p, r in zip(preds, targets, strict=True)
        if str(r["workload_id"]) not in named
    ]
    threshold = (
        explain_below
        if target_accuracy is None
        else threshold_for_accuracy(
            [p.confidence for p, _ in left], [w for _, w in left], target_accuracy
        )
    )
    team_threshold = None
    if teams and team_target_accuracy is not None:
        # over the workloads the project threshold leaves: the team-only placements must reach
        # the target by themselves (the sure projects would otherwise carry unsure teams)
        below = [(p.team_confidence, w) for p, w in left if p.confidence < threshold]
        team_threshold = threshold_for_accuracy(
            [c for c, _ in below], [w for _, w in below], team_target_accuracy
        )
    scorer = replace(scorer, auto_threshold=threshold, team_threshold=team_threshold, cold=cold)
    preds = scorer.declared_predictions(preds, targets, declared)
    return Attribution(
        preds,
        holdout,
        model,
        threshold,
        team_threshold,
        teams,
        person_holdout,
        support,
        suspected,
        cold,
        scorer,
    )


@dataclass
class Prepared:
    """The workloads as one build sees them, before any training: sorted records, the labels
    (valid labels and overrides) and rule placements, the workloads to score (no label, no
    declared owner), the labelled workloads of the training window (start order), the views and
    both sides of the history features reading every known project."""

    records: list[Mapping[str, Any]]
    labels: dict[str, str]
    rules: dict[str, str]
    targets: list[Mapping[str, Any]]
    labelled: list[Mapping[str, Any]]
    views: _Views
    order: list[Mapping[str, Any]]
    earlier: dict[str, dict[str, float]]
    later: dict[str, dict[str, float]]

    @property
    def filed(self) -> dict[str, str | None]:
        return {str(r["workload_id"]): r.get("user_id") for r in self.views.writers}

    def shown(self) -> dict[str, dict[str, float]]:
        """Static and history features of the labelled workloads and the targets."""
        return {w: {**f, **self.earlier[w], **self.later[w]} for w, f in self.views.static.items()}

    def support(self) -> dict[str, str]:
        return support_classes(self.records, self.views.readers, self.filed, self.labels)


def prepare(
    records: Sequence[Mapping[str, Any]],
    known_projects: Sequence[str],
    *,
    training_days: float | None,
    seed: int,
) -> Prepared:
    """What :func:`attribute` and a build that only scores (:class:`Scorer`) both read."""
    records = sorted(records, key=lambda r: str(r["workload_id"]))
    labels = {
        str(r["workload_id"]): str(r["known_project_id"])
        for r in records
        if r.get("known_project_id")
    }
    # neighbours placed by a declarative rule are known too: history features may read them
    # (never as training labels: a rule is a guess written by a person, not a tag)
    rules = {
        str(r["workload_id"]): str(r["rule_project_id"])
        for r in records
        if r.get("rule_project_id")
    }
    targets = [
        r
        for r in records
        if str(r["workload_id"]) not in labels
        and r.get("declared_attribution_method") in (None, "none")
    ]
    labelled = trailing_labelled(records, labels, training_days)
    labelled_ids = {str(r["workload_id"]) for r in labelled}
    views = _views(records, known_projects, targets, labelled_ids, seed)
    order = start_order(views.writers)
    known = {**rules, **labels}
    earlier = earlier_features(order, known, views.readers)
    later = later_features(order, known, views.readers)
    return Prepared(records, labels, rules, targets, labelled, views, order, earlier, later)


@dataclass(frozen=True)
class Scorer:
    """Everything scoring a workload needs from one training (what a model version stores,
    gpucost.core.attribution.versions): the model after continued training, the class calibration
    maps (project, team), the thresholds it derived, the project -> team map, what the cold-start
    path measured and the target accuracies it is held to."""

    model: AttributionModel | None
    maps: ClassCalibration | None
    team_maps: ClassCalibration | None
    auto_threshold: float
    team_threshold: float | None
    teams: Mapping[str, str] | None
    cold: Precision | None
    targets: tuple[float | None, float | None]

    def model_predictions(
        self,
        features: Sequence[Mapping[str, float]],
        workload_ids: Sequence[str],
        classes: Sequence[str],
    ) -> list[Prediction]:
        """The model's top-3 of each workload, each through its support class's map."""
        if self.model is None:
            return [Prediction(w, ()) for w in workload_ids]
        return predict(
            self.model,
            features,
            workload_ids,
            calibrators=self.maps.for_classes(classes) if self.maps else None,
            team_calibrators=self.team_maps.for_classes(classes) if self.team_maps else None,
        )

    def declared_predictions(
        self,
        preds: Sequence[Prediction],
        records: Sequence[Mapping[str, Any]],
        declared: Sequence[Mapping[str, Any]] | None,
    ) -> list[Prediction]:
        """``preds`` with what the declared names place instead (:func:`_cold_start`), when the
        org mapping is given and the model was trained."""
        if not declared or self.cold is None or self.model is None:
            return list(preds)
        names = Declared.of(declared)
        by_id = {str(r["workload_id"]): r for r in records}
        seen = set(self.model.classes)
        return [
            _cold_start(
                p,
                names.match(by_id[p.workload_id]),
                self.cold,
                named=names.named(by_id[p.workload_id]),
                targets=self.targets,
                team_of=names.team_of,
                known=(seen, {(self.teams or names.team_of).get(c) for c in seen}),
            )
            for p in preds
        ]

    def score(
        self,
        features: Sequence[Mapping[str, float]],
        records: Sequence[Mapping[str, Any]],
        classes: Sequence[str],
        declared: Sequence[Mapping[str, Any]] | None,
    ) -> list[Prediction]:
        """Predictions of ``records`` (with their ``features`` and support ``classes``): what
        :func:`attribute` gives the workloads it scores, from this version's fitted state."""
        ids = [str(r["workload_id"]) for r in records]
        return self.declared_predictions(
            self.model_predictions(features, ids, classes), records, declared
        )


def _cold_start(
    p: Prediction,
    match: tuple[str | None, str | None, str],
    cold: Precision,
    *,
    targets: tuple[float | None, float | None],
    team_of: Mapping[str, str],
    known: tuple[set[str], set[str | None]],
    named: tuple[str | None, str] = (None, ""),
) -> Prediction:
    """The prediction, or what the declared names place instead: first the project the workload's
    own name singles out (``named``: its pod's and owner's name; known to the model or not, since
    its owner's word comes before the model's guess; level ``name``), else for a project or team
    the model cannot name (without any labelled workload: ``known`` are the model's projects and
    their teams, so it never names the others): the project its names single out, else the team.
    A project placed carries its level's measured precision as the confidence (the model's other
    candidates after it), a team its precision as the team's confidence.

    A project or team the model knows stays the model's, sure or not: the names are among its
    features already (:func:`static_features`), so a name that mentions a known owner adds nothing
    the model has not weighed, and placing such work over the model's doubt delivered 52-95 % on
    the attribution grid's months (an evaluation named after what it evaluates, work drifted into
    another project's namespace; docs/attribution.md) against the 96-99 % the path measured on
    the labelled workloads, where the model is mostly sure anyway."""
    known_projects, known_teams = known
    project, team, terms = match
    by_name, name_terms = named
    if placed_by_name(named, cold, targets[0]) is not None:
        claim = round_claim(cold.named)
        rest = tuple(c for c in p.candidates if c[0] != by_name)[:2]
        own_team = team_of.get(by_name)
        best_team = (own_team, claim) if own_team else p.team
        signals = f"named: {name_terms}"
        return Prediction(p.workload_id, ((by_name, claim), *rest), signals, best_team, "name")
    signals = f"declared: {terms}"
    if project is not None and project not in known_projects and cold.places("project", targets[0]):
        claim = round_claim(cold.project)
        rest = tuple(c for c in p.candidates if c[0] != project)[:2]
        own_team = team_of.get(project)
        best_team = (own_team, round_claim(cold.team or cold.project)) if own_team else p.team
        return Prediction(p.workload_id, ((project, claim), *rest), signals, best_team, "project")
    if team is None or team in known_teams or not cold.places("team", targets[1]):
        return p
    return Prediction(p.workload_id, p.candidates, signals, (team, round_claim(cold.team)), "team")


def _by_class(
    default: np.ndarray | None, by_class: np.ndarray | None, classes: Sequence[str], n: int
) -> np.ndarray | None:
    """The time hold-out's reported confidences: ``default`` (cross-fitted on the model's map)
    for user_history workloads, the class maps' cross-fitted ones (the first ``n`` of
    ``by_class``) for the others."""
    if default is None or by_class is None:
        return default
    return np.where(np.array([c == "user_history" for c in classes]), default, by_class[:n])


_WITHHELD_TRAINING = 20_000  # most workloads the model of the people-withheld hold-out trains on


@dataclass
class _Withheld:
    """The hold-out of whole people and namespaces: its workloads (ids, labels, support classes),
    a model trained without any of their labels, its predictions, and the evaluated rows per level
    (False: project, True: team)."""

    ids: list[str]
    labels: list[str]
    support: dict[str, str]
    evaluated: dict[bool, Evaluated]
    model: AttributionModel | None = None
    features: list[dict[str, float]] | None = None

    def predictions(
        self, reported: Mapping[bool, np.ndarray | None], offset: int
    ) -> list[tuple[Prediction, str]]:
        """(prediction, true project) of the withheld workloads, with the class maps'
        cross-fitted confidences (``reported``: time hold-out first, ``offset`` of them)."""
        if self.model is None or not self.ids or reported[False] is None:
            return []
        team = reported[True]
        preds = predict(
            self.model,
            self.features or [],
            self.ids,
            explain_below=0.0,
            confidences=reported[False][offset:],
            team_confidences=None if team is None else team[offset:],
        )
        return list(zip(preds, self.labels, strict=True))


def _withheld_holdout(
    train: Sequence[Mapping[str, Any]],
    labels: Mapping[str, str],
    rules: Mapping[str, str],
    views: _Views,
    order: Sequence[Mapping[str, Any]],
    filed: Mapping[str, str | None],
    records: Sequence[Mapping[str, Any]],
    *,
    seed: int,
    teams: Mapping[str, str] | None,
    named: set[str] | frozenset[str] = frozenset(),
) -> _Withheld:
    """Withhold every label of a seeded draw of people and namespaces among the training
    workloads (:func:`withheld_groups`), train the same model on the rest (reading none of their
    labels, as neighbours either), and score them: raw top probabilities and whether they are
    right, per level, with their support classes as the model saw them."""
    withheld = withheld_groups(train, filed, seed=seed)
    # the latest _WITHHELD_TRAINING at most (``train`` is in start order): this second model only
    # measures, and its cost is the build's (100k workloads of the hard month, 2026-11-26, loaded
    # machine: the whole training 43.3 s of CPU without it, 55.0 s with it uncapped, 54.3 s capped)
    kept = [str(r["workload_id"]) for r in train if str(r["workload_id"]) not in withheld]
    kept = kept[-_WITHHELD_TRAINING:]
    ids = [str(r["workload_id"]) for r in train if str(r["workload_id"]) in withheld]
    truth = [labels[w] for w in ids]
    empty = Evaluated(np.zeros(0), np.zeros(0, dtype=bool), np.zeros(0), ())
    out = _Withheld(ids, truth, {}, {False: empty, True: empty})
    if len(ids) < CAL_MIN or not kept:
        return out
    known = {**rules, **{w: labels[w] for w in kept}}
    earlier = earlier_features(order, known, views.readers)
    later = later_features(order, known, views.readers)
    shown = {w: {**views.static[w], **earlier[w], **later[w]} for w in kept + ids}
    by_id = {str(r["workload_id"]): r for r in train}
    model = fit(
        [shown[w] for w in kept],
        [labels[w] for w in kept],
        weights=[gpu_hours(by_id[w]) for w in kept],
        seed=seed,
        teams=teams,
    )
    if model is None:
        return out
    features = [shown[w] for w in ids]
    top, right, team_top, team_right = raw_tops(model, features, truth, teams)
    classes = support_classes(records, views.readers, filed, {w: labels[w] for w in kept})
    support = {w: classes[w] for w in ids}
    # what the own name places is left out of the calibration, as in attribute()
    weight = np.array([0.0 if w in named else gpu_hours(by_id[w]) for w in ids])
    names = tuple(support[w] for w in ids)
    return _Withheld(
        ids,
        truth,
        support,
        {
            False: Evaluated(top, right, weight, names),
            True: Evaluated(team_top, team_right, weight, names),
        },
        model,
        features,
    )


@dataclass(frozen=True)
class _Views:
    """The workloads as the model sees them, before their neighbours' projects are read: static
    features of the labelled workloads (masked) and the targets, each record under the user its
    labels are filed (``writers``) and the user whose history it reads (``readers``)."""

    static: dict[str, dict[str, float]]
    writers: list[Mapping[str, Any]]
    readers: dict[str, str | None]

    def shown(self, neighbours: Mapping[str, str]) -> dict[str, dict[str, float]]:
        """Static and history features, the history reading ``neighbours``' projects."""
        history = history_features(self.writers, neighbours, self.readers)
        return {wid: {**f, **history[wid]} for wid, f in self.static.items()}


def _views(
    records: Sequence[Mapping[str, Any]],
    known_projects: Sequence[str],
    targets: Sequence[Mapping[str, Any]],
    labelled_ids: set[str],
    seed: int,
) -> _Views:
    """A labelled workload is shown masked like the targets (:func:`mask_draw`); a workload without
    a user label (or masked) reads history under its creator (:func:`creator_user`, not masked: it
    does not depend on the project label), else the user its owner or volume claims name
    (:class:`UserInference`, never from its own label). A label is filed under its workload's own
    user (or the creator or inferred one when it has none), whatever that workload is shown with."""
    patterns = label_patterns(targets)
    infer = UserInference(records)
    wanted = labelled_ids | {str(r["workload_id"]) for r in targets}
    writers: list[Mapping[str, Any]] = []
    readers: dict[str, str | None] = {}
    static: dict[str, dict[str, float]] = {}
    for r in records:
        wid = str(r["workload_id"])
        raw = r.get("user_id") or None
        creator = creator_user(r)
        inferred = None if raw or creator else infer.user_for(r)
        own = raw or creator or inferred
        writers.append({**r, "user_id": own} if own != raw else r)
        if wid in labelled_ids:
            has_user, has_team = mask_draw(r, patterns, seed)
            # shown with its user, else its creator, else read from its owner / claims without its
            # own label (done above already when it has none)
            if raw and has_user:
                user = raw
            elif creator:
                user = creator
            elif raw:
                user = infer.user_for(r, own=raw)
            else:
                user = inferred
            view = {**r, "user_id": user, "team_label": r.get("team_label") if has_team else None}
        else:
            user, view = own, writers[-1]
        readers[wid] = user
        if wid in wanted:
            static[wid] = static_features(view, known_projects)
    return _Views(static, writers, readers)


def _shown_features(
    records: Sequence[Mapping[str, Any]],
    neighbours: Mapping[str, str],
    known_projects: Sequence[str],
    targets: Sequence[Mapping[str, Any]],
    labelled_ids: set[str],
    seed: int,
) -> dict[str, dict[str, float]]:
    """Features of the labelled workloads and the targets, as the model sees them (:func:`_views`),
    their history reading ``neighbours``."""
    return _views(records, known_projects, targets, labelled_ids, seed).shown(neighbours)


def predict_untagged(
    records: Sequence[Mapping[str, Any]],
    known_projects: Sequence[str],
    *,
    training_days: float | None = 60,
    holdout_fraction: float = 0.2,
    seed: int = 0,
    explain_below: float = 1.0,
) -> tuple[list[Prediction], AttributionModel | None]:
    """:func:`attribute`'s predictions and model."""
    result = attribute(
        records,
        known_projects,
        training_days=training_days,
        holdout_fraction=holdout_fraction,
        seed=seed,
        explain_below=explain_below,
    )
    return result.predictions, result.model


def holdout_predictions(
    records: Sequence[Mapping[str, Any]],
    known_projects: Sequence[str],
    *,
    test_fraction: float = 0.2,
    seed: int = 0,
) -> tuple[list[tuple[Prediction, str]], AttributionModel | None]:
    """:func:`attribute`'s time-based hold-out: (prediction, true project) for the latest
    ``test_fraction`` of labelled workloads, hidden from the regression (no feature it was fitted
    on reads their labels); they read their neighbours' labels on both sides, as an untagged
    workload does, never their own."""
    result = attribute(
        records, known_projects, training_days=None, holdout_fraction=test_fraction, seed=seed
    )
    return result.holdout, result.model


def prediction_rows(
    predictions: Iterable[Prediction],
    model: AttributionModel | None,
    truth: Mapping[str, str] | None = None,
    *,
    scored_set: str = "undeclared",
    auto_threshold: float | None = None,
    team_threshold: float | None = None,
    teams: Mapping[str, str] | None = None,
    support: Mapping[str, str] | None = None,
    cold_start: Precision | None = None,
) -> list[dict[str, Any]]:
    """Flat rows (gpucost.engines.arrow_io.ATTRIBUTION_SCHEMA) for the dbt models;
    ``auto_threshold`` is
    the build's threshold, on every row."""
    rows = []
    for p in predictions:
        row: dict[str, Any] = {
            "scored_set": scored_set,
            "workload_id": p.workload_id,
            "predicted_project_id": p.project_id,
            "attribution_confidence": p.confidence if p.candidates else None,
            "attribution_signals": p.signals or None,
            "true_project_id": (truth or {}).get(p.workload_id),
            "model_training_workloads": model.training_workloads if model else 0,
            "model_calibration_workloads": model.calibration_workloads if model else 0,
            "model_calibration": model.calibration if model else None,
            "auto_threshold": auto_threshold,
            "predicted_team_id": p.team_id,
            "team_confidence": p.team_confidence if p.team else None,
            "true_team_id": (teams or {}).get(truth[p.workload_id])
            if truth and p.workload_id in truth
            else None,
            "team_auto_threshold": team_threshold,
            "support_class": (support or {}).get(p.workload_id),
            "declared_match": p.declared,
            "declared_project_precision": cold_start.project if cold_start else None,
            "declared_project_matched": cold_start.project_matched if cold_start else None,
            "declared_team_precision": cold_start.team if cold_start else None,
            "declared_team_matched": cold_start.team_matched if cold_start else None,
            "declared_name_precision": cold_start.named if cold_start else None,
            "declared_name_matched": cold_start.named_matched if cold_start else None,
        }
        for k in range(3):
            cand = p.candidates[k] if k < len(p.candidates) else (None, None)
            row[f"candidate_{k + 1}_project_id"] = cand[0]
            row[f"candidate_{k + 1}_probability"] = cand[1]
        rows.append(row)
    return rows


def attribution_rows(result: Attribution) -> list[dict[str, Any]]:
    """One build's rows: the undeclared workloads' predictions, then the time hold-out's and the
    hold-out of whole people's (with truth), then the suspected mislabels (their tag as truth)."""
    shared = {
        "auto_threshold": result.auto_threshold,
        "team_threshold": result.team_threshold,
        "teams": result.teams,
        "support": result.support,
        "cold_start": result.cold_start,
    }
    rows = prediction_rows(result.predictions, result.model, **shared)
    sets = (
        ("holdout", result.holdout),
        ("person_holdout", result.person_holdout),
        ("suspected_mislabel", result.suspected),
    )
    for name, held in sets:
        truth = {p.workload_id: t for p, t in held}
        rows += prediction_rows(
            [p for p, _ in held], result.model, truth, scored_set=name, **shared
        )
    return rows
