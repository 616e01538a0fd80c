"""Model versions: when the attribution retrains, the fitted state a version stores, and which
workloads a build that does not retrain scores again.

The fitted state is plain JSON (numbers, strings, and float64 arrays as base64 of their
little-endian bytes): decoding it runs no code, unlike a pickle, so whoever can write the
warehouse can change scores but not run anything. Floats round-trip exactly (the arrays byte for
byte, the scalars by ``repr``), so a workload scored from the decoded state gets what the
training build would have given it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.feature_extraction import DictVectorizer
from sklearn.linear_model import LogisticRegression

from gpucost.core.attribution.calibration import TopLabelCalibrator
from gpucost.core.attribution.cold_start import Precision
from gpucost.core.attribution.features import gpu_hours, start_epoch, trailing_labelled
from gpucost.core.attribution.model import AttributionModel, SharedLessons
from gpucost.core.attribution.pipeline import Attribution, Scorer
from gpucost.core.attribution.quality import evaluate
from gpucost.core.attribution.support import ClassCalibration

STATE_FORMAT = 1  # bumped when the encoding changes (an older state is then retrained)

DAY_SECONDS = 86_400


def digest(value: Any) -> str:
    """A stable fingerprint of JSON-able ``value`` (keys sorted): 32 hex digits of its SHA-256."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def training_code_fingerprint() -> str:
    """The source of the attribution package (every module that shapes training or scoring):
    changing it retrains."""
    folder = Path(__file__).parent
    return digest(
        {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.py"))}
    )


def latest_start(records: Iterable[Mapping[str, Any]]) -> float:
    """The latest workload start (epoch seconds; 0 without workloads): the data's horizon."""
    return max((start_epoch(r) for r in records), default=0.0)


def label_fingerprint(
    records: Iterable[Mapping[str, Any]], among: Collection[str] | None = None
) -> str:
    """The training labels (valid labels and overrides: ``known_project_id``) of the workloads
    ``among`` (None: all; :func:`decode_workload_ids` of a version's ``read_workload_ids``). A label
    added, changed or removed on such a workload changes it, as does such a labelled workload gone;
    a workload the version never read does not, whenever it started (new data: a new day, or a late
    file whose workloads started before the version's horizon)."""
    return digest(
        sorted(
            (str(r["workload_id"]), str(r["known_project_id"]))
            for r in records
            if r.get("known_project_id") and (among is None or str(r["workload_id"]) in among)
        )
    )


def encode_workload_ids(records: Iterable[Mapping[str, Any]]) -> str:
    """The workloads a training read, for the next build's :func:`label_fingerprint`: their sorted
    ids, one per line, zlib-compressed and base64 (ASCII; about 40 bytes a workload whose id
    holds a Kubernetes uid: 1.04 MB for the 128-node month's 26,461, docs/benchmarks.md)."""
    text = "\n".join(sorted({str(r["workload_id"]) for r in records}))
    return base64.b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii")


def decode_workload_ids(value: str | None) -> frozenset[str] | None:
    """:func:`encode_workload_ids`' set back (None without one: a version stored before it was kept,
    whose labels are then compared over every workload)."""
    if not value:
        return None
    text = zlib.decompress(base64.b64decode(value.encode("ascii"), validate=True)).decode("utf-8")
    return frozenset(text.split("\n")) if text else frozenset()


MAPPING_FIELDS = ("project_id", "team_id", "project_name", "team_name")  # what training reads


def settings_fingerprint(settings: Mapping[str, Any], mapping: Sequence[Mapping[str, Any]]) -> str:
    """The vars that shape training, the org mapping's fields it reads (not where the file was
    landed) and the package's source."""
    rows = ([str(r.get(k)) for k in MAPPING_FIELDS] for r in mapping)
    return digest(
        {
            "settings": dict(settings),
            "mapping": sorted(rows),
            "code": training_code_fingerprint(),
            "format": STATE_FORMAT,
        }
    )


def feature_fingerprint(
    features: Mapping[str, float], support_class: str | None, record: Mapping[str, Any]
) -> str:
    """What a workload's score depends on besides the version: its features (static and history,
    which read neighbours on both sides in time), its support class and its record (the names
    the cold-start path matches among its fields)."""
    return digest(
        {"features": sorted(features.items()), "class": support_class, "record": dict(record)}
    )


def retrain_reason(
    current: Mapping[str, Any] | None,
    *,
    labels: str,
    settings: str,
    horizon: float,
    retrain_days: float | None,
    forced: bool,
) -> str | None:
    """Why this build trains a new version, or None to keep ``current``.

    ``current``: the latest version's row (None: no version yet), ``labels``: the label
    fingerprint over the workloads that version read (:func:`label_fingerprint` ``among`` its
    ``read_workload_ids``), ``settings``: :func:`settings_fingerprint`, ``horizon``: the
    latest workload start now. The schedule counts workload time (``horizon`` minus the version's
    horizon), not wall time: the same landing zone then gives the same versions whenever it is
    built. A retrain_days of 0 retrains whenever a later workload arrived; None: no schedule."""
    if current is None:
        return "first"
    reasons = []
    if forced:
        reasons.append("forced")
    if labels != current["label_fingerprint"]:
        reasons.append("labels")
    if settings != current["settings_fingerprint"]:
        reasons.append("settings")
    age = horizon - float(current["data_last_start_epoch"])
    if retrain_days is not None and age > 0 and age >= retrain_days * DAY_SECONDS:
        reasons.append("schedule")
    return ", ".join(reasons) or None


def version_id(state: str, generation: int) -> str:
    """A version's id: the fingerprint of what was fitted (``state``: its fitted state and its own
    rows, :func:`digest` of them), so two trainings on the same inputs (two builds of one landing
    zone, an incremental build and a full refresh) name it alike; ``generation`` counts the earlier
    versions that fitted the same state (a forced retrain on unchanged inputs is a new version)."""
    return digest([state, generation])[:16]


def to_score(
    previous: Mapping[str, tuple[str | None, str]],
    current: Mapping[str, str],
    version: str,
) -> list[str]:
    """The workloads a build scores: new ones, those whose fingerprint changed and those a
    previous version scored (``previous``: workload -> (version, fingerprint), ``current``:
    workload -> fingerprint now), in ``current``'s order; the others keep their scores."""
    return [w for w, fp in current.items() if previous.get(w) != (version, fp)]


# --- the fitted state ---------------------------------------------------------------------------


def _array(a: np.ndarray) -> dict[str, Any]:
    a = np.ascontiguousarray(a, dtype="<f8")
    return {"shape": list(a.shape), "f8": base64.b64encode(a.tobytes()).decode("ascii")}


def _unarray(value: Mapping[str, Any]) -> np.ndarray:
    raw = base64.b64decode(value["f8"].encode("ascii"), validate=True)
    return np.frombuffer(raw, dtype="<f8").reshape(value["shape"]).copy()


def _calibrator(cal: TopLabelCalibrator | None) -> list[float] | None:
    return None if cal is None else [cal.a, cal.b, cal.cap]


def _uncalibrator(value: Sequence[float] | None) -> TopLabelCalibrator | None:
    return None if value is None else TopLabelCalibrator.of(*value)


def _maps(maps: ClassCalibration | None) -> dict[str, Any] | None:
    return None if maps is None else {k: _calibrator(v) for k, v in maps.maps.items()}


def _unmaps(value: Mapping[str, Any] | None) -> ClassCalibration | None:
    if value is None:
        return None
    return ClassCalibration.of({k: _uncalibrator(v) for k, v in value.items()})


_PARAMS = ("C", "max_iter", "tol", "random_state", "fit_intercept")


def encode_state(scorer: Scorer) -> str:
    """The fitted state of a training (:class:`Scorer`) as JSON text."""
    model = scorer.model
    state: dict[str, Any] = {
        "format": STATE_FORMAT,
        "auto_threshold": scorer.auto_threshold,
        "team_threshold": scorer.team_threshold,
        "teams": None if scorer.teams is None else dict(sorted(scorer.teams.items())),
        "cold": None if scorer.cold is None else list(vars(scorer.cold).values()),
        "targets": list(scorer.targets),
        "maps": _maps(scorer.maps),
        "team_maps": _maps(scorer.team_maps),
        "model": None,
    }
    if model is not None:
        clf = model.classifier
        lessons = model.lessons
        state["model"] = {
            "vocabulary": list(model.vectorizer.feature_names_),
            "classes": list(model.classes),
            "params": {k: clf.get_params()[k] for k in _PARAMS},
            "coef": _array(clf.coef_),
            "intercept": _array(clf.intercept_),
            "lessons": None
            if lessons is None
            else {"kinds": list(lessons.kinds), "weights": _array(lessons.weights)},
            "calibrator": _calibrator(model.calibrator),
            "team_calibrator": _calibrator(model.team_calibrator),
            "team_of": None if model.team_of is None else list(model.team_of),
            "training_workloads": model.training_workloads,
            "calibration_workloads": model.calibration_workloads,
            "calibration": model.calibration,
        }
    return json.dumps(state, sort_keys=True, separators=(",", ":"))


def decode_state(text: str) -> Scorer:
    """The :class:`Scorer` of a state :func:`encode_state` wrote. Raises ValueError (one line)
    when the text is not such a state."""
    try:
        state = json.loads(text)
        if state.get("format") != STATE_FORMAT:
            raise ValueError(f"format {state.get('format')!r}, expected {STATE_FORMAT}")
        cold = state["cold"]
        return Scorer(
            _unmodel(state["model"]),
            _unmaps(state["maps"]),
            _unmaps(state["team_maps"]),
            float(state["auto_threshold"]),
            state["team_threshold"],
            state["teams"],
            None if cold is None else Precision(*cold),
            tuple(state["targets"]),  # type: ignore[arg-type]
        )
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ValueError(f"not an attribution model state: {error}") from None


def _unmodel(value: Mapping[str, Any] | None) -> AttributionModel | None:
    if value is None:
        return None
    names = list(value["vocabulary"])
    vectorizer = DictVectorizer(sparse=True, sort=True)
    vectorizer.feature_names_ = names
    vectorizer.vocabulary_ = {n: i for i, n in enumerate(names)}
    classes = tuple(str(c) for c in value["classes"])
    clf = LogisticRegression(**value["params"])
    clf.coef_ = _unarray(value["coef"])
    clf.intercept_ = _unarray(value["intercept"])
    clf.classes_ = np.array(classes, dtype=object)
    clf.n_features_in_ = len(names)
    if clf.coef_.shape != (1 if len(classes) == 2 else len(classes), len(names)):
        raise ValueError(f"coefficients of shape {clf.coef_.shape} for {len(classes)} classes")
    coefs = clf.coef_ if clf.coef_.shape[0] > 1 else np.vstack([-clf.coef_[0], clf.coef_[0]])
    lessons = None
    if value["lessons"] is not None:
        kinds = tuple(value["lessons"]["kinds"])
        lessons = SharedLessons.columns(names, classes, kinds)
        lessons.weights = _unarray(value["lessons"]["weights"])
    return AttributionModel(
        vectorizer=vectorizer,
        classifier=clf,
        calibrator=_uncalibrator(value["calibrator"]),
        classes=classes,
        training_workloads=int(value["training_workloads"]),
        calibration=str(value["calibration"]),
        coefficients=coefs,
        lessons=lessons,
        team_of=None if value["team_of"] is None else tuple(value["team_of"]),
        team_calibrator=_uncalibrator(value["team_calibrator"]),
        calibration_count=int(value["calibration_workloads"]),
    )


def version_row(
    result: Attribution,
    records: Sequence[Mapping[str, Any]],
    previous: Sequence[Mapping[str, Any]],
    *,
    reason: str,
    labels: str,
    settings: str,
    training_days: float | None,
    state: str,
) -> dict[str, Any]:
    """The row of int_attribution_model_versions for one training (without its state and
    evaluation rows; ``state``: their fingerprint): id, sequence, why, fingerprints, horizon,
    training window (first and last start of the labelled workloads it read), counts, thresholds,
    the time hold-out's figures and the workloads it read (:func:`encode_workload_ids`)
    (GPU-hour-weighted: money is allocated downstream of the model; int_workload_attribution_quality
    weighs the same rows by money)."""
    horizon = latest_start(records)
    labelled = trailing_labelled(
        records,
        {
            str(r["workload_id"]): str(r["known_project_id"])
            for r in records
            if r.get("known_project_id")
        },
        training_days,
    )
    generation = sum(1 for p in previous if p["state_fingerprint"] == state)
    hours = {str(r["workload_id"]): gpu_hours(r) for r in records}
    report = evaluate(
        ((p.project_id, t, p.confidence, hours[p.workload_id]) for p, t in result.holdout),
        threshold=result.auto_threshold,
    )
    model = result.model
    return {
        "model_version": version_id(state, generation),
        "version_sequence": len(previous) + 1,
        "retrain_reason": reason,
        "label_fingerprint": labels,
        "settings_fingerprint": settings,
        "state_fingerprint": state,
        "generation": generation,
        "data_last_start_epoch": horizon,
        "data_last_start_at": _at(horizon),
        "training_first_start_at": _at(start_epoch(labelled[0])) if labelled else None,
        "training_last_start_at": _at(start_epoch(labelled[-1])) if labelled else None,
        "labelled_workloads": len(labelled),
        "training_workloads": model.training_workloads if model else 0,
        "holdout_workloads": len(result.holdout),
        "scored_workloads": len(result.predictions),
        "model_calibration": model.calibration if model else None,
        "auto_threshold": result.auto_threshold,
        "team_auto_threshold": result.team_threshold,
        "holdout_coverage": report.coverage,
        "holdout_accuracy": report.accuracy_auto,
        "holdout_accuracy_all": report.accuracy_all,
        "holdout_expected_calibration_error": report.ece,
        "read_workload_ids": encode_workload_ids(records),
    }


def _at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC).replace(tzinfo=None)
