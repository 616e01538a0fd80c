"""Learned attribution of untagged GPU workloads: features, a calibrated model, top-3 and quality.

The warehouse resolves a workload's project from a valid label, a human override or a declarative
rule first; what is left is predicted here from the workloads whose project is known (labels and
overrides) in a trailing window, retrained on every build. Pure functions: no dbt, no database.

Signals (the four families of the design brief), one feature dict per workload:

* code fingerprints: image repository, tag family and digest, tokens of the pod / job / app names,
  of the launch line (container command + args from the pod spec, or a Slurm SubmitLine), working
  directory and mounted volume claims, and their words once more in one vocabulary (a dataset
  read by a job and mounted as a notebook's cache is one feature);
* resource patterns: GPU count and model, duration, GPU utilisation mean / p95 / burstiness;
* temporal relationships: the project of the same user's (on the same cluster) / namespace's / job
  family's previous known workload, the job that ended just before on the same user's account
  (pipelines), the earlier job whose output this one reads (lineage: its name in this one's
  paths), the hour of day and day of week; a workload without a user label reads the history of
  the person who created it (an admission webhook's annotation: :func:`creator_user`), else of
  the user its owner or volume claims name (a notebook server ``jupyter-alice``); and the other
  side: the same user's / namespace's / job family's *next* known workload, and the known workloads
  that later read this one's output;
* user behaviour: the user's and the namespace's project mix so far.

One training per build (:func:`attribute`): a regression fitted on the older labelled workloads,
and a second stage over it (:class:`SharedLessons`: what a feature naming a project is worth,
learnt once for every project, on the regression's out-of-fold probabilities); calibrated
(top-label Platt scaling shrunk toward the identity) on those out-of-fold predictions and the
newest labelled workloads, measured on the newest; then the regression is continued on them.
Labelled workloads are shown to the model as the targets look (user / team labels masked as often
as the targets lack them: :func:`mask_draw`; a missing user read from the workload's creator, else
its owner or volume claims: :class:`UserInference`).

History features read the known projects of a workload's neighbours on both sides in time, **never
its own** (:func:`history_features`). The evaluation (:func:`holdout_predictions`) trains on earlier
workloads and tests on later ones, and nothing the measured checkpoint is fitted on reads a hold-out
label (a training workload's later side reads training labels only): a held-out workload's own label
cannot move its raw prediction.
"""

from __future__ import annotations

import difflib
import itertools
import math
import random
import re
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction import DictVectorizer
from sklearn.linear_model import LogisticRegression

__all__ = [
    "Attribution",
    "AttributionModel",
    "Prediction",
    "QualityReport",
    "SharedLessons",
    "attribute",
    "attribution_rows",
    "calibration_weights",
    "continue_training",
    "cross_fitted_confidences",
    "evaluate",
    "fit",
    "history_features",
    "holdout_predictions",
    "predict",
    "predict_untagged",
    "prediction_rows",
    "static_features",
    "threshold_for_accuracy",
    "tokens",
]

NONE = "__none__"
_SPLIT = re.compile(r"[^a-z0-9]+")
# random suffixes (k8s pod hashes, job ids): 5+ characters mixing letters and digits, or numbers
_NOISE = re.compile(r"^(?=.*\d)[a-z0-9]{5,}$|^\d+$")
_DIGITS = re.compile(r"\d+")
PIPELINE_GAP_SECONDS = 2 * 3600
_C = 2.0  # inverse L2 strength of the logistic regression
_MAX_ITER = 200
_CAL_PRIOR = 50.0  # pseudo-workloads of evidence for the identity calibration map
_CAL_MIN = 30  # fewest hold-out workloads to calibrate on (else raw probabilities, said so)
THRESHOLD_FLOOR = 0.5  # a threshold derived from a target accuracy never places a coin flip
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

    @property
    def project_id(self) -> str | None:
        return self.candidates[0][0] if self.candidates else None

    @property
    def confidence(self) -> float:
        return self.candidates[0][1] if self.candidates else 0.0


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

    @property
    def calibration_workloads(self) -> int:
        return 0 if self.calibration_set is None else len(self.calibration_set[0])


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
    # how the work was launched: a container's command + args or a Slurm SubmitLine (script, config,
    # data and checkpoint paths), its working directory, the volume claims it mounts
    launch = {
        "cmd": tokens(record.get("command_line")),
        "dir": tokens(record.get("working_dir")),
        "vol": tokens(record.get("volume_claims")),
    }
    for tok in launch["cmd"]:
        f[f"cmd={tok}"] = 1.0
    # whole path segments (a dataset, a bucket, a config), not only their words: two datasets
    # named web-pool and code-pool share the word pool, not the data; segments with a random part
    # (a run's own name) say nothing another workload can learn from
    for seg in references(record):
        if not any(_NOISE.match(part) for part in _SPLIT.split(seg) if part):
            f[f"seg={seg}"] = 1.0
    for prefix in ("dir", "vol"):
        for tok in launch[prefix]:
            f[f"{prefix}={tok}"] = 1.0
    # the same words wherever the launch details name them: a dataset a job reads as
    # ``--data s3://datasets/clicks-archive/`` and a notebook mounts as ``clicks-archive-cache``
    # is one feature, so what the labelled jobs taught about it speaks for the notebook too
    for words in launch.values():
        for tok in words:
            f[f"word={tok}"] = 1.0
    if record.get("partition_name"):
        cat("partition", record.get("partition_name"))
    names = " ".join(
        str(record.get(k) or "")
        for k in (
            "pod",
            "created_by_name",
            "label_app",
            "image_repository",
            "command_line",
            "working_dir",
            "volume_claims",
        )
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


_PATH_PART = re.compile(r"[\s/=:,]+")


def references(record: Mapping[str, Any]) -> set[str]:
    """Path segments of the launch line and working directory: where a workload names another's
    output (``--model s3://.../exp-3fa2c/final`` names the training job exp-3fa2c)."""
    text = " ".join(str(record.get(k) or "") for k in ("command_line", "working_dir"))
    return {part for part in _PATH_PART.split(text.lower()) if part}


def _user_key(record: Mapping[str, Any], user: Any = None) -> str:
    """Whose history a workload continues: its user on its cluster (a person's work on one
    cluster is one stream of work; the same person on another cluster may be on other things)."""
    user = user if user is not None else record.get("user_id")
    if not user:
        return NONE
    return f"{record.get('cluster_id') or NONE}/{user}"


def _reader_key(record: Mapping[str, Any], reader_users: Mapping[str, str | None] | None) -> str:
    wid = str(record["workload_id"])
    if reader_users is None or wid not in reader_users:
        return _user_key(record)
    user = reader_users[wid]
    return _user_key(record, user) if user else NONE


def creator_user(record: Mapping[str, Any]) -> str | None:
    """The person who created the workload (``creator_user_id``: the user an admission webhook
    stamped on its pods, from the API request's user info), or None: no webhook, or a service
    account (``system:serviceaccount:<ns>:<name>``), which names nobody. Unlike the user label it
    does not come and go with the project label: it is present on a cluster's pods or absent, tagged
    or not, so it is not masked like the user label."""
    creator = str(record.get("creator_user_id") or "").strip()
    return creator if creator and not creator.startswith("system:") else None


class UserInference:
    """The user of a workload without a user label, from the other workloads that share its owner
    (a notebook server's StatefulSet ``jupyter-alice``, in its namespace) or mount the same volume
    claim (``ws-alice``) and do carry one: where those name a single user, that is the user.

    Counts are kept per key, so a workload's own user label can be left out when it is the one
    asked about (a labelled workload shown without its user must not be told its user by itself).
    """

    def __init__(self, records: Iterable[Mapping[str, Any]]) -> None:
        self.counts: dict[str, Counter[str]] = defaultdict(Counter)
        for r in records:
            user = r.get("user_id") or creator_user(r)
            if user:
                for key in self.keys(r):
                    self.counts[key][str(user)] += 1

    @staticmethod
    def keys(record: Mapping[str, Any]) -> list[str]:
        place = f"{record.get('cluster_id') or NONE}/{record.get('namespace') or NONE}"
        out = []
        owner = str(record.get("created_by_name") or "").lower()  # the exact owner, not its family
        if owner:
            out.append(f"{place}/owner={owner}")
        out.extend(f"{place}/claim={c}" for c in str(record.get("volume_claims") or "").split())
        return out

    def user_for(self, record: Mapping[str, Any], own: str | None = None) -> str | None:
        """The single user the record's owner and claims point to (``own``: its own user label,
        not counted), else None."""
        found: set[str] = set()
        for key in self.keys(record):  # the owner first: a claim may be shared (a dataset cache)
            counts = self.counts.get(key)
            users = {u for u, n in (counts or {}).items() if n - (1 if u == own else 0) > 0}
            if len(users) == 1:
                if "/owner=" in key:
                    return users.pop()
                found |= users
        return found.pop() if len(found) == 1 else None


def _family(record: Mapping[str, Any]) -> str:
    """The job family: the owner name (job, replica set, stateful set) without random suffixes."""
    toks = [t for t in _SPLIT.split(str(record.get("created_by_name") or "").lower()) if t]
    return "-".join(t for t in toks if not _NOISE.match(t)) or NONE


def history_features(
    records: Sequence[Mapping[str, Any]],
    labels: Mapping[str, str],
    reader_users: Mapping[str, str | None] | None = None,
) -> dict[str, dict[str, float]]:
    """Temporal and behavioural features per workload, from the known projects of its neighbours
    on both sides in time: never its own.

    ``labels`` maps workload_id -> known project for the workloads whose label may be read.
    A workload's earlier side (:func:`_earlier_features`) reads only workloads that started
    strictly earlier, its later side (:func:`_later_features`) only those that started strictly
    later, so no workload sees its own label. A label is filed under its record's user;
    ``reader_users`` (workload_id -> user or None) says under which user a workload *reads*
    history, when that differs (a labelled workload shown without its user label, as the workloads
    to score often are).
    """
    order = _start_order(records)
    earlier = _earlier_features(order, labels, reader_users)
    later = _later_features(order, labels, reader_users)
    return {wid: {**f, **later[wid]} for wid, f in earlier.items()}


def _start_order(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(
        records, key=lambda r: (_num(r.get("started_epoch")) or 0.0, str(r["workload_id"]))
    )


def _earlier_features(
    order: Sequence[Mapping[str, Any]],
    labels: Mapping[str, str],
    reader_users: Mapping[str, str | None] | None,
) -> dict[str, dict[str, float]]:
    """The earlier side (``*_prev``, ``*_mix``, ``pipeline_prev``, ``reads_prev``): ``order`` (the
    records in start order) is walked forwards, a workload's features computed *before* any label
    of a workload starting at the same second or later is added."""
    user_mix: dict[str, Counter[str]] = defaultdict(Counter)
    ns_mix: dict[str, Counter[str]] = defaultdict(Counter)
    user_last: dict[str, str] = {}
    ns_last: dict[str, str] = {}
    family_last: dict[str, str] = {}
    user_ended: dict[str, tuple[float, str]] = {}
    owner_project: dict[str, str] = {}  # exact job / owner name -> its project
    out: dict[str, dict[str, float]] = {}
    pending: list[Mapping[str, Any]] = []
    pending_start: float | None = None

    def commit() -> None:
        for r in pending:
            project = labels.get(str(r["workload_id"]))
            if project is None:
                continue
            user, ns = _user_key(r), r.get("namespace") or NONE
            user_mix[user][project] += 1
            ns_mix[ns][project] += 1
            user_last[user] = project
            ns_last[ns] = project
            family_last[_family(r)] = project
            if r.get("created_by_name"):
                owner_project[str(r["created_by_name"]).lower()] = project
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
        user, ns = _reader_key(r, reader_users), r.get("namespace") or NONE
        f: dict[str, float] = {}
        # without a user there is no user history (service accounts, pods without a user label)
        mixes = [("ns_mix", ns_mix[ns])] + ([("user_mix", user_mix[user])] if user != NONE else [])
        for prefix, mix in mixes:
            total = sum(mix.values())
            for project, n in mix.items():
                f[f"{prefix}={project}"] = n / total
        f.update(_nearest("prev", r, user, ns, (user_last, ns_last, family_last)))
        ended = user_ended.get(user) if user != NONE else None
        if ended is not None and 0 <= start - ended[0] <= PIPELINE_GAP_SECONDS:
            f[f"pipeline_prev={ended[1]}"] = 1.0
        # lineage: the project of an earlier labelled job whose name this one's paths mention
        for ref in sorted(references(r) & owner_project.keys()):
            if ref != str(r.get("created_by_name") or "").lower():
                f[f"reads_prev={owner_project[ref]}"] = 1.0
        out[str(r["workload_id"])] = f
        pending.append(r)
    return out


def _nearest(
    side: str,
    record: Mapping[str, Any],
    user: str,
    ns: str,
    known: tuple[Mapping[str, str], Mapping[str, str], Mapping[str, str]],
) -> dict[str, float]:
    """``user_<side>=``, ``ns_<side>=``, ``family_<side>=``: the project of the nearest known
    workload of the same user (none without a user), namespace and job family on that side."""
    by_user, by_ns, by_family = known
    f: dict[str, float] = {}
    if user != NONE and user in by_user:
        f[f"user_{side}={by_user[user]}"] = 1.0
    if ns in by_ns:
        f[f"ns_{side}={by_ns[ns]}"] = 1.0
    family = _family(record)
    if family in by_family:
        f[f"family_{side}={by_family[family]}"] = 1.0
    return f


def _later_features(
    order: Sequence[Mapping[str, Any]],
    labels: Mapping[str, str],
    reader_users: Mapping[str, str | None] | None,
) -> dict[str, dict[str, float]]:
    """The other side of a workload's neighbours: the project of the same user's, namespace's and
    job family's *next* known workload, and of the known workloads that later read this one's
    output (``read_by``: their paths name its owner, as an evaluation names the training job whose
    checkpoint it loads). A month is scored when it is over, so a Monday's untagged job can learn
    from the labelled job its user started on Tuesday. ``order``: the records in start order,
    walked backwards; only workloads starting strictly later are read."""
    user_next: dict[str, str] = {}
    ns_next: dict[str, str] = {}
    family_next: dict[str, str] = {}
    read_by: dict[str, set[str]] = defaultdict(set)  # a path segment -> projects of its readers
    out: dict[str, dict[str, float]] = {}
    pending: list[Mapping[str, Any]] = []
    pending_start: float | None = None
    for r in reversed(order):
        start = _num(r.get("started_epoch")) or 0.0
        if pending_start is None or start < pending_start:
            for done in pending:
                project = labels.get(str(done["workload_id"]))
                if project is not None:
                    user_next[_user_key(done)] = project
                    ns_next[done.get("namespace") or NONE] = project
                    family_next[_family(done)] = project
                    for ref in references(done):
                        read_by[ref].add(project)
            pending.clear()
            pending_start = start
        user, ns = _reader_key(r, reader_users), r.get("namespace") or NONE
        f = _nearest("next", r, user, ns, (user_next, ns_next, family_next))
        owner = str(r.get("created_by_name") or "").lower()
        for project in sorted(read_by.get(owner, ())) if owner else ():
            f[f"read_by={project}"] = 1.0
        out[str(r["workload_id"])] = f
        pending.append(r)
    return out


def _gpu_hours(record: Mapping[str, Any]) -> float:
    """GPU-hours of a workload (its size: what its money roughly scales with), at least a little."""
    gpus = _num(record.get("gpu_count")) or 1.0
    hours = _num(record.get("duration_hours")) or 0.0
    return max(gpus * max(hours, 0.0), 1e-3)


def calibration_weights(
    calibration: Sequence[Mapping[str, Any]], targets: Sequence[Mapping[str, Any]]
) -> list[float]:
    """Weights that make the calibration set look like the workloads the model will score.

    Each calibration workload weighs its GPU-hours (money is what the quality is measured in) times
    target share / calibration share of GPU-hours of its owner kind (``created_by_kind``: notebooks,
    jobs, training jobs, deployments): covariate-shift correction from features only, never from
    the targets' (unknown) projects. Kinds absent from the targets keep their own weight.
    """

    def shares(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        acc: dict[str, float] = defaultdict(float)
        for r in rows:
            acc[str(r.get("created_by_kind") or NONE)] += _gpu_hours(r)
        total = sum(acc.values())
        return {k: v / total for k, v in acc.items()} if total else {}

    have, want = shares(calibration), shares(targets)
    return [
        _gpu_hours(r) * (want[k] / have[k] if k in want else 1.0)
        for r in calibration
        for k in [str(r.get("created_by_kind") or NONE)]
    ]


class TopLabelCalibrator:
    """P(first candidate right | its raw probability p): sigmoid(a * logit(p) + b) fitted on a
    hold-out by weighted maximum likelihood, shrunk toward the identity (a = 1, b = 0).

    Platt scaling of the top label, with a Gaussian prior of ``_CAL_PRIOR`` pseudo-workloads on
    the identity: a hold-out of a few hundred workloads, dominated in money by a few dozen large
    ones, moves the map only as far as it has evidence to. Capped below 1 by half an observation
    (a finite hold-out never makes a prediction certain). Deterministic (L-BFGS-B from a=1, b=0).
    """

    def __init__(self, top: np.ndarray, correct: np.ndarray, weight: np.ndarray) -> None:
        z = _logit(top)
        y = correct.astype(float)
        w = np.asarray(weight, dtype=float)
        w = w * (len(w) / w.sum()) if w.sum() > 0 else np.ones(len(z))

        def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
            a, b = theta
            q = 1.0 / (1.0 + np.exp(-(a * z + b)))
            q = np.clip(q, 1e-12, 1 - 1e-12)
            nll = -np.sum(w * (y * np.log(q) + (1 - y) * np.log(1 - q)))
            prior = 0.5 * _CAL_PRIOR * ((a - 1.0) ** 2 + b**2)
            r = w * (q - y)
            grad = np.array([np.sum(r * z) + _CAL_PRIOR * (a - 1.0), np.sum(r) + _CAL_PRIOR * b])
            return float(nll + prior), grad

        result = minimize(loss, np.array([1.0, 0.0]), jac=True, method="L-BFGS-B")
        self.a, self.b = (float(v) for v in result.x)
        self.cap = 1.0 - 0.5 / (len(z) + 1)

    def predict(self, top: np.ndarray) -> np.ndarray:
        q = 1.0 / (1.0 + np.exp(-(self.a * _logit(top) + self.b)))
        return np.minimum(q, self.cap)


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(np.asarray(p, dtype=float), 1e-6, 1 - 1e-6)
    return np.log(q / (1 - q))


def _has(record: Mapping[str, Any], key: str) -> bool:
    return bool(record.get(key))


def label_patterns(targets: Sequence[Mapping[str, Any]]) -> list[tuple[tuple[bool, bool], float]]:
    """How often the workloads to score carry a user and a team label: ((user?, team?), share)."""
    counts = Counter((_has(r, "user_id"), _has(r, "team_label")) for r in targets)
    total = sum(counts.values())
    return sorted(((k, n / total) for k, n in counts.items()), reverse=True) if total else []


def mask_draw(
    record: Mapping[str, Any],
    patterns: Sequence[tuple[tuple[bool, bool], float]],
    seed: int,
) -> tuple[bool, bool]:
    """Whether a labelled workload is shown to the model with its user and its team label:
    (user?, team?) drawn with the shares the workloads to score carry them (``label_patterns``).

    Untagged pods often lack the user or team label that tagged ones carry; a model trained and
    calibrated on complete rows would lean on features it will not see. The draw is a hash of the
    seed and workload id: the same workload is masked the same way on every build."""
    if not patterns:
        return True, True
    draw = random.Random(f"{seed}/{record['workload_id']}").random()
    acc = 0.0
    for (u, t), share in patterns:
        acc += share
        if draw < acc:
            return u, t
    return True, True


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


def _out_of_fold(
    base: LogisticRegression, x: Any, y: np.ndarray, classes: Sequence[str]
) -> np.ndarray | None:
    """First-stage probabilities of each training workload from a regression fitted (same
    settings) on the other ``_FOLDS`` - 1 interleaved folds; None when a fold leaves fewer than two
    classes to learn from."""
    n = x.shape[0]
    if n < _FOLDS * _CAL_MIN:
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

    Returns None when fewer than two classes have ``min_class_count`` examples. With fewer than
    ``_CAL_MIN`` hold-out workloads the probabilities are not calibrated, and say so
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
    if calibration is not None and len(calibration[0]) >= _CAL_MIN:
        cal_x, cal_y, cal_w = calibration
        top, correct = _raw_top(model, cal_x, cal_y)
        weight = np.asarray(cal_w, dtype=float)
        if oof is not None and weights is not None:
            best = np.argmax(oof, axis=1)
            top = np.concatenate([oof[np.arange(len(best)), best], top])
            correct = np.concatenate([np.array(model.classes)[best] == y, correct])
            weight = np.concatenate([np.asarray(weights, dtype=float)[keep], weight])
        model.calibration_set = (top, correct, weight)
        model.holdout_workloads = len(cal_x)
        model.calibrator = TopLabelCalibrator(*model.calibration_set)
        model.calibration = "platt_top_label"
        model.training_data = (x, y)
    return model


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


def _raw_top(
    model: AttributionModel, features: Sequence[Mapping[str, float]], labels: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    proba = _proba(model, features)
    best = np.argmax(proba, axis=1)
    classes = np.array(model.classes)
    return proba[np.arange(len(best)), best], classes[best] == np.asarray(labels)


def cross_fitted_confidences(model: AttributionModel, folds: int = 5) -> np.ndarray | None:
    """Calibrated confidences of the hold-out (the end of the calibration set), each from a map
    fitted without its fold of the calibration set (interleaved in time order): what an honest
    hold-out report may show."""
    if model.calibration_set is None:
        return None
    top, correct, weight = model.calibration_set
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
) -> list[Prediction]:
    """Top-``top`` calibrated candidates per workload; the signals behind the first candidate are
    spelled out (feature and its weight) for predictions with confidence below ``explain_below``.

    The first candidate's probability is the calibrated confidence (``confidences`` when given,
    else the model's calibration map); the others share the rest in their raw proportions, so the
    candidates stay sorted and sum to at most 1."""
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
    out = []
    for i, wid in enumerate(workload_ids):
        first = float(calibrated[i])
        rest = (1.0 - first) / (1.0 - raw_top[i]) if raw_top[i] < 1.0 else 0.0
        cands = tuple(
            (model.classes[j], round(first if k == 0 else min(float(proba[i, j]) * rest, first), 6))
            for k, j in enumerate(order[i])
        )
        signals = ""
        if cands and cands[0][1] < explain_below:
            signals = _signals(model, x.getrow(i), int(order[i, 0]), names)
        out.append(Prediction(str(wid), cands, signals))
    return out


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


def threshold_for_accuracy(
    confidences: Sequence[float],
    weights: Sequence[float],
    target: float,
    *,
    floor: float = THRESHOLD_FLOOR,
) -> float:
    """The lowest confidence threshold whose auto-placed workloads are, by their own calibrated
    confidences, ``target`` right on average (weighted by ``weights``, e.g. GPU-hours: money).

    Workloads are taken most confident first, every workload of one confidence together; the
    threshold is the confidence of the last group taken while the weighted mean confidence of all
    taken stays at or above ``target``. Never below ``floor``; 1.0 (nothing placed: confidences are
    capped below 1) when even the most confident group is below ``target``. Label-free: it reads
    the workloads to place, so it trusts the calibration (``rpt_attribution_quality`` measures it).
    """
    if not 0.0 < target <= 1.0:
        raise ValueError(f"target accuracy must be in (0, 1], got {target}")
    groups: dict[float, float] = defaultdict(float)
    for c, w in zip(confidences, weights, strict=True):
        groups[float(c)] += max(float(w), 0.0)
    taken = right = 0.0
    threshold = 1.0
    for c in sorted(groups, reverse=True):
        if c < floor:
            break
        w = groups[c]
        if taken + w > 0 and (right + c * w) / (taken + w) < target:
            break
        taken, right, threshold = taken + w, right + c * w, c
    return threshold


def _start(record: Mapping[str, Any]) -> float:
    return _num(record.get("started_epoch")) or 0.0


def _trailing(
    records: Sequence[Mapping[str, Any]], labels: Mapping[str, str], days: float | None
) -> list[Mapping[str, Any]]:
    labelled = sorted(
        (r for r in records if str(r["workload_id"]) in labels),
        key=lambda r: (_start(r), str(r["workload_id"])),
    )
    if not days or not labelled:
        return labelled
    latest = max(_start(r) for r in records)
    return [r for r in labelled if _start(r) >= latest - days * 86400]


@dataclass
class Attribution:
    """One build's model: predictions for the undeclared workloads and the hold-out it was
    calibrated and measured on (prediction, true project), from a single training."""

    predictions: list[Prediction]
    holdout: list[tuple[Prediction, str]]
    model: AttributionModel | None
    auto_threshold: float  # the confidence from which a prediction places the money


def attribute(
    records: Sequence[Mapping[str, Any]],
    known_projects: Sequence[str],
    *,
    training_days: float | None = 60,
    holdout_fraction: float = 0.2,
    seed: int = 0,
    explain_below: float = 1.0,
    target_accuracy: float | None = None,
) -> Attribution:
    """Train once, calibrate, measure and predict.

    The labelled workloads (``record["known_project_id"]``) started within ``training_days`` of
    the latest workload are split by start time: the latest ``holdout_fraction`` (every workload
    starting at or after the cut, so each started after all training workloads) is hidden from
    the regression; it calibrates the confidence (weighted to the mix of workloads to score, see
    :func:`calibration_weights`) and, with confidences cross-fitted over folds so no workload
    calibrates its own, is the measured hold-out. Every workload without a known project that no
    rule placed (``declared_attribution_method`` absent or ``none``) gets top-3 candidates.

    ``explain_below`` is the auto threshold: predictions below it say which features drove them.
    With ``target_accuracy`` the threshold is derived instead (:func:`threshold_for_accuracy` over
    the predictions, weighted by GPU-hours) and returned as ``auto_threshold``.

    History features read neighbours on both sides (:func:`history_features`). No feature the
    measured checkpoint is fitted on reads a hold-out label (a training workload's later side reads
    the training labels only), so a hold-out workload's own label cannot move its raw prediction;
    the hold-out reads what the targets read: every other workload's label, on both sides.
    """
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
    labelled = _trailing(records, labels, training_days)
    n_test = math.ceil(len(labelled) * holdout_fraction)
    if 0 < n_test < len(labelled):
        cutoff = _start(labelled[-n_test])
        train = [r for r in labelled if _start(r) < cutoff]
        test = [r for r in labelled if _start(r) >= cutoff]
    else:
        train, test = labelled, []
    labelled_ids = {str(r["workload_id"]) for r in labelled}
    views = _views(records, known_projects, targets, labelled_ids, seed)
    target_ids = [str(r["workload_id"]) for r in targets]
    train_ids = [str(r["workload_id"]) for r in train]
    test_ids = [str(r["workload_id"]) for r in test]
    order = _start_order(views.writers)
    known = {**rules, **labels}
    earlier = _earlier_features(order, known, views.readers)
    later = _later_features(order, known, views.readers)
    # what the checkpoint is fitted on reads no hold-out label: the training workloads' later side
    # reads the training labels only (their earlier side cannot reach the hold-out)
    fitted_later = _later_features(
        order, {**rules, **{w: labels[w] for w in train_ids}}, views.readers
    )
    shown = {w: {**f, **earlier[w], **later[w]} for w, f in views.static.items()}
    measured = {
        **shown,
        **{w: {**views.static[w], **earlier[w], **fitted_later[w]} for w in train_ids},
    }
    weights = calibration_weights(train + test, targets or test)
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
    )
    if model is None:
        return Attribution([Prediction(w, ()) for w in target_ids], [], None, explain_below)
    # measured on the checkpoint (the regression has not seen the hold-out), then trained on
    held = predict(
        model,
        [measured[w] for w in test_ids],
        test_ids,
        explain_below=0.0,
        confidences=cross_fitted_confidences(model),
    )
    holdout = [(p, labels[p.workload_id]) for p in held]
    labelled_order = train_ids + test_ids
    continue_training(
        model, [shown[w] for w in labelled_order], [labels[w] for w in labelled_order]
    )
    target_x = [shown[w] for w in target_ids]
    if target_accuracy is None:
        preds = predict(model, target_x, target_ids, explain_below=explain_below)
        return Attribution(preds, holdout, model, explain_below)
    preds = predict(model, target_x, target_ids)
    threshold = threshold_for_accuracy(
        [p.confidence for p in preds], [_gpu_hours(r) for r in targets], target_accuracy
    )
    preds = [
        p if p.confidence < threshold else Prediction(p.workload_id, p.candidates) for p in preds
    ]
    return Attribution(preds, holdout, model, threshold)


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
        }
        for k in range(3):
            cand = p.candidates[k] if k < len(p.candidates) else (None, None)
            row[f"candidate_{k + 1}_project_id"] = cand[0]
            row[f"candidate_{k + 1}_probability"] = cand[1]
        rows.append(row)
    return rows


def attribution_rows(result: Attribution) -> list[dict[str, Any]]:
    """One build's rows: the undeclared workloads' predictions, then the hold-out's (with truth)."""
    truth = {p.workload_id: t for p, t in result.holdout}
    threshold = result.auto_threshold
    return prediction_rows(
        result.predictions, result.model, auto_threshold=threshold
    ) + prediction_rows(
        [p for p, _ in result.holdout],
        result.model,
        truth,
        scored_set="holdout",
        auto_threshold=threshold,
    )


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
