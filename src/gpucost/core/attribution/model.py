"""The model: a logistic regression over the feature dicts, a second stage shared by every project
(:class:`SharedLessons`), calibrated top-3 predictions with the signals that drove them."""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction import DictVectorizer
from sklearn.linear_model import LogisticRegression

from gpucost.core.attribution.calibration import CAL_MIN, TopLabelCalibrator
from gpucost.core.attribution.features import NONE

_C = 2.0  # inverse L2 strength of the logistic regression


_MAX_ITER = 200


# features whose value names a project (a neighbour's, a reader's, a name's, a typo's closest id):
# a vote for that project, weighed once for every project by the second stage (SharedLessons)
NAMING = (
    "user_prev",
    "user_next",
    "ns_prev",
    "ns_next",
    "family_prev",
    "family_next",
    "reads_prev",
    "read_by",
    "pipeline_prev",
    "mentions",
    "label_close_to",
)


SHARES = ("user_mix", "ns_mix")  # a project's share of the user's / namespace's known history


_FOLDS = 3  # out-of-fold first-stage probabilities the second stage and the calibration learn from


_LESSON_PRIOR = 0.1  # Gaussian prior on the second stage's weights (first stage's weight 1, rest 0)


_KIND_MIN = 30  # fewest training workloads of an owner kind to learn its own lessons


_LESSON_TOL = 1e-6  # the solver stops when the mean log-loss per workload moves less than this


@dataclass(frozen=True, slots=True)
class Prediction:
    """Top candidates of one workload, most probable first (probabilities are calibrated)."""

    workload_id: str
    candidates: tuple[tuple[str, float], ...]
    signals: str = ""
    # the most probable team (the sum of its projects' probabilities) and its own calibrated
    # confidence: a team can be sure when none of its projects is (team before project)
    team: tuple[str, float] | None = None
    # placed from the organisation's declared projects and teams (cold start: 'project' or 'team'),
    # not by the model's threshold
    declared: str | None = None

    @property
    def project_id(self) -> str | None:
        return self.candidates[0][0] if self.candidates else None

    @property
    def confidence(self) -> float:
        return self.candidates[0][1] if self.candidates else 0.0

    @property
    def team_id(self) -> str | None:
        return self.team[0] if self.team else None

    @property
    def team_confidence(self) -> float:
        return self.team[1] if self.team else 0.0


@dataclass
class AttributionModel:
    """A fitted regression, its confidence calibration and what they were fitted on."""

    vectorizer: DictVectorizer
    classifier: LogisticRegression
    calibrator: TopLabelCalibrator | None
    classes: tuple[str, ...]
    training_workloads: int
    calibration: str
    coefficients: np.ndarray = field(repr=False)
    # (raw first-candidate probability, was it right, weight) of each calibration workload
    calibration_set: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(
        default=None, repr=False
    )
    # the checkpoint's training matrix, until training continues on the hold-out
    training_data: tuple[Any, np.ndarray] | None = field(default=None, repr=False)
    # the second stage: what a feature naming a project is worth, shared by every project
    lessons: SharedLessons | None = None
    # the last ``holdout_workloads`` of the calibration set are the time-based hold-out
    holdout_workloads: int = 0
    # each class's team (None: no team known) and the team confidence's own calibration, fitted on
    # the same workloads as the project's (team_calibration_set: same order)
    # each training workload's probabilities from the folds that did not see it (index into the
    # labels given to fit, probabilities): a tag its own signals contradict (suspected mislabels)
    out_of_fold: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    team_of: tuple[str | None, ...] | None = None
    team_calibrator: TopLabelCalibrator | None = None
    team_calibration_set: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(
        default=None, repr=False
    )
    # a stored version's count of calibration workloads (its calibration set is not stored)
    calibration_count: int | None = None

    @property
    def calibration_workloads(self) -> int:
        if self.calibration_count is not None:
            return self.calibration_count
        return 0 if self.calibration_set is None else len(self.calibration_set[0])


def _owner_kind(features: Mapping[str, float]) -> str:
    return next((k[11:] for k in features if k.startswith("owner_kind=")), NONE)


@dataclass
class SharedLessons:
    """The second stage: what a feature naming a project is worth, learnt once for every project.

    The regression (first stage) learns ``reads_prev=<project>`` per project, so how much an
    evaluation's producer says about its project is learnt ten times over, from each project's few
    evaluations, and a project's first serving pod cannot borrow what every other project's serving
    pods taught (that a deployment's name says its project). Here each candidate project c of a
    workload scores ``a * log p1(c) + sum of w[f] * value`` over the workload's features f that name
    c (:data:`NAMING`: a neighbour's, a reader's or a name's project; :data:`SHARES`: the project's
    share of the user's or namespace's history), softmax over the projects: a conditional logit, one
    weight per kind of feature, shared by every project, plus a deviation per owner kind (an
    evaluation's name says the harness it runs, a serving pod's its project). Fitted by maximum
    likelihood on first-stage probabilities of workloads that stage did not see (out of fold), with
    a Gaussian prior of ``_LESSON_PRIOR`` toward the first stage alone (a = 1, every w = 0).

    It reads the first stage's feature matrix: ``lesson_of`` / ``class_of`` say, per vocabulary
    column, which kind of naming feature it is and which project it names (-1: neither), and
    ``kind_of`` which owner kind a column ``owner_kind=<kind>`` is (-1: no lessons of its own).
    """

    kinds: tuple[str, ...]
    lesson_of: np.ndarray = field(repr=False)
    class_of: np.ndarray = field(repr=False)
    kind_of: np.ndarray = field(repr=False)
    weights: np.ndarray  # [a, a per kind..., w shared..., w per kind...]

    @classmethod
    def columns(
        cls, names: Sequence[str], classes: Sequence[str], kinds: Sequence[str]
    ) -> SharedLessons:
        """Lessons at their start (the first stage alone) over a vectorizer's ``names``."""
        lesson = {p: i for i, p in enumerate(NAMING + SHARES)}
        index = {c: j for j, c in enumerate(classes)}
        kind_index = {k: i for i, k in enumerate(kinds)}
        lesson_of = np.full(len(names), -1)
        class_of = np.full(len(names), -1)
        kind_of = np.full(len(names), -1)
        for j, name in enumerate(names):
            prefix, _, value = name.partition("=")
            if prefix in lesson and value in index:
                lesson_of[j], class_of[j] = lesson[prefix], index[value]
            elif prefix == "owner_kind" and value in kind_index:
                kind_of[j] = kind_index[value]
        start = np.zeros(1 + len(kinds) + len(lesson) * (1 + len(kinds)))
        start[0] = 1.0
        return cls(tuple(kinds), lesson_of, class_of, kind_of, start)

    def _split(self) -> tuple[float, np.ndarray, np.ndarray]:
        k = len(self.kinds)
        return float(self.weights[0]), self.weights[1 : 1 + k], self.weights[1 + k :]

    def design(self, x: Any, k: int) -> tuple[sparse.csr_matrix, np.ndarray]:
        """(workloads x ``k`` projects rows, lesson columns) of the naming features in ``x`` (the
        first stage's matrix), and each workload's owner-kind index (-1: no lessons of its own)."""
        x = sparse.csr_matrix(x)
        n, width = x.shape[0], len(NAMING) + len(SHARES)
        kinds = np.full(n, -1)
        kind_cols = np.flatnonzero(self.kind_of >= 0)
        if len(kind_cols):
            found = x[:, kind_cols].tocoo()
            kinds[found.row] = self.kind_of[kind_cols[found.col]]
        naming = np.flatnonzero(self.lesson_of >= 0)
        coo = x[:, naming].tocoo()
        col = naming[coo.col]
        rows = coo.row * k + self.class_of[col]
        cols = self.lesson_of[col]
        own = kinds[coo.row] >= 0
        rows = np.concatenate([rows, rows[own]])
        cols = np.concatenate([cols, width * (1 + kinds[coo.row][own]) + cols[own]])
        vals = np.concatenate([coo.data, coo.data[own]])
        shape = (n * k, width * (1 + len(self.kinds)))
        return sparse.csr_matrix((vals, (rows, cols)), shape=shape), kinds

    def scale(self, kinds: np.ndarray) -> np.ndarray:
        """The weight of the first stage's log-probability, per workload (by owner kind)."""
        a, a_kind, _ = self._split()
        return a + np.where(kinds >= 0, np.append(a_kind, 0.0)[kinds], 0.0)

    def scores(self, log_p: np.ndarray, m: sparse.csr_matrix, kinds: np.ndarray) -> np.ndarray:
        _, _, w = self._split()
        return self.scale(kinds)[:, None] * log_p + (m @ w).reshape(log_p.shape)

    def proba(self, first: np.ndarray, x: Any) -> np.ndarray:
        """Second-stage probabilities from the first stage's (``first``: workloads x projects)."""
        m, kinds = self.design(x, first.shape[1])
        return _softmax(self.scores(_log(first), m, kinds))

    def contributions(
        self, indices: np.ndarray, data: np.ndarray, best: int, first: np.ndarray
    ) -> np.ndarray:
        """What each of a workload's features (its matrix row: ``indices``, ``data``) adds to
        project ``best``'s second-stage score: its regression contribution ``first`` times the
        weight of the first stage, plus its lesson (0 unless it names that project)."""
        kinds = self.kind_of[indices]
        kind = int(kinds[kinds >= 0][0]) if (kinds >= 0).any() else -1
        _, _, w = self._split()
        width = len(NAMING) + len(SHARES)
        lesson = self.lesson_of[indices]
        names = (lesson >= 0) & (self.class_of[indices] == best)
        weight = np.where(names, w[np.maximum(lesson, 0)], 0.0)
        if kind >= 0:
            weight += np.where(names, w[width * (1 + kind) + np.maximum(lesson, 0)], 0.0)
        return self.scale(np.array([kind]))[0] * first + weight * data

    def fit(self, first: np.ndarray, x: Any, y: np.ndarray) -> None:
        """Maximum likelihood (L-BFGS from the first stage alone: deterministic) on out-of-fold
        first-stage probabilities ``first`` of labelled workloads (``x``: their matrix, ``y``:
        their labels' indices)."""
        n, k = first.shape
        m, kinds = self.design(x, k)
        log_p = _log(first)
        onehot = np.zeros((n, k))
        onehot[np.arange(n), y] = 1.0
        has_kind = kinds >= 0
        start = self.weights.copy()

        def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
            self.weights = theta
            z = self.scores(log_p, m, kinds)
            z -= z.max(axis=1, keepdims=True)
            lse = np.log(np.exp(z).sum(axis=1))
            r = np.exp(z - lse[:, None]) - onehot
            g_scale = (r * log_p).sum(axis=1)
            grad = np.concatenate(
                [
                    [g_scale.sum()],
                    np.bincount(kinds[has_kind], g_scale[has_kind], minlength=len(self.kinds)),
                    m.T @ r.ravel(),
                ]
            )
            shift = theta - start
            nll = float(lse.sum() - z[np.arange(n), y].sum())
            # per workload: the solver's tolerances mean the same for a month and a year
            return (nll + 0.5 * _LESSON_PRIOR * float(shift @ shift)) / n, (
                grad + _LESSON_PRIOR * shift
            ) / n

        result = minimize(loss, start, jac=True, method="L-BFGS-B", tol=_LESSON_TOL)
        self.weights = np.asarray(result.x, dtype=float)


def _log(p: np.ndarray) -> np.ndarray:
    return np.log(np.clip(p, 1e-6, 1.0))


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _proba(
    model: AttributionModel, features: Sequence[Mapping[str, float]], x: Any = None
) -> np.ndarray:
    """Both stages: the regression's probabilities, then the shared lessons (when fitted).
    ``x``: the features already vectorised, when the caller has them."""
    x = model.vectorizer.transform(features) if x is None else x
    first = model.classifier.predict_proba(x)
    return first if model.lessons is None else model.lessons.proba(first, x)


def _team_top(model: AttributionModel, proba: np.ndarray) -> tuple[list[str | None], np.ndarray]:
    """Each workload's most probable team (its projects' probabilities summed; ties: the first
    team in sorted order) and that raw probability. Projects without a known team are no team."""
    team_of = model.team_of or (None,) * len(model.classes)
    teams = sorted({t for t in team_of if t is not None})
    if not teams or not len(proba):
        return [None] * len(proba), np.zeros(len(proba))
    index = {t: j for j, t in enumerate(teams)}
    member = np.zeros((len(team_of), len(teams)))
    for i, t in enumerate(team_of):
        if t is not None:
            member[i, index[t]] = 1.0
    by_team = proba @ member
    best = np.argmax(by_team, axis=1)
    return [teams[j] for j in best], by_team[np.arange(len(best)), best]


def _out_of_fold(
    base: LogisticRegression, x: Any, y: np.ndarray, classes: Sequence[str]
) -> np.ndarray | None:
    """First-stage probabilities of each training workload from a regression fitted (same
    settings) on the other ``_FOLDS`` - 1 interleaved folds; None when a fold leaves fewer than two
    classes to learn from."""
    n = x.shape[0]
    if n < _FOLDS * CAL_MIN:
        return None
    out = np.zeros((n, len(classes)))
    index = {c: j for j, c in enumerate(classes)}
    fold = np.arange(n) % _FOLDS
    for k in range(_FOLDS):
        rest = fold != k
        if len(set(y[rest])) < 2:
            return None
        part = LogisticRegression(**base.get_params())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            part.fit(x[rest], y[rest])
        cols = [index[c] for c in part.classes_]
        out[np.ix_(~rest, cols)] = part.predict_proba(x[~rest])
    return out


def fit(
    features: Sequence[Mapping[str, float]],
    labels: Sequence[str],
    *,
    weights: Sequence[float] | None = None,
    calibration: tuple[Sequence[Mapping[str, float]], Sequence[str], Sequence[float]] | None = None,
    seed: int = 0,
    min_class_count: int = 3,
    teams: Mapping[str, str] | None = None,
) -> AttributionModel | None:
    """Fit the two stages once, then calibrate them.

    1. a multinomial logistic regression on the features (first stage);
    2. the same regression refitted on ``_FOLDS`` - 1 interleaved folds scores the remaining one:
       out-of-fold probabilities of every training workload, on which :class:`SharedLessons`
       (second stage) is fitted;
    3. the confidence of the first candidate is calibrated (:class:`TopLabelCalibrator`) on the
       training workloads' out-of-fold predictions (``weights``) and on ``calibration`` =
       (features, labels, weights) of workloads that started after every training workload (a
       time-based hold-out: it sees the drift the predictions will face; last in
       ``calibration_set``). The other candidates keep their share of the rest.

    With ``teams`` (project -> team) the most probable team's confidence is calibrated the same
    way, on the same workloads, by a map of its own (``team_calibrator``).

    Returns None when fewer than two classes have ``min_class_count`` examples. With fewer than
    ``CAL_MIN`` hold-out workloads the probabilities are not calibrated, and say so
    (``calibration = "none"``). Deterministic: the solvers (lbfgs) are.
    """
    counts = Counter(labels)
    keep = [i for i, y in enumerate(labels) if counts[y] >= min_class_count]
    classes = sorted({labels[i] for i in keep})
    if len(classes) < 2:
        return None
    vectorizer = DictVectorizer(sparse=True, sort=True)
    # the vocabulary (not the labels) of the hold-out too: the training continued on it can use
    # features that first appear there (a new dataset); before that their weights stay zero
    # and every feature naming a known project, so the shared lessons can read one the training
    # workloads never carried (their regression weights stay zero)
    naming = {f"{p}={c}": 1.0 for p in NAMING + SHARES for c in classes}
    vectorizer.fit(
        [features[i] for i in keep] + list(calibration[0] if calibration else []) + [naming]
    )
    kept = [features[i] for i in keep]
    x = vectorizer.transform(kept)
    y = np.array([labels[i] for i in keep])
    base = LogisticRegression(C=_C, max_iter=_MAX_ITER, tol=1e-3, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        base.fit(x, y)
    coefs = base.coef_ if base.coef_.shape[0] > 1 else np.vstack([-base.coef_[0], base.coef_[0]])
    model = AttributionModel(
        vectorizer=vectorizer,
        classifier=base,
        calibrator=None,
        classes=tuple(str(c) for c in base.classes_),
        training_workloads=len(keep),
        calibration="none",
        coefficients=coefs,
        team_of=None if teams is None else tuple(teams.get(c) for c in base.classes_),
    )
    oof = _out_of_fold(base, x, y, model.classes)
    if oof is not None:
        kinds = Counter(_owner_kind(f) for f in kept)
        lessons = SharedLessons.columns(
            vectorizer.feature_names_,
            model.classes,
            sorted(k for k, n in kinds.items() if n >= _KIND_MIN and k != NONE),
        )
        index = {c: j for j, c in enumerate(model.classes)}
        lessons.fit(oof, x, np.array([index[c] for c in y]))
        model.lessons = lessons
        oof = lessons.proba(oof, x)  # both stages, out of fold: what the calibration reads
        model.out_of_fold = (np.asarray(keep), oof)
    if calibration is not None and len(calibration[0]) >= CAL_MIN:
        cal_x, cal_y, cal_w = calibration
        cal_proba = _proba(model, cal_x)
        parts = [(cal_proba, np.asarray(cal_y), np.asarray(cal_w, dtype=float))]
        if oof is not None and weights is not None:
            parts.insert(0, (oof, y, np.asarray(weights, dtype=float)[keep]))
        project_parts, team_parts = [], []
        for proba, truth, weight in parts:
            best = np.argmax(proba, axis=1)
            top = proba[np.arange(len(best)), best]
            project_parts.append((top, np.array(model.classes)[best] == truth, weight))
            if teams is not None:
                team, team_top = _team_top(model, proba)
                right = np.array(
                    [
                        t is not None and t == teams.get(str(v))
                        for t, v in zip(team, truth, strict=True)
                    ]
                )
                team_parts.append((team_top, right, weight))
        model.calibration_set = _stack(project_parts)
        model.holdout_workloads = len(cal_x)
        model.calibrator = TopLabelCalibrator(*model.calibration_set)
        model.calibration = "platt_top_label"
        model.training_data = (x, y)
        if team_parts:
            model.team_calibration_set = _stack(team_parts)
            model.team_calibrator = TopLabelCalibrator(*model.team_calibration_set)
    return model


def _stack(
    parts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(top probability, right?, weight) of calibration workloads, the parts one after another."""
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))  # type: ignore[return-value]


def continue_training(
    model: AttributionModel,
    features: Sequence[Mapping[str, float]],
    labels: Sequence[str],
) -> None:
    """Continue the regression's training on every labelled workload (warm start from the measured
    checkpoint): the predictions use every label; the shared lessons and the calibration map
    measured on the checkpoint are kept. Call it after the hold-out was scored (the checkpoint's
    predictions are the measured ones)."""
    if model.training_data is None:
        return
    model.training_data = None
    known = np.isin(np.asarray(labels), model.classifier.classes_)
    x = model.vectorizer.transform([f for f, k in zip(features, known, strict=True) if k])
    base = model.classifier
    base.set_params(warm_start=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        base.fit(x, np.asarray(labels)[known])
    coefs = base.coef_ if base.coef_.shape[0] > 1 else np.vstack([-base.coef_[0], base.coef_[0]])
    model.coefficients = coefs
    model.training_workloads = int(known.sum())


def cross_fitted_confidences(
    model: AttributionModel, folds: int = 5, *, team: bool = False
) -> np.ndarray | None:
    """Calibrated confidences of the hold-out (the end of the calibration set), each from a map
    fitted without its fold of the calibration set (interleaved in time order): what an honest
    hold-out report may show. ``team``: the team confidences', from the team calibration set."""
    cal_set = model.team_calibration_set if team else model.calibration_set
    if cal_set is None:
        return None
    top, correct, weight = cal_set
    out = np.empty(len(top))
    fold = np.arange(len(top)) % folds
    for k in range(folds):
        rest = fold != k
        cal = TopLabelCalibrator(top[rest], correct[rest], weight[rest])
        out[~rest] = cal.predict(top[~rest])
    return out[len(top) - model.holdout_workloads :]


def predict(
    model: AttributionModel,
    features: Sequence[Mapping[str, float]],
    workload_ids: Sequence[str],
    *,
    top: int = 3,
    explain_below: float = 1.0,
    confidences: np.ndarray | None = None,
    team_confidences: np.ndarray | None = None,
    calibrators: Sequence[TopLabelCalibrator | None] | None = None,
    team_calibrators: Sequence[TopLabelCalibrator | None] | None = None,
) -> list[Prediction]:
    """Top-``top`` calibrated candidates per workload; the signals behind the first candidate are
    spelled out (feature and its weight) for predictions with confidence below ``explain_below``.

    The first candidate's probability is the calibrated confidence (``confidences`` when given,
    else the model's calibration map, or a workload's own map in ``calibrators`` where it is not
    None: its support class's); the others share the rest in their raw proportions, so the
    candidates stay sorted and sum to at most 1. The team's confidence likewise
    (``team_confidences``, ``team_calibrators``, the model's team map)."""
    if not features:
        return []
    x = model.vectorizer.transform(features)
    proba = _proba(model, features, x)
    names = model.vectorizer.feature_names_
    order = np.argsort(-proba, axis=1, kind="stable")[:, :top]
    raw_top = proba[np.arange(len(order)), order[:, 0]]
    if confidences is not None:
        calibrated = np.asarray(confidences, dtype=float)
    elif model.calibrator is not None:
        calibrated = model.calibrator.predict(raw_top)
    else:
        calibrated = raw_top
    team, team_raw = _team_top(model, proba)
    if team_confidences is not None:
        team_calibrated = np.asarray(team_confidences, dtype=float)
    elif model.team_calibrator is not None:
        team_calibrated = model.team_calibrator.predict(team_raw)
    else:
        team_calibrated = team_raw
    calibrated = _own_maps(calibrated, raw_top, calibrators)
    team_calibrated = _own_maps(team_calibrated, team_raw, team_calibrators)
    out = []
    for i, wid in enumerate(workload_ids):
        cands = _candidates(model, proba[i], order[i], float(calibrated[i]), raw_top[i])
        signals = ""
        if cands and cands[0][1] < explain_below:
            signals = _signals(model, x.getrow(i), int(order[i, 0]), names)
        best_team = (team[i], round(float(team_calibrated[i]), 6)) if team[i] else None
        out.append(Prediction(str(wid), cands, signals, best_team))
    return out


def _candidates(
    model: AttributionModel, proba: np.ndarray, order: np.ndarray, first: float, raw_top: float
) -> tuple[tuple[str, float], ...]:
    """A workload's candidates in ``order``: the first at its calibrated confidence ``first``, the
    others sharing the rest in their raw proportions (never above the first), rounded to 1e-6."""
    rest = (1.0 - first) / (1.0 - raw_top) if raw_top < 1.0 else 0.0
    return tuple(
        (model.classes[j], round(first if k == 0 else min(float(proba[j]) * rest, first), 6))
        for k, j in enumerate(order)
    )


def _own_maps(
    calibrated: np.ndarray, raw: np.ndarray, maps: Sequence[TopLabelCalibrator | None] | None
) -> np.ndarray:
    """``calibrated``, with each workload that has a map of its own in ``maps`` re-read by it
    (from its raw probability), the workloads of one map together."""
    if maps is None:
        return calibrated
    out = np.array(calibrated, dtype=float)
    groups: dict[int, tuple[TopLabelCalibrator, list[int]]] = {}
    for i, cal in enumerate(maps):
        if cal is not None:
            groups.setdefault(id(cal), (cal, []))[1].append(i)
    for cal, rows in groups.values():
        out[rows] = cal.predict(raw[rows])
    return out


def contradicted_labels(
    model: AttributionModel, workload_ids: Sequence[str], labels: Sequence[str], confidence: float
) -> list[tuple[Prediction, str]]:
    """Training workloads (``workload_ids`` / ``labels``: in the order given to :func:`fit`) whose
    out-of-fold prediction names another project than their label with a calibrated confidence of
    at least ``confidence``: (that prediction, the label), most confident first."""
    if model.out_of_fold is None:
        return []
    keep, proba = model.out_of_fold
    order = np.argsort(-proba, axis=1, kind="stable")[:, :3]
    raw = proba[np.arange(len(order)), order[:, 0]]
    calibrated = model.calibrator.predict(raw) if model.calibrator is not None else raw
    out = []
    for row, index in enumerate(keep):
        best = model.classes[order[row, 0]]
        if best == labels[index] or calibrated[row] < confidence:
            continue
        cands = _candidates(model, proba[row], order[row], float(calibrated[row]), raw[row])
        out.append((Prediction(str(workload_ids[index]), cands), str(labels[index])))
    return sorted(out, key=lambda pt: (-pt[0].confidence, pt[0].workload_id))


def raw_tops(
    model: AttributionModel,
    features: Sequence[Mapping[str, float]],
    labels: Sequence[str],
    teams: Mapping[str, str] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Of labelled workloads: the raw probability of the first candidate and whether it is right,
    then the same for the most probable team (against ``teams`` of the label)."""
    if not features:
        empty = np.zeros(0)
        return empty, empty.astype(bool), empty, empty.astype(bool)
    proba = _proba(model, features)
    best = np.argmax(proba, axis=1)
    truth = np.asarray(labels)
    top = proba[np.arange(len(best)), best]
    team, team_top = _team_top(model, proba)
    team_right = np.array(
        [t is not None and t == (teams or {}).get(str(v)) for t, v in zip(team, truth, strict=True)]
    )
    return top, np.array(model.classes)[best] == truth, team_top, team_right


def _signals(model: AttributionModel, row: Any, best: int, names: Sequence[str]) -> str:
    """The three features that add most to the first candidate's score: through the regression
    (times the weight the lessons give it) and the shared lessons together."""
    contrib = row.data * model.coefficients[best, row.indices]
    if model.lessons is not None:
        contrib = model.lessons.contributions(row.indices, row.data, best, contrib)
    ranked = np.lexsort((row.indices, -contrib))[:3]
    return "; ".join(
        f"{names[row.indices[k]]} ({contrib[k]:+.2f})" for k in ranked if contrib[k] > 0
    )
