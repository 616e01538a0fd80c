"""Learned attribution of untagged GPU workloads: features, a calibrated model, top-3 and quality.

The warehouse resolves a workload's project from a valid label, a human override or a declarative
rule first; what is left is predicted here from the workloads whose project is known (labels and
overrides) in a trailing window, retrained on every build. Pure functions: no dbt, no database.

Signals (the four families of the design brief), one feature dict per workload:

* code fingerprints: image repository, tag family and digest, tokens of the pod / job / app names
  (Slurm SubmitLine / WorkDir / JobName tokens can join as the same ``tok=`` features later);
* resource patterns: GPU count and model, duration, GPU utilisation mean / p95 / burstiness;
* temporal relationships: the project of the same user's / namespace's / job family's previous
  labelled workload, the job that ended just before on the same user's account (pipelines), the
  hour of day and day of week;
* user behaviour: the user's and the namespace's project mix so far.

History features only read labels of workloads that **started strictly earlier** (never the
workload's own label, never the future): :func:`history_features` is leakage-free by construction,
and the evaluation (:func:`holdout_predictions`) trains on earlier workloads, tests on later ones.
"""

from __future__ import annotations

import difflib
import itertools
import math
import re
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction import DictVectorizer
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

__all__ = [
    "AttributionModel",
    "Prediction",
    "QualityReport",
    "evaluate",
    "fit",
    "history_features",
    "holdout_predictions",
    "predict",
    "predict_untagged",
    "prediction_rows",
    "static_features",
    "tokens",
]

NONE = "__none__"
_SPLIT = re.compile(r"[^a-z0-9]+")
# random suffixes (k8s pod hashes, job ids): 5+ characters mixing letters and digits, or numbers
_NOISE = re.compile(r"^(?=.*\d)[a-z0-9]{5,}$|^\d+$")
_DIGITS = re.compile(r"\d+")
PIPELINE_GAP_SECONDS = 2 * 3600
_C = 1.0  # inverse L2 strength of the logistic regression
_MAX_ITER = 200
_HOLDOUT_MIN = 5000  # from this many training workloads on, calibrate on the newest 20 %


@dataclass(frozen=True, slots=True)
class Prediction:
    """Top candidates of one workload, most probable first (probabilities are calibrated)."""

    workload_id: str
    candidates: tuple[tuple[str, float], ...]
    signals: str = ""

    @property
    def project_id(self) -> str | None:
        return self.candidates[0][0] if self.candidates else None

    @property
    def confidence(self) -> float:
        return self.candidates[0][1] if self.candidates else 0.0


@dataclass
class AttributionModel:
    """A fitted pipeline and what it was fitted on."""

    vectorizer: DictVectorizer
    classifier: CalibratedClassifierCV
    classes: tuple[str, ...]
    training_workloads: int
    calibration: str
    coefficients: np.ndarray = field(repr=False)


def known_projects(
    records: Iterable[Mapping[str, Any]], mapping: Iterable[Mapping[str, Any]]
) -> list[str]:
    """The projects a prediction may name: the org mapping's, else the known ones seen in labels."""
    known = sorted({row["project_id"] for row in mapping if row.get("project_id")})
    return known or sorted({r["known_project_id"] for r in records if r.get("known_project_id")})


def tokens(*texts: str | None) -> list[str]:
    """Lower-case name tokens and adjacent bigrams, random suffixes dropped.

    ``tokens("rag-search-ft-8f3a2-x7k2p")`` -> rag, search, ft, rag-search, search-ft.
    """
    out: list[str] = []
    for text in texts:
        if not text:
            continue
        parts = [p for p in _SPLIT.split(text.lower()) if p and not _NOISE.match(p)]
        out.extend(parts)
        out.extend(f"{a}-{b}" for a, b in itertools.pairwise(parts))
    return out


def _tag_family(tag: str | None) -> str:
    """``24.05-py3`` -> ``N.N-pyN``: the shape of a tag, not its version."""
    return _DIGITS.sub("N", tag) if tag else NONE


def _num(value: Any) -> float | None:
    if value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def static_features(record: Mapping[str, Any], known_projects: Sequence[str]) -> dict[str, float]:
    """The workload's own signals (code fingerprints, resource pattern, time) as a feature dict."""
    f: dict[str, float] = {}

    def cat(name: str, value: Any) -> None:
        f[f"{name}={value if value not in (None, '') else NONE}"] = 1.0

    cat("ns", record.get("namespace"))
    cat("user", record.get("user_id"))
    cat("team", record.get("team_label"))
    cat("app", record.get("label_app"))
    cat("owner_kind", record.get("created_by_kind"))
    cat("img", record.get("image_repository"))
    cat("img_tag", f"{record.get('image_repository')}:{_tag_family(record.get('image_tag'))}")
    if record.get("image_digest"):
        cat("digest", record.get("image_digest"))
    cat("gpus", record.get("gpu_count"))
    cat("gpu_model", record.get("gpu_model"))
    for tok in tokens(record.get("pod"), record.get("created_by_name"), record.get("label_app")):
        f[f"tok={tok}"] = 1.0
    for tok in tokens(record.get("image_repository")):
        f[f"img_tok={tok}"] = 1.0
    names = " ".join(
        str(record.get(k) or "")
        for k in ("pod", "created_by_name", "label_app", "image_repository")
    ).lower()
    for project in known_projects:
        if project and project in names:
            f[f"mentions={project}"] = 1.0
    # an invalid project label is a signal, not a truth: its closest known project id (a valid label
    # is never a feature: it is the answer, reading it would leak into training and the hold-out)
    raw = (record.get("label_project_id") or "").strip().lower()
    if raw and raw not in known_projects:
        close = difflib.get_close_matches(raw, known_projects, n=1, cutoff=0.75)
        cat("label_close_to", close[0] if close else "?")
    started = _num(record.get("started_epoch"))
    if started is not None:
        cat("hour", int(started // 3600) % 24)
        cat("weekday", int(started // 86400 + 3) % 7)  # 1970-01-01 was a Thursday (3)
    duration = _num(record.get("duration_hours"))
    if duration is not None:
        f["log_duration_hours"] = math.log1p(max(duration, 0.0))
    for name in ("util_mean", "util_p95", "util_burstiness"):
        value = _num(record.get(name))
        if value is not None:
            f[name] = min(max(value, 0.0), 100.0) / 100.0 if name != "util_burstiness" else value
    return f


def _family(record: Mapping[str, Any]) -> str:
    """The job family: the owner name (job, replica set, stateful set) without random suffixes."""
    toks = [t for t in _SPLIT.split(str(record.get("created_by_name") or "").lower()) if t]
    return "-".join(t for t in toks if not _NOISE.match(t)) or NONE


def history_features(
    records: Sequence[Mapping[str, Any]], labels: Mapping[str, str]
) -> dict[str, dict[str, float]]:
    """Temporal and behavioural features per workload, from labels of strictly earlier workloads.

    ``labels`` maps workload_id -> known project for the workloads whose label may be read.
    Records are visited in start order; a workload's features are computed *before* any label of a
    workload starting at the same second or later is added, so no workload sees its own label.
    """
    order = sorted(
        records, key=lambda r: (_num(r.get("started_epoch")) or 0.0, str(r["workload_id"]))
    )
    user_mix: dict[str, Counter[str]] = defaultdict(Counter)
    ns_mix: dict[str, Counter[str]] = defaultdict(Counter)
    user_last: dict[str, str] = {}
    ns_last: dict[str, str] = {}
    family_last: dict[str, str] = {}
    user_ended: dict[str, tuple[float, str]] = {}
    out: dict[str, dict[str, float]] = {}
    pending: list[Mapping[str, Any]] = []
    pending_start: float | None = None

    def commit() -> None:
        for r in pending:
            project = labels.get(str(r["workload_id"]))
            if project is None:
                continue
            user, ns = r.get("user_id") or NONE, r.get("namespace") or NONE
            user_mix[user][project] += 1
            ns_mix[ns][project] += 1
            user_last[user] = project
            ns_last[ns] = project
            family_last[_family(r)] = project
            start = _num(r.get("started_epoch")) or 0.0
            end = start + 3600.0 * (_num(r.get("duration_hours")) or 0.0)
            if end >= user_ended.get(user, (-math.inf, ""))[0]:
                user_ended[user] = (end, project)
        pending.clear()

    for r in order:
        start = _num(r.get("started_epoch")) or 0.0
        if pending_start is None or start > pending_start:
            commit()
            pending_start = start
        user, ns = r.get("user_id") or NONE, r.get("namespace") or NONE
        f: dict[str, float] = {}
        for prefix, mix in (("user_mix", user_mix[user]), ("ns_mix", ns_mix[ns])):
            total = sum(mix.values())
            for project, n in mix.items():
                f[f"{prefix}={project}"] = n / total
        if user in user_last:
            f[f"user_prev={user_last[user]}"] = 1.0
        if ns in ns_last:
            f[f"ns_prev={ns_last[ns]}"] = 1.0
        family = _family(r)
        if family in family_last:
            f[f"family_prev={family_last[family]}"] = 1.0
        ended = user_ended.get(user)
        if ended is not None and 0 <= start - ended[0] <= PIPELINE_GAP_SECONDS:
            f[f"pipeline_prev={ended[1]}"] = 1.0
        out[str(r["workload_id"])] = f
        pending.append(r)
    return out


def _features(
    records: Sequence[Mapping[str, Any]],
    labels: Mapping[str, str],
    known_projects: Sequence[str],
) -> dict[str, dict[str, float]]:
    history = history_features(records, labels)
    return {
        str(r["workload_id"]): {
            **static_features(r, known_projects),
            **history[str(r["workload_id"])],
        }
        for r in records
    }


def fit(
    features: Sequence[Mapping[str, float]],
    labels: Sequence[str],
    *,
    seed: int = 0,
    min_class_count: int = 3,
) -> AttributionModel | None:
    """Fit a calibrated multinomial logistic regression; None when fewer than two classes qualify.

    ``features`` / ``labels`` come in start order (oldest first). Classes with fewer than
    ``min_class_count`` examples are left out. Calibration is temperature scaling
    (softmax(logits / T): one parameter, natively multi-class; measured better than one-vs-rest
    sigmoid or isotonic on the generated months). From ``_HOLDOUT_MIN`` examples on, the model is
    fitted once on the older 80 % and the temperature on the newest 20 % (a time-based calibration
    set: it sees the drift the predictions will face, and one fit keeps 100k workloads under a
    minute); below that, on three stratified folds shuffled with ``seed``. Deterministic.
    """
    counts = Counter(labels)
    keep = [i for i, y in enumerate(labels) if counts[y] >= min_class_count]
    classes = sorted({labels[i] for i in keep})
    if len(classes) < 2:
        return None
    x_rows = [features[i] for i in keep]
    y = np.array([labels[i] for i in keep])
    vectorizer = DictVectorizer(sparse=True, sort=True)
    x = vectorizer.fit_transform(x_rows)
    base = LogisticRegression(C=_C, max_iter=_MAX_ITER, tol=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if len(keep) >= _HOLDOUT_MIN:
            n_fit = int(len(keep) * 0.8)
            base.fit(x[:n_fit], y[:n_fit])
            known = np.isin(y[n_fit:], base.classes_)
            classifier = CalibratedClassifierCV(FrozenEstimator(base), method="temperature")
            classifier.fit(x[n_fit:][known], y[n_fit:][known])
            coefs = [base.coef_]
        else:
            folds = min(3, min(counts[c] for c in classes))
            classifier = CalibratedClassifierCV(
                base,
                method="temperature",
                cv=StratifiedKFold(folds, shuffle=True, random_state=seed),
                ensemble=True,
            )
            classifier.fit(x, y)
            coefs = [c.estimator.coef_ for c in classifier.calibrated_classifiers_]
    coefs = [np.vstack([-c[0], c[0]]) if c.shape[0] == 1 else c for c in coefs]
    return AttributionModel(
        vectorizer=vectorizer,
        classifier=classifier,
        classes=tuple(str(c) for c in classifier.classes_),
        training_workloads=len(keep),
        calibration="temperature",
        coefficients=np.mean(coefs, axis=0),
    )


def predict(
    model: AttributionModel,
    features: Sequence[Mapping[str, float]],
    workload_ids: Sequence[str],
    *,
    top: int = 3,
    explain_below: float = 1.0,
) -> list[Prediction]:
    """Top-``top`` calibrated candidates per workload; the signals behind the first candidate are
    spelled out (feature and its weight) for predictions with confidence below ``explain_below``."""
    if not features:
        return []
    x = model.vectorizer.transform(features)
    proba = model.classifier.predict_proba(x)
    names = model.vectorizer.feature_names_
    order = np.argsort(-proba, axis=1, kind="stable")[:, :top]
    out = []
    for i, wid in enumerate(workload_ids):
        cands = tuple((model.classes[j], round(float(proba[i, j]), 6)) for j in order[i])
        signals = ""
        if cands and cands[0][1] < explain_below:
            row = x.getrow(i)
            contrib = row.data * model.coefficients[order[i, 0], row.indices]
            best = np.argsort(-contrib, kind="stable")[:3]
            signals = "; ".join(
                f"{names[row.indices[k]]} ({contrib[k]:+.2f})" for k in best if contrib[k] > 0
            )
        out.append(Prediction(str(wid), cands, signals))
    return out


def _trailing(
    records: Sequence[Mapping[str, Any]], labels: Mapping[str, str], days: float | None
) -> list[Mapping[str, Any]]:
    labelled = sorted(
        (r for r in records if str(r["workload_id"]) in labels),
        key=lambda r: (_num(r.get("started_epoch")) or 0.0, str(r["workload_id"])),
    )
    if not days or not labelled:
        return labelled
    latest = max(_num(r.get("started_epoch")) or 0.0 for r in records)
    return [r for r in labelled if (_num(r.get("started_epoch")) or 0.0) >= latest - days * 86400]


def predict_untagged(
    records: Sequence[Mapping[str, Any]],
    known_projects: Sequence[str],
    *,
    training_days: float | None = 60,
    seed: int = 0,
    explain_below: float = 1.0,
) -> tuple[list[Prediction], AttributionModel | None]:
    """Train on the workloads with a known project (``record["known_project_id"]``) started within
    ``training_days`` of the latest workload; predict every workload without one that no rule placed
    (``record["declared_attribution_method"]`` absent or ``none``)."""
    records = sorted(records, key=lambda r: str(r["workload_id"]))
    labels = {
        str(r["workload_id"]): str(r["known_project_id"])
        for r in records
        if r.get("known_project_id")
    }
    feats = _features(records, labels, known_projects)
    train = _trailing(records, labels, training_days)
    model = fit(
        [feats[str(r["workload_id"])] for r in train],
        [labels[str(r["workload_id"])] for r in train],
        seed=seed,
    )
    targets = [
        str(r["workload_id"])
        for r in records
        if str(r["workload_id"]) not in labels
        and r.get("declared_attribution_method") in (None, "none")
    ]
    if model is None:
        return [Prediction(w, ()) for w in targets], None
    preds = predict(model, [feats[w] for w in targets], targets, explain_below=explain_below)
    return preds, model


def holdout_predictions(
    records: Sequence[Mapping[str, Any]],
    known_projects: Sequence[str],
    *,
    test_fraction: float = 0.2,
    seed: int = 0,
) -> tuple[list[tuple[Prediction, str]], AttributionModel | None]:
    """Time-based evaluation: train on the earlier labelled workloads, predict the later ones.

    The latest ``test_fraction`` of labelled workloads by start time are hidden from training;
    returns (prediction, true project) for each of them. History features of a test workload read
    only labels of workloads that started before it (as an untagged workload's would in production).
    """
    records = sorted(records, key=lambda r: str(r["workload_id"]))
    labels = {
        str(r["workload_id"]): str(r["known_project_id"])
        for r in records
        if r.get("known_project_id")
    }
    labelled = sorted(
        (r for r in records if str(r["workload_id"]) in labels),
        key=lambda r: (_num(r.get("started_epoch")) or 0.0, str(r["workload_id"])),
    )
    n_test = math.ceil(len(labelled) * test_fraction)
    if n_test == 0 or n_test >= len(labelled):
        return [], None
    cutoff = _num(labelled[-n_test].get("started_epoch")) or 0.0
    train = [r for r in labelled if (_num(r.get("started_epoch")) or 0.0) < cutoff]
    test = [r for r in labelled if (_num(r.get("started_epoch")) or 0.0) >= cutoff]
    feats = _features(records, labels, known_projects)
    model = fit(
        [feats[str(r["workload_id"])] for r in train],
        [labels[str(r["workload_id"])] for r in train],
        seed=seed,
    )
    if model is None or not test:
        return [], model
    ids = [str(r["workload_id"]) for r in test]
    preds = predict(model, [feats[w] for w in ids], ids, explain_below=0.0)
    return [(p, labels[p.workload_id]) for p in preds], model


def prediction_rows(
    predictions: Iterable[Prediction],
    model: AttributionModel | None,
    truth: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Flat rows (gpucost.arrow_io.ATTRIBUTION_SCHEMA) for the dbt models."""
    rows = []
    for p in predictions:
        row: dict[str, Any] = {
            "workload_id": p.workload_id,
            "predicted_project_id": p.project_id,
            "attribution_confidence": p.confidence if p.candidates else None,
            "attribution_signals": p.signals or None,
            "true_project_id": (truth or {}).get(p.workload_id),
            "model_training_workloads": model.training_workloads if model else 0,
            "model_calibration": model.calibration if model else None,
        }
        for k in range(3):
            cand = p.candidates[k] if k < len(p.candidates) else (None, None)
            row[f"candidate_{k + 1}_project_id"] = cand[0]
            row[f"candidate_{k + 1}_probability"] = cand[1]
        rows.append(row)
    return rows


@dataclass(frozen=True)
class QualityReport:
    """Money-weighted quality of predictions against the truth."""

    workloads: int
    total_weight: float
    auto_weight: float
    coverage: float  # share of the weight with confidence >= threshold
    accuracy_auto: float  # money-weighted accuracy of the auto-attributed part
    accuracy_all: float  # money-weighted accuracy of the top candidate, all workloads
    ece: float  # expected calibration error (money-weighted, equal-width bins)
    reliability: tuple[tuple[float, float, int, float, float, float], ...]
    # (bin low, bin high, workloads, weight, mean confidence, accuracy)
    confusions: tuple[tuple[str, str, int, float], ...]  # (true, predicted, workloads, weight)


def evaluate(
    rows: Iterable[tuple[str | None, str, float, float]],
    *,
    threshold: float,
    bins: int = 10,
) -> QualityReport:
    """Quality of (predicted, true, confidence, weight) rows: coverage above ``threshold``,
    money-weighted accuracy, reliability table, expected calibration error and top confusions.

    ECE = sum over bins of (bin weight / total weight) * |accuracy - mean confidence|.
    """
    rows = list(rows)
    total = sum(w for *_, w in rows)
    auto = [(p, t, c, w) for p, t, c, w in rows if c >= threshold]
    auto_w = sum(w for *_, w in auto)

    def acc(part: list) -> float:
        weight = sum(w for *_, w in part)
        return sum(w for p, t, _, w in part if p == t) / weight if weight else 0.0

    table = []
    ece = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        part = [r for r in rows if lo <= r[2] < hi or (b == bins - 1 and r[2] >= hi)]
        if not part:
            continue
        weight = sum(w for *_, w in part)
        conf = sum(c * w for _, _, c, w in part) / weight if weight else 0.0
        accuracy = acc(part)
        table.append((lo, hi, len(part), weight, conf, accuracy))
        if total:
            ece += weight / total * abs(accuracy - conf)
    confused: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    for p, t, _, w in rows:
        if p != t:
            confused[(t, p or NONE)][0] += 1
            confused[(t, p or NONE)][1] += w
    top = sorted(confused.items(), key=lambda kv: (-kv[1][1], kv[0]))[:5]
    return QualityReport(
        workloads=len(rows),
        total_weight=total,
        auto_weight=auto_w,
        coverage=auto_w / total if total else 0.0,
        accuracy_auto=acc(auto),
        accuracy_all=acc(rows),
        ece=ece,
        reliability=tuple(table),
        confusions=tuple((t, p, int(n), w) for (t, p), (n, w) in top),
    )
